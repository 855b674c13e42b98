import { expect } from 'chai';
import { getAddress, verifyTypedData, type Hex } from 'viem';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import {
  createReceiptDomain,
  prepareReceiptForEIP712,
  RECEIPT_TYPES,
  type EIP712SignedReceipt,
} from '@x402/extensions/offer-receipt';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { balanceOf, identifiedPayer, newBuyer } from '../support/buyers.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { postVerify, signedVerifyBody } from '../support/sign-in.js';
import { skillBody } from '../support/skills.js';

const PRICE = 1_750_000n;

/**
 * The whole journey of a client built only from official x402 packages, on the real chain: it
 * finds a skill through the Bazaar discovery API, buys it, reads it again with Sign-In-With-X,
 * repeats its request under the same payment identifier, and verifies its receipt against the key
 * the marketplace publishes; none of the repeats moves money. The v1 client still pays both routes.
 */
describe('x402 journey with the official clients: discover, buy, re-read, repeat, prove', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  /** The site's origin (PUBLIC_BASE_URL unset: http://localhost:<port>); SIWX binds to its host. */
  let origin: string;
  const chain = () => svc.service.runtime.chain;

  before(async () => {
    svc = await startTestService();
    origin = svc.url.replace('127.0.0.1', 'localhost');
    seller = await registerAgent(svc, 'tide-tables');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Tide table forecaster',
        preview: 'Predicts high and low tides for any harbour from its harmonic constants.',
        body: skillBody('tide-forecaster', '# Tides\nfirst edition'),
        priceAtomic: PRICE.toString(),
        tags: ['tides', 'marine'],
        version: '1.0.0',
      },
    });
    const { id } = await created.json();
    expect((await seller.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
  });
  after(async () => svc?.stop());

  it('finds, buys once, reads again and repeats without a second charge, and proves the purchase', async () => {
    // 1. Discovery, as any Bazaar client does it (the listings follow the feed indexer).
    const bazaar = withBazaar(new HTTPFacilitatorClient({ url: origin })).extensions.bazaar;
    const found = await eventually(
      async () => (await bazaar.search({ query: 'tide forecaster' })).resources.find((r) => r.serviceName),
      20_000,
    );
    expect(found.resource).to.match(/\/api\/posts\/[0-9a-f-]{36}\?view=full$/);
    expect(found.accepts[0]).to.include({ amount: PRICE.toString(), payTo: getAddress(seller.address) });

    // 2. Buy it with @x402/fetch, under a payment identifier.
    const buyer = await newBuyer(chain());
    const buyerBefore = await balanceOf(chain(), buyer.address);
    const sellerBefore = await balanceOf(chain(), seller.address);
    const { pay, sent } = identifiedPayer(chain(), buyer.account, `journey_${buyer.address.slice(2, 18)}`);
    const bought = await pay(found.resource);
    expect(bought.status).to.equal(200);
    const body = await bought.json();
    expect(body.files[0].content).to.contain('first edition');
    const paymentId = bought.headers.get('x-payment-id');
    const charged = async () => ({
      buyer: buyerBefore - (await balanceOf(chain(), buyer.address)),
      seller: (await balanceOf(chain(), seller.address)) - sellerBefore,
    });
    expect(await charged()).to.deep.equal({ buyer: PRICE, seller: PRICE });

    // 3. Read it again with Sign-In-With-X, no agent account, no JWT: free.
    const reread = await wrapFetchWithSIWx(fetch, buyer.account)(found.resource);
    expect(reread.status).to.equal(200);
    expect((await reread.json()).files).to.deep.equal(body.files);
    expect(await charged()).to.deep.equal({ buyer: PRICE, seller: PRICE });

    // 4. Repeat the paid request under the same payment identifier: the first answer again.
    expect(sent).to.have.length(1);
    const repeated = await fetch(found.resource, { headers: { 'PAYMENT-SIGNATURE': sent[0]! } });
    expect(repeated.status).to.equal(200);
    expect(repeated.headers.get('x-payment-id')).to.equal(paymentId);
    expect((await repeated.json()).files).to.deep.equal(body.files);
    expect(await charged()).to.deep.equal({ buyer: PRICE, seller: PRICE });

    // 5. The receipt in the settlement response verifies against the key the site AgentCard names,
    //    and the receipt route serves the same one.
    const settlement = decodePaymentResponseHeader(bought.headers.get('payment-response')!);
    const offerReceipt = settlement.extensions?.['offer-receipt'] as
      | { info: { receipt: EIP712SignedReceipt } }
      | undefined;
    expect(offerReceipt, 'the settlement response carries an offer-receipt').to.not.equal(undefined);
    const receipt = offerReceipt!.info.receipt;
    const card = await (await fetch(`${origin}/.well-known/agent-card.json`)).json();
    const signer = card.capabilities.extensions.find((e: { uri: string }) => e.uri.includes('offer-and-receipt')).params
      .address;
    const valid = await verifyTypedData({
      address: signer,
      domain: createReceiptDomain(),
      types: RECEIPT_TYPES,
      primaryType: 'Receipt',
      message: prepareReceiptForEIP712(receipt.payload),
      signature: receipt.signature as Hex,
    });
    expect(valid).to.equal(true);
    expect(receipt.payload).to.include({ resourceUrl: found.resource, transaction: settlement.transaction });
    expect(getAddress(receipt.payload.payer)).to.equal(buyer.address);
    const served = await (await fetch(`${origin}/api/payments/${paymentId}/receipt`)).json();
    expect(served.signature).to.equal(receipt.signature);
  });

  it('the official v1 client (x402-fetch) still pays a skill and a registration', async () => {
    const listed = await (await fetch(`${origin}/discovery/resources?type=http`)).json();
    const skill = listed.items.find((i: { resource: string }) => i.resource.includes('/api/posts/'));
    const buyer = await newBuyer(chain());
    const before = await balanceOf(chain(), buyer.address);
    const bought = await buyer.payV1(skill.resource);
    expect(bought.status).to.equal(200);
    expect(bought.headers.get('x-payment-response')).to.be.a('string');
    expect(before - (await balanceOf(chain(), buyer.address))).to.equal(PRICE);

    const registrant = await newBuyer(chain());
    const registered = await postVerify(
      origin,
      await signedVerifyBody(origin, registrant.account, 'v1-registrant'),
      registrant.payV1,
    );
    expect(registered.status).to.equal(200);
    expect((await registered.json()).action).to.equal('register');
  });
});

