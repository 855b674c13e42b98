import { getAddress, isAddressEqual, type Address, type Hex, type PublicClient } from 'viem';
import type { PaymentPayload } from '@x402/core/types';
import type { UsdcInfo } from '../../platform/blockchain.js';
import { refusalOf } from '../payments/facilitators/facilitator.js';
import {
  AllFacilitatorsUnavailableError,
  SettlementIndeterminateError,
  type FacilitatorPool,
} from '../payments/facilitators/pool.js';
import {
  EIP3009_TOKEN_ABI,
  hasValidSignature,
  paidBy,
  type AuthorizationUse,
  type Eip3009Transfer,
} from '../payments/protocol/eip3009.js';
import { requirementsV2 } from '../payments/protocol/x402-codec.js';
import { refundProblem } from './refund-problems.js';

/**
 * A refund on chain: the seller's EIP-3009 authorization checked before anything is sent, relayed
 * through the facilitator pool as an x402 v2 `exact` payment to the buyer, and, when the outcome
 * was not heard, read back from the token.
 */

/** A seller's `TransferWithAuthorization` from its payout wallet to the buyer, as signed. */
export type RefundAuthorization = Pick<
  Eip3009Transfer,
  'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce'
>;

/** An authorization as x402 payloads carry it and as a refund stores it: amounts and times as decimal strings. */
export const wireAuthorization = (a: RefundAuthorization) => ({
  from: a.from,
  to: a.to,
  value: a.value.toString(),
  validAfter: a.validAfter.toString(),
  validBefore: a.validBefore.toString(),
  nonce: a.nonce,
});

/** How long an authorization must stay valid when it arrives: a relay may wait for its batch, then for a block. */
export const MIN_VALIDITY_SECONDS = 60n;
/**
 * The longest an authorization may stay valid: one the facilitator refused may still land until it
 * expires, so no other refund of the purchase is taken before then.
 */
export const MAX_VALIDITY_SECONDS = 900n;

/** What the refund must be: from the payout wallet the purchase paid, to its buyer, its exact amount. */
export interface RefundTerms {
  payTo: string;
  buyer: string;
  amountAtomic: bigint;
}

/**
 * Refuses an authorization that is not this refund, before anything is sent: wrong payer, payee
 * or amount; a signature that is not the payer's for the configured USDC (another token's domain
 * fails here); a validity window that is not current or ends within MIN_VALIDITY_SECONDS.
 */
export function checkRefundAuthorization(
  a: RefundAuthorization,
  signature: Hex,
  terms: RefundTerms,
  token: { usdc: UsdcInfo; chainId: number; network: string },
  nowSeconds: bigint,
): void {
  if (!isAddressEqual(a.from, getAddress(terms.payTo))) throw refundProblem('refund_wrong_payer');
  if (!isAddressEqual(a.to, getAddress(terms.buyer))) throw refundProblem('refund_wrong_payee');
  if (a.value !== terms.amountAtomic)
    throw refundProblem('refund_wrong_amount', `The authorization must pay exactly ${terms.amountAtomic} atomic USDC`);
  const transfer = {
    ...a,
    signature,
    token: token.usdc.address,
    network: token.network,
    domain: { name: token.usdc.name, version: token.usdc.version },
    amount: terms.amountAtomic,
    payTo: a.to,
  };
  let signed = false;
  try {
    signed = hasValidSignature(transfer, token.chainId);
  } catch {
    // Typed data the encoder refuses is signed by nobody.
  }
  if (!signed) throw refundProblem('refund_signature_invalid');
  if (
    a.validAfter > nowSeconds ||
    a.validBefore < nowSeconds + MIN_VALIDITY_SECONDS ||
    a.validBefore > nowSeconds + MAX_VALIDITY_SECONDS
  )
    throw refundProblem('refund_authorization_expired');
}

/** What became of a relayed refund. */
export type RelayOutcome =
  /** Settled by this transaction. */
  | { kind: 'settled'; txHash: Hex; facilitator: string }
  /** Refused before anything was sent: nothing moved. */
  | { kind: 'refused'; reason: string; detail: string }
  /** No facilitator took the call: nothing was sent. */
  | { kind: 'unavailable'; retryAfterSeconds: number }
  /** Sent, and its outcome was not heard: the chain decides (reconcileRefunds). */
  | { kind: 'unknown'; reason: string };

