import { expect } from 'chai';
import { getAddress, type Address } from 'viem';
import type { Network, PaymentRequirements } from '@x402/core/types';
import { checkTerms } from '../../src/domain/payments/protocol/payment-terms.js';
import {
  PaymentPayloadError,
  type DecodedPayment,
  type PaymentTerms,
} from '../../src/domain/payments/protocol/x402-codec.js';
import {
  authorization,
  decodePaymentHeader,
  NONCE,
  NOW,
  PAY_TO,
  PAYER,
  SIGNATURE,
  TERMS,
  USDC,
  v1Header,
  v2Header,
  type WireAuthorization,
} from '../support/payment-headers.js';

/** The instant every check here runs at: whole seconds plus half of one (the checks count whole seconds). */
const NOW_MS = Number(NOW) * 1000 + 500;

const OTHER = getAddress('0x3333333333333333333333333333333333333333');

const v2 = (auth?: Partial<WireAuthorization>, accepted?: Partial<PaymentRequirements>): DecodedPayment =>
  decodePaymentHeader({ v2: v2Header(auth, accepted) })!;
const v1 = (network: string, auth?: Partial<WireAuthorization>): DecodedPayment =>
  decodePaymentHeader({ v1: v1Header(network, auth) })!;
const refusal = (d: DecodedPayment, terms: PaymentTerms = TERMS) => checkTerms(d, terms)?.reason;
const headerError = (headers: { v1?: string; v2?: string }) => {
  try {
    decodePaymentHeader(headers);
  } catch (err) {
    expect(err).to.be.instanceOf(PaymentPayloadError);
    return (err as Error).message;
  }
  throw new Error('the header was accepted');
};

