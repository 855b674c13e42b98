import type { CallToolResult } from '@modelcontextprotocol/server';
import type { Payment } from '../../data/schema.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import type { Paywall, PaywallOutcome, PaywallTimings } from '../../domain/payments/paywall/paywall.js';
import { readPost, type PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import { integrityOf, type FullSkillView } from './skill-integrity.js';
import { toolError, toolResult } from './tool-results.js';

/** Where a tool call carries its x402 payment, and its result the settlement (x402 MCP transport). */
export const PAYMENT_META = 'x402/payment';
export const PAYMENT_RESPONSE_META = 'x402/payment-response';
/** Where refusals say the payment came from. */
const PAYMENT_VIA = `_meta["${PAYMENT_META}"]`;

export interface BuySkillDeps {
  posts: PostsDeps;
  paywall: Paywall;
  /**
   * Set when the client took the tasks extension (MCP 2026-07-28): a payment whose settlement is
   * pending is answered as a task the client polls (purchase-tasks.ts) instead of a tool error.
   */
  asTask?: (payment: Payment) => Record<string, unknown>;
  /** Counts the skill's funnel steps seen here (a 402 shown, a purchase delivered) for its seller's analytics. */
  counted?: (outcome: PaywallOutcome) => void;
}

/**
 * `buy_skill`: the full skill (its files and their integrity) for a caller entitled to it (the
 * author, a buyer signed in with its agent token, anyone for a free skill); for anyone else, the
 * x402 flow over MCP. The payment is the HTTP paywall's: the same terms, resource, ledger row,
 * payment-identifier idempotency and replay refusal, so a skill bought over MCP is bought, and a
 * payment spent over HTTP is spent here too.
 */
export async function buySkill(
  deps: BuySkillDeps,
  postId: string,
  viewer: AgentClaims | undefined,
  payment: unknown,
  timings?: PaywallTimings,
): Promise<CallToolResult | Record<string, unknown>> {
  const paying = payment !== undefined;
  const read = await readPost(deps.posts, postId, 'full', viewer, { paying });
  if (read.kind === 'document') return delivered(read.body as unknown as FullSkillView);
  if (read.kind === 'refused') return paymentRequired(deps.paywall.refusal(read.resource, read.code, read.detail));
  if (!paying) {
    const challenge = deps.paywall.challenge(read.resource);
    deps.counted?.(challenge);
    return paymentRequired(challenge, NO_PAYMENT_DETAIL);
  }
  // The x402 MCP transport carries the v2 PaymentPayload as is: the paywall takes it as it comes.
  const outcome = await deps.paywall.process(
    { version: 2, payload: payment, via: PAYMENT_VIA },
    read.resource,
    timings,
  );
  deps.counted?.(outcome);
  if (outcome.kind === 'conflict') return toolError(outcome.code, outcome.detail);
  if (outcome.kind === 'pending' && deps.asTask) return deps.asTask(outcome.payment);
  if (outcome.kind !== 'paid') return paymentRequired(outcome);
  return delivered(outcome.body as FullSkillView, {
    paymentId: outcome.payment.id,
    meta: { [PAYMENT_RESPONSE_META]: outcome.settlement },
  });
}

const NO_PAYMENT_DETAIL =
  'This skill is paid: call buy_skill again with an x402 PaymentPayload for one of `accepts` in _meta["x402/payment"]';

/** The skill as delivered: the full view with the integrity of the files it holds. */
export function delivered(
  view: FullSkillView,
  paid?: { paymentId: string; meta: Record<string, unknown> },
): CallToolResult {
  return toolResult(
    { ...view, integrity: integrityOf(view), ...(paid ? { paymentId: paid.paymentId } : {}) },
    paid?.meta,
  );
}

/**
 * A refusal as the x402 MCP transport states it: a tool error whose structured content is the
 * PaymentRequired (its `error` the reason code, as in HTTP), with the same JSON as the first text
 * and a sentence for the caller as the second.
 */
export function paymentRequired(outcome: PaywallOutcome, detail?: string): CallToolResult {
  if (outcome.kind === 'paid' || outcome.kind === 'conflict') throw new Error('not a payment refusal');
  const required = outcome.challenge.v2;
  const paymentId = outcome.kind === 'pending' ? outcome.payment.id : outcome.paymentId;
  const explanation =
    outcome.kind === 'pending'
      ? `The payment ${outcome.payment.id} was sent for settlement and its outcome is not known yet; once it is settled, call buy_skill again with the agent token of the paying wallet, or with the same payment and its payment-identifier`
      : (detail ?? outcome.detail);
  return {
    content: [
      { type: 'text', text: JSON.stringify(required) },
      { type: 'text', text: paymentId ? `${explanation} (payment ${paymentId})` : explanation },
    ],
    structuredContent: required as unknown as Record<string, unknown>,
    isError: true,
  };
}
