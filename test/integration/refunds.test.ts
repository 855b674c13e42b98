import { expect } from 'chai';
import { sql } from 'kysely';
import {
  createWalletClient,
  defineChain,
  encodeFunctionData,
  erc20Abi,
  http,
  parseSignature,
  verifyTypedData,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { registerAgent, type Agent } from '../support/agents.js';
import {
  balanceOf,
  identifiedPayer,
  newBuyer,
  signAuthorization,
  wire,
  type Authorization,
  type Buyer,
} from '../support/buyers.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { skillBody } from '../support/skills.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { reconcilePaymentsJob } from '../../jobs/reconcile-payments.job.js';
import { EIP3009_TOKEN_ABI } from '../../src/domain/payments/protocol/eip3009.js';
import { refundRequestTypedData, skillRefundTypedData } from '../../src/domain/refunds/refund-typed-data.js';

const PRICE = 1_250_000n;

type Signed = { authorization: Authorization; signature: Hex };

describe('refunds: requested by the buyer, declined or refunded by the seller, checkable by anyone', function () {
  this.timeout(180_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let other: Agent;
  let walletBuyer: Buyer;
  let postId: string;
  /** The buyer's first purchase: refunded. */
  let firstPayment: string;
  /** What the buyer's client sent for it: a replay of the paid request. */
  let firstHeader: string;
  /** The seller's authorization that refunded it. */
  let refundAuthorization: Signed;
  /** The buyer's purchase again after the refund: its request is declined. */
  let secondPayment: string;
  /** Another agent's purchase, aged past the refund window. */
  let oldPayment: string;
  /** A buyer without an account, asking with its wallet's signature. */
  let walletPayment: string;

  const chain = () => svc.service.runtime.chain;
  const db = () => svc.service.runtime.database.db;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);
  const usdcOf = (address: Address) => balanceOf(chain(), address);
  const fullUrl = () => `${svc.url}/api/posts/${postId}?view=full`;

  const requestRefund = (agent: Agent, paymentId: string, json: Record<string, unknown>) =>
    agent.api(`/api/purchases/${paymentId}/refund-request`, { method: 'POST', json });
  const signedRequest = (paymentId: string, json: Record<string, unknown>) =>
    get(`/api/purchases/${paymentId}/refund-request`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(json),
    });
  const postRefund = (paymentId: string, signed: Signed) =>
    seller.api(`/api/purchases/${paymentId}/refund`, {
      method: 'POST',
      json: { authorization: wire(signed.authorization), signature: signed.signature },
    });
  const refundTo = (to: Address, overrides: Partial<Authorization> = {}, domain = {}) =>
    signAuthorization(seller.account, chain(), { to, value: PRICE, ...overrides }, domain);

  /** The buying wallet's EIP-712 RefundRequest, as a client without an account signs it. */
  async function signRequest(account: Buyer['account'], paymentId: string, reason: string, text: string, at: Date) {
    const issuedAt = at.toISOString();
    const signature = await account.signTypedData({
      ...refundRequestTypedData(chain().chainId),
      message: { paymentId, reason, text, issuedAt: BigInt(Math.floor(at.getTime() / 1000)) },
    });
    return { reason, text, issuedAt, signature };
  }

  /** The receipt key as the site AgentCard publishes it. */
  async function receiptKey(): Promise<Address> {
    const card = await (await get('/.well-known/agent-card.json')).json();
    const entry = card.capabilities.extensions.find((e: { uri: string }) => e.uri.includes('offer-and-receipt'));
    return entry.params.address;
  }

  /** Whether a served refund's receipt verifies, with viem, against the published receipt key. */
  async function receiptVerifies(receipt: {
    typedData: { message: Record<string, string> };
    signature: Hex;
    signer: Address;
  }) {
    const { message } = receipt.typedData;
    return verifyTypedData({
      address: await receiptKey(),
      ...skillRefundTypedData(),
      message: {
        ...message,
        buyer: message.buyer as Address,
        seller: message.seller as Address,
        amount: BigInt(message.amount ?? ''),
        refundedAt: BigInt(message.refundedAt ?? ''),
      } as never,
      signature: receipt.signature,
    });
  }

  const problemOf = async (res: Response) => {
    expect(res.headers.get('content-type')).to.match(/^application\/problem\+json/);
    return (await res.json()) as { code: string; status: number };
  };
  const events = (type: string) =>
    db().selectFrom('domain_events').selectAll().where('type', '=', type).orderBy('id').execute();
  const count = async (table: 'refunds' | 'refund_requests') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  before(async () => {
    svc = await startTestService();
    [seller, buyer, other] = await Promise.all([
      registerAgent(svc, 'refund-seller'),
      registerAgent(svc, 'refund-buyer'),
      registerAgent(svc, 'refund-other'),
    ]);
    walletBuyer = await newBuyer(chain());
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Harbour charts',
        preview: 'Reads harbour charts.',
        priceAtomic: PRICE.toString(),
        body: skillBody('harbour-charts', '# Harbour charts\n'),
      },
    });
    postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST', json: {} })).status).to.equal(200);

    const identified = identifiedPayer(chain(), buyer.account, `refund_${buyer.address.slice(2, 18)}`);
    const first = await identified.pay(fullUrl());
    expect(first.status).to.equal(200);
    firstPayment = first.headers.get('x-payment-id')!;
    firstHeader = identified.sent[0]!;
    const old = await other.payV2(fullUrl());
    expect(old.status).to.equal(200);
    oldPayment = old.headers.get('x-payment-id')!;
    const byWallet = await walletBuyer.payV2(fullUrl());
    expect(byWallet.status).to.equal(200);
    walletPayment = byWallet.headers.get('x-payment-id')!;
  });
  after(async () => svc?.stop());

  it('a buyer asks for a refund with its agent token; the request is open and refund.requested names the seller', async () => {
    const res = await requestRefund(buyer, firstPayment, {
      reason: 'does_not_work',
      text: '  The charts are empty.\n',
    });
    expect(res.status, await res.clone().text()).to.equal(201);
    const body = await res.json();
    expect(body).to.include({ paymentId: firstPayment, postId });
    expect(body.request).to.include({ reason: 'does_not_work', text: 'The charts are empty.', status: 'open' });
    const [event] = await events('refund.requested');
    expect(event).to.include({ agent_id: seller.id, post_id: postId });
    expect(event?.payload).to.deep.equal({ paymentId: firstPayment, reason: 'does_not_work' });
  });

  it('a buyer asking twice, a non-buyer, and control characters are refused, and nothing is written', async () => {
    const requests = await count('refund_requests');
    const again = await requestRefund(buyer, firstPayment, { reason: 'other', text: 'again' });
    expect(again.status).to.equal(409);
    expect((await problemOf(again)).code).to.equal('refund_already_requested');
    const stranger = await requestRefund(other, firstPayment, { reason: 'other', text: 'refund me' });
    expect(stranger.status).to.equal(403);
    expect((await problemOf(stranger)).code).to.equal('not_buyer');
    const bell = await requestRefund(buyer, walletPayment, { reason: 'other', text: 'ring\u0007' });
    expect(bell.status).to.equal(400);
    expect((await problemOf(bell)).code).to.equal('text_control_characters');
    // NUL is refused earlier, by the service-wide check of text PostgreSQL cannot store.
    const nul = await requestRefund(buyer, walletPayment, { reason: 'other', text: 'a\u0000b' });
    expect(nul.status).to.equal(400);
    const missing = await requestRefund(buyer, '00000000-0000-4000-8000-000000000000', { reason: 'other', text: '' });
    expect(missing.status).to.equal(404);
    expect((await problemOf(missing)).code).to.equal('purchase_not_found');
    expect(await count('refund_requests')).to.equal(requests);
  });

  it('a wrong payer, payee, amount, token or validity window is refused before anything is sent; balances stay', async () => {
    const before = { seller: await usdcOf(seller.address), buyer: await usdcOf(buyer.address) };
    const now = BigInt(Math.floor(Date.now() / 1000));
    const cases: Array<[string, Promise<Signed>]> = [
      ['refund_wrong_payer', signAuthorization(other.account, chain(), { to: buyer.address, value: PRICE })],
      ['refund_wrong_payee', refundTo(other.address)],
      ['refund_wrong_amount', refundTo(buyer.address, { value: PRICE - 1n })],
      ['refund_wrong_amount', refundTo(buyer.address, { value: PRICE + 1n })],
      ['refund_signature_invalid', refundTo(buyer.address, {}, { name: 'Other Dollar' })],
      ['refund_signature_invalid', refundTo(buyer.address, {}, { verifyingContract: other.address })],
      ['refund_authorization_expired', refundTo(buyer.address, { validBefore: now + 20n })],
      ['refund_authorization_expired', refundTo(buyer.address, { validBefore: now + 3_600n })],
      ['refund_authorization_expired', refundTo(buyer.address, { validAfter: now + 120n })],
    ];
    for (const [code, signing] of cases) {
      const res = await postRefund(firstPayment, await signing);
      expect(res.status, code).to.equal(422);
      expect((await problemOf(res)).code).to.equal(code);
    }
    // A signature over other terms than the ones sent is no signature of them.
    const forged = await refundTo(buyer.address);
    const tampered = await postRefund(firstPayment, {
      ...forged,
      authorization: { ...forged.authorization, validBefore: forged.authorization.validBefore + 1n },
    });
    expect((await problemOf(tampered)).code).to.equal('refund_signature_invalid');
    expect(await count('refunds')).to.equal(0);
    expect(await usdcOf(seller.address)).to.equal(before.seller);
    expect(await usdcOf(buyer.address)).to.equal(before.buyer);
  });

  it('the seller refunds: exactly the price moves back, the request is accepted, the receipt verifies, purchase.refunded is written', async () => {
    const before = { seller: await usdcOf(seller.address), buyer: await usdcOf(buyer.address) };
    refundAuthorization = await refundTo(buyer.address);
    const res = await postRefund(firstPayment, refundAuthorization);
    expect(res.status, await res.clone().text()).to.equal(200);
    const posted = await res.json();
    expect(await usdcOf(seller.address)).to.equal(before.seller - PRICE);
    expect(await usdcOf(buyer.address)).to.equal(before.buyer + PRICE);

    const view = await get(`/api/purchases/${firstPayment}/refund`);
    expect(view.status).to.equal(200);
    expect(view.headers.get('cache-control')).to.equal('no-store');
    const shown = await view.json();
    expect(shown).to.deep.equal(posted);
    expect(shown.request).to.include({ status: 'accepted', reason: 'does_not_work' });
    expect(shown.request.respondedAt).to.equal(shown.refund.settledAt);
    expect(shown.refund).to.include({ status: 'settled', amount: PRICE.toString(), buyer: buyer.address });
    expect(shown.refund.txHash).to.match(/^0x[0-9a-f]{64}$/);
    const receipt = shown.refund.receipt;
    expect(receipt.signer).to.equal(await receiptKey());
    expect(receipt.typedData.message).to.include({
      paymentId: firstPayment,
      refundTransaction: shown.refund.txHash,
      postId,
      buyer: buyer.address,
      seller: seller.address,
      amount: PRICE.toString(),
    });
    expect(await receiptVerifies(receipt)).to.equal(true);
    // The receipt binds its figures: another amount does not verify.
    const altered = { ...receipt.typedData.message, amount: (PRICE - 1n).toString() };
    expect(await receiptVerifies({ ...receipt, typedData: { ...receipt.typedData, message: altered } })).to.equal(
      false,
    );

    const [event] = await events('purchase.refunded');
    expect(event).to.include({ agent_id: seller.id, post_id: postId });
    expect(event?.payload).to.deep.equal({
      paymentId: firstPayment,
      refundId: shown.refund.id,
      txHash: shown.refund.txHash,
      amount: PRICE.toString(),
      buyer: buyer.address.toLowerCase(),
    });
    const purchase = await db()
      .selectFrom('purchases')
      .select('refunded_at')
      .where('payment_id', '=', firstPayment)
      .executeTakeFirstOrThrow();
    expect(purchase.refunded_at?.toISOString()).to.equal(shown.refund.settledAt);
  });

  it('a refunded buyer must pay again to read the full skill, also by replaying its paid request', async () => {
    const withToken = await buyer.api(`/api/posts/${postId}?view=full`);
    expect(withToken.status).to.equal(402);
    const replay = await fetch(fullUrl(), { headers: { 'PAYMENT-SIGNATURE': firstHeader } });
    expect(replay.status).to.equal(409);
    expect((await problemOf(replay)).code).to.equal('purchase_refunded');
  });

  it('the same authorization again, or a second refund with a new nonce, is refused and moves nothing', async () => {
    const before = { seller: await usdcOf(seller.address), buyer: await usdcOf(buyer.address) };
    const replayed = await postRefund(firstPayment, refundAuthorization);
    expect(replayed.status).to.equal(409);
    expect((await problemOf(replayed)).code).to.equal('purchase_refunded');
    const second = await postRefund(firstPayment, await refundTo(buyer.address));
    expect(second.status).to.equal(409);
    expect((await problemOf(second)).code).to.equal('purchase_refunded');
    const again = await requestRefund(buyer, firstPayment, { reason: 'other', text: 'once more' });
    expect((await problemOf(again)).code).to.equal('purchase_refunded');

    // The buyer buys again: the old authorization fits the new purchase's terms, but its nonce is spent.
    const rebought = await buyer.payV2(fullUrl());
    expect(rebought.status).to.equal(200);
    secondPayment = rebought.headers.get('x-payment-id')!;
    const afterPurchase = { seller: await usdcOf(seller.address), buyer: await usdcOf(buyer.address) };
    expect(afterPurchase).to.deep.equal({ seller: before.seller + PRICE, buyer: before.buyer - PRICE });
    const reused = await postRefund(secondPayment, refundAuthorization);
    expect(reused.status).to.equal(409);
    expect((await problemOf(reused)).code).to.equal('refund_nonce_used');
    expect(await usdcOf(seller.address)).to.equal(afterPurchase.seller);
    expect(await usdcOf(buyer.address)).to.equal(afterPurchase.buyer);
    expect(await count('refunds')).to.equal(1);
  });

  it('the seller declines a request with a reason; anyone reads it; it cannot be answered twice', async () => {
    expect(
      (await requestRefund(buyer, secondPayment, { reason: 'duplicate_purchase', text: 'Bought twice.' })).status,
    ).to.equal(201);
    const stranger = await other.api(`/api/purchases/${secondPayment}/refund-request/decline`, {
      method: 'POST',
      json: { reason: 'other', text: 'no' },
    });
    expect((await problemOf(stranger)).code).to.equal('not_seller');
    const decline = (paymentId: string) =>
      seller.api(`/api/purchases/${paymentId}/refund-request/decline`, {
        method: 'POST',
        json: { reason: 'works_as_described', text: 'Refunded once already; this purchase was made after it.' },
      });
    const declined = await decline(secondPayment);
    expect(declined.status, await declined.clone().text()).to.equal(200);
    const shown = await (await get(`/api/purchases/${secondPayment}/refund`)).json();
    expect(shown.request).to.include({
      status: 'declined',
      reason: 'duplicate_purchase',
      declineReason: 'works_as_described',
      declineText: 'Refunded once already; this purchase was made after it.',
    });
    expect(shown.request.respondedAt).to.be.a('string');
    expect(shown.refund).to.equal(null);
    expect((await problemOf(await decline(secondPayment))).code).to.equal('refund_request_closed');
    expect((await problemOf(await decline(walletPayment))).code).to.equal('refund_request_not_found');
    const [event] = await events('refund.declined');
    expect(event).to.include({ agent_id: seller.id, post_id: postId });
    expect(event?.payload).to.deep.equal({ paymentId: secondPayment, reason: 'works_as_described' });
    // The buyer keeps what it bought.
    expect((await buyer.api(`/api/posts/${postId}?view=full`)).status).to.equal(200);
  });

  it('a request after the refund window is refused refund_window_closed', async () => {
    await sql`UPDATE purchases SET created_at = now() - interval '15 days' WHERE payment_id = ${oldPayment}`.execute(
      db(),
    );
    const res = await requestRefund(other, oldPayment, { reason: 'not_as_described', text: 'Late.' });
    expect(res.status).to.equal(409);
    expect((await problemOf(res)).code).to.equal('refund_window_closed');
    expect((await problemOf(await get(`/api/purchases/${oldPayment}/refund`))).code).to.equal('refund_not_found');
  });

  it('a buyer without an account asks with its wallet signature; a bad, stale or copied signature is refused', async () => {
    const now = new Date();
    const stranger = privateKeyToAccount(generatePrivateKey());
    const byStranger = await signRequest(stranger, walletPayment, 'security_concern', 'It reads ~/.ssh.', now);
    const refused = await signedRequest(walletPayment, byStranger);
    expect(refused.status).to.equal(401);
    expect((await problemOf(refused)).code).to.equal('signature_invalid');
    const good = await signRequest(walletBuyer.account, walletPayment, 'security_concern', 'It reads ~/.ssh.', now);
    const edited = await signedRequest(walletPayment, { ...good, text: 'It reads ~/.aws.' });
    expect((await problemOf(edited)).code).to.equal('signature_invalid');
    const forOther = await signedRequest(oldPayment, good);
    expect((await problemOf(forOther)).code).to.equal('signature_invalid');
    const stale = await signRequest(
      walletBuyer.account,
      walletPayment,
      'security_concern',
      'It reads ~/.ssh.',
      new Date(now.getTime() - 11 * 60_000),
    );
    expect((await problemOf(await signedRequest(walletPayment, stale))).code).to.equal('signature_expired');
    const unsigned = await signedRequest(walletPayment, { reason: 'other', text: 'no signature' });
    expect((await problemOf(unsigned)).code).to.equal('signature_invalid');
    expect(await count('refund_requests')).to.equal(2);

    const res = await signedRequest(walletPayment, good);
    expect(res.status, await res.clone().text()).to.equal(201);
    expect((await res.json()).request).to.include({ reason: 'security_concern', status: 'open' });
    // Whoever copies the signed request gets nothing from it: it is the one request of the purchase.
    const copied = await signedRequest(walletPayment, good);
    expect(copied.status).to.equal(409);
    expect((await problemOf(copied)).code).to.equal('signature_replayed');
    expect(await count('refund_requests')).to.equal(3);
  });

  it('a refund left relaying is reconciled from the chain: unused and expired fails, used settles with its transaction', async () => {
    const now = BigInt(Math.floor(Date.now() / 1000));
    const { usdc, network } = chain();
    const claimRelaying = (signed: Signed) =>
      sql`INSERT INTO refunds (payment_id, post_id, seller_id, buyer_address, from_address, amount_atomic, asset,
                               network, nonce, authorization_payload, created_at)
          SELECT payment_id, post_id, seller_id, buyer_address, ${seller.address.toLowerCase()}, amount_atomic,
                 ${usdc.address.toLowerCase()}, ${network}, ${signed.authorization.nonce},
                 ${JSON.stringify({ authorization: wire(signed.authorization), signature: signed.signature })}::jsonb,
                 now() - interval '5 minutes'
          FROM purchases WHERE payment_id = ${oldPayment}`.execute(db());

    // A relay that died before sending an authorization that has expired since: the seller may refund anew.
    await claimRelaying(await refundTo(other.address, { validAfter: now - 7200n, validBefore: now - 3600n }));
    const blocked = await postRefund(oldPayment, await refundTo(other.address));
    expect(blocked.status).to.equal(409);
    expect((await problemOf(blocked)).code).to.equal('refund_in_flight');
    await reconcilePaymentsJob.run(jobContext(svc.service.runtime), { olderThanMs: 0 });
    const failed = await (await get(`/api/purchases/${oldPayment}/refund`)).json();
    expect(failed.refund).to.include({ status: 'failed', failureReason: 'authorization_expired_unsettled' });

    // A relay whose transaction landed after the process died: the chain names it.
    const before = { seller: await usdcOf(seller.address), other: await usdcOf(other.address) };
    const signed = await refundTo(other.address);
    await claimRelaying(signed);
    const txHash = await submitOnChain(signed);
    await reconcilePaymentsJob.run(jobContext(svc.service.runtime), { olderThanMs: 0 });
    const settled = await (await get(`/api/purchases/${oldPayment}/refund`)).json();
    expect(settled.request).to.equal(null);
    expect(settled.refund).to.include({ status: 'settled', txHash: txHash.toLowerCase() });
    expect(await receiptVerifies(settled.refund.receipt)).to.equal(true);
    expect(await usdcOf(seller.address)).to.equal(before.seller - PRICE);
    expect(await usdcOf(other.address)).to.equal(before.other + PRICE);
    expect((await other.api(`/api/posts/${postId}?view=full`)).status).to.equal(402);
    // Run again: nothing left to do, nothing paid twice.
    await reconcilePaymentsJob.run(jobContext(svc.service.runtime), { olderThanMs: 0 });
    expect(await usdcOf(other.address)).to.equal(before.other + PRICE);
  });

  it('a refund the facilitator refuses moves nothing and fails; a new authorization then settles it', async () => {
    // The payout wallet is empty: the facilitator's simulation refuses the transfer before sending it.
    const held = await usdcOf(seller.address);
    await callToken(
      seller.account,
      encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [other.address, held] }),
    );
    const before = await usdcOf(walletBuyer.address);
    const refused = await postRefund(walletPayment, await refundTo(walletBuyer.address));
    expect(refused.status, await refused.clone().text()).to.equal(502);
    const problem = (await problemOf(refused)) as { code: string; reason?: string };
    expect(problem.code).to.equal('refund_relay_failed');
    expect(problem.reason).to.be.a('string');
    const failed = await (await get(`/api/purchases/${walletPayment}/refund`)).json();
    expect(failed.refund).to.include({ status: 'failed', failureReason: problem.reason, txHash: null });
    expect(failed.request.status).to.equal('open');
    expect(await usdcOf(walletBuyer.address)).to.equal(before);

    await chain().faucet!(seller.address, PRICE);
    // The refused authorization could still land until it expires: no other is taken before then.
    const early = await postRefund(walletPayment, await refundTo(walletBuyer.address));
    expect(early.status).to.equal(409);
    expect((await problemOf(early)).code).to.equal('refund_in_flight');
    // As if it had expired (its validBefore two minutes ago) and the chain shows it unused.
    await db()
      .updateTable('refunds')
      .set({
        authorization_payload: sql`jsonb_set(authorization_payload, '{authorization,validBefore}', to_jsonb((extract(epoch FROM now())::bigint - 120)::text))`,
      })
      .where('payment_id', '=', walletPayment)
      .where('status', '=', 'failed')
      .execute();
    const res = await postRefund(walletPayment, await refundTo(walletBuyer.address));
    expect(res.status, await res.clone().text()).to.equal(200);
    const settled = await res.json();
    expect(settled.refund.status).to.equal('settled');
    expect(settled.request.status).to.equal('accepted');
    expect(await usdcOf(walletBuyer.address)).to.equal(before + PRICE);
    expect(await usdcOf(seller.address)).to.equal(0n);
  });

  it("the seller's published refund figures: sales, refunds, rate, requests, declines and the median response time", async () => {
    const refundsOf = async (agent: Agent) =>
      (await (await get(`/api/agents/${agent.handle}/rating.json`)).json()).refunds;
    const stats = await eventually(async () => {
      const r = await refundsOf(seller);
      return r?.refunds === 3 && r.declined === 1 ? r : undefined;
    }, 15_000);
    expect(stats).to.include({ sales: 4, refunds: 3, refundRate: 0.75, requests: 3, declined: 1 });
    expect(stats.medianResponseSeconds).to.be.a('number').and.at.least(0);
    expect(await refundsOf(buyer)).to.deep.equal({
      sales: 0,
      refunds: 0,
      refundRate: 0,
      requests: 0,
      declined: 0,
      medianResponseSeconds: null,
    });
  });

  /** A wallet client of `account` on the service's chain (registered agents hold test ETH for gas). */
  const walletOf = (account: Agent['account']) =>
    createWalletClient({
      account,
      chain: defineChain({
        id: chain().chainId,
        name: 'local',
        nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
        rpcUrls: { default: { http: [chain().rpcUrl] } },
      }),
      transport: http(chain().rpcUrl),
    });

  /** Sends a call to the token from `account` and waits for it to succeed. */
  async function callToken(account: Agent['account'], data: Hex): Promise<Hex> {
    const hash = await walletOf(account).sendTransaction({ to: chain().usdc.address, data });
    const receipt = await chain().publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).to.equal('success');
    return hash;
  }

  /** Sends an authorization to the token from another wallet, as a relay would have; returns its transaction. */
  function submitOnChain(signed: Signed): Promise<Hex> {
    const { authorization: a } = signed;
    const { r, s, v, yParity } = parseSignature(signed.signature);
    return callToken(
      other.account,
      encodeFunctionData({
        abi: EIP3009_TOKEN_ABI,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v ?? BigInt(yParity + 27)), r, s],
      }),
    );
  }
});
