import { getAddress, type Hex, type PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import {
  claimRefund,
  declineRefundRequest,
  failRefund,
  findActiveRefund,
  findLiveFailedRefunds,
  findRefundablePurchase,
  findRefundRequest,
  findShownRefund,
  insertRefundRequest,
  isPurchaseRefunded,
  isRefundNonceRecorded,
  settleRefund,
  type DeclineReason,
  type RefundablePurchase,
  type Refund,
  type RefundReason,
  type RefundRequest,
} from '../../data/refunds.repository.js';
import type { Payment } from '../../data/schema.js';
import type { UsdcInfo } from '../../platform/blockchain.js';
import type { Logger } from '../../platform/logger.js';
import { isTypedDataSigner } from '../../platform/secp256k1.js';
import type { AgentClaims } from '../identity/jwt.js';
import type { FacilitatorPool } from '../payments/facilitators/pool.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import { refundProblem, relayUnavailable } from './refund-problems.js';
import {
  checkRefundAuthorization,
  isAuthorizationUsed,
  relayRefund,
  type RefundAuthorization,
  wireAuthorization,
} from './refund-relay.js';
import { refundRequestTypedData, skillRefundMessage, skillRefundTypedData } from './refund-typed-data.js';

/**
 * Refunds (docs/refunds.md): a buyer asks within the refund window, the seller declines or
 * refunds with an EIP-3009 authorization from its payout wallet that the marketplace relays, and
 * the outcome is public with a receipt signed by the marketplace's receipt key.
 */

export interface RefundDeps {
  db: Db;
  chain: { chainId: number; network: string; usdc: UsdcInfo; publicClient: PublicClient };
  facilitators: FacilitatorPool;
  receipts: ReceiptIssuer;
  /** The public origin: a relayed refund names its route as the x402 resource. */
  baseUrl: string;
  /** REFUND_WINDOW_DAYS: how long after a purchase its buyer may ask for a refund. */
  refundWindowDays: number;
  log: Pick<Logger, 'info' | 'warn'>;
}

const DAY_MS = 86_400_000;
/** How far a signed request's issuedAt may be from now, either way. */
const SIGNED_REQUEST_FRESH_MS = 10 * 60_000;

// C0 controls other than tab and line feed, DEL and the C1 controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/;

/** A buyer's or a seller's text as stored: trimmed, without control characters other than \n and \t. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function storedText(text: string): string {
  // A lone surrogate would be stored as U+FFFD: the stored text would not be the signed one.
  if (CONTROL_CHARACTERS.test(text) || LONE_SURROGATE.test(text)) throw refundProblem('text_control_characters');
  return text.trim();
}

export interface RefundRequestInput {
  reason: RefundReason;
  /** At most 2,000 characters; stored trimmed. */
  text: string;
  /** For a buyer without an agent token: its wallet's EIP-712 `RefundRequest` signature. */
  signed?: { issuedAt: string; signature: Hex };
}

/**
 * A buyer's refund request: by the agent whose wallet paid (its token), or by the paying wallet's
 * signature of the request. One per purchase, within REFUND_WINDOW_DAYS of the purchase; the
 * request and its `refund.requested` event are written together.
 */
export async function requestRefund(
  deps: Pick<RefundDeps, 'db' | 'chain' | 'refundWindowDays'>,
  paymentId: string,
  input: RefundRequestInput,
  viewer: AgentClaims | undefined,
  now = new Date(),
) {
  const text = storedText(input.text);
  const purchase = await findRefundablePurchase(deps.db, paymentId);
  if (!purchase) throw refundProblem('purchase_not_found');
  if (viewer) {
    if (viewer.wallet.toLowerCase() !== purchase.buyer_address) throw refundProblem('not_buyer');
  } else {
    assertSignedByBuyer(deps.chain.chainId, purchase, input, now);
  }
  if (purchase.refunded_at) throw refundProblem('purchase_refunded');
  const existing = await findRefundRequest(deps.db, purchase.payment_id);
  if (existing) {
    // The one request per purchase is what stops a copied signed request: sent again, it is this one.
    const replayed = !viewer && existing.reason === input.reason && existing.text === text;
    throw refundProblem(replayed ? 'signature_replayed' : 'refund_already_requested');
  }
  const closedAt = new Date(purchase.created_at.getTime() + deps.refundWindowDays * DAY_MS);
  if (now > closedAt)
    throw refundProblem(
      'refund_window_closed',
      `The refund window of this purchase closed at ${closedAt.toISOString()}`,
    );
  const request = await insertRefundRequest(deps.db, { purchase, reason: input.reason, text, now });
  if (!request) throw refundProblem('refund_already_requested');
  return { paymentId: purchase.payment_id, postId: purchase.post_id, request: requestView(request) };
}

