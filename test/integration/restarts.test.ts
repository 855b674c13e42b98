import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { verifyTypedData, type Address, type Hex } from 'viem';
import { createReceiptDomain, prepareReceiptForEIP712, RECEIPT_TYPES } from '@x402/extensions/offer-receipt';
import { loadConfig, type Config } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/logger.js';
import { freePort } from '../../src/platform/net.js';
import { startService, type RunningService } from '../../src/bootstrap/service.js';
import { DEV_KEYS_DIR } from '../../src/bootstrap/secrets.js';
import { checkReceipt } from '../../src/cli/receipt.js';
import { MarketApi } from '../../src/cli/market-api.js';
import { startServiceParts, type ServiceParts } from '../support/service-child.js';
import { eventually, settledPayment } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { skillBody } from '../support/skills.js';

const log = createLogger('silent');

/**
 * `npm start` in development, stopped and started again at once: the same data directory, database,
 * Redis, bucket and chain, and none of RECEIPT_PRIVATE_KEY, JWT_PRIVATE_KEY or ADMIN_TOKEN set.
 */
describe('restarts: a quick restart keeps the development keys and runs the start-up jobs again', function () {
  this.timeout(180_000);
  let parts: ServiceParts;
  let config: Config;
  let url: string;
  let running: RunningService | undefined;
  let seller: Agent;
  let postId: string;
  const get = (path: string, init?: RequestInit) => fetch(`${url}${path}`, init);

  /** The receipt key as the site AgentCard and /.well-known/x402 name it, read at the same moment. */
  const namedKeys = async () => {
    const [card, wellKnown] = await Promise.all([
      get('/.well-known/agent-card.json').then((r) => r.json()),
      get('/.well-known/x402').then((r) => r.json()),
    ]);
    const entry = card.capabilities.extensions.find((e: { uri: string }) => e.uri.includes('offer-and-receipt'));
    return { card: entry.params.address as Address, wellKnown: wellKnown.receiptSigner.address as Address };
  };
  const verifies = (receipt: { payload: never; signature: string }, address: Address) =>
    verifyTypedData({
      address,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712(receipt.payload),
      signature: receipt.signature as Hex,
    });
  /** A sale of the seller's skill to a new buyer, settled; its payment id. */
  const sale = async () => {
    const buyer = await newBuyer(parts.chain);
    const res = await buyer.payV2(`${url}/api/posts/${postId}?view=full`);
    expect(res.status).to.equal(200);
    const paymentId = res.headers.get('x-payment-id')!;
    await settledPayment(url, paymentId);
    return paymentId;
  };
  const start = async () => {
    running = await startService('all', config, log);
    return running;
  };
  const stop = async () => {
    await running?.stop();
    running = undefined;
  };

  before(async () => {
    parts = await startServiceParts();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const { JWT_PRIVATE_KEY: _jwt, ADMIN_TOKEN: _admin, ...env } = parts.env;
    config = loadConfig({ ...env, PORT: String(port), PUBLIC_BASE_URL: url, LOG_LEVEL: 'silent' });
    expect(config.receiptPrivateKey ?? config.jwtPrivateKey ?? config.adminToken).to.equal(undefined);
    await start();
    seller = await registerAgent({ url, chain: parts.chain }, 'restart-seller');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Restart skill',
        preview: 'A skill bought on both sides of a restart.',
        priceAtomic: '1000000',
        body: skillBody('restart-skill', '# restart'),
      },
    });
    postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
  });
  after(async () => {
    await stop();
    await parts?.stop();
  });

  it('when the service is restarted twice within moments, then receipts from before and after verify against the key every document names', async () => {
    const before = await sale();
    const receiptBefore = await (await get(`/api/payments/${before}/receipt`)).json();
    const keyBefore = await namedKeys();
    expect(keyBefore.card).to.equal(keyBefore.wellKnown);
    const adminTokenBefore = running!.runtime.adminToken;

    // Stop and start, twice, without waiting for anything in between.
    const restartedAt = Date.now();
    await stop();
    await start();
    const between = await namedKeys();
    await stop();
    const third = await start();
    const restartsMs = Date.now() - restartedAt;
    const after = await namedKeys();

    // Every document names one key at every moment, and it is the key of before the restarts.
    expect(between.card, 'between the restarts').to.equal(between.wellKnown);
    expect(after.card, `right after the second restart (${restartsMs} ms for both)`).to.equal(after.wellKnown);
    expect(after.card).to.equal(keyBefore.card);

    // The receipt as the buyer kept it before the restarts, and as the service serves it now.
    expect(await verifies(receiptBefore, after.card), 'the receipt kept from before').to.equal(true);
    const servedNow = await (await get(`/api/payments/${before}/receipt`)).json();
    expect(servedNow).to.deep.equal(receiptBefore);
    const api = new MarketApi(url);
    const checkedBefore = await checkReceipt(api, before);
    expect(checkedBefore.valid, 'skill-market receipt, for the sale before the restarts').to.equal(true);

    // A sale after the restarts has a receipt that verifies too.
    const afterSale = await sale();
    const checkedAfter = await checkReceipt(api, afterSale);
    expect(checkedAfter.valid, 'skill-market receipt, for a sale after the restarts').to.equal(true);
    expect(checkedAfter.signer).to.equal(after.wellKnown);

    // The agent token issued before the restarts is still accepted, and the admin token is the same.
    expect((await seller.api('/api/agents/me')).status).to.equal(200);
    expect(third.runtime.adminToken).to.equal(adminTokenBefore);
    const metrics = await get('/metrics', { headers: { authorization: `Bearer ${adminTokenBefore}` } });
    expect(metrics.status).to.equal(200);
  });

  it('keeps the development keys in DATA_DIR/keys, readable by their owner alone', () => {
    const dir = join(config.dataDir, DEV_KEYS_DIR);
    expect(statSync(dir).mode & 0o777).to.equal(0o700);
    for (const file of ['receipt-private-key', 'jwt-private-key.pem', 'admin-token']) {
      expect(statSync(join(dir, file)).mode & 0o777, file).to.equal(0o600);
    }
    expect(readFileSync(join(dir, 'admin-token'), 'utf8').trim()).to.equal(running!.runtime.adminToken);
  });

  it('ran the start-up jobs at every start: the site card and the population figures three times', async () => {
    const documents = running!.runtime.queues.documents;
    const payments = running!.runtime.queues.payments;
    /** Completed start-up runs of a job (a scheduled tick's id is the job name and its minute alone). */
    const startRuns = async (queue: typeof documents, name: string) =>
      (await queue.getJobs(['completed'], 0, -1)).filter((j) => j.name === name && j.id?.includes('-start')).length;
    // The jobs the second start queued and had no time to run are run by the third.
    await eventually(
      async () =>
        (await startRuns(documents, 'site-card')) === 3 &&
        (await startRuns(documents, 'population-stats')) === 3 &&
        (await startRuns(payments, 'reconcile-payments')) === 3,
      30_000,
      100,
    );
  });
});
