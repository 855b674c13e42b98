import type { Address } from 'viem';

/**
 * The EIP-712 statements of a refund (docs/refunds.md), defined once for the marketplace and for
 * whoever signs or checks them: the buyer's signed `RefundRequest` (a buyer without an account
 * asks with its wallet) and the marketplace's `SkillRefund` receipt, signed with the receipt key.
 * A client verifies a receipt with viem as `GET /api/purchases/{paymentId}/refund` serves it:
 *
 *   verifyTypedData({ address: receiptSigner, ...skillRefundTypedData(), message, signature })
 */

/** The marketplace's EIP-712 domain, the one its other statements use (the purchase statement). */
const MARKET_DOMAIN = { name: 'Skill Market', version: '1' } as const;

/**
 * A buyer's refund request signed with the paying wallet. The domain names the chain, so a
 * request signed for one deployment's chain is not one for another chain's.
 */
export const refundRequestTypedData = (chainId: number) => ({
  domain: { ...MARKET_DOMAIN, chainId },
  types: {
    RefundRequest: [
      { name: 'paymentId', type: 'string' },
      { name: 'reason', type: 'string' },
      { name: 'text', type: 'string' },
      { name: 'issuedAt', type: 'uint256' },
    ],
  } as const,
  primaryType: 'RefundRequest' as const,
});

/** The fields of a signed refund request; `issuedAt` in unix seconds. */
export interface RefundRequestMessage {
  paymentId: string;
  reason: string;
  text: string;
  issuedAt: bigint;
}

/** The marketplace's receipt of a settled refund (no chain id: the transactions name it, as for the purchase statement). */
export const skillRefundTypedData = () => ({
  domain: MARKET_DOMAIN,
  types: {
    SkillRefund: [
      { name: 'paymentId', type: 'string' },
      { name: 'purchaseTransaction', type: 'string' },
      { name: 'refundTransaction', type: 'string' },
      { name: 'postId', type: 'string' },
      { name: 'buyer', type: 'address' },
      { name: 'seller', type: 'address' },
      { name: 'amount', type: 'uint256' },
      { name: 'refundedAt', type: 'uint256' },
    ],
  } as const,
  primaryType: 'SkillRefund' as const,
});

/** What a refund receipt states, as signed (amounts and times as integers). */
export interface SkillRefundMessage {
  paymentId: string;
  purchaseTransaction: string;
  refundTransaction: string;
  postId: string;
  /** The buyer's wallet, refunded. */
  buyer: Address;
  /** The seller's payout wallet, which paid the refund. */
  seller: Address;
  /** Atomic USDC. */
  amount: bigint;
  /** Unix seconds of the refund's settlement. */
  refundedAt: bigint;
}