/**
 * The request is the buying wallet's: its EIP-712 `RefundRequest` (domain with the service's
 * chain id) of this payment, reason and text as sent, issued within 10 minutes of now.
 */
function assertSignedByBuyer(chainId: number, purchase: RefundablePurchase, input: RefundRequestInput, now: Date) {
  if (!input.signed) throw refundProblem('signature_invalid');
  const issuedAtMs = Date.parse(input.signed.issuedAt);
  const message = {
    paymentId: purchase.payment_id,
    reason: input.reason,
    text: input.text,
    issuedAt: BigInt(Math.floor(issuedAtMs / 1000)),
  };
  let signed = false;
  try {
    const typed = { ...refundRequestTypedData(chainId), message };
    signed = isTypedDataSigner(getAddress(purchase.buyer_address), typed, input.signed.signature);
  } catch {
    // Typed data the encoder refuses (a time before 1970) is signed by nobody.
  }
  if (!signed)
    throw refundProblem(
      'signature_invalid',
      "The signature is not the buying wallet's RefundRequest of this payment, reason, text and issuedAt",
    );
  if (Math.abs(now.getTime() - issuedAtMs) > SIGNED_REQUEST_FRESH_MS) throw refundProblem('signature_expired');
}

/** The seller declines an open request, saying why; the answer and its `refund.declined` event are written together. */
export async function declineRefund(
  deps: Pick<RefundDeps, 'db'>,
  paymentId: string,
  sellerId: string,
  input: { reason: DeclineReason; text: string },
  now = new Date(),
) {
  const text = storedText(input.text);
  const request = await findRefundRequest(deps.db, paymentId);
  if (!request) throw refundProblem('refund_request_not_found');
  if (request.seller_id !== sellerId) throw refundProblem('not_seller');
  if (request.status !== 'open') throw refundProblem('refund_request_closed');
  const declined = await declineRefundRequest(deps.db, {
    paymentId: request.payment_id,
    reason: input.reason,
    text,
    now,
  });
  if (!declined) {
    const active = await findActiveRefund(deps.db, request.payment_id);
    throw refundProblem(active?.status === 'relaying' ? 'refund_in_flight' : 'refund_request_closed');
  }
  return { paymentId: declined.payment_id, postId: declined.post_id, request: requestView(declined) };
}

/** How long past its validBefore a refused authorization is still taken as possibly landing (clock skew, inclusion). */
export const REFUSED_AUTHORIZATION_MARGIN_SECONDS = 60n;

/**
 * The seller refunds a purchase, answering its open request or unprompted: checks the EIP-3009
 * authorization before anything is sent, claims the refund `relaying` (one per purchase), relays
 * it through the facilitator pool, and records the outcome. `settled` is false when the relay's
 * answer was lost after sending: the refund stays `relaying` and the chain decides
 * (`reconcileRefunds`).
 */
