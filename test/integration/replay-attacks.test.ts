import { expect } from 'chai';
import { parseAbiItem } from 'viem';
import { startTestService, type TestService } from '../support/service.js';
import { newBuyer } from '../support/buyers.js';
import { registerAgent } from '../support/agents.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody } from '../support/skills.js';

const AuthorizationUsed = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');

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

  /** The authorization exactly as the settlement transaction published it. */
  async function publishedAuthorization(payer: `0x${string}`) {
    const [log] = await chain().publicClient.getLogs({
      address: chain().usdc.address,
      event: AuthorizationUsed,
      args: { authorizer: payer },
      fromBlock: 0n,
    });
    const tx = await chain().publicClient.getTransaction({ hash: log!.transactionHash! });
    const { decodeFunctionData } = await import('viem');
    const { usdcAbi } = await import('../../src/platform/chain/usdc.js');
    const { multicall3Abi } = await import('../../src/platform/chain/multicall3.js');
    // Settlements are batched: the token call is one of a Multicall3 aggregate3's calls.
    const batch = decodeFunctionData({ abi: multicall3Abi, data: tx.input });
    const inner = (batch.args?.[0] ?? []) as ReadonlyArray<{ callData: `0x${string}` }>;
    const calls = inner.map(
      (c) => decodeFunctionData({ abi: usdcAbi, data: c.callData }) as { args: readonly unknown[] },
    );
    const found = calls.find((c) => String(c.args[0]).toLowerCase() === payer.toLowerCase());
    if (!found) throw new Error(`no transfer of ${payer} in settlement ${tx.hash}`);
    const { args } = found;
    const [from, to, value, validAfter, validBefore, nonce, v, r, s] = args as [
      string,
      string,
      bigint,
      bigint,
      bigint,
      string,
      number,
      string,
      string,
    ];
    const { serializeSignature } = await import('viem');
    const signature = serializeSignature({ r: r as `0x${string}`, s: s as `0x${string}`, v: BigInt(v) });
    return {
      from,
      to,
      value: value.toString(),
      validAfter: validAfter.toString(),
      validBefore: validBefore.toString(),
      nonce,
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
});
