import { getAddress } from 'viem';
import type { SkillRefundMessage } from '@skill-market/skill-protocol/refund-typed-data';

/**
 * The EIP-712 statements of a refund: the buyer's `RefundRequest` and the marketplace's
 * `SkillRefund` receipt are defined once in the shared package, for the service and for whoever
 * signs or checks them (the skill-market client, any buyer); here, the receipt's message built
 * from the stored rows.
 */
export {
  refundRequestTypedData,
  skillRefundTypedData,
  type RefundRequestMessage,
  type SkillRefundMessage,
} from '@skill-market/skill-protocol/refund-typed-data';

/** The receipt's message of a settled refund, from the stored rows. */
export function skillRefundMessage(r: {
  paymentId: string;
  purchaseTx: string;
  refundTx: string;
  postId: string;
  buyer: string;
  seller: string;
  amountAtomic: string;
  settledAt: Date;
}): SkillRefundMessage {
  return {
    paymentId: r.paymentId,
    purchaseTransaction: r.purchaseTx,
    refundTransaction: r.refundTx,
    postId: r.postId,
    buyer: getAddress(r.buyer),
    seller: getAddress(r.seller),
    amount: BigInt(r.amountAtomic),
    refundedAt: BigInt(Math.floor(r.settledAt.getTime() / 1000)),
  };
}