export async function refundPurchase(
  deps: RefundDeps,
  paymentId: string,
  sellerId: string,
  input: { authorization: RefundAuthorization; signature: Hex },
  now = new Date(),
) {
  const purchase = await findRefundablePurchase(deps.db, paymentId);
  if (!purchase) throw refundProblem('purchase_not_found');
  if (purchase.seller_id !== sellerId) throw refundProblem('not_seller');
  if (purchase.refunded_at) throw refundProblem('purchase_refunded');
  // The refund moves the same token on the same chain as the purchase did, or nothing.
  if (
    purchase.asset.toLowerCase() !== deps.chain.usdc.address.toLowerCase() ||
    purchase.network !== `eip155:${deps.chain.chainId}`
  )
    throw refundProblem('refund_asset_mismatch');
  const active = await findActiveRefund(deps.db, purchase.payment_id);
  if (active) throw refundProblem(active.status === 'relaying' ? 'refund_in_flight' : 'purchase_refunded');
  // A refused authorization may still land until it expires: the chain decides before another is taken.
  const nowSeconds = BigInt(Math.floor(now.getTime() / 1000));
  const [live] = await findLiveFailedRefunds(deps.db, {
    nowSeconds,
    marginSeconds: REFUSED_AUTHORIZATION_MARGIN_SECONDS,
    paymentId: purchase.payment_id,
    limit: 1,
  });
  if (live)
    throw refundProblem(
      'refund_in_flight',
      'An earlier authorization of this refund, refused by the facilitator, stays valid a little longer: the marketplace checks on chain that it did not land before it takes another (at most 15 minutes and a minute after it was signed to expire)',
    );
  const { authorization: a, signature } = input;
  const terms = { payTo: purchase.pay_to, buyer: purchase.buyer_address, amountAtomic: BigInt(purchase.amount_atomic) };
  checkRefundAuthorization(a, signature, terms, deps.chain, nowSeconds);
  const { usdc, publicClient } = deps.chain;
  if (
    (await isRefundNonceRecorded(deps.db, a.nonce)) ||
    (await isAuthorizationUsed(publicClient, usdc.address, a.from, a.nonce))
  )
    throw refundProblem('refund_nonce_used');

  const claimed = await claimRefund(deps.db, {
    purchase,
    from: a.from,
    nonce: a.nonce,
    authorization: { authorization: wireAuthorization(a), signature },
  });
  if (!claimed) {
    // Lost a race: another refund of the purchase was claimed (or settled) meanwhile, or this nonce was.
    const other = await findActiveRefund(deps.db, purchase.payment_id);
    throw refundProblem(
      !other && (await isRefundNonceRecorded(deps.db, a.nonce)) ? 'refund_nonce_used' : 'purchase_refunded',
    );
  }

  const outcome = await relayRefund(deps.facilitators, {
    authorization: a,
    signature,
    usdc,
    chainId: deps.chain.chainId,
    resourceUrl: `${deps.baseUrl}/api/purchases/${purchase.payment_id}/refund`,
  });
  const log = { paymentId: purchase.payment_id, refundId: claimed.id };
  switch (outcome.kind) {
    case 'settled': {
      await recordRefundSettled(deps, claimed, purchase.tx_hash, outcome.txHash, new Date());
      deps.log.info({ ...log, txHash: outcome.txHash, facilitator: outcome.facilitator }, 'refund settled');
      return { settled: true, view: await readRefund(deps, purchase.payment_id) };
    }
    case 'unknown':
      deps.log.warn({ ...log, reason: outcome.reason }, 'refund relayed without an answer: the chain decides');
      return { settled: false, view: await readRefund(deps, purchase.payment_id) };
    case 'unavailable':
      await failRefund(deps.db, claimed.id, 'facilitator_unavailable');
      throw relayUnavailable(outcome.retryAfterSeconds);
    case 'refused':
      await failRefund(deps.db, claimed.id, outcome.reason);
      deps.log.info({ ...log, reason: outcome.reason }, 'refund refused by the facilitator');
      throw refundProblem(
        'refund_relay_failed',
        `The facilitator refused the refund (${outcome.reason}): ${outcome.detail}. Nothing moved: sign a new authorization to try again`,
        { reason: outcome.reason },
      );
  }
}

