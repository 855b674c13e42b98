import { expect } from 'chai';
import type { Payment } from '../../src/data/schema.js';
import { acceptPayment } from '../../src/domain/payments/protocol/payment-terms.js';
import { receiptOf, samePayment, storedFacilitatorRequest } from '../../src/domain/payments/ledger/payment-record.js';
import { requirementsV2, type DecodedPayment } from '../../src/domain/payments/protocol/x402-codec.js';
import { decodePaymentHeader, NOW, PAYER, SIGNATURE, TERMS, v1Header, v2Header } from '../support/payment-headers.js';

const NOW_MS = Number(NOW) * 1000;

const decoded = (headers: { v1?: string; v2?: string }): DecodedPayment => {
  const d = decodePaymentHeader(headers);
  if (!d) throw new Error('no payment decoded');
  return d;
};
const decodedV2 = (signature?: string): DecodedPayment => decoded({ v2: v2Header({}, {}, signature ?? SIGNATURE) });
const decodedV1 = (): DecodedPayment => decoded({ v1: v1Header('base-sepolia') });

/** A payment row as the paywall's claim writes it (JSON columns read back as plain objects). */
const row = (over: Partial<Payment>): Payment =>
  ({
    id: '00000000-0000-4000-8000-000000000001',
    network: 'eip155:84532',
    payer: PAYER.toLowerCase(),
    tx_hash: '0xfeed',
    ...over,
  }) as Payment;

/** What the payment row stores of an accepted payment, after a round trip through JSON. */
function stored(d: DecodedPayment): Payment {
  const accepted = acceptPayment(d, TERMS, NOW_MS);
  if (!accepted.ok) throw new Error(accepted.mismatch.detail);
  const { request } = accepted;
  return row({
    protocol_version: request.x402Version,
    payload: JSON.parse(JSON.stringify(request.payload)),
    requirements: JSON.parse(JSON.stringify(request.requirements)),
  });
}

describe('payment records: what a payment row holds of its x402 exchange', () => {
  it('when a v2 payment is retried, the facilitator gets the payload and v2 requirements it was claimed with', () => {
    const d = decodedV2();
    const request = storedFacilitatorRequest(stored(d));
    expect(request.x402Version).to.equal(2);
    expect(request.payload).to.deep.equal(JSON.parse(JSON.stringify(d.payload)));
    expect(request.requirements).to.deep.equal(requirementsV2(TERMS));
  });

  it('when a v1 payment is retried, the facilitator gets v1 requirements (maxAmountRequired, a v1 network name)', () => {
    const request = storedFacilitatorRequest(stored(decodedV1()));
    expect(request.x402Version).to.equal(1);
    if (request.x402Version !== 1) return;
    expect(request.requirements.maxAmountRequired).to.equal('1000000');
    expect(request.requirements.network).to.equal('base-sepolia');
    expect(request.payload.network).to.equal('base-sepolia');
  });

  it('when a record does not hold requirements of its own version, reading it back fails loudly', () => {
    const v1Row = stored(decodedV1());
    expect(() => storedFacilitatorRequest({ ...v1Row, protocol_version: 2 })).to.throw();
  });

  it('when the same signed authorization comes again, it is the same payment; another signature is not', () => {
    const record = stored(decodedV2());
    expect(samePayment(record.payload, decodedV2())).to.equal(true);
    expect(samePayment(record.payload, decodedV1())).to.equal(true);
    expect(samePayment(record.payload, decodedV2(`0x${'22'.repeat(65)}`))).to.equal(false);
    expect(samePayment({}, decodedV2())).to.equal(false);
  });

  it('the receipt of a settled payment names its transaction, CAIP-2 network and payer', () => {
    expect(receiptOf(row({}))).to.deep.equal({
      success: true,
      transaction: '0xfeed',
      network: 'eip155:84532',
      payer: PAYER.toLowerCase(),
    });
  });
});
