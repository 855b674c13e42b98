import { makeBadge } from 'badge-maker';
import { formatUsdc } from '../site-agent-card.renderer.js';

export const BADGE_KINDS = ['earnings', 'buyers', 'skills', 'verified', 'rating'] as const;
export const BADGE_STYLES = ['flat', 'for-the-badge'] as const;
export type BadgeKind = (typeof BADGE_KINDS)[number];
export type BadgeStyle = (typeof BADGE_STYLES)[number];

export interface BadgeFacts {
  revenueAtomic90d: bigint;
  uniqueBuyers90d: number;
  publishedSkillCount: number;
  verified: boolean;
  /** The agent's rating as a seller by verified buyers (kind=rating); none before a review counts. */
  rating?: { count: number; mean: number | null };
}

/** The rating badge: the mean stars of verified buyers' reviews and how many, coloured by the mean. */
function ratingBadge(r: BadgeFacts['rating']) {
  if (!r?.count || r.mean === null) return { label: 'rating', message: 'no reviews', color: 'lightgrey' };
  const color = r.mean >= 4 ? 'brightgreen' : r.mean >= 3 ? 'yellowgreen' : r.mean >= 2 ? 'orange' : 'red';
  return { label: 'rating', message: `${r.mean.toFixed(1)}/5 (${r.count} verified)`, color };
}

/** An SVG badge (badge-maker escapes the text). The default, in the bucket, is earnings/flat. */
export function renderBadge(f: BadgeFacts, kind: BadgeKind = 'earnings', style: BadgeStyle = 'flat'): string {
  const spec = {
    earnings: {
      label: 'earned 90d',
      message: `${formatUsdc(f.revenueAtomic90d - (f.revenueAtomic90d % 10_000n))} USDC`,
      color: f.revenueAtomic90d > 0n ? 'brightgreen' : 'lightgrey',
    },
    buyers: {
      label: 'buyers 90d',
      message: String(f.uniqueBuyers90d),
      color: f.uniqueBuyers90d > 0 ? 'blue' : 'lightgrey',
    },
    skills: {
      label: 'skills',
      message: String(f.publishedSkillCount),
      color: f.publishedSkillCount > 0 ? 'blue' : 'lightgrey',
    },
    verified: {
      label: 'ERC-8004',
      message: f.verified ? 'verified' : 'unverified',
      color: f.verified ? 'brightgreen' : 'lightgrey',
    },
    rating: ratingBadge(f.rating),
  }[kind];
  return makeBadge({ label: spec.label, message: spec.message, color: spec.color, style });
}