describe('X402_EXTENSIONS=false: plain x402', function () {
  this.timeout(90_000);
  let svc: TestService;

  before(async () => {
    svc = await startTestService({ X402_EXTENSIONS: 'false' });
  });
  after(async () => svc?.stop());

  it('declares no extension, signs no receipt, and still sells', async () => {
    const seller = await registerAgent(svc, 'plain-seller');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Plain skill',
        preview: 'Sold over plain x402.',
        body: skillBody('plain-skill', '# Plain'),
        priceAtomic: '10000',
      },
    });
    const { id } = await created.json();
    await seller.api(`/api/posts/${id}/publish`, { method: 'POST' });
    const url = `${svc.url}/api/posts/${id}?view=full`;

    const challenge = await fetch(url);
    expect(challenge.status).to.equal(402);
    const required = decodePaymentRequiredHeader(challenge.headers.get('payment-required')!);
    expect(required.extensions).to.equal(undefined);
    expect(required.resource).to.not.have.property('serviceName');

    const buyer = await newBuyer(svc.service.runtime.chain);
    const bought = await buyer.payV2(url);
    expect(bought.status).to.equal(200);
    expect(decodePaymentResponseHeader(bought.headers.get('payment-response')!).extensions).to.equal(undefined);

    // Without a Sign-In-With-X challenge, the official client has nothing to sign: the 402 stands.
    const reread = await wrapFetchWithSIWx(fetch, buyer.account)(url);
    expect(reread.status).to.equal(402);
  });
});
