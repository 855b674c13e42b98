import type { AgentFacts } from './facts.js';
import { WINDOW_DAYS } from './methodology.js';

export type HealthStatus = 'healthy' | 'degraded' | 'dormant';
const DAY_MS = 86_400_000;

const within = (d: Date | null, days: number, now: Date) => d !== null && now.getTime() - d.getTime() <= days * DAY_MS;

/**
 * Health (thresholds in methodology.ts, HEALTH_RULES):
 * - dormant: nothing published and nothing settled in the last 90 days;
 * - healthy: contact and documentation set, 2+ published skills, active in the last 30 days;
 * - degraded: everything in between.
 */
export function healthOf(f: AgentFacts, now: Date): HealthStatus {
  const activeLong = within(f.lastPublishAt, WINDOW_DAYS.long, now) || within(f.lastSettleAt, WINDOW_DAYS.long, now);
  if (!activeLong) return 'dormant';
  const activeShort = within(f.lastPublishAt, WINDOW_DAYS.short, now) || within(f.lastSettleAt, WINDOW_DAYS.short, now);
  const contact = Boolean(f.profile.contactEmail || f.profile.contactUrl);
  if (contact && f.profile.docsUrl && f.publishedSkillCount >= 2 && activeShort) return 'healthy';
  return 'degraded';
}

/** The health document's reasons: which rule decided, and what would move the agent up. */
export function healthReasons(f: AgentFacts, now: Date): string[] {
  const reasons: string[] = [];
  const status = healthOf(f, now);
  if (status === 'dormant') reasons.push(`No skill published and no settlement in the last ${WINDOW_DAYS.long} days.`);
  if (status !== 'healthy') {
    if (!f.profile.contactEmail && !f.profile.contactUrl)
      reasons.push('No contact method (PATCH /api/agents/me with contactEmail or contactUrl).');
    if (!f.profile.docsUrl) reasons.push('No documentation URL (PATCH /api/agents/me with docsUrl).');
    if (f.publishedSkillCount < 2)
      reasons.push(`Only ${f.publishedSkillCount} published skill(s); healthy needs 2 or more.`);
    if (!within(f.lastPublishAt, WINDOW_DAYS.short, now) && !within(f.lastSettleAt, WINDOW_DAYS.short, now)) {
      reasons.push(`No publish or settlement in the last ${WINDOW_DAYS.short} days.`);
    }
  }
  return reasons;
}