describe('payment terms: what the paywall refuses before any facilitator or database work', () => {
  const realNow = Date.now;
  // The expiry checks read the clock: pinned, so a boundary is the same second on every run.
  beforeEach(() => {
    Date.now = () => NOW_MS;
  });
  afterEach(() => {
    Date.now = realNow;
  });

  it('accepts a v2 payment of exactly the price, to us, in our asset, on our chain, valid now', () => {
    expect(checkTerms(v2(), TERMS)).to.equal(undefined);
  });

  it('accepts a v1 payment naming our chain the v1 way (no asset: v1 binds it through the signature)', () => {
    const d = v1('base-sepolia');
    expect(d.asset).to.equal(undefined);
    expect(checkTerms(d, TERMS)).to.equal(undefined);
  });

  it('compares addresses without regard to case', () => {
    const lower: PaymentTerms = {
      ...TERMS,
      payTo: PAY_TO.toLowerCase() as Address,
      asset: { ...TERMS.asset, address: USDC.toLowerCase() as Address },
    };
    expect(checkTerms(v2(), lower)).to.equal(undefined);
    expect(checkTerms(v2({ to: PAY_TO.toLowerCase() }, { asset: USDC.toLowerCase() }), TERMS)).to.equal(undefined);
  });

  it('refuses a scheme other than exact', () => {
    const res = checkTerms(v2({}, { scheme: 'upto' }), TERMS);
    expect(res?.reason).to.equal('unsupported_scheme');
    expect(res?.detail).to.equal('Only the "exact" scheme is accepted, not "upto"');
    // x402 v1 knows no other scheme: such a header does not even decode.
    expect(headerError({ v1: v1Header('base-sepolia', {}, 'upto') })).to.match(
      /^X-PAYMENT is not an x402 v1 payment payload/,
    );
  });

  it('refuses another network: v2 must name our chain in CAIP-2, v1 by its v1 name', () => {
    const mainnet = refusal(v2({}, { network: 'eip155:8453' as Network }));
    expect(mainnet).to.equal('invalid_exact_evm_network_mismatch');
    expect(checkTerms(v2({}, { network: 'eip155:8453' as Network }), TERMS)?.detail).to.equal(
      'This resource is paid on eip155:84532, not eip155:8453',
    );
    // A v1 name in a v2 payment is not our chain's CAIP-2 id.
    expect(refusal(v2({}, { network: 'base-sepolia' as Network }))).to.equal('invalid_exact_evm_network_mismatch');
    expect(refusal(v1('base'))).to.equal('invalid_exact_evm_network_mismatch');
    expect(checkTerms(v1('base'), TERMS)?.detail).to.equal('This resource is paid on base-sepolia, not base');
    // The same payments on Base (8453) are the right ones there.
    const base: PaymentTerms = { ...TERMS, chainId: 8453 };
    expect(checkTerms(v2({}, { network: 'eip155:8453' as Network }), base)).to.equal(undefined);
    expect(checkTerms(v1('base'), base)).to.equal(undefined);
    // A chain x402 v1 has no name for (a local chain) can only be paid with v2.
    const local: PaymentTerms = { ...TERMS, chainId: 31337 };
    expect(refusal(v1('base-sepolia'), local)).to.equal('invalid_exact_evm_network_mismatch');
    expect(checkTerms(v2({}, { network: 'eip155:31337' as Network }), local)).to.equal(undefined);
  });

  it('refuses another asset', () => {
    const res = checkTerms(v2({}, { asset: OTHER }), TERMS);
    expect(res?.reason).to.equal('invalid_exact_evm_asset_mismatch');
    expect(res?.detail).to.equal(`This resource is paid in ${USDC}, not ${OTHER}`);
  });

  it('refuses an authorization paying someone else', () => {
    const res = checkTerms(v2({ to: OTHER }), TERMS);
    expect(res?.reason).to.equal('invalid_exact_evm_recipient_mismatch');
    expect(res?.detail).to.equal(`The authorization pays ${OTHER}; this resource is paid to ${PAY_TO}`);
  });

  it('refuses a value other than the price, more as well as less', () => {
    for (const value of ['999999', '1000001', '0']) {
      const res = checkTerms(v2({ value }), TERMS);
      expect(res?.reason, value).to.equal('invalid_exact_evm_payload_authorization_value_mismatch');
      expect(res?.detail, value).to.equal(
        `The authorization is for ${value} atomic units; the price is exactly 1000000`,
      );
    }
  });

  it('refuses an authorization valid for more than a day', () => {
    expect(checkTerms(v2({ validBefore: String(NOW + 86_400n) }), TERMS)).to.equal(undefined);
    const res = checkTerms(v2({ validBefore: String(NOW + 86_401n) }), TERMS);
    expect(res?.reason).to.equal('invalid_exact_evm_payload_authorization_valid_before');
    expect(res?.detail).to.equal('The authorization must expire within 86400 seconds');
  });

  it('refuses an authorization expired or valid for less than the 6 seconds a facilitator needs', () => {
    expect(checkTerms(v2({ validBefore: String(NOW + 6n) }), TERMS)).to.equal(undefined);
    for (const validBefore of [NOW + 5n, NOW, NOW - 3600n, 0n]) {
      const res = checkTerms(v2({ validBefore: String(validBefore) }), TERMS);
      expect(res?.reason, String(validBefore)).to.equal('invalid_exact_evm_payload_authorization_valid_before');
      expect(res?.detail).to.equal('The authorization has expired');
    }
  });

  it('refuses an authorization not valid yet', () => {
    expect(checkTerms(v2({ validAfter: String(NOW) }), TERMS)).to.equal(undefined);
    const res = checkTerms(v2({ validAfter: String(NOW + 1n) }), TERMS);
    expect(res?.reason).to.equal('invalid_exact_evm_payload_authorization_valid_after');
    expect(res?.detail).to.equal('The authorization is not valid yet');
  });

  it('names the first thing wrong, in the order scheme, network, asset, recipient, value, expiry, start', () => {
    const allWrong = { value: '1', to: OTHER, validBefore: String(NOW + 1n), validAfter: String(NOW + 60n) };
    expect(refusal(v2(allWrong, { scheme: 'upto', network: 'eip155:1' as Network, asset: OTHER }))).to.equal(
      'unsupported_scheme',
    );
    expect(refusal(v2(allWrong, { network: 'eip155:1' as Network, asset: OTHER }))).to.equal(
      'invalid_exact_evm_network_mismatch',
    );
    expect(refusal(v2(allWrong, { asset: OTHER }))).to.equal('invalid_exact_evm_asset_mismatch');
    expect(refusal(v2(allWrong))).to.equal('invalid_exact_evm_recipient_mismatch');
    expect(refusal(v2({ ...allWrong, to: PAY_TO }))).to.equal('invalid_exact_evm_payload_authorization_value_mismatch');
    expect(refusal(v2({ ...allWrong, to: PAY_TO, value: '1000000' }))).to.equal(
      'invalid_exact_evm_payload_authorization_valid_before',
    );
    expect(refusal(v2({ ...allWrong, to: PAY_TO, value: '1000000', validBefore: String(NOW + 300n) }))).to.equal(
      'invalid_exact_evm_payload_authorization_valid_after',
    );
  });
});

