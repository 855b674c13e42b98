import fc from 'fast-check';
import {
  getAddress,
  isAddress,
  maxUint256,
  parseSignature,
  serializeSignature,
  zeroAddress,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import type { PaymentRequirements } from '@x402/core/types';
import type { ChainHandle } from '../../src/platform/blockchain.js';
import { v1NetworkName } from '../../src/platform/chain/networks.js';
import { signAuthorization, wire, type Authorization } from './buyers.js';

/**
 * Payment headers for paid-path fuzzing with real EIP-3009 signatures: a valid authorization for a
 * paid resource, signed with viem, then changed in one way that must make the service refuse it
 * (amount, payee, asset, chain and network, validity window, nonce, payer, signature, reuse of a
 * settled authorization, protocol version, extensions, scheme). Each mutation says which refusal
 * codes it may get, so a run shows that every check of the paid path was reached. Honest variants
 * are hand-signed valid payments in unusual but acceptable shapes, which must be paid.
 */

/** The refusal codes of the paid path (docs/payments.md, "Refusals"). */
export const CODE = {
  header: 'invalid_payment_header',
  scheme: 'unsupported_scheme',
  network: 'invalid_exact_evm_network_mismatch',
  asset: 'invalid_exact_evm_asset_mismatch',
  recipient: 'invalid_exact_evm_recipient_mismatch',
  value: 'invalid_exact_evm_payload_authorization_value_mismatch',
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  signature: 'invalid_exact_evm_signature',
  simulation: 'invalid_exact_evm_transaction_simulation_failed',
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
  balance: 'invalid_exact_evm_insufficient_balance',
  alreadyUsed: 'payment_already_used',
  identifier: 'invalid_payment_identifier',
  identifierConflict: 'payment_identifier_conflict',
} as const;

/** What a registration mutant may also get: another mutant of the same registrant holds its claim. */
const REGISTRATION_IN_FLIGHT = ['handle_taken', 'wallet_registered'] as const;

/**
 * Where a change goes: into both the signature and the header (`resigned`), only into the header
 * while the signature covers the valid values (`header-only`), or only into the signature while
 * the header shows the valid values (`signature-only`, which passes every check of the terms and
 * reaches the token's own signature check).
 */
export type Resign = 'resigned' | 'header-only' | 'signature-only';

export type Mutation =
  | { kind: 'amount'; to: 'lower' | 'higher' | 'zero' | 'one' | 'double' | 'max-uint256'; how: Resign }
  | { kind: 'amount-text'; value: string | number | null }
  | { kind: 'payee'; to: 'treasury' | 'other-seller' | 'payer' | 'zero' | 'token' | 'random'; how: Resign }
  | {
      kind: 'asset';
      accepted: 'other-token' | 'random' | 'ours' | 'garbage' | 'absent';
      signedFor: 'other-token' | 'ours';
    }
  | { kind: 'domain'; change: 'chain-id-1' | 'chain-id-8453' | 'chain-id-next' | 'name' | 'version' | 'contract' }
  | { kind: 'network'; pick: number; signedFor: 'ours' | 'claimed' }
  | {
      kind: 'window';
      to: 'expired' | 'expiring' | 'not-yet-valid' | 'too-long' | 'inverted' | 'max-uint256';
      how: Resign;
    }
  | { kind: 'nonce'; how: 'header-only' | 'signature-only' | 'short' | 'not-hex' }
  | { kind: 'payer'; who: 'unfunded' | 'short-of-funds' | 'other-buyer' | 'zero' }
  | {
      kind: 'signature';
      how:
        | 'flip-bit'
        | 'other-signer'
        | 'swap-v'
        | 'high-s'
        | 'zero'
        | 'truncated'
        | 'extended'
        | 'erc6492-junk'
        | 'long-junk'
        | 'odd-hex'
        | 'not-hex'
        | 'too-long';
    }
  | { kind: 'reuse'; how: 'same-header' | 'other-version' | 'resigned-same-nonce'; pick: number; elsewhere: number }
  | {
      kind: 'version';
      how:
        | 'v2-as-x-payment'
        | 'v1-as-payment-signature'
        | 'v1-says-2'
        | 'v2-says-1'
        | 'v2-says-3'
        | 'version-as-text'
        | 'garbage-v2-beside-valid-v1'
        | 'wrong-v2-beside-valid-v1';
    }
  | {
      kind: 'extensions';
      shape:
        | 'string'
        | 'number'
        | 'true'
        | 'pid-null'
        | 'pid-no-info'
        | 'pid-required-missing'
        | 'pid-short'
        | 'pid-long'
        | 'pid-chars'
        | 'pid-id-number'
        | 'nul'
        | 'lone-surrogate'
        | 'pid-conflict';
    }
  | { kind: 'scheme'; scheme: string };

/** A mutated payment: who signs it, for which target, in which protocol version, changed how. */
export interface Mutant {
  target: number;
  signer: number;
  version: 1 | 2;
  /** Unknown extension members added to a v2 payload (ignored by the service: they change nothing). */
  junk?: Record<string, unknown>;
  mutation: Mutation;
}

/**
 * A valid hand-signed payment in a shape the service must accept: unknown or array `extensions`,
 * a payment-identifier (with an id, or only the declaration echoed), a signature with v as a
 * parity (0/1), or `accepted` fields that are not signed and disagree with the terms (amount,
 * payTo, extra, an asset that is not an address or is absent); the signed authorization decides.
 */
export type HonestVariant =
  | 'plain'
  | 'junk-extensions'
  | 'extensions-array'
  | 'identifier'
  | 'identifier-declared-only'
  | 'v-as-parity'
  | 'loose-accepted';

export interface HonestPayment {
  target: number;
  signer: number;
  version: 1 | 2;
  variant: HonestVariant;
  /** Which `accepted` field a loose-accepted variant changes. */
  pick: number;
}

/** A resource behind the paywall and what it asks for, read from its own 402. */
export interface PaidTarget {
  label: string;
  kind: 'purchase' | 'registration';
  method: 'GET' | 'POST';
  path: string;
  /** The signed sign-in body a registration posts. */
  body?: string;
  payTo: Address;
  price: bigint;
  /** The x402 v2 requirement of its 402 (`PAYMENT-REQUIRED`, accepts[0]). */
  accepted: PaymentRequirements;
}

/** A settled payment that carried no payment-identifier: a copy of it proves nothing and reads nothing. */
export interface SettledAuthorization {
  target: number;
  version: 1 | 2;
  header: string;
  account: PrivateKeyAccount;
  authorization: Authorization;
  signature: Hex;
}

export interface MutantContext {
  chain: ChainHandle;
  /** A second real EIP-3009 token (FiatTokenV2_2) on the same chain, held by the signers. */
  otherToken: { address: Address; name: string; version: string };
  identityRegistry: Address;
  targets: PaidTarget[];
  /** Funded wallets that sign mutants and honest payments. */
  signers: PrivateKeyAccount[];
  /** Holds no token at all. */
  unfunded: PrivateKeyAccount;
  /** Holds less than any price. */
  shortOfFunds: PrivateKeyAccount;
  treasury: Address;
  sellers: Address[];
  /** Grows while the run goes on: settled payments without an identifier. */
  settled: SettledAuthorization[];
  /** Grows while the run goes on: payment-identifiers of settled payments. */
  identifiers: string[];
}

/** A request ready to send, and what the service owes it. */
export interface PaidRequest {
  target: PaidTarget;
  headers: Record<string, string>;
  /** The refusal codes it may get; each names the check it reaches. Empty for an honest payment. */
  expected: readonly string[];
  /** Fresh authorizations it signed (reused ones excluded): none of these may ever be used on chain. */
  signed: Array<{ payer: Address; nonce: Hex }>;
  /** The payment-identifier an honest payment carries. */
  identifier?: string;
  /** An honest payment's authorization, for the pool of settled ones once it is paid. */
  settles?: Omit<SettledAuthorization, 'target'>;
}

const HEADER_V1 = 'X-PAYMENT';
const HEADER_V2 = 'PAYMENT-SIGNATURE';
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const ERC6492_MAGIC = '6492649264926492649264926492649264926492649264926492649264926492';

/** Networks a v2 payload may claim that are not ours (ours is filtered out at build time). */
const V2_NETWORKS = (chainId: number) => [
  'eip155:1',
  'eip155:8453',
  'eip155:84532',
  'base-sepolia',
  'base',
  `eip155:${chainId} `,
  `EIP155:${chainId}`,
  `eip155:0x${chainId.toString(16)}`,
  `eip155:0${chainId}`,
  '',
  'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
];
/** v1 network names: the first ones are names x402 v1 knows (a network mismatch), the rest it does not (a malformed header). */
const V1_KNOWN_NETWORKS = ['base', 'base-sepolia', 'polygon', 'avalanche', 'solana', 'iotex'];
const V1_UNKNOWN_NETWORKS = ['eip155:84532', 'ethereum', 'BASE-SEPOLIA', '', 'base-sepolia '];
const AMOUNT_TEXTS: Array<string | number | null> = [
  `1${'0'.repeat(78)}`,
  '-1',
  '0.5',
  '0x10',
  '1e6',
  '00',
  '',
  ' 1',
  1e30,
  -5,
  1.5,
  null,
];
const SCHEMES = ['upto', 'EXACT', '', 'exact ', 'permit2'];

const resign = fc.constantFrom<Resign>('resigned', 'header-only', 'signature-only');

/** Every mutation, weighted so that each family gets its share of a run. */
export const mutationArbitrary: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('amount' as const),
      to: fc.constantFrom('lower', 'higher', 'zero', 'one', 'double', 'max-uint256' as const),
      how: resign,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('amount-text' as const), value: fc.constantFrom(...AMOUNT_TEXTS) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('payee' as const),
      to: fc.constantFrom('treasury', 'other-seller', 'payer', 'zero', 'token', 'random' as const),
      how: resign,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant('asset' as const),
        accepted: fc.constantFrom('other-token', 'random' as const),
        signedFor: fc.constantFrom('other-token', 'ours' as const),
      }),
      fc.record({
        kind: fc.constant('asset' as const),
        accepted: fc.constantFrom('ours', 'garbage', 'absent' as const),
        signedFor: fc.constant('other-token' as const),
      }),
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('domain' as const),
      change: fc.constantFrom('chain-id-1', 'chain-id-8453', 'chain-id-next', 'name', 'version', 'contract' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('network' as const),
      pick: fc.nat(),
      signedFor: fc.constantFrom('ours', 'claimed' as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('window' as const),
      to: fc.constantFrom('expired', 'expiring', 'not-yet-valid', 'too-long', 'inverted', 'max-uint256' as const),
      how: resign,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('nonce' as const),
      how: fc.constantFrom('header-only', 'signature-only', 'short', 'not-hex' as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('payer' as const),
      who: fc.constantFrom('unfunded', 'short-of-funds', 'other-buyer', 'zero' as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('signature' as const),
      how: fc.constantFrom(
        'flip-bit',
        'other-signer',
        'swap-v',
        'high-s',
        'zero',
        'truncated',
        'extended',
        'erc6492-junk',
        'long-junk',
        'odd-hex',
        'not-hex',
        'too-long' as const,
      ),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('reuse' as const),
      how: fc.constantFrom('same-header', 'other-version', 'resigned-same-nonce' as const),
      pick: fc.nat(),
      elsewhere: fc.nat(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('version' as const),
      how: fc.constantFrom(
        'v2-as-x-payment',
        'v1-as-payment-signature',
        'v1-says-2',
        'v2-says-1',
        'v2-says-3',
        'version-as-text',
        'garbage-v2-beside-valid-v1',
        'wrong-v2-beside-valid-v1' as const,
      ),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('extensions' as const),
      shape: fc.constantFrom(
        'string',
        'number',
        'true',
        'pid-null',
        'pid-no-info',
        'pid-required-missing',
        'pid-short',
        'pid-long',
        'pid-chars',
        'pid-id-number',
        'nul',
        'lone-surrogate',
        'pid-conflict' as const,
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('scheme' as const), scheme: fc.constantFrom(...SCHEMES) }),
  },
);

/**
 * Unknown extension members: keys that are not `payment-identifier` (hostile ones included) with
 * any JSON the database can hold. Built with Object.fromEntries so `__proto__` is an own key.
 */
const junkArbitrary: fc.Arbitrary<Record<string, unknown>> = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom('__proto__', 'constructor', 'bazaar', 'offer-receipt', 'sign-in-with-x', 'Payment-Identifier'),
        fc.stringMatching(/^[a-z][a-z0-9-]{0,11}$/),
      ),
      fc.jsonValue({ maxDepth: 3 }),
    ),
    { minLength: 1, maxLength: 4 },
  )
  .map((entries) => Object.fromEntries(entries.filter(([k]) => k !== 'payment-identifier')));

