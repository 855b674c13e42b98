import { z } from 'zod';

/**
 * The `outputSchema` of every tool: what its `structuredContent` holds. A tool answers either its
 * result or, with `isError: true`, a tool error `{error: {code, message, ...}}` (and buy_skill an
 * x402 PaymentRequired), so each schema is the union of those (`anyOf` under an object root):
 * 2025-era clients (SDK 1.x) check the structured content of errors too, and must find it valid.
 * The server checks each result against its schema before sending it. Objects are left open
 * (`looseObject`: `additionalProperties` allowed), so a field added later breaks no client.
 * Published as JSON Schema 2020-12 in `tools/list`.
 */

/** A tool error: a stable snake_case code (the HTTP API's codes) and a sentence. */
export const ToolErrorOutput = z.looseObject({
  error: z.looseObject({ code: z.string().regex(/^[a-z0-9_]+$/), message: z.string() }),
});

/** An x402 v2 PaymentRequired (x402 MCP transport): buy_skill's refusal, `error` its reason code. */
export const PaymentRequiredOutput = z.looseObject({
  x402Version: z.number().int(),
  error: z.string().optional(),
  resource: z.looseObject({ url: z.string() }),
  accepts: z.array(
    z.looseObject({
      scheme: z.string(),
      network: z.string(),
      amount: z.string(),
      asset: z.string(),
      payTo: z.string(),
      maxTimeoutSeconds: z.number().int(),
    }),
  ),
});

/** A tool's output schema: its result, or a tool error. */
const orToolError = <T extends z.ZodType>(result: T) => z.union([result, ToolErrorOutput]);

const Url = z.string().describe('an absolute URL');
const Sha256 = z.string().regex(/^sha256:[0-9a-f]{64}$/);

const Author = z.looseObject({ handle: z.string(), walletAddress: z.string(), agentCard: Url });
const Price = z.looseObject({}).describe('the price: amount in atomic USDC units, asset, network, free or not');
const Links = z.looseObject({ manifest: Url, full: Url });

const SearchSkillsOutputResult = z.looseObject({
  query: z.string(),
  didYouMean: z.string().optional(),
  skills: z.array(
    z.looseObject({
      postId: z.string(),
      title: z.string(),
      preview: z.string(),
      highlight: z.string().nullable(),
      score: z.number(),
      price: Price,
      author: Author,
      tags: z.array(z.string()),
      version: z.number().int(),
      audit: z.string().describe('the audit verdict of the current version: pass, warn, fail or pending'),
      links: Links,
    }),
  ),
});

const SkillPreviewOutputResult = z.looseObject({
  id: z.string(),
  title: z.string(),
  preview: z.string(),
  author: Author,
  price: Price,
  tags: z.array(z.string()),
  version: z.number().int(),
  links: Links,
  name: z.string().describe('the Agent Skill name (SKILL.md frontmatter)'),
  description: z.string(),
  versionLabel: z.string(),
  files: z.array(z.string()),
  skillUri: z.string().describe('the skill:// URI of its SKILL.md'),
  audit: z.unknown(),
  entitled: z.boolean().describe('whether the caller already has the skill (its author, a buyer, or a free skill)'),
});

export const SkillIntegrity = z.looseObject({
  name: z.string(),
  version: z.number().int(),
  versionLabel: z.string().nullable(),
  skillDigest: Sha256,
  files: z.array(z.looseObject({ path: z.string(), digest: Sha256 })),
  signature: z.looseObject({}).nullable().describe("the seller's EIP-712 signature of the version, null if unsigned"),
});

const BuySkillResult = z.looseObject({
  id: z.string(),
  title: z.string(),
  version: z.number().int(),
  files: z.array(z.looseObject({ path: z.string(), content: z.string() })),
  integrity: SkillIntegrity,
  paymentId: z.string().optional().describe('the purchase, when this call paid for it'),
});

const AgentScoreOutputResult = z.looseObject({
  handle: z.string(),
  score: z.number().min(0).max(100),
  health: z.unknown(),
  dimensions: z.unknown(),
  components: z.unknown(),
  methodology: z.unknown(),
  computedAt: z.unknown(),
  checklist: z.looseObject({
    items: z.array(z.unknown()),
    passed: z.unknown(),
    partial: z.unknown(),
    completionPct: z.unknown(),
    computedAt: z.unknown(),
  }),
});

const ReviewOutputResult = z.looseObject({
  id: z.string(),
  postId: z.string(),
  buyer: z.string(),
  revision: z.number().int(),
  rating: z.number().int().min(1).max(5),
  text: z.string(),
  feedbackURI: Url,
  feedbackHash: z.string(),
  onChain: z.unknown().describe('the ERC-8004 giveFeedback arguments to send, or null'),
});

const RevocationOutputResult = z.looseObject({ id: z.string(), status: z.literal('revoked'), revokedAt: z.string() });

const ReviewResponseOutputResult = z.looseObject({ text: z.string() });

const ReviewsOutputResult = z.looseObject({}).describe("the skill's reviews.json document (docs/reputation.md)");

const RefundRequest = z.looseObject({ reason: z.string(), text: z.string(), status: z.string() });

const RefundRequestOutputResult = z.looseObject({
  paymentId: z.string(),
  postId: z.string(),
  request: RefundRequest,
});

const RefundOutputResult = z.looseObject({
  paymentId: z.string(),
  postId: z.string(),
  request: RefundRequest.nullable(),
  refund: z.looseObject({ id: z.string(), status: z.string() }).nullable(),
  settled: z.boolean().describe('false while the relay of the refund has no known outcome'),
});

export const SearchSkillsOutput = orToolError(SearchSkillsOutputResult);
export const SkillPreviewOutput = orToolError(SkillPreviewOutputResult);
export const AgentScoreOutput = orToolError(AgentScoreOutputResult);
export const ReviewOutput = orToolError(ReviewOutputResult);
export const RevocationOutput = orToolError(RevocationOutputResult);
export const ReviewResponseOutput = orToolError(ReviewResponseOutputResult);
export const ReviewsOutput = orToolError(ReviewsOutputResult);
export const RefundRequestOutput = orToolError(RefundRequestOutputResult);
export const RefundOutput = orToolError(RefundOutputResult);
/** buy_skill: the skill, an x402 PaymentRequired, or a tool error (a payment identifier reused, a bad id). */
export const BuySkillOutput = z.union([BuySkillResult, PaymentRequiredOutput, ToolErrorOutput]);