describe('x402 payment headers: what the paywall reads from PAYMENT-SIGNATURE and X-PAYMENT', () => {
  it('reads nothing when neither header is sent', () => {
    expect(decodePaymentHeader({})).to.equal(undefined);
    expect(decodePaymentHeader({ v1: '', v2: '' })).to.equal(undefined);
  });

  it('reads a v2 payment: the network and asset it accepted and the authorization as numbers, the payload as received', () => {
    const header = v2Header({ to: PAY_TO.toLowerCase(), nonce: NONCE.toUpperCase().replace('0X', '0x') });
    const d = decodePaymentHeader({ v2: header })!;
    expect(d.version).to.equal(2);
    expect(d.scheme).to.equal('exact');
    expect(d.network).to.equal('eip155:84532');
    expect(d.asset).to.equal(USDC);
    expect(d.authorization).to.deep.equal({
      from: PAYER,
      to: PAY_TO,
      value: 1_000_000n,
      validAfter: NOW - 600n,
      validBefore: NOW + 300n,
      nonce: NONCE,
    });
    expect(JSON.parse(Buffer.from(header, 'base64').toString())).to.deep.equal(d.payload);
  });

  it('reads a v1 payment, which names no asset', () => {
    const d = decodePaymentHeader({ v1: v1Header('base-sepolia') })!;
    expect(d.version).to.equal(1);
    expect(d.network).to.equal('base-sepolia');
    expect(d.asset).to.equal(undefined);
    expect(d.authorization.value).to.equal(1_000_000n);
  });

  it('prefers PAYMENT-SIGNATURE when both headers are sent', () => {
    expect(decodePaymentHeader({ v1: v1Header('base-sepolia'), v2: v2Header() })!.version).to.equal(2);
    expect(decodePaymentHeader({ v1: 'not even base64', v2: v2Header() })!.version).to.equal(2);
  });

  it('takes the numbers of the authorization as decimal strings or as safe integers', () => {
    const d = decodePaymentHeader({ v2: v2Header({ value: 1_000_000, validAfter: 0 }) })!;
    expect(d.authorization.value).to.equal(1_000_000n);
    expect(d.authorization.validAfter).to.equal(0n);
    expect(
      decodePaymentHeader({ v2: v2Header({ value: (2n ** 256n - 1n).toString() }) })!.authorization.value,
    ).to.equal(2n ** 256n - 1n);
  });

  it('refuses a PAYMENT-SIGNATURE that is not a v2 payment payload', () => {
    expect(headerError({ v2: '%%% not base64 %%%' })).to.match(/^PAYMENT-SIGNATURE is not base64 JSON/);
    expect(headerError({ v2: Buffer.from('{"x402Version":').toString('base64') })).to.match(
      /^PAYMENT-SIGNATURE is not base64 JSON/,
    );
    // A v1 payload sent in the v2 header.
    expect(headerError({ v2: v1Header('base-sepolia') })).to.equal(
      'PAYMENT-SIGNATURE is not an x402 v2 payment payload',
    );
    const noAccepted = Buffer.from(
      JSON.stringify({ x402Version: 2, payload: { signature: SIGNATURE, authorization: authorization() } }),
    ).toString('base64');
    expect(headerError({ v2: noAccepted })).to.equal('PAYMENT-SIGNATURE is not an x402 v2 payment payload');
  });

  it('refuses an X-PAYMENT that is not a v1 payment payload', () => {
    expect(headerError({ v1: Buffer.from('{}').toString('base64') })).to.match(
      /^X-PAYMENT is not an x402 v1 payment payload/,
    );
    // x402 v1 has names only for the chains it knows.
    expect(headerError({ v1: v1Header('eip155:84532') })).to.match(/^X-PAYMENT is not an x402 v1 payment payload/);
    // Base64 is read strictly: a valid payload with stray characters, or a second block after
    // its padding, is not the payload it looks like.
    const valid = v1Header('base-sepolia');
    expect(headerError({ v1: `${valid.slice(0, 8)}!!${valid.slice(8)}` })).to.equal(
      'X-PAYMENT is not an x402 v1 payment payload: Invalid character',
    );
    expect(headerError({ v1: `${Buffer.from('{}').toString('base64')}${valid}` })).to.match(
      /^X-PAYMENT is not an x402 v1 payment payload/,
    );
  });

  it('refuses an authorization that is not a well-formed EIP-3009 authorization', () => {
    const refused = (auth: Partial<WireAuthorization>, signature?: unknown) =>
      headerError({ v2: v2Header(auth, {}, signature) });
    const prefix = 'payment payload has no valid EIP-3009 authorization: ';
    expect(refused({ nonce: '0xabcd' })).to.equal(`${prefix}nonce must be 32 bytes of hex`);
    expect(refused({}, 'not hex')).to.equal(`${prefix}signature must be hex bytes`);
    expect(refused({}, '0x123')).to.equal(`${prefix}signature must be hex bytes`);
    expect(refused({ from: '0x12' })).to.match(
      /^payment payload has no valid EIP-3009 authorization: Address "0x12" is invalid/,
    );
    expect(refused({ to: 'treasury' })).to.match(
      /^payment payload has no valid EIP-3009 authorization: Address "treasury" is invalid/,
    );
    for (const value of ['-1', '01', '1.5', '1e6', '', '0x10', 1.5, -1, Number.MAX_SAFE_INTEGER + 1, null]) {
      expect(refused({ value }), String(value)).to.equal(`${prefix}value must be a non-negative decimal integer`);
    }
    expect(refused({ value: (2n ** 256n).toString() })).to.equal(`${prefix}value does not fit in uint256`);
    expect(refused({ validBefore: '9'.repeat(79) })).to.equal(
      `${prefix}validBefore must be a non-negative decimal integer`,
    );
    expect(refused({ validAfter: 'soon' })).to.equal(`${prefix}validAfter must be a non-negative decimal integer`);
  });

  it('refuses text PostgreSQL cannot store, naming where it is', () => {
    expect(headerError({ v2: v2Header({}, { extra: { name: 'USD\u0000C', version: '2' } }) })).to.equal(
      'PAYMENT-SIGNATURE field accepted.extra.name contains a NUL character',
    );
    expect(headerError({ v2: v2Header({}, { extra: { '\uD800': 1 } }) })).to.equal(
      'PAYMENT-SIGNATURE field accepted.extra.\uD800 its name contains an unpaired UTF-16 surrogate (not valid Unicode)',
    );
  });
});
