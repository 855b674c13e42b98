import { expect } from 'chai';
import { serializeErc6492Signature, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, signAuthorization, v1Header, v2Header, wire, x402Payer } from '../support/buyers.js';
import { registerAgent } from '../support/agents.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody } from '../support/skills.js';
import { testClient } from '../support/anvil.js';
import { buySkill, connectMcp, paymentRequiredOf } from '../support/mcp.js';
import { copyFromChain, copyFromMempool } from '../support/chain-copies.js';

const PRICE = 20_000n;
const SECRET = 'ONLY FOR THE PAYER';

/**
 * From the moment a settlement is broadcast, its calldata holds every authorization it settles,
 * signature included. These tests play an attacker who copies one from the mempool while the
 * settlement is pending and sends it beside the payer's own request: only the request whose claim
 * won is answered with what was paid for, over HTTP and over MCP, for purchases and registrations.
 */
describe('a copy of a payment still settling gets no paid answer', function () {
  this.timeout(60_000);
  let svc: TestService;
  const chain = () => svc.service.runtime.chain;
  let skills = 0;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  /** Settlement transactions the facilitator sent that are not mined yet. */
  const pendingSettlements = async () => {
    const { address } = privateKeyToAccount(chain().facilitatorPrivateKey!);
    return (
      (await chain().publicClient.getTransactionCount({ address, blockTag: 'pending' })) -
      (await chain().publicClient.getTransactionCount({ address, blockTag: 'latest' }))
    );
  };

  /**
   * Runs `pay` with blocks mined only on demand; once its settlement is in the mempool, runs
   * `attack` (the settlement still pending), then mines and returns both results.
   */
  async function whileSettling<P, A>(pay: () => Promise<P>, attack: () => Promise<A>) {
    const anvil = testClient(chain());
    await anvil.setAutomine(false);
    try {
      const paying = pay();
      paying.catch(() => undefined);
      await eventually(async () => (await pendingSettlements()) === 1, 10_000, 10);
      const attacked = await attack();
      // The settlement was still pending when every copy was answered: none of them waited for it.
      expect(await pendingSettlements()).to.equal(1);
      await anvil.mine({ blocks: 1 });
      return { paid: await paying, attacked };
    } finally {
      await anvil.setAutomine(true);
    }
  }

  async function skillOnSale() {
    const n = ++skills;
    const seller = await registerAgent(svc, `copied-seller-${n}`);
    const post = await (
      await seller.api('/api/posts', {
        method: 'POST',
        json: {
          title: `Copied skill ${n}`,
          preview: 'preview',
          body: skillBody(`copied-skill-${n}`, SECRET),
          priceAtomic: `${PRICE}`,
        },
      })
    ).json();
    await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
    const url = `${svc.url}/api/posts/${post.id}?view=full`;
    const requirements = decodePaymentRequiredHeader((await fetch(url)).headers.get('payment-required')!).accepts[0]!;
    return { seller, post, url, requirements };
  }

  it('over HTTP: copies in v1 and v2 get 409 payment_in_progress at once, the payer the skill, and the buyer is charged once', async () => {
    const { url, requirements, seller } = await skillOnSale();
    const buyer = await newBuyer(chain());
    const signed = await signAuthorization(buyer.account, chain(), { to: requirements.payTo as Address, value: PRICE });
    const sellerBefore = await balanceOf(chain(), seller.address);

    const { paid, attacked } = await whileSettling(
      () => fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header(requirements, signed) } }),
      async () => {
        const copy = await copyFromMempool(chain(), buyer.address);
        return Promise.all([
          fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header(requirements, copy) } }),
          fetch(url, { headers: { 'X-PAYMENT': v1Header('base-sepolia', copy) } }),
        ]);
      },
    );
    for (const copy of attacked) {
      expect(copy.status).to.equal(409);
      expect(copy.headers.get('content-type')).to.match(/^application\/problem\+json/);
      const text = await copy.text();
      expect(text).to.not.contain(SECRET);
      expect(JSON.parse(text).code).to.equal('payment_in_progress');
    }
    const paidText = await paid.text();
    expect(paid.status, paidText).to.equal(200);
    expect(paidText).to.contain(SECRET);

    // Once settled, the copy is told the payment is used, as before.
    const copy = await copyFromChain(chain(), buyer.address);
    const late = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': v2Header(requirements, copy) } });
    expect(late.status).to.equal(402);
    const lateText = await late.text();
    expect(lateText).to.not.contain(SECRET);
    expect(JSON.parse(lateText).code).to.equal('payment_already_used');

    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore + PRICE);
  });

  it('over MCP: a copy passed to buy_skill is a tool error payment_in_progress without the files, the payer gets them', async () => {
    const { post } = await skillOnSale();
    const buyer = await newBuyer(chain());
    const payerClient = await connectMcp(svc.url);
    const attackerClient = await connectMcp(svc.url);
    try {
      const required = paymentRequiredOf(await buySkill(payerClient, post.id));
      if (!required) throw new Error('buy_skill did not ask for a payment');
      const payment = await x402Payer(chain(), buyer.account).createPaymentPayload(required);

      const { paid, attacked } = await whileSettling(
        () => buySkill(payerClient, post.id, payment),
        async () => {
          const copy = await copyFromMempool(chain(), buyer.address);
          const copied: PaymentPayload = {
            x402Version: 2,
            accepted: required.accepts[0] as PaymentRequirements,
            payload: { signature: copy.signature, authorization: wire(copy.authorization) },
          };
          return buySkill(attackerClient, post.id, copied);
        },
      );
      expect(attacked.isError).to.equal(true);
      expect(JSON.stringify(attacked)).to.not.contain(SECRET);
      expect((attacked.structuredContent as { error: { code: string } }).error.code).to.equal('payment_in_progress');
      expect(paid.isError, JSON.stringify(paid)).to.not.equal(true);
      expect(JSON.stringify(paid)).to.contain(SECRET);
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    } finally {
      await payerClient.close();
      await attackerClient.close();
    }
  });

  it("on registration: a copy sent with the attacker's own sign-in gets no token, before or after settlement", async () => {
    const victim = await newBuyer(chain());
    const attacker = await newBuyer(chain(), 0n);
    const body = await signedVerifyBody(svc.url, victim.account, 'copied-victim');
    const required = await postVerify(svc.url, body);
    const requirements = decodePaymentRequiredHeader(required.headers.get('payment-required')!).accepts[0]!;
    const signed = await signAuthorization(victim.account, chain(), {
      to: requirements.payTo as Address,
      value: BigInt(requirements.amount),
    });

    const { paid, attacked } = await whileSettling(
      () => postVerify(svc.url, body, fetch, { 'PAYMENT-SIGNATURE': v2Header(requirements, signed) }),
      async () => {
        const copy = await copyFromMempool(chain(), victim.address);
        const own = await signedVerifyBody(svc.url, attacker.account, 'copied-attacker');
        return postVerify(svc.url, own, fetch, { 'PAYMENT-SIGNATURE': v2Header(requirements, copy) });
      },
    );
    expect(attacked.status).to.equal(409);
    const refused = await attacked.json();
    expect(refused.code).to.equal('payment_in_progress');
    expect(refused).to.not.have.property('token');
    expect(paid.status).to.equal(200);
    const registered = await paid.json();
    expect(registered.agent.handle).to.equal('copied-victim');
    expect(registered.token).to.be.a('string');

    const copy = await copyFromChain(chain(), victim.address);
    const own = await signedVerifyBody(svc.url, attacker.account, 'copied-attacker-2');
    const late = await postVerify(svc.url, own, fetch, { 'PAYMENT-SIGNATURE': v2Header(requirements, copy) });
    expect(late.status).to.equal(402);
    const lateBody = await late.json();
    expect(lateBody.code).to.equal('payment_already_used');
    expect(lateBody).to.not.have.property('token');
    expect(await balanceOf(chain(), victim.address)).to.equal(10_000_000n - BigInt(requirements.amount));
  });
  for (const wrapped of [false, true]) {
    it(`a header forged in a registered agent's name (another key's signature${wrapped ? ', wrapped as an ERC-6492 counterfactual wallet' : ''}) is refused and leaves nothing in its payments or its seller's`, async () => {
      const { url, requirements, seller } = await skillOnSale();
      const victim = await registerAgent(svc, `forged-victim-${wrapped ? 'wrapped' : 'plain'}`);
      const forged = await signAuthorization(privateKeyToAccount(generatePrivateKey()), chain(), {
        to: requirements.payTo as Address,
        value: PRICE,
      });
      const signature = wrapped
        ? serializeErc6492Signature({
            address: privateKeyToAccount(generatePrivateKey()).address,
            data: '0xdeadbeef',
            signature: forged.signature,
          })
        : forged.signature;
      const header = v2Header(requirements, {
        signature,
        authorization: { ...forged.authorization, from: victim.address },
      });
      const res = await fetch(url, { headers: { 'PAYMENT-SIGNATURE': header } });
      expect(res.status).to.equal(402);
      const problem = await res.json();
      if (!wrapped) expect(problem.code).to.equal('invalid_exact_evm_signature');
      expect(problem.code).to.match(/^[a-z0-9_]+$/);
      expect(problem).to.not.have.property('paymentId');
      for (const party of [victim, seller]) {
        const listed = await (await party.api('/api/payments')).json();
        const purchases = listed.items.filter((p: { purpose: string }) => p.purpose === 'purchase');
        expect(purchases.map((p: { payer?: string }) => p.payer?.toLowerCase())).to.not.include(
          victim.address.toLowerCase(),
        );
      }
      const rows = await svc.service.runtime.database.db
        .selectFrom('payments')
        .select('id')
        .where('payer', '=', victim.address.toLowerCase())
        .where('purpose', '=', 'purchase')
        .execute();
      expect(rows).to.have.length(0);
    });
  }
});
