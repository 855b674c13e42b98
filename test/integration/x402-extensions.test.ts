import { expect } from 'chai';
import { verifyTypedData, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http';
import type { PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { validateDiscoveryExtension } from '@x402/extensions/bazaar';
import {
  createReceiptDomain,
  prepareReceiptForEIP712,
  RECEIPT_TYPES,
  type EIP712SignedReceipt,
} from '@x402/extensions/offer-receipt';
import { PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier';
import {
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  wrapFetchWithSIWx,
  type SIWxExtension,
} from '@x402/extensions/sign-in-with-x';
import { decodeXPaymentResponse } from 'x402-fetch';
import { jobContext } from '../../src/bootstrap/service.js';
import { reconcilePaymentsJob } from '../../jobs/reconcile-payments.job.js';
import { startTestService, type TestService } from '../support/service.js';
import { balanceOf, identifiedPayer, newBuyer, signAuthorization, v2Header, type Buyer } from '../support/buyers.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { skillBody, skillName } from '../support/skills.js';

const PRICE = 2_500_000n;
const SKILL = {
  title: 'Invoice line-item parser',
  preview: 'Turns scanned invoices into line items with totals that add up.',
  body: skillBody('invoice-parser', '# Invoices\nversion one'),
  priceAtomic: PRICE.toString(),
  tags: ['invoices', 'ocr', 'accounting'],
  version: '1.0.0',
};

describe('x402 extensions: bazaar, sign-in-with-x, payment-identifier, offer-receipt', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;
  let postId: string;
  let otherPostId: string;
  /** The service's own origin: PUBLIC_BASE_URL is unset, so its site is http://localhost:<port>. */
  let origin: string;
  const chain = () => svc.service.runtime.chain;
  const db = () => svc.service.runtime.database.db;
  const fullUrl = (id = postId) => `${origin}/api/posts/${id}?view=full`;

  const count = async (table: 'payments' | 'purchases' | 'siwx_used_nonces') =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  async function publish(title: string): Promise<string> {
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: { ...SKILL, title, body: skillBody(skillName(title), '# Invoices\nversion one') },
    });
    const { id } = await created.json();
    expect((await seller.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
    return id;
  }

  async function challengeOf(res: Response): Promise<PaymentRequired> {
    expect(res.status).to.equal(402);
    return decodePaymentRequiredHeader(res.headers.get('payment-required')!);
  }

  before(async () => {
    svc = await startTestService();
    origin = svc.url.replace('127.0.0.1', 'localhost');
    seller = await registerAgent(svc, 'invoice-smith');
    postId = await publish('Invoice line-item parser');
    otherPostId = await publish('Receipt scanner');
  });
  after(async () => svc?.stop());

  describe('every 402 declares the extensions', () => {
    it('the full view of a skill: its listing, a Bazaar declaration, a SIWX challenge, payment-identifier and offer-receipt', async () => {
      const res = await fetch(fullUrl());
      const required = await challengeOf(res);
      expect(required.resource).to.include({ url: fullUrl(), serviceName: 'Invoice line-item parser' });
      expect(required.resource.tags).to.deep.equal(['invoices', 'ocr', 'accounting']);
      const ext = required.extensions ?? {};
      expect(validateDiscoveryExtension(ext.bazaar as never)).to.deep.include({ valid: true });
      expect(ext.bazaar).to.deep.include({ routeTemplate: '/api/posts/:postId' });
      const siwx = ext[SIGN_IN_WITH_X] as SIWxExtension;
      expect(siwx.info).to.include({ domain: new URL(origin).host, uri: fullUrl(), version: '1' });
      expect(siwx.info.nonce).to.match(/^[0-9a-f]{32}$/);
      expect(new Date(siwx.info.expirationTime!).getTime() - new Date(siwx.info.issuedAt).getTime()).to.equal(300_000);
      expect(siwx.supportedChains).to.deep.equal([{ chainId: `eip155:${chain().chainId}`, type: 'eip191' }]);
      expect(ext[PAYMENT_IDENTIFIER]).to.deep.include({ info: { required: false } });
      expect(ext['offer-receipt']).to.have.nested.property('info.receipts.format', 'eip712');
      const body = await res.json();
      expect(body.accepts, 'v1 clients still read the body').to.have.length(1);
      expect(body.extensions).to.have.property(SIGN_IN_WITH_X);
      expect(res.headers.get('access-control-expose-headers'))
        .to.include('PAYMENT-REQUIRED')
        .and.include('X-Payment-Id');
    });

    it('registration: POST /api/agents/verify without a body answers its 402 with the same extensions', async () => {
      const res = await fetch(`${origin}/api/agents/verify`, { method: 'POST' });
      const required = await challengeOf(res);
      expect(required.resource.serviceName).to.equal('Skill Market registration');
      const ext = required.extensions ?? {};
      expect(validateDiscoveryExtension(ext.bazaar as never)).to.deep.include({ valid: true });
      expect((ext[SIGN_IN_WITH_X] as SIWxExtension).info.uri).to.equal(`${origin}/api/agents/verify`);
      expect(ext).to.have.keys('bazaar', SIGN_IN_WITH_X, PAYMENT_IDENTIFIER, 'offer-receipt');
    });

    it('CORS lets a browser send SIGN-IN-WITH-X and read every x402 header', async () => {
      const res = await fetch(fullUrl(), { method: 'OPTIONS' });
      expect(res.headers.get('access-control-allow-headers')).to.include('SIGN-IN-WITH-X');
      const exposed = res.headers.get('access-control-expose-headers')!;
      for (const h of [
        'PAYMENT-REQUIRED',
        'PAYMENT-RESPONSE',
        'X-PAYMENT-RESPONSE',
        'X-Payment-Id',
        'EXTENSION-RESPONSES',
      ])
        expect(exposed).to.include(h);
    });
  });

  describe('a buyer without an agent', () => {
    let buyer: Buyer;

    it('pays with @x402/fetch and gets a receipt that verifies against the published key', async () => {
      buyer = await newBuyer(chain());
      const res = await buyer.payV2(fullUrl());
      expect(res.status).to.equal(200);
      expect(await res.json()).to.include({ versionLabel: '1.0.0' });
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response')!);
      await expectValidReceipt(settled.extensions, buyer.address, settled.transaction);
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    });

    it('reads it again with Sign-In-With-X and no JWT: the full view, private, and no second charge', async () => {
      const sellerBefore = await balanceOf(chain(), seller.address);
      const siwxFetch = wrapFetchWithSIWx(fetch, buyer.account);
      const res = await siwxFetch(fullUrl());
      expect(res.status).to.equal(200);
      expect(res.headers.get('cache-control')).to.equal('private, no-store');
      expect((await res.json()).files).to.have.length(1);
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
      expect(await balanceOf(chain(), seller.address)).to.equal(sellerBefore);
    });

    it('an entitlement covers the versions the seller adds later', async () => {
      const v2 = await seller.api(`/api/posts/${postId}/versions`, {
        method: 'POST',
        json: { body: skillBody(skillName('Invoice line-item parser'), '# Invoices v2'), version: '2.0.0' },
      });
      expect(v2.status).to.equal(201);
      const res = await wrapFetchWithSIWx(fetch, buyer.account)(fullUrl());
      expect(res.status).to.equal(200);
      expect(await res.json()).to.include({ versionLabel: '2.0.0' });
    });

    describe('each refused proof gets 402 with its reason, moves no money and writes nothing', () => {
      const cases: Array<[string, string, () => Promise<string>]> = [
        ['a replayed header', 'invalid_siwx_nonce', async () => replayed()],
        ['another domain', 'invalid_siwx_domain_mismatch', () => proof(elsewhere)],
        ['another resource', 'invalid_siwx_uri_mismatch', () => proof({ uri: fullUrl(otherPostId) })],
        ['another chain', 'invalid_siwx_chain_id', () => proof({}, 'eip155:1')],
        ['an expired message', 'invalid_siwx_expired', () => proof(aged(240_000, -60_000))],
        ['a message issued too long ago', 'invalid_siwx_issued_at_too_old', () => proof(aged(600_000, 60_000))],
        ['a signature by another key', 'invalid_siwx_signature', () => proof({}, undefined, 'forged')],
        ['a wallet that did not buy', 'siwx_not_purchased', () => proof({}, undefined, 'stranger')],
      ];
      let usedHeader: string;
      // What a look-alike site would have a wallet sign: its own host and URL.
      const elsewhere = { domain: 'evil.example', uri: 'https://evil.example/api/posts/1?view=full' };

      /** A header that granted access once. */
      async function replayed(): Promise<string> {
        if (!usedHeader) {
          usedHeader = await proof({});
          expect((await fetch(fullUrl(), { headers: { [SIGN_IN_WITH_X]: usedHeader } })).status).to.equal(200);
        }
        return usedHeader;
      }

      for (const [name, code, header] of cases) {
        it(`${name}: 402 ${code}`, async () => {
          const h = await header();
          const before = await Promise.all([count('payments'), count('purchases'), count('siwx_used_nonces')]);
          const balance = await balanceOf(chain(), buyer.address);
          const res = await fetch(fullUrl(), { headers: { [SIGN_IN_WITH_X]: h } });
          const required = await challengeOf(res);
          expect(required.error).to.equal(code);
          expect(required.extensions).to.have.property(SIGN_IN_WITH_X);
          const body = await res.json();
          expect(body).to.include({ code, status: 402 });
          expect(body).to.not.have.property('files');
          expect(await Promise.all([count('payments'), count('purchases'), count('siwx_used_nonces')])).to.deep.equal(
            before,
          );
          expect(await balanceOf(chain(), buyer.address)).to.equal(balance);
        });
      }

      it('a header that is not base64 JSON, or larger than 8 KiB: 400 problem+json', async () => {
        const before = await count('siwx_used_nonces');
        for (const [h, code] of [
          ['not base64 !', 'invalid_siwx_header'],
          [Buffer.from('{"domain":1}').toString('base64'), 'invalid_siwx_header'],
          ['A'.repeat(9000), 'siwx_header_too_large'],
        ] as const) {
          const res = await fetch(fullUrl(), { headers: { [SIGN_IN_WITH_X]: h } });
          expect(res.status).to.equal(400);
          expect(res.headers.get('content-type')).to.include('application/problem+json');
          expect((await res.json()).code).to.equal(code);
        }
        expect(await count('siwx_used_nonces')).to.equal(before);
      });

      it('a refused proof beside a payment does not stop the payment', async () => {
        const payer = await newBuyer(chain());
        const bad = await proof(elsewhere);
        const res = await payer.payV2(fullUrl(otherPostId), { headers: { [SIGN_IN_WITH_X]: bad } });
        expect(res.status).to.equal(200);
        expect(await balanceOf(chain(), payer.address)).to.equal(10_000_000n - PRICE);
      });

      /** A proof built with the official client from the route's own challenge, with `changes` to it. */
      async function proof(
        changes: Partial<SIWxExtension['info']>,
        chainId?: string,
        signer: 'buyer' | 'forged' | 'stranger' = 'buyer',
      ): Promise<string> {
        const ext = (await challengeOf(await fetch(fullUrl()))).extensions![SIGN_IN_WITH_X] as SIWxExtension;
        const info = {
          ...ext.info,
          ...changes,
          chainId: chainId ?? ext.supportedChains[0]!.chainId,
          type: 'eip191' as const,
        };
        const other = privateKeyToAccount(generatePrivateKey());
        const account: PrivateKeyAccount = signer === 'buyer' ? buyer.account : other;
        const payload = await createSIWxPayload(info, account, `${new URL(info.uri).protocol}//${info.domain}/`);
        // A forged proof names the buyer but is signed by another key.
        return encodeSIWxHeader(signer === 'forged' ? { ...payload, address: buyer.address } : payload);
      }

      function aged(issuedAgoMs: number, expiresInMs: number) {
        return {
          issuedAt: new Date(Date.now() - issuedAgoMs).toISOString(),
          expirationTime: new Date(Date.now() + expiresInMs).toISOString(),
        };
      }
    });

    describe('copies and other clients', () => {
      it('two copies of one proof at once: one reads, the other gets 402 invalid_siwx_nonce', async () => {
        const ext = (await challengeOf(await fetch(fullUrl()))).extensions![SIGN_IN_WITH_X] as SIWxExtension;
        const payload = await createSIWxPayload(
          { ...ext.info, chainId: ext.supportedChains[0]!.chainId, type: 'eip191' },
          buyer.account,
          fullUrl(),
        );
        const header = encodeSIWxHeader(payload);
        const answers = await Promise.all(
          [1, 2].map(() => fetch(fullUrl(), { headers: { [SIGN_IN_WITH_X]: header } })),
        );
        expect(answers.map((r) => r.status).sort()).to.deep.equal([200, 402]);
        const refused = answers.find((r) => r.status === 402)!;
        expect((await refused.json()).code).to.equal('invalid_siwx_nonce');
      });

      it('a v1 client (x402-fetch) gets the signed receipt in X-PAYMENT-RESPONSE', async () => {
        const payer = await newBuyer(chain());
        const res = await payer.payV1(fullUrl(otherPostId));
        expect(res.status).to.equal(200);
        const settled = decodeXPaymentResponse(res.headers.get('x-payment-response')!) as {
          transaction: string;
          extensions?: Record<string, unknown>;
        };
        await expectValidReceipt(settled.extensions, payer.address, settled.transaction);
      });

      it('the reconciler forgets used nonces older than a challenge can live', async () => {
        await db()
          .insertInto('siwx_used_nonces')
          .values({ nonce: 'f'.repeat(32), address: buyer.address, resource: fullUrl(), used_at: new Date(0) })
          .execute();
        const fresh = await count('siwx_used_nonces');
        await reconcilePaymentsJob.run(jobContext(svc.service.runtime), {});
        expect(await count('siwx_used_nonces')).to.equal(fresh - 1);
      });
    });

    describe('after the seller unpublishes', () => {
      it('an entitlement survives unpublishing: the buyer still reads the skill with Sign-In-With-X', async () => {
        expect((await seller.api(`/api/posts/${postId}/unpublish`, { method: 'POST' })).status).to.equal(200);
        expect((await fetch(fullUrl())).status).to.equal(404);
        // The 402 of an unpublished post is gone, so the proof is built from the resource itself.
        const payload = await createSIWxPayload(
          {
            domain: new URL(origin).host,
            uri: fullUrl(),
            version: '1',
            nonce: Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('hex'),
            issuedAt: new Date().toISOString(),
            expirationTime: new Date(Date.now() + 60_000).toISOString(),
            chainId: `eip155:${chain().chainId}`,
            type: 'eip191',
          },
          buyer.account,
          fullUrl(),
        );
        const res = await fetch(fullUrl(), { headers: { [SIGN_IN_WITH_X]: encodeSIWxHeader(payload) } });
        expect(res.status).to.equal(200);
        expect(await res.json()).to.include({ versionLabel: '2.0.0' });
      });
    });
  });

  describe('sign-in at /api/agents/verify', () => {
    it('a wallet with an agent signs in with Sign-In-With-X alone and gets a JWT', async () => {
      const agent = await registerAgent(svc, 'siwx-login');
      const res = await wrapFetchWithSIWx(fetch, agent.account)(`${origin}/api/agents/verify`, { method: 'POST' });
      expect(res.status).to.equal(200);
      const body = await res.json();
      expect(body).to.include({ action: 'login', tokenType: 'Bearer' });
      expect(body.agent.handle).to.equal('siwx-login');
      const me = await fetch(`${svc.url}/api/agents/me`, { headers: { authorization: `Bearer ${body.token}` } });
      expect(me.status).to.equal(200);
    });

    it('a wallet without an agent gets 402 siwx_no_agent and nothing is written', async () => {
      const stranger = privateKeyToAccount(generatePrivateKey());
      const before = await count('siwx_used_nonces');
      const required = await challengeOf(await fetch(`${origin}/api/agents/verify`, { method: 'POST' }));
      const ext = required.extensions![SIGN_IN_WITH_X] as SIWxExtension;
      const payload = await createSIWxPayload(
        { ...ext.info, chainId: ext.supportedChains[0]!.chainId, type: 'eip191' },
        stranger,
        `${origin}/api/agents/verify`,
      );
      const res = await fetch(`${origin}/api/agents/verify`, {
        method: 'POST',
        headers: { [SIGN_IN_WITH_X]: encodeSIWxHeader(payload) },
      });
      expect((await challengeOf(res)).error).to.equal('siwx_no_agent');
      expect(await count('siwx_used_nonces')).to.equal(before);
    });
  });

  describe('payment-identifier', () => {
    it('the same PAYMENT-SIGNATURE sent again gets the first answer and one charge, also after settlement', async () => {
      const buyer = await newBuyer(chain());
      const id = `pay_${Date.now()}_same_answer`;
      const { pay, sent } = identifiedPayer(chain(), buyer.account, id);
      const first = await pay(fullUrl(otherPostId));
      expect(first.status).to.equal(200);
      const firstBody = await first.json();
      expect(sent).to.have.length(1);
      const stored = await db()
        .selectFrom('payments')
        .select('payment_identifier')
        .where('id', '=', first.headers.get('x-payment-id')!)
        .executeTakeFirstOrThrow();
      expect(stored.payment_identifier).to.equal(id);

      const again = await fetch(fullUrl(otherPostId), { headers: { 'PAYMENT-SIGNATURE': sent[0]! } });
      expect(again.status).to.equal(200);
      expect(await again.json()).to.deep.equal(firstBody);
      expect(again.headers.get('x-payment-id')).to.equal(first.headers.get('x-payment-id'));
      expect(again.headers.get('payment-response')).to.equal(first.headers.get('payment-response'));
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);

      // The same id with another payment (a new authorization): 409, nothing charged.
      const paymentsBefore = await count('payments');
      const other = await pay(fullUrl(otherPostId));
      expect(other.status).to.equal(409);
      expect((await other.json()).code).to.equal('payment_identifier_conflict');
      // EXTENSION-RESPONSES names the extension that refused it.
      expect(JSON.parse(Buffer.from(other.headers.get('extension-responses')!, 'base64').toString())).to.deep.equal({
        [PAYMENT_IDENTIFIER]: { status: 'rejected', rejectedReason: 'payment_identifier_conflict' },
      });
      expect(await count('payments')).to.equal(paymentsBefore);
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n - PRICE);
    });

    it('a malformed identifier gets 400 invalid_payment_identifier before any payment is recorded', async () => {
      const buyer = await newBuyer(chain());
      const required = await challengeOf(await fetch(fullUrl(otherPostId)));
      const accepted = required.accepts[0] as PaymentRequirements;
      const signed = await signAuthorization(buyer.account, chain(), { to: accepted.payTo as Address, value: PRICE });
      const payload = decodePaymentSignatureHeader(v2Header(accepted, signed));
      const paymentsBefore = await count('payments');
      for (const id of ['short', 'has spaces in it, and commas', 'x'.repeat(129)]) {
        const header = encodePaymentSignatureHeader({
          ...payload,
          extensions: { [PAYMENT_IDENTIFIER]: { info: { required: false, id } } },
        });
        const res = await fetch(fullUrl(otherPostId), { headers: { 'PAYMENT-SIGNATURE': header } });
        expect(res.status).to.equal(400);
        expect((await res.json()).code).to.equal('invalid_payment_identifier');
      }
      expect(await count('payments')).to.equal(paymentsBefore);
      expect(await balanceOf(chain(), buyer.address)).to.equal(10_000_000n);
    });
  });

  async function expectValidReceipt(extensions: Record<string, unknown> | undefined, payer: Address, tx: string) {
    expect(extensions).to.have.property('offer-receipt');
    const receipt = (extensions!['offer-receipt'] as { info: { receipt: EIP712SignedReceipt } }).info.receipt;
    expect(receipt.format).to.equal('eip712');
    expect(receipt.payload).to.include({ payer: payer.toLowerCase(), transaction: tx });
    const valid = await verifyTypedData({
      address: svc.service.runtime.receipts.address,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712(receipt.payload),
      signature: receipt.signature as `0x${string}`,
    });
    expect(valid).to.equal(true);
  }
});