/**
 * A mutant for one of the targets (purchases first, then registrations), signed by one of
 * `signers` funded wallets. Registrations get a smaller share: each costs a sign-in check on the
 * chain, and mutants of one registrant in flight together meet its handle's claim instead of
 * the check they target.
 */
export function mutantArbitrary(
  targets: { purchases: number; registrations: number },
  signers: number,
): fc.Arbitrary<Mutant> {
  const target = fc.oneof(
    { weight: 17, arbitrary: fc.nat({ max: targets.purchases - 1 }) },
    { weight: 3, arbitrary: fc.nat({ max: targets.registrations - 1 }).map((i) => targets.purchases + i) },
  );
  return fc.record({
    target,
    signer: fc.nat({ max: signers - 1 }),
    version: fc.constantFrom<1 | 2>(1, 2),
    junk: fc.option(junkArbitrary, { nil: undefined, freq: 4 }),
    mutation: mutationArbitrary,
  });
}

/** An honest hand-signed payment for one of `targets` purchase targets. */
export function honestArbitrary(targets: number, signers: number): fc.Arbitrary<HonestPayment> {
  return fc.record({
    target: fc.nat({ max: targets - 1 }),
    signer: fc.nat({ max: signers - 1 }),
    version: fc.constantFrom<1 | 2>(1, 2),
    variant: fc.constantFrom<HonestVariant>(
      'plain',
      'junk-extensions',
      'extensions-array',
      'identifier',
      'identifier-declared-only',
      'v-as-parity',
      'loose-accepted',
    ),
    pick: fc.nat(),
  });
}

