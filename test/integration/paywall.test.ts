import { expect } from 'chai';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { startTestService, type TestService } from '../support/service.js';
import { balanceOf, newBuyer, signAuthorization, v1Header, v2Header } from '../support/buyers.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import type { PaidResource } from '../../src/domain/payments/paywall/paywall.js';
import { paymentOfHeaders } from '../../src/api/http/x402-headers.js';
import type { PaymentTerms } from '../../src/domain/payments/protocol/x402-codec.js';

const ONE_USDC = 1_000_000n;

describe('x402 paywall: idempotency, replays and refusals (registration as the paid resource)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let handleNo = 0;
  const chain = () => svc.service.runtime.chain;
  const nextHandle = () => `payer-${++handleNo}`;

  before(async () => {
    svc = await startTestService();
  });
  after(async () => svc?.stop());

  /** The v2 requirement the service asks for, read from its own 402. */
  async function requirement(body: string): Promise<PaymentRequirements> {
    const res = await postVerify(svc.url, body);
    expect(res.status).to.equal(402);
    return decodePaymentRequiredHeader(res.headers.get('payment-required')!).accepts[0]!;
  }

  async function paymentCount(): Promise<number> {
    const row = await svc.service.runtime.database.db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  it('when a buyer sends the same payment header again, then it gets the same answer and is not charged twice', async () => {
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, nextHandle());
    const req = await requirement(body);
    const header = v2Header(
      req,
      await signAuthorization(buyer.account, chain(), { to: req.payTo as `0x${string}`, value: ONE_USDC }),
    );
    const first = await postVerify(svc.url, body, fetch, { 'PAYMENT-SIGNATURE': header });
    expect(first.status).to.equal(200);
    const firstBody = await first.json();
    const second = await postVerify(svc.url, body, fetch, { 'PAYMENT-SIGNATURE': header });
    expect(second.status).to.equal(200);
    const secondBody = await second.json();
    expect(secondBody.agent).to.deep.equal(firstBody.agent);
    expect(secondBody.paymentId).to.equal(firstBody.paymentId);
    expect(second.headers.get('payment-response')).to.equal(first.headers.get('payment-response'));
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - ONE_USDC);
  });

  it('when twenty requests carry one payment header at once, then it settles exactly once, one of them gets the agent and the others are told it is in progress or get that agent again', async () => {
    const buyer = await newBuyer(chain());
    const treasuryBefore = await balanceOf(chain(), chain().treasury);
    const paymentsBefore = await paymentCount();
    const body = await signedVerifyBody(svc.url, buyer.account, nextHandle());
    const req = await requirement(body);
    const header = v2Header(
      req,
      await signAuthorization(buyer.account, chain(), { to: req.payTo as `0x${string}`, value: ONE_USDC }),
    );
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => postVerify(svc.url, body, fetch, { 'PAYMENT-SIGNATURE': header })),
    );
    const bodies = await Promise.all(responses.map((r) => r.json()));
    // Copies answered while the payment is in flight are refused at once; those answered once it
    // settled are the registrant's own signed-in wallet again, which may read its agent.
    const ok = bodies.filter((_, i) => responses[i]!.status === 200);
    const refused = bodies.filter((_, i) => responses[i]!.status !== 200);
    expect(ok.length).to.be.at.least(1);
    expect(refused.map((b) => b.code)).to.deep.equal(Array(refused.length).fill('payment_in_progress'));
    expect(new Set(ok.map((b) => b.agent.id)).size).to.equal(1);
    expect(new Set(ok.map((b) => b.paymentId)).size).to.equal(1);
    expect(await paymentCount()).to.equal(paymentsBefore + 1);
    expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - ONE_USDC);
    expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore + ONE_USDC);
  });

  describe('each bad payment gets a 402 whose body names the reason, and moves no money', () => {
    const cases: Array<{
      name: string;
      reason: string;
      make: (ctx: {
        req: PaymentRequirements;
        buyer: Awaited<ReturnType<typeof newBuyer>>;
      }) => Promise<Record<string, string>>;
    }> = [
      {
        name: 'wrong amount',
        reason: 'invalid_exact_evm_payload_authorization_value_mismatch',
        make: async ({ req, buyer }) => ({
          'PAYMENT-SIGNATURE': v2Header(
            req,
            await signAuthorization(buyer.account, chain(), { to: req.payTo as `0x${string}`, value: 999_999n }),
          ),
        }),
      },
      {
        name: 'wrong recipient',
        reason: 'invalid_exact_evm_recipient_mismatch',
        make: async ({ req, buyer }) => ({
          'PAYMENT-SIGNATURE': v2Header(
            req,
            await signAuthorization(buyer.account, chain(), { to: buyer.address, value: ONE_USDC }),
          ),
        }),
      },
      {
        name: 'wrong asset',
        reason: 'invalid_exact_evm_asset_mismatch',
        make: async ({ req, buyer }) => {
          const other = privateKeyToAccount(generatePrivateKey()).address;
          return {
            'PAYMENT-SIGNATURE': v2Header(
              { ...req, asset: other },
              await signAuthorization(
                buyer.account,
                chain(),
                { to: req.payTo as `0x${string}`, value: ONE_USDC },
                { verifyingContract: other },
              ),
            ),
          };
        },
      },
      {
        name: 'wrong network',
        reason: 'invalid_exact_evm_network_mismatch',
        make: async ({ req, buyer }) => ({
          'PAYMENT-SIGNATURE': v2Header(
            { ...req, network: 'eip155:8453' },
            await signAuthorization(buyer.account, chain(), { to: req.payTo as `0x${string}`, value: ONE_USDC }),
          ),
        }),
      },
      {
        name: 'expired window',
        reason: 'invalid_exact_evm_payload_authorization_valid_before',
        make: async ({ req, buyer }) => {
          const past = BigInt(Math.floor(Date.now() / 1000) - 10);
          return {
            'PAYMENT-SIGNATURE': v2Header(
              req,
              await signAuthorization(buyer.account, chain(), {
                to: req.payTo as `0x${string}`,
                value: ONE_USDC,
                validAfter: past - 600n,
                validBefore: past,
              }),
            ),
          };
        },
      },
      {
        name: 'bad signature (signed by another key)',
        reason: 'invalid_exact_evm_signature',
        make: async ({ req, buyer }) => {
          const signed = await signAuthorization(privateKeyToAccount(generatePrivateKey()), chain(), {
            to: req.payTo as `0x${string}`,
            value: ONE_USDC,
          });
          return {
            'PAYMENT-SIGNATURE': v2Header(req, {
              ...signed,
              authorization: { ...signed.authorization, from: buyer.address },
            }),
          };
        },
      },
      {
        name: 'authorization already used on chain',
        reason: 'invalid_exact_evm_nonce_already_used',
        make: async ({ req, buyer }) => {
          // The payer spends the authorization elsewhere first (here: submits it to the token itself).
          const signed = await signAuthorization(buyer.account, chain(), {
            to: req.payTo as `0x${string}`,
            value: ONE_USDC,
          });
          const { createWalletClient, http, parseSignature } = await import('viem');
          const { localChain } = await import('../../src/platform/chain/clients.js');
          const { usdcAbi } = await import('../../src/platform/chain/usdc.js');
          const c = chain();
          const sender = createWalletClient({
            account: privateKeyToAccount(generatePrivateKey()),
            chain: localChain(c.chainId, c.rpcUrl),
            transport: http(c.rpcUrl),
          });
          const { r, s, v } = parseSignature(signed.signature);
          const a = signed.authorization;
          const { testClient } = await import('../support/anvil.js');
          await testClient(c).setBalance({ address: sender.account.address, value: 10n ** 18n });
          const hash = await sender.writeContract({
            address: c.usdc.address,
            abi: usdcAbi,
            functionName: 'transferWithAuthorization',
            args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s],
          });
          await c.publicClient.waitForTransactionReceipt({ hash });
          return { 'PAYMENT-SIGNATURE': v2Header(req, signed) };
        },
      },
      {
        name: 'malformed header',
        reason: 'invalid_payment_header',
        make: async () => ({ 'X-PAYMENT': 'not-base64-json' }),
      },
    ];

    for (const c of cases) {
      it(`${c.name}: 402 ${c.reason}`, async () => {
        const buyer = await newBuyer(chain());
        const body = await signedVerifyBody(svc.url, buyer.account, nextHandle());
        const req = await requirement(body);
        const headers = await c.make({ req, buyer });
        const before = await balanceOf(chain(), buyer.address);
        const res = await postVerify(svc.url, body, fetch, headers);
        expect(res.status).to.equal(402);
        const problem = await res.json();
        expect(problem.code).to.equal(c.reason);
        expect(problem.error).to.equal(c.reason);
        expect(problem.accepts).to.have.length(1);
        expect(res.headers.get('payment-required')).to.be.a('string');
        expect(await balanceOf(chain(), buyer.address)).to.equal(before);
      });
    }
  });

  for (const { buyerIs, funded } of [
    { buyerIs: 'funded', funded: true },
    { buyerIs: 'unfunded, so the settlement is refused too', funded: false },
  ]) {
    it(`when its claim is released before it is marked settling (the reconciler gave it up), then nothing is sent and the buyer is told to send it again (buyer ${buyerIs})`, async () => {
      const { runtime } = svc.service;
      const buyer = funded ? await newBuyer(chain()) : { account: privateKeyToAccount(generatePrivateKey()) };
      const spent = async () => (funded ? balanceOf(chain(), buyer.account.address) : 10_000_000n);
      const treasuryBefore = await balanceOf(chain(), chain().treasury);
      const terms: PaymentTerms = {
        amountAtomic: 10_000n,
        payTo: chain().treasury,
        asset: chain().usdc,
        chainId: chain().chainId,
        resourceUrl: `${svc.url}/released-while-preparing`,
        description: 'A resource whose claim is released while it is prepared',
        mimeType: 'application/json',
        maxTimeoutSeconds: 60,
      };
      const resource: PaidResource<undefined> = {
        purpose: 'purchase',
        terms,
        // What the reconciler does to a claim whose request has taken minutes.
        prepare: async (payment) => {
          await runtime.database.db.deleteFrom('payments').where('id', '=', payment.id).execute();
        },
        render: async () => ({ delivered: true }),
      };
      const challenge = runtime.paywall.challenge(resource);
      if (challenge.kind !== 'challenge') throw new Error('expected a 402 challenge');
      const req = challenge.challenge.v2.accepts[0]!;
      const signed = await signAuthorization(buyer.account, chain(), { to: chain().treasury, value: 10_000n });
      const outcome = await runtime.paywall.process(paymentOfHeaders({ v2: v2Header(req, signed) }), resource);
      expect(outcome).to.include({ kind: 'challenge', reason: 'payment_claim_expired', paymentId: undefined });
      expect(await spent()).to.equal(10_000_000n);
      expect(await balanceOf(chain(), chain().treasury)).to.equal(treasuryBefore);
    });
  }

  it('a v1 header for the wrong network is refused before any facilitator call', async () => {
    const buyer = await newBuyer(chain());
    const body = await signedVerifyBody(svc.url, buyer.account, nextHandle());
    const req = await requirement(body);
    const res = await postVerify(svc.url, body, fetch, {
      'X-PAYMENT': v1Header(
        'base',
        await signAuthorization(buyer.account, chain(), { to: req.payTo as `0x${string}`, value: ONE_USDC }),
      ),
    });
    expect(res.status).to.equal(402);
    expect((await res.json()).code).to.equal('invalid_exact_evm_network_mismatch');
  });

  it('payments can be polled: public fields for everyone, payer details for the parties', async () => {
    const buyer = await newBuyer(chain());
    const paid = await (
      await postVerify(svc.url, await signedVerifyBody(svc.url, buyer.account, nextHandle()), buyer.payV2)
    ).json();
    const anon = await (await fetch(`${svc.url}/api/payments/${paid.paymentId}`)).json();
    expect(anon).to.include({ status: 'settled' }).and.not.have.property('payer');
    const mine = await (
      await fetch(`${svc.url}/api/payments/${paid.paymentId}`, { headers: { authorization: `Bearer ${paid.token}` } })
    ).json();
    expect(mine).to.include({ payer: buyer.address, protocolVersion: 2 });
    const missing = await fetch(`${svc.url}/api/payments/00000000-0000-4000-8000-000000000000`);
    expect(missing.status).to.equal(404);
    expect((await missing.json()).code).to.equal('payment_not_found');
    const malformed = await fetch(`${svc.url}/api/payments/not-a-uuid`);
    expect(malformed.status).to.equal(400);
    expect((await malformed.json()).invalidParams[0].name).to.equal('paymentId');
  });
});
