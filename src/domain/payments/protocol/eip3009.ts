import {
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  isHex,
  parseAbi,
  parseEventLogs,
  type Address,
  type Hex,
  type Log,
} from 'viem';
import { authorizationTypes } from '@x402/evm';
import { multicall3Abi } from '../../../platform/chain/multicall3.js';
import { isTypedDataSigner } from '../../../platform/secp256k1.js';
import { v1NetworkName, type FacilitatorRequest } from './x402-codec.js';

/**
 * An EIP-3009 `transferWithAuthorization` as the built-in facilitator settles it in a batch: read
 * from a facilitator request, checked as the x402 exact scheme checks it, encoded as a call.
 */

export const EIP3009_TOKEN_ABI = parseAbi([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** One authorization's use as a receipt can prove it: who authorized, its nonce, and what it must have paid. */
export interface AuthorizationUse {
  token: Address;
  from: Address;
  nonce: Hex;
  to: Address;
  value: bigint;
}

/**
 * Whether a successful transaction's logs hold this authorization's own transfer: the token's
 * `AuthorizationUsed` for this payer and nonce, and right after it (the same call) the token's
 * `Transfer` of exactly this payer, payee and amount. Another transfer anywhere else in the
 * transaction is not this authorization's, however well it matches.
 */
export function paidBy(logs: readonly Log[], use: AuthorizationUse): boolean {
  return authorizationsPaid(logs, use.token).has(authorizationKey(use));
}

/**
 * Every authorization of the token a successful transaction's logs show paid, as `paidBy` decides
 * for one, keyed by `authorizationKey`. A batch's receipt is decoded once for all its payments:
 * asking `paidBy` for each of a batch's n payments would decode its 2n logs n times, hashing the
 * event selectors with keccak each time (a sixth of the API's CPU under paid load, profiled).
 */
export function authorizationsPaid(logs: readonly Log[], token: Address): Set<string> {
  const ofToken = logs.filter((l) => isAddressEqual(l.address, token));
  const decoded = parseEventLogs({ abi: EIP3009_TOKEN_ABI, logs: ofToken, eventName: 'Transfer' });
  // The first Transfer at each index, as reading one payment takes it.
  const transfers = new Map<number, (typeof decoded)[number]>();
  for (const t of decoded) if (t.logIndex !== null && !transfers.has(t.logIndex)) transfers.set(t.logIndex, t);
  const paid = new Set<string>();
  for (const used of parseEventLogs({ abi: EIP3009_TOKEN_ABI, logs: ofToken, eventName: 'AuthorizationUsed' })) {
    const transfer = used.logIndex === null ? undefined : transfers.get(used.logIndex + 1);
    if (transfer && isAddressEqual(transfer.args.from, used.args.authorizer))
      paid.add(
        authorizationKey({
          from: used.args.authorizer,
          nonce: used.args.nonce,
          to: transfer.args.to,
          value: transfer.args.value,
        }),
      );
  }
  return paid;
}

/** What identifies an authorization's transfer in `authorizationsPaid`: payer, nonce, payee, amount. */
export const authorizationKey = (use: Omit<AuthorizationUse, 'token'>): string =>
  `${use.from.toLowerCase()}|${use.nonce.toLowerCase()}|${use.to.toLowerCase()}|${use.value}`;

/** The exact scheme's refusal reasons (@x402/evm), as facilitators answer them. */
export const REASONS = {
  signature: 'invalid_exact_evm_signature',
  recipient: 'invalid_exact_evm_recipient_mismatch',
  value: 'invalid_exact_evm_payload_authorization_value_mismatch',
  validBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  validAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  network: 'invalid_exact_evm_network_mismatch',
  nonceUsed: 'invalid_exact_evm_nonce_already_used',
  balance: 'invalid_exact_evm_insufficient_balance',
  simulation: 'invalid_exact_evm_transaction_simulation_failed',
  pending: 'settlement_pending',
} as const;

/** An authorization must stay valid this long after it is checked (the exact scheme's margin). */
const VALID_BEFORE_MARGIN_S = 6n;
/** One EIP-3009 authorization signed with a plain ECDSA signature, as the batch sends it. */
export interface Eip3009Transfer {
  token: Address;
  network: string;
  domain: { name: string; version: string };
  amount: bigint;
  payTo: Address;
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

/**
 * The EIP-3009 transfer a facilitator request carries, when it is one the batch can send: the
 * exact scheme with an authorization and a 65-byte ECDSA signature. Anything else (a smart-wallet
 * or ERC-6492 signature, a Permit2 payload) is settled on its own by the official scheme.
 */
export function batchableTransfer(request: FacilitatorRequest): Eip3009Transfer | undefined {
  const { payload, requirements } = request;
  const inner = payload.payload as { authorization?: Record<string, unknown>; signature?: unknown };
  const auth = inner.authorization;
  const signature = inner.signature;
  if (!auth || typeof signature !== 'string' || !isHex(signature) || signature.length !== 132) return undefined;
  const extra = requirements.extra as { name?: unknown; version?: unknown } | undefined;
  if (typeof extra?.name !== 'string' || typeof extra.version !== 'string') return undefined;
  const amount = request.x402Version === 2 ? request.requirements.amount : request.requirements.maxAmountRequired;
  try {
    const { from, to, value, validAfter, validBefore, nonce } = auth;
    if (typeof nonce !== 'string' || !isHex(nonce) || nonce.length !== 66) return undefined;
    return {
      token: getAddress(requirements.asset),
      network: requirements.network,
      domain: { name: extra.name, version: extra.version },
      amount: BigInt(amount),
      payTo: getAddress(requirements.payTo),
      from: getAddress(String(from)),
      to: getAddress(String(to)),
      value: BigInt(String(value)),
      validAfter: BigInt(String(validAfter)),
      validBefore: BigInt(String(validBefore)),
      nonce,
      signature,
    };
  } catch {
    return undefined;
  }
}

/**
 * What the exact scheme checks of an authorization's terms before anything is sent (network,
 * recipient, amount, validity window); the refusal reason, if any. Its signature is checked by the
 * token itself in the batch's simulation, and here (`hasValidSignature`) only for a transfer that
 * failed it, to name the reason.
 */
export function checkTransfer(t: Eip3009Transfer, chainId: number): string | undefined {
  if (t.network !== `eip155:${chainId}` && t.network !== v1NetworkName(chainId)) return REASONS.network;
  if (!isAddressEqual(t.to, t.payTo)) return REASONS.recipient;
  if (t.value !== t.amount) return REASONS.value;
  const now = BigInt(Math.floor(Date.now() / 1000));
  if (t.validBefore < now + VALID_BEFORE_MARGIN_S) return REASONS.validBefore;
  if (t.validAfter > now) return REASONS.validAfter;
  return undefined;
}

/** Whether the authorization is signed by its payer (EIP-712 typed data of the token's domain). */
export function hasValidSignature(t: Eip3009Transfer, chainId: number): boolean {
  return isTypedDataSigner(
    t.from,
    {
      domain: { ...t.domain, chainId, verifyingContract: t.token },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: t.from,
        to: t.to,
        value: t.value,
        validAfter: t.validAfter,
        validBefore: t.validBefore,
        nonce: t.nonce,
      },
    },
    t.signature,
  );
}

/** The token call that settles a transfer, with the signature split into v, r, s. */
export function transferCall(t: Eip3009Transfer): Hex {
  const v = Number.parseInt(t.signature.slice(130, 132), 16);
  return encodeFunctionData({
    abi: EIP3009_TOKEN_ABI,
    functionName: 'transferWithAuthorization',
    args: [
      t.from,
      t.to,
      t.value,
      t.validAfter,
      t.validBefore,
      t.nonce,
      v < 27 ? v + 27 : v,
      `0x${t.signature.slice(2, 66)}`,
      `0x${t.signature.slice(66, 130)}`,
    ],
  });
}

/** One Multicall3 `aggregate3` call of a batch's transfers, each allowed to fail alone. */
export function aggregate3Of(token: Address, transfers: Eip3009Transfer[]): Hex {
  return encodeFunctionData({
    abi: multicall3Abi,
    functionName: 'aggregate3',
    args: [transfers.map((t) => ({ target: token, allowFailure: true, callData: transferCall(t) }))],
  });
}