/** What a payment header is made of before it is encoded; mutations change it. */
interface Draft {
  target: PaidTarget;
  version: 1 | 2;
  /** Who signs. */
  account: PrivateKeyAccount;
  /** What the signature covers. */
  signed: Authorization;
  /** What the header says, field for field (may hold values that are no uint256 at all). */
  shown: Record<keyof Authorization, unknown>;
  domain: { name?: string; version?: string; chainId?: number; verifyingContract?: Address };
  accepted: Record<string, unknown>;
  v1Network: string;
  v1Scheme: string;
  x402Version: unknown;
  extensions?: unknown;
  /** Changes the signature once it is made. */
  resignature?: (signature: Hex) => string;
  /** Which header carries it. */
  header: typeof HEADER_V1 | typeof HEADER_V2;
  /** Another header sent beside it, and the authorization that one signed. */
  beside?: Record<string, string>;
  besideSigned?: { payer: Address; nonce: Hex };
}

const nowSeconds = () => BigInt(Math.floor(Date.now() / 1000));
const randomNonce = (): Hex => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('hex')}`;
const randomAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const base64Json = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');
const validId = () => `fz_${Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('hex')}`;

/** A valid authorization of `account` for `target`: its price to its payee, valid from 10 minutes ago for 5 minutes. */
function validAuthorization(account: PrivateKeyAccount, target: PaidTarget): Authorization {
  const now = nowSeconds();
  return {
    from: account.address,
    to: target.payTo,
    value: target.price,
    validAfter: now - 600n,
    validBefore: now + 300n,
    nonce: randomNonce(),
  };
}

function newDraft(target: PaidTarget, version: 1 | 2, account: PrivateKeyAccount, ctx: MutantContext): Draft {
  const signed = validAuthorization(account, target);
  return {
    target,
    version,
    account,
    signed,
    shown: { ...signed },
    domain: {},
    accepted: { ...target.accepted },
    v1Network: v1NetworkName(ctx.chain.chainId) ?? 'base-sepolia',
    v1Scheme: 'exact',
    x402Version: version,
    header: version === 2 ? HEADER_V2 : HEADER_V1,
  };
}

/** Applies a change of the authorization where `how` says: signature, header, or both. */
function change(d: Draft, how: Resign, f: (a: Authorization) => Partial<Authorization>) {
  const changed = f(d.signed);
  if (how !== 'header-only') d.signed = { ...d.signed, ...changed };
  if (how !== 'signature-only') d.shown = { ...d.shown, ...changed };
}

/** The payload a draft encodes, in the shape of its version. */
function payloadOf(d: Draft, signature: string): Record<string, unknown> {
  const authorization = Object.fromEntries(
    Object.entries(d.shown).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]),
  );
  const inner = { signature, authorization };
  if (d.version === 1) return { x402Version: d.x402Version, scheme: d.v1Scheme, network: d.v1Network, payload: inner };
  return {
    x402Version: d.x402Version,
    accepted: d.accepted,
    payload: inner,
    ...(d.extensions !== undefined ? { extensions: d.extensions } : {}),
  };
}

async function signDraft(d: Draft, ctx: MutantContext): Promise<Hex> {
  const { signature } = await signAuthorization(d.account, ctx.chain, d.signed, d.domain);
  return signature;
}

/** The header of an already signed authorization, encoded in `version`. */
function headerOf(
  version: 1 | 2,
  target: PaidTarget,
  authorization: Authorization,
  signature: Hex,
  ctx: MutantContext,
): Record<string, string> {
  if (version === 2)
    return {
      [HEADER_V2]: base64Json({
        x402Version: 2,
        accepted: target.accepted,
        payload: { signature, authorization: wire(authorization) },
      }),
    };
  return {
    [HEADER_V1]: base64Json({
      x402Version: 1,
      scheme: 'exact',
      network: v1NetworkName(ctx.chain.chainId) ?? 'base-sepolia',
      payload: { signature, authorization: wire(authorization) },
    }),
  };
}

/** The codes a copy of a settled authorization gets at `target` (the terms are checked before the copy is recognised). */
function copyCodes(source: PaidTarget, target: PaidTarget, sameCopy: readonly string[]): readonly string[] {
  if (source.payTo.toLowerCase() !== target.payTo.toLowerCase()) return [CODE.recipient];
  if (source.price !== target.price) return [CODE.value];
  return sameCopy;
}

/** Builds the request of a mutant: signs what it signs, encodes what it sends, and says what it may get. */
export async function buildMutant(m: Mutant, ctx: MutantContext): Promise<PaidRequest> {
  const target = ctx.targets[m.target]!;
  const signer = ctx.signers[m.signer]!;
  const extra = target.kind === 'registration' ? REGISTRATION_IN_FLIGHT : [];
  const mutation = m.mutation;

  if (mutation.kind === 'reuse') {
    const request = await buildReuse(mutation, target, ctx);
    return { ...request, expected: [...request.expected, ...extra] };
  }

  // Extensions and a v2 `accepted` exist only in v2 payloads (x402 v1 drops unknown members).
  const version = mutation.kind === 'extensions' ? 2 : m.version;
  const d = newDraft(target, version, signer, ctx);
  if (version === 2 && m.junk) d.extensions = m.junk;
  const ours = ctx.chain.usdc.address;
  let expected: readonly string[];

  switch (mutation.kind) {
    case 'amount': {
      const price = target.price;
      const value = {
        lower: price - 1n,
        higher: price + 1n,
        zero: 0n,
        one: 1n,
        double: price * 2n,
        'max-uint256': maxUint256,
      }[mutation.to];
      change(d, mutation.how, () => ({ value }));
      // x402 v1 allows at most 18 digits of amount.
      expected =
        mutation.how === 'signature-only'
          ? [CODE.signature]
          : version === 1 && value.toString().length > 18
            ? [CODE.header]
            : [CODE.value];
      break;
    }
    case 'amount-text':
      d.shown.value = mutation.value;
      expected = [CODE.header];
      break;
    case 'payee': {
      const candidates: Record<typeof mutation.to, Address> = {
        treasury: ctx.treasury,
        'other-seller': ctx.sellers.find((s) => s.toLowerCase() !== target.payTo.toLowerCase())!,
        payer: signer.address,
        zero: zeroAddress,
        token: ours,
        random: randomAddress(),
      };
      const chosen = candidates[mutation.to];
      const to = chosen.toLowerCase() === target.payTo.toLowerCase() ? randomAddress() : chosen;
      change(d, mutation.how, () => ({ to }));
      expected = mutation.how === 'signature-only' ? [CODE.signature] : [CODE.recipient];
      break;
    }
    case 'asset': {
      const signedFor = version === 1 ? 'other-token' : mutation.signedFor;
      if (signedFor === 'other-token') d.domain = { verifyingContract: ctx.otherToken.address };
      if (version === 2) {
        if (mutation.accepted === 'other-token') d.accepted.asset = ctx.otherToken.address;
        if (mutation.accepted === 'random') d.accepted.asset = randomAddress();
        if (mutation.accepted === 'garbage') d.accepted.asset = 'not-an-address';
        if (mutation.accepted === 'absent') delete d.accepted.asset;
      }
      expected =
        version === 2 && (mutation.accepted === 'other-token' || mutation.accepted === 'random')
          ? [CODE.asset]
          : [CODE.signature];
      break;
    }
    case 'domain': {
      const chainId = ctx.chain.chainId;
      d.domain = {
        'chain-id-1': { chainId: 1 },
        'chain-id-8453': { chainId: chainId === 8453 ? 84532 : 8453 },
        'chain-id-next': { chainId: chainId + 1 },
        name: { name: ctx.chain.usdc.name === 'USD Coin' ? 'USDC' : 'USD Coin' },
        version: { version: ctx.chain.usdc.version === '1' ? '2' : '1' },
        contract: { verifyingContract: ctx.identityRegistry },
      }[mutation.change];
      expected = [CODE.signature];
      break;
    }
    case 'network': {
      const oursV2 = ctx.chain.network;
      const oursV1 = v1NetworkName(ctx.chain.chainId);
      if (version === 2) {
        const list = V2_NETWORKS(ctx.chain.chainId).filter((n) => n !== oursV2);
        const network = list[mutation.pick % list.length]!;
        d.accepted.network = network;
        expected = [CODE.network];
        const claimed = /^eip155:([1-9][0-9]*)$/.exec(network)?.[1];
        if (mutation.signedFor === 'claimed' && claimed) d.domain = { chainId: Number(claimed) };
      } else {
        const list = [...V1_KNOWN_NETWORKS, ...V1_UNKNOWN_NETWORKS].filter((n) => n !== oursV1);
        const network = list[mutation.pick % list.length]!;
        d.v1Network = network;
        expected = V1_KNOWN_NETWORKS.includes(network) ? [CODE.network] : [CODE.header];
        if (mutation.signedFor === 'claimed' && network === 'base') d.domain = { chainId: 8453 };
      }
      break;
    }
    case 'window': {
      const now = nowSeconds();
      const windows: Record<typeof mutation.to, Partial<Authorization>> = {
        expired: { validBefore: now - 60n },
        expiring: { validBefore: now + 2n },
        'not-yet-valid': { validAfter: now + 120n },
        'too-long': { validBefore: now + 86_400n + 600n },
        inverted: { validAfter: now + 300n, validBefore: now + 200n },
        'max-uint256': { validBefore: maxUint256 },
      };
      change(d, mutation.how, () => windows[mutation.to]);
      expected =
        mutation.how === 'signature-only'
          ? [CODE.signature]
          : mutation.to === 'not-yet-valid' || mutation.to === 'inverted'
            ? [CODE.validAfter]
            : [CODE.validBefore];
      break;
    }
    case 'nonce':
      if (mutation.how === 'header-only') d.shown.nonce = randomNonce();
      if (mutation.how === 'signature-only') d.signed = { ...d.signed, nonce: randomNonce() };
      if (mutation.how === 'short') d.shown.nonce = String(d.shown.nonce).slice(0, 64);
      if (mutation.how === 'not-hex') d.shown.nonce = `0x${'zz'.repeat(32)}`;
      expected = mutation.how === 'short' || mutation.how === 'not-hex' ? [CODE.header] : [CODE.signature];
      break;
    case 'payer':
      if (mutation.who === 'unfunded' || mutation.who === 'short-of-funds') {
        d.account = mutation.who === 'unfunded' ? ctx.unfunded : ctx.shortOfFunds;
        d.signed = { ...d.signed, from: d.account.address };
        d.shown = { ...d.shown, from: d.account.address };
        expected = [CODE.balance];
      } else {
        const other = ctx.signers.find((s) => s.address !== signer.address)!.address;
        d.shown.from = mutation.who === 'zero' ? zeroAddress : other;
        expected = [CODE.signature];
      }
      break;
    case 'signature':
      expected = mutateSignature(d, mutation.how, ctx);
      break;
    case 'version':
      expected = [mutation.how === 'wrong-v2-beside-valid-v1' ? CODE.value : CODE.header];
      await mutateVersion(d, mutation.how, ctx);
      break;
    case 'extensions':
      expected = mutateExtensions(d, mutation.shape, ctx);
      break;
    case 'scheme':
      if (version === 2) d.accepted.scheme = mutation.scheme;
      else d.v1Scheme = mutation.scheme;
      expected = [version === 2 ? CODE.scheme : CODE.header];
      break;
  }

  const signature = await signDraft(d, ctx);
  const sent = d.resignature ? d.resignature(signature) : signature;
  // The chain keys an authorization by its `from` and nonce: those signed, and those the header shows.
  const signed = [{ payer: d.signed.from, nonce: d.signed.nonce }];
  const { from, nonce } = d.shown;
  if (typeof from === 'string' && isAddress(from) && typeof nonce === 'string' && /^0x[0-9a-fA-F]{64}$/.test(nonce))
    signed.push({ payer: getAddress(from), nonce: nonce as Hex });
  if (d.besideSigned) signed.push(d.besideSigned);
  return {
    target,
    headers: { [d.header]: base64Json(payloadOf(d, sent)), ...d.beside },
    expected: [...expected, ...extra],
    signed,
  };
}

function mutateSignature(d: Draft, how: Extract<Mutation, { kind: 'signature' }>['how'], ctx: MutantContext) {
  const hex = (s: Hex) => s.slice(2);
  switch (how) {
    case 'flip-bit':
      d.resignature = (s) =>
        `0x${hex(s).slice(0, 20)}${(Number.parseInt(hex(s)[20]!, 16) ^ 1).toString(16)}${hex(s).slice(21)}`;
      return [CODE.signature];
    case 'other-signer':
      d.account = ctx.signers.find((s) => s.address !== d.signed.from)!;
      return [CODE.signature];
    case 'swap-v':
      d.resignature = (s) => `0x${hex(s).slice(0, 128)}${hex(s).slice(128) === '1b' ? '1c' : '1b'}`;
      return [CODE.signature];
    case 'high-s':
      // The same signature made malleable: the token takes only the lower half of s.
      d.resignature = (s) => {
        const p = parseSignature(s);
        const high = `0x${(SECP256K1_N - BigInt(p.s)).toString(16).padStart(64, '0')}` as Hex;
        return serializeSignature({ r: p.r, s: high, yParity: p.yParity ? 0 : 1 });
      };
      return [CODE.signature, CODE.simulation];
    case 'zero':
      d.resignature = () => `0x${'00'.repeat(65)}`;
      return [CODE.signature];
    case 'truncated':
      d.resignature = (s) => s.slice(0, 130);
      return [CODE.signature, CODE.simulation];
    case 'extended':
      d.resignature = (s) => `${s}ab`;
      return [CODE.signature, CODE.simulation];
    case 'erc6492-junk':
      d.resignature = (s) => `0x${'00'.repeat(96)}${hex(s)}${ERC6492_MAGIC}`;
      return [CODE.signature, CODE.simulation];
    case 'long-junk':
      d.resignature = () => `0x${'ab'.repeat(4096)}`;
      return [CODE.signature, CODE.simulation];
    case 'odd-hex':
      d.resignature = (s) => s.slice(0, 131);
      return [CODE.header];
    case 'not-hex':
      d.resignature = (s) => `0x${hex(s).slice(0, 128)}zz`;
      return [CODE.header];
    case 'too-long':
      d.resignature = () => `0x${'ab'.repeat(4097)}`;
      return [CODE.header];
  }
}

async function mutateVersion(d: Draft, how: Extract<Mutation, { kind: 'version' }>['how'], ctx: MutantContext) {
  const shape = (version: 1 | 2, x402Version: unknown, header: Draft['header']) => {
    d.version = version;
    d.x402Version = x402Version;
    d.header = header;
  };
  switch (how) {
    case 'v2-as-x-payment':
      return shape(2, 2, HEADER_V1);
    case 'v1-as-payment-signature':
      return shape(1, 1, HEADER_V2);
    case 'v1-says-2':
      return shape(1, 2, HEADER_V1);
    case 'v2-says-1':
      return shape(2, 1, HEADER_V2);
    case 'v2-says-3':
      return shape(2, 3, HEADER_V2);
    case 'version-as-text':
      return shape(d.version, String(d.version), d.header);
    case 'garbage-v2-beside-valid-v1':
      // A valid v1 payment, with a PAYMENT-SIGNATURE that is no payload: the v2 header decides.
      shape(1, 1, HEADER_V1);
      d.beside = { [HEADER_V2]: base64Json({ x402Version: 2, accepted: 'nothing', payload: [] }) };
      return;
    case 'wrong-v2-beside-valid-v1': {
      // A v2 payment for one unit more than the price, with a valid v1 payment of the price beside it.
      shape(2, 2, HEADER_V2);
      change(d, 'resigned', (a) => ({ value: a.value + 1n }));
      const valid = validAuthorization(d.account, d.target);
      const { signature } = await signAuthorization(d.account, ctx.chain, valid);
      d.beside = headerOf(1, d.target, valid, signature, ctx);
      d.besideSigned = { payer: d.account.address, nonce: valid.nonce };
      return;
    }
  }
}

function mutateExtensions(
  d: Draft,
  shape: Extract<Mutation, { kind: 'extensions' }>['shape'],
  ctx: MutantContext,
): readonly string[] {
  const junk = (d.extensions ?? {}) as Record<string, unknown>;
  const identifier = (extension: unknown) => {
    d.extensions = { ...junk, 'payment-identifier': extension };
  };
  switch (shape) {
    case 'string':
      d.extensions = 'payment-identifier';
      return [CODE.identifier];
    case 'number':
      d.extensions = 42;
      return [CODE.identifier];
    case 'true':
      d.extensions = true;
      return [CODE.identifier];
    case 'pid-null':
      identifier(null);
      return [CODE.identifier];
    case 'pid-no-info':
      identifier({});
      return [CODE.identifier];
    case 'pid-required-missing':
      identifier({ info: { id: validId() } });
      return [CODE.identifier];
    case 'pid-short':
      identifier({ info: { required: false, id: 'short-id' } });
      return [CODE.identifier];
    case 'pid-long':
      identifier({ info: { required: false, id: 'a'.repeat(129) } });
      return [CODE.identifier];
    case 'pid-chars':
      identifier({ info: { required: false, id: 'not a valid id, has spaces!' } });
      return [CODE.identifier];
    case 'pid-id-number':
      identifier({ info: { required: false, id: 1_234_567_890_123_456 } });
      return [CODE.identifier];
    case 'nul':
      identifier({ info: { required: false, id: `${validId()}\u0000` } });
      return [CODE.header];
    case 'lone-surrogate':
      d.extensions = { ...junk, note: 'broken \ud800 text' };
      return [CODE.header];
    case 'pid-conflict': {
      // A settled payment's identifier with another payment: the identifier proves the first one only.
      const known = ctx.identifiers[Number(BigInt(d.signed.nonce) % 1024n) % Math.max(ctx.identifiers.length, 1)];
      if (!known) {
        identifier({ info: { required: false, id: 'short-id' } });
        return [CODE.identifier];
      }
      identifier({ info: { required: false, id: known } });
      return [CODE.identifierConflict];
    }
  }
}

/** A settled authorization again: the same header, the same signature in the other version, or its nonce signed anew. */
async function buildReuse(
  mutation: Extract<Mutation, { kind: 'reuse' }>,
  mutantTarget: PaidTarget,
  ctx: MutantContext,
): Promise<PaidRequest> {
  const s = ctx.settled[mutation.pick % ctx.settled.length];
  if (!s) throw new Error('no settled payment to reuse yet: pay at least one before sending reuse mutants');
  const source = ctx.targets[s.target]!;
  const target = mutation.elsewhere % 3 === 0 ? source : mutantTarget;
  const same = target === source;
  switch (mutation.how) {
    case 'same-header':
      return {
        target,
        headers: { [s.version === 2 ? HEADER_V2 : HEADER_V1]: s.header },
        expected: same ? [CODE.alreadyUsed] : copyCodes(source, target, [CODE.alreadyUsed]),
        signed: [],
      };
    case 'other-version': {
      const copied = [CODE.alreadyUsed, CODE.nonceUsed];
      return {
        target,
        headers: headerOf(s.version === 2 ? 1 : 2, target, s.authorization, s.signature, ctx),
        expected: same ? copied : copyCodes(source, target, copied),
        signed: [],
      };
    }
    case 'resigned-same-nonce': {
      // The payer signs a new authorization for `target` with a nonce it already used: valid terms, used nonce.
      // Signed within the same second for the same terms it would be the very same authorization
      // (deterministic signatures), a copy rather than a new one: its deadline is moved by a second.
      const fresh = { ...validAuthorization(s.account, target), nonce: s.authorization.nonce };
      const authorization =
        fresh.validBefore === s.authorization.validBefore ? { ...fresh, validBefore: fresh.validBefore + 1n } : fresh;
      const { signature } = await signAuthorization(s.account, ctx.chain, authorization);
      return {
        target,
        headers: headerOf(mutation.elsewhere % 2 === 0 ? 1 : 2, target, authorization, signature, ctx),
        expected: [CODE.nonceUsed],
        signed: [],
      };
    }
  }
}

/** Builds an honest hand-signed payment: valid, and owed the paid answer. */
export async function buildHonest(h: HonestPayment, target: PaidTarget, ctx: MutantContext): Promise<PaidRequest> {
  const account = ctx.signers[h.signer]!;
  const v2Only = h.variant !== 'plain' && h.variant !== 'v-as-parity';
  const version = v2Only ? 2 : h.version;
  const d = newDraft(target, version, account, ctx);
  let identifier: string | undefined;
  switch (h.variant) {
    case 'plain':
      break;
    case 'junk-extensions':
      d.extensions = { 'x-unknown': { nested: [1, 'two', null] }, bazaar: 'echoed?' };
      break;
    case 'extensions-array':
      d.extensions = [1, 'two', null];
      break;
    case 'identifier':
      identifier = validId();
      d.extensions = { 'payment-identifier': { info: { required: false, id: identifier } } };
      break;
    case 'identifier-declared-only':
      d.extensions = { 'payment-identifier': { info: { required: false } } };
      break;
    case 'v-as-parity':
      d.resignature = (s) => `${s.slice(0, 130)}${s.slice(130) === '1b' ? '00' : '01'}`;
      break;
    case 'loose-accepted': {
      const loose: Array<(a: Record<string, unknown>) => void> = [
        (a) => {
          a.amount = '1';
        },
        (a) => {
          a.payTo = randomAddress();
        },
        (a) => {
          a.extra = { name: 'Another token', version: '9' };
        },
        (a) => {
          a.asset = 'not-an-address';
        },
        (a) => {
          delete a.asset;
        },
      ];
      loose[h.pick % loose.length]!(d.accepted);
      break;
    }
  }
  const signature = await signDraft(d, ctx);
  const sent = (d.resignature ? d.resignature(signature) : signature) as Hex;
  const header = base64Json(payloadOf(d, sent));
  return {
    target,
    headers: { [d.header]: header },
    expected: [],
    signed: [],
    identifier,
    // A payment with an identifier is delivered again to whoever sends that identifier: not a copy to reuse.
    settles: identifier ? undefined : { version, header, account, authorization: d.signed, signature: sent },
  };
}

/** A settled payment's authorization read back from the header an official client sent. */
export function settledFromHeader(
  header: string,
  version: 1 | 2,
  account: PrivateKeyAccount,
  target: number,
): SettledAuthorization {
  const payload = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {
    payload: { signature: Hex; authorization: Record<keyof Authorization, string> };
  };
  const a = payload.payload.authorization;
  return {
    target,
    version,
    header,
    account,
    signature: payload.payload.signature,
    authorization: {
      from: getAddress(a.from),
      to: getAddress(a.to),
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as Hex,
    },
  };
}

/** One line that names a mutant, for reports (junk extensions shortened). */
export function describeMutant(m: Mutant, target: PaidTarget): string {
  return `${JSON.stringify(m.mutation)} v${m.version} signer ${m.signer} -> ${target.label}${m.junk ? ` junk ${JSON.stringify(m.junk).slice(0, 120)}` : ''}`;
}