/**
 * Records a relaying refund settled by `txHash`, with the marketplace's `SkillRefund` receipt
 * signed over it (the purchase refunded, its request accepted, `purchase.refunded` written in
 * the same statement). Undefined when it was recorded already.
 */
export async function recordRefundSettled(
  deps: Pick<RefundDeps, 'db' | 'receipts'>,
  refund: Refund,
  purchaseTx: string,
  txHash: Hex,
  settledAt: Date,
): Promise<Refund | undefined> {
  const refundTx = txHash.toLowerCase();
  const message = skillRefundMessage(refundFacts(refund, purchaseTx, refundTx, settledAt));
  const receiptSignature = deps.receipts.signStatement({ ...skillRefundTypedData(), message });
  return settleRefund(deps.db, { refundId: refund.id, txHash: refundTx, settledAt, receiptSignature });
}

const refundFacts = (refund: Refund, purchaseTx: string, refundTx: string, settledAt: Date) => ({
  paymentId: refund.payment_id,
  purchaseTx,
  refundTx,
  postId: refund.post_id,
  buyer: refund.buyer_address,
  seller: refund.from_address,
  amountAtomic: refund.amount_atomic,
  settledAt,
});

/**
 * What anyone may see of a purchase's refund (the chain shows refunds anyway): the buyer's
 * request and the seller's answer, and the refund with its signed receipt once settled.
 */
export async function readRefund(deps: Pick<RefundDeps, 'db' | 'receipts'>, paymentId: string) {
  const [request, refund] = await Promise.all([
    findRefundRequest(deps.db, paymentId),
    findShownRefund(deps.db, paymentId),
  ]);
  const any = request ?? refund;
  if (!any) throw refundProblem('refund_not_found');
  return {
    paymentId: any.payment_id,
    postId: any.post_id,
    request: request ? requestView(request) : null,
    refund: refund ? await refundView(deps, refund) : null,
  };
}

function requestView(r: RefundRequest) {
  return {
    reason: r.reason,
    text: r.text,
    status: r.status,
    declineReason: r.decline_reason,
    declineText: r.decline_text,
    requestedAt: r.created_at.toISOString(),
    respondedAt: r.responded_at?.toISOString() ?? null,
  };
}

async function refundView(deps: Pick<RefundDeps, 'db' | 'receipts'>, r: Refund) {
  return {
    id: r.id,
    status: r.status,
    amount: r.amount_atomic,
    buyer: getAddress(r.buyer_address),
    from: getAddress(r.from_address),
    txHash: r.tx_hash,
    failureReason: r.failure_reason,
    createdAt: r.created_at.toISOString(),
    settledAt: r.settled_at?.toISOString() ?? null,
    receipt: await receiptOf(deps, r),
  };
}

/** A settled refund's receipt as a verifier takes it: the typed data with its message, the signature, the signer. */
async function receiptOf(deps: Pick<RefundDeps, 'db' | 'receipts'>, r: Refund) {
  if (r.status !== 'settled' || !r.tx_hash || !r.settled_at || !r.receipt_signature) return null;
  const purchase = await findRefundablePurchase(deps.db, r.payment_id);
  if (!purchase) return null;
  const message = skillRefundMessage(refundFacts(r, purchase.tx_hash, r.tx_hash, r.settled_at));
  return {
    typedData: {
      ...skillRefundTypedData(),
      message: { ...message, amount: message.amount.toString(), refundedAt: message.refundedAt.toString() },
    },
    signature: r.receipt_signature,
    signer: deps.receipts.address,
  };
}

/**
 * A settled payment repeated to the paywall (a replay of the paid request) is delivered again
 * only while its purchase is not refunded: a refunded buyer pays again to read the skill.
 */
export async function assertNotRefunded(db: Db, payment: Payment): Promise<void> {
  if (payment.status !== 'settled' || payment.purpose !== 'purchase') return;
  if (await isPurchaseRefunded(db, payment.id))
    throw refundProblem('purchase_refunded', 'This purchase was refunded: buy the skill again to read it');
}
