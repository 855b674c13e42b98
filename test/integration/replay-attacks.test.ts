import { expect } from 'chai';
import { createWalletClient, encodeFunctionData, http, parseAbi, parseEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { claimPayment } from '../../src/data/payments.repository.js';
import { resolvePayment, StillUnresolvedError } from '../../src/domain/payments/ledger/resolve-payment.js';
import { localChain, MULTICALL3_ADDRESS } from '../../src/platform/chain/clients.js';
import { multicall3Abi } from '../../src/platform/chain/multicall3.js';
import { createLogger } from '../../src/platform/logger.js';
import { testClient } from '../support/anvil.js';
import { startTestService, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, signAuthorization } from '../support/buyers.js';
import { registerAgent } from '../support/agents.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody } from '../support/skills.js';
import { copyFromChain } from '../support/chain-copies.js';

const TOKEN = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)',
]);

/**
 * A settled payment's authorization, signature included, is public in its settlement transaction.
 * These tests play an attacker who has only chain data.
 */
describe('replays built from chain data get nothing', function () {
  this.timeout(60_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;
  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  /** The authorization exactly as the settlement transaction published it, in the wire's form. */
  async function publishedAuthorization(payer: `0x${string}`) {
    const { authorization: a, signature } = await copyFromChain(chain(), payer);
    return {
      from: a.from,
      to: a.to,
      value: a.value.toString(),
      validAfter: a.validAfter.toString(),
      validBefore: a.validBefore.toString(),
      nonce: a.nonce,
      signature,
    };
  }
  const v1Header = (a: Awaited<ReturnType<typeof publishedAuthorization>>, signature: string = a.signature) =>
    Buffer.from(
      JSON.stringify({
        x402Version: 1,
        scheme: 'exact',
        network: 'base-sepolia',
        payload: { signature, authorization: { ...a, signature: undefined } },
      }),
    ).toString('base64');

  it('another wallet cannot take over an agent with a copy of its registration payment', async () => {
    const victim = await newBuyer(chain());
    const registered = await (
      await postVerify(svc.url, await signedVerifyBody(svc.url, victim.account, 'victim'), victim.payV1)
    ).json();
    const published = await publishedAuthorization(victim.address);
    const attacker = await newBuyer(chain(), 0n);
    const body = await signedVerifyBody(svc.url, attacker.account, 'attacker');

    const copied = await postVerify(svc.url, body, fetch, { 'X-PAYMENT': v1Header(published) });
    expect(copied.status).to.equal(402);
    const problem = await copied.json();
    expect(problem.code).to.equal('payment_already_used');
    expect(problem).to.not.have.property('token');

    const forged = await postVerify(svc.url, body, fetch, { 'X-PAYMENT': v1Header(published, `0x${'11'.repeat(65)}`) });
    expect(forged.status).to.equal(402);
    expect((await forged.json()).code).to.equal('invalid_exact_evm_nonce_already_used');

    // The victim itself may still repeat its own request and get its agent back.
    const again = await postVerify(svc.url, await signedVerifyBody(svc.url, victim.account), fetch);
    expect((await again.json()).agent.id).to.equal(registered.agent.id);
  });

  it("a copy of a buyer's settled payment does not read the skill", async () => {
    const seller = await registerAgent(svc, 'secret-seller');
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: 'Secret skill',
          preview: 'p',
          priceAtomic: '2000000',
          body: skillBody('secret-skill', 'TOP SECRET'),
        },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const buyer = await newBuyer(chain());
    expect((await buyer.payV1(`${svc.url}/api/posts/${post.id}?view=full`)).status).to.equal(200);
    const published = await publishedAuthorization(buyer.address);

    for (const signature of [published.signature, `0x${'22'.repeat(65)}`]) {
      const res = await fetch(`${svc.url}/api/posts/${post.id}?view=full`, {
        headers: { 'X-PAYMENT': v1Header(published, signature) },
      });
      expect(res.status).to.equal(402);
      expect(await res.text()).to.not.contain('TOP SECRET');
    }
  });

  it('an authorization valid for longer than a day is refused, not a 500', async () => {
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, 'far-future');
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 1,
        scheme: 'exact',
        network: 'base-sepolia',
        payload: {
          signature: `0x${'11'.repeat(65)}`,
          authorization: {
            from: buyer.address,
            to: chain().treasury,
            value: '1000000',
            validAfter: '0',
            validBefore: (2n ** 255n).toString(),
            nonce: `0x${'ab'.repeat(32)}`,
          },
        },
      }),
    ).toString('base64');
    const res = await postVerify(svc.url, body, fetch, { 'X-PAYMENT': header });
    expect(res.status).to.equal(402);
    expect((await res.json()).code).to.equal('invalid_exact_evm_payload_authorization_valid_before');
  });
  it("a transaction that burns a claimed authorization's nonce on another transfer and pays the seller separately does not settle the purchase", async () => {
    const { db } = svc.service.runtime.database;
    const seller = await registerAgent(svc, 'burnt-seller');
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: { title: 'Burnt skill', preview: 'p', priceAtomic: '2000000', body: skillBody('burnt-skill', 'x') },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const buyer = await newBuyer(chain());
    const price = 2_000_000n;
    // The authorization the service was sent and claimed: nonce N, the price to the seller.
    const sent = await signAuthorization(buyer.account, chain(), { to: seller.address, value: price });
    const claim = await claimPayment(db, {
      purpose: 'purchase',
      protocolVersion: 2,
      network: `eip155:${chain().chainId}`,
      asset: chain().usdc.address,
      payer: buyer.address,
      payTo: seller.address,
      amountAtomic: price,
      nonce: sent.authorization.nonce,
      validAfter: new Date(Number(sent.authorization.validAfter) * 1000),
      validBefore: new Date(Number(sent.authorization.validBefore) * 1000),
      resource: `${svc.url}/api/posts/${post.id}?view=full`,
      postId: post.id,
      payload: {},
      requirements: {},
    });
    if (!claim.claimed) throw new Error('not claimed');

    // One transaction: nonce N burnt on one unit to another wallet, and the price paid to the
    // seller by a second authorization of its own.
    const burn = await signAuthorization(buyer.account, chain(), {
      to: privateKeyToAccount(generatePrivateKey()).address,
      value: 1n,
      nonce: sent.authorization.nonce,
    });
    const separate = await signAuthorization(buyer.account, chain(), { to: seller.address, value: price });
    const call = ({ authorization: a, signature }: typeof burn) => ({
      target: chain().usdc.address,
      allowFailure: false,
      callData: encodeFunctionData({
        abi: TOKEN,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, signature],
      }),
    });
    const sellerBefore = await balanceOf(chain(), seller.address);
    const sender = privateKeyToAccount(generatePrivateKey());
    await testClient(chain()).setBalance({ address: sender.address, value: parseEther('1') });
    const wallet = createWalletClient({
      account: sender,
      chain: localChain(chain().chainId, chain().rpcUrl),
      transport: http(chain().rpcUrl),
    });
    const hash = await wallet.writeContract({
      address: MULTICALL3_ADDRESS,
      abi: multicall3Abi,
      functionName: 'aggregate3',
      args: [[call(burn), call(separate)]],
    });
    const receipt = await chain().publicClient.waitForTransactionReceipt({ hash });
    expect(receipt.status).to.equal('success');
    expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + price);

    const deps = {
      db,
      facilitators: svc.service.runtime.facilitators,
      settlementEffects: svc.service.runtime.settlementEffects,
      publicClient: chain().publicClient,
      log: createLogger('silent'),
    };
    // Used on chain, but not by a transfer of its own to the seller: not settled, and looked at again.
    const resolving = await resolvePayment(deps, claim.payment.id).then(
      (r) => r,
      (err: unknown) => err,
    );
    expect(resolving).to.be.instanceOf(StillUnresolvedError);
    const row = await db
      .selectFrom('payments')
      .selectAll()
      .where('id', '=', claim.payment.id)
      .executeTakeFirstOrThrow();
    expect(row.status).to.not.equal('settled');
    expect(row.tx_hash).to.equal(null);
    const purchases = await db.selectFrom('purchases').selectAll().where('payment_id', '=', claim.payment.id).execute();
    expect(purchases).to.have.length(0);
  });
});
