/**
 * The EIP-712 statements a buyer signs about a skill it bought (docs/reputation.md): its review
 * (`SkillReview`) and the withdrawal of it (`SkillReviewRevocation`). The marketplace checks them
 * and a client signs them from this one definition, so both hash the same typed data.
 */

/** The EIP-712 domain of the marketplace's buyer statements, bound to the chain payments settle on. */
export const reviewDomain = (chainId: number) => ({ name: 'Skill Market', version: '1', chainId });

/** The members of the buyer's statements, in their signed order. */
export const SKILL_REVIEW_TYPES = {
  SkillReview: [
    { name: 'paymentId', type: 'string' },
    { name: 'transaction', type: 'string' },
    { name: 'postId', type: 'string' },
    { name: 'version', type: 'uint256' },
    { name: 'rating', type: 'uint8' },
    { name: 'text', type: 'string' },
    { name: 'issuedAt', type: 'uint256' },
  ],
  SkillReviewRevocation: [
    { name: 'postId', type: 'string' },
    { name: 'paymentId', type: 'string' },
    { name: 'issuedAt', type: 'uint256' },
  ],
} as const;

/** What a buyer signs to review a skill: the purchase it names, the stars and the text. */
export interface ReviewMessage {
  paymentId: string;
  /** The purchase's settlement transaction. */
  transaction: string;
  postId: string;
  /** The version bought. */
  version: number;
  rating: number;
  text: string;
  /** Unix seconds. */
  issuedAt: number;
}

/** The typed data of a review, as `signTypedData` and `hashTypedData` take it. */
export const reviewTypedData = (chainId: number, m: ReviewMessage) => ({
  domain: reviewDomain(chainId),
  types: { SkillReview: SKILL_REVIEW_TYPES.SkillReview },
  primaryType: 'SkillReview' as const,
  message: { ...m, version: BigInt(m.version), issuedAt: BigInt(m.issuedAt) },
});

/** What a buyer signs to withdraw its review of a skill. */
export interface RevocationMessage {
  postId: string;
  paymentId: string;
  /** Unix seconds. */
  issuedAt: number;
}

/** The typed data of a review's withdrawal. */
export const revocationTypedData = (chainId: number, m: RevocationMessage) => ({
  domain: reviewDomain(chainId),
  types: { SkillReviewRevocation: SKILL_REVIEW_TYPES.SkillReviewRevocation },
  primaryType: 'SkillReviewRevocation' as const,
  message: { ...m, issuedAt: BigInt(m.issuedAt) },
});

/** The ERC-8004 `giveFeedback` arguments a written review carries when the seller has an identity. */
export interface OnChainFeedback {
  registry: `0x${string}`;
  agentId: string;
  value: number;
  valueDecimals: number;
  tag1: string;
  tag2: string;
  endpoint: string;
  feedbackURI: string;
  feedbackHash: `0x${string}`;
}

/** Those arguments in `giveFeedback`'s order, as a contract call takes them. */
export const giveFeedbackArgs = (o: OnChainFeedback) =>
  [
    BigInt(o.agentId),
    BigInt(o.value),
    o.valueDecimals,
    o.tag1,
    o.tag2,
    o.endpoint,
    o.feedbackURI,
    o.feedbackHash,
  ] as const;
