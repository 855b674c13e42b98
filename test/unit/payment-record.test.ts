import { expect } from 'chai';
import { getAddress } from 'viem';
import { encodePaymentSignatureHeader } from '@x402/core/http';
import type { Payment } from '../../src/data/schema.js';
import { acceptPayment } from '../../src/domain/payments/payment-terms.js';
import { receiptOf, samePayment, storedFacilitatorRequest } from '../../src/domain/payments/payment-record.js';
import {
  decodePaymentHeader,
  requirementsV2,
  type DecodedPayment,
  type PaymentTerms,
} from '../../src/domain/payments/x402-codec.js';

const NOW = 1_800_000_000n;
const NOW_MS = Number(NOW) * 1000;
const PAY_TO = getAddress('0x2222222222222222222222222222222222222222');
const PAYER = getAddress('0x1111111111111111111111111111111111111111');
const USDC = getAddress('0x036cbd53842c5426634e7929541ec2318f3dcf7e');
const NONCE = `0x${'ab'.repeat(32)}`;
const SIGNATURE = `0x${'11'.repeat(65)}`;

/** A resource on Base Sepolia (84532), which x402 v1 calls base-sepolia. */
const TERMS: PaymentTerms = {
  amountAtomic: 1_000_000n,
  payTo: PAY_TO,
  asset: { address: USDC, name: 'USDC', version: '2', decimals: 6 },
  chainId: 84532,
  resourceUrl: 'https://market.example/api/posts/1?view=full',
  description: 'A skill',
  mimeType: 'application/json',
  maxTimeoutSeconds: 60,
};

const signed = (signature = SIGNATURE) => ({
  signature,
  authorization: {
    from: PAYER,
    to: PAY_TO,
    value: '1000000',
    validAfter: String(NOW - 600n),
    validBefore: String(NOW + 300n),
    nonce: NONCE,
  },
});

const decodedV2 = (signature?: string): DecodedPayment => {
  const d = decodePaymentHeader({
    v2: encodePaymentSignatureHeader({ x402Version: 2, accepted: requirementsV2(TERMS), payload: signed(signature) }),
  });
  if (!d) throw new Error('no payment decoded');
  return d;
};

const decodedV1 = (): DecodedPayment => {
  const header = Buffer.from(
    JSON.stringify({ x402Version: 1, scheme: 'exact', network: 'base-sepolia', payload: signed() }),
  ).toString('base64');
  const d = decodePaymentHeader({ v1: header });
  if (!d) throw new Error('no payment decoded');
  return d;
};

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