/** The exact scheme's answer for an error once sending began (@x402/evm): not a refusal. */
const TRANSACTION_FAILED = 'invalid_exact_evm_transaction_failed';

/**
 * Relays a checked authorization through the pool as an x402 v2 `exact` EVM settlement whose
 * requirements pay the buyer: scheme exact, the service's network, USDC, the amount, payTo =
 * buyer, and the token's EIP-712 name and version. Never retried on another facilitator once
 * sent (the pool's rule): an answer lost after sending is `unknown`.
 */
export async function relayRefund(
  pool: FacilitatorPool,
  r: { authorization: RefundAuthorization; signature: Hex; usdc: UsdcInfo; chainId: number; resourceUrl: string },
): Promise<RelayOutcome> {
  const a = r.authorization;
  const resource = { url: r.resourceUrl, description: 'A refund of a skill purchase', mimeType: 'application/json' };
  const requirements = requirementsV2({
    resourceUrl: resource.url,
    description: resource.description,
    mimeType: resource.mimeType,
    amountAtomic: a.value,
    payTo: a.to,
    asset: r.usdc,
    chainId: r.chainId,
    maxTimeoutSeconds: Number(MIN_VALIDITY_SECONDS),
  });
  const payload: PaymentPayload = {
    x402Version: 2,
    resource,
    accepted: requirements,
    payload: { signature: r.signature, authorization: wireAuthorization(a) },
  };
  let settled: Awaited<ReturnType<FacilitatorPool['settle']>>;
  try {
    settled = await pool.settle({ x402Version: 2, payload, requirements });
  } catch (err) {
    if (err instanceof AllFacilitatorsUnavailableError)
      return { kind: 'unavailable', retryAfterSeconds: err.retryAfterSeconds };
    if (err instanceof SettlementIndeterminateError) return { kind: 'unknown', reason: err.message };
    throw err;
  }
  const { result } = settled;
  if (result.success) return { kind: 'settled', txHash: result.transaction as Hex, facilitator: settled.facilitator };
  if (result.errorReason === TRANSACTION_FAILED && !result.transaction)
    return { kind: 'unknown', reason: TRANSACTION_FAILED };
  const refusal = refusalOf(result.errorReason, result.errorMessage, 'settlement_failed');
  return { kind: 'refused', reason: refusal.reason, detail: refusal.detail };
}

/** Whether the token marks this authorization used (a transfer made with it, or its cancellation). */
export function isAuthorizationUsed(client: PublicClient, token: Address, from: Address, nonce: Hex): Promise<boolean> {
  return client.readContract({
    address: token,
    abi: EIP3009_TOKEN_ABI,
    functionName: 'authorizationState',
    args: [from, nonce],
  });
}

/**
 * The mined transaction whose `AuthorizationUsed` log for this authorization is followed by its
 * own `Transfer` of exactly this payer, payee and amount (`paidBy`), with its block; undefined
 * while none is found within `lookbackBlocks` (a node's logs may lag its state).
 */
export async function findAuthorizationTransfer(
  client: PublicClient,
  use: AuthorizationUse,
  lookbackBlocks = 50_000n,
): Promise<{ txHash: Hex; blockNumber: bigint } | undefined> {
  const latest = await client.getBlockNumber({ cacheTime: 0 });
  const logs = await client.getLogs({
    address: use.token,
    event: EIP3009_TOKEN_ABI[3],
    args: { authorizer: use.from, nonce: use.nonce },
    fromBlock: latest > lookbackBlocks ? latest - lookbackBlocks : 0n,
    toBlock: latest,
  });
  for (const used of logs) {
    if (!used.transactionHash) continue;
    const receipt = await client.getTransactionReceipt({ hash: used.transactionHash });
    if (receipt.status === 'success' && paidBy(receipt.logs, use))
      return { txHash: used.transactionHash, blockNumber: receipt.blockNumber };
  }
  return undefined;
}
