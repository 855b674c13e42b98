import { expect } from 'chai';
import { verifyTypedData, type Address, type Hex } from 'viem';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { createReceiptDomain, prepareReceiptForEIP712, RECEIPT_TYPES } from '@x402/extensions/offer-receipt';
import { sql } from 'kysely';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { newBuyer } from '../support/buyers.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { skillBody } from '../support/skills.js';

describe('payment receipts: signed, served, published with their key, mirrored in reputation', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let postId: string;
  let paymentId: string;
  let txHash: string;
  let buyerAddress: Address;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

  /** The receipt key as the site AgentCard publishes it: what a verifier trusts. */
  const publishedKey = async () => {
    const card = await (await get('/.well-known/agent-card.json')).json();
    const entry = card.capabilities.extensions.find((e: { uri: string }) => e.uri.includes('offer-and-receipt'));
    return entry.params as { address: Address; kid: string; format: string; receiptUrl: string };
  };

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'receipt-seller');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Receipted skill',
        preview: 'A skill bought to get a receipt.',
        priceAtomic: '1250000',
        body: skillBody('receipted-skill', '# receipted'),
      },
    });
    postId = (await created.json()).id;
    await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' });
    const buyer = await newBuyer(svc.service.runtime.chain);
    buyerAddress = buyer.address;
    const res = await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`);
    expect(res.status).to.equal(200);
    paymentId = res.headers.get('x-payment-id')!;
    txHash = decodePaymentResponseHeader(res.headers.get('payment-response')!).transaction;
  });
  after(async () => svc?.stop());

  it('a settled payment has a receipt that verifies with verifyTypedData against the key the site AgentCard publishes', async () => {
    const res = await get(`/api/payments/${paymentId}/receipt`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('cache-control')).to.match(/^public/);
    const receipt = await res.json();
    expect(receipt.format).to.equal('eip712');
    expect(receipt.payload).to.include({
      network: svc.service.runtime.chain.network,
      resourceUrl: `${svc.service.runtime.site.baseUrl}/api/posts/${postId}?view=full`,
      payer: buyerAddress.toLowerCase(),
      transaction: txHash,
    });
    const key = await publishedKey();
    expect(key.address).to.equal(receipt.signer.address);
    const valid = await verifyTypedData({
      address: key.address,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712(receipt.payload),
      signature: receipt.signature as Hex,
    });
    expect(valid).to.equal(true);
    // The route states the typed data a verifier needs, the same the extension defines.
    expect(receipt.eip712).to.deep.equal({
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
    });
    // A tampered receipt does not verify.
    const tampered = await verifyTypedData({
      address: key.address,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712({ ...receipt.payload, payer: seller.address }),
      signature: receipt.signature as Hex,
    });
    expect(tampered).to.equal(false);
  });

  it('the receipt is the same bytes every time (ETag, 304)', async () => {
    const first = await get(`/api/payments/${paymentId}/receipt`);
    const body = await first.text();
    const etag = first.headers.get('etag')!;
    expect(await (await get(`/api/payments/${paymentId}/receipt`)).text()).to.equal(body);
    expect((await get(`/api/payments/${paymentId}/receipt`, { headers: { 'if-none-match': etag } })).status).to.equal(
      304,
    );
  });

  it('no such payment: 404 payment_not_found; not settled yet: 409 payment_not_settled; not a payment id: 400', async () => {
    const missing = await get('/api/payments/00000000-0000-4000-8000-000000000000/receipt');
    expect(missing.status).to.equal(404);
    expect((await missing.json()).code).to.equal('payment_not_found');

    // A payment still in flight (its settlement sent, its outcome not known yet).
    const db = svc.service.runtime.database.db;
    const { rows } = await sql<{ id: string }>`
      INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce,
        valid_after, valid_before, resource, post_id, payload, requirements)
      SELECT purpose, 'settling', protocol_version, network, asset, payer, pay_to, amount_atomic, ${`0x${'77'.repeat(32)}`},
        valid_after, valid_before, resource, post_id, payload, requirements FROM payments WHERE id = ${paymentId}
      RETURNING id`.execute(db);
    const inFlight = await get(`/api/payments/${rows[0]!.id}/receipt`);
    expect(inFlight.status).to.equal(409);
    expect(inFlight.headers.get('content-type')).to.match(/^application\/problem\+json/);
    expect((await inFlight.json()).code).to.equal('payment_not_settled');

    expect((await get('/api/payments/not-a-payment/receipt')).status).to.equal(400);
  });

  it("the seller's reputation mirror carries each sale's proof of payment with the signed receipt", async () => {
    const event = await eventually(async () => {
      const res = await get(`/api/agents/${seller.handle}/reputation.json`);
      if (res.status !== 200) return undefined;
      const events = (await res.json()) as Array<{ proofOfPayment: Record<string, unknown> & { receipt: never } }>;
      return events.find((e) => e.proofOfPayment.txHash === txHash);
    });
    const key = await publishedKey();
    expect(event.proofOfPayment).to.deep.include({
      fromAddress: buyerAddress,
      toAddress: seller.address,
      chainId: svc.service.runtime.chain.chainId,
      txHash,
      receiptUrl: `${svc.service.runtime.site.baseUrl}/api/payments/${paymentId}/receipt`,
    });
    const receipt = event.proofOfPayment.receipt as { payload: never; signature: Hex };
    expect(receipt).to.deep.equal(
      (({ format, payload, signature }) => ({ format, payload, signature }))(
        await (await get(`/api/payments/${paymentId}/receipt`)).json(),
      ),
    );
    const valid = await verifyTypedData({
      address: key.address,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712(receipt.payload),
      signature: receipt.signature,
    });
    expect(valid).to.equal(true);
  });
});
