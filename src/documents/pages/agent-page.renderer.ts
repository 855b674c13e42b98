import type { Agent } from '../../data/schema.js';
import { agentLinks, type PublishedSkill } from '../agent/agent-card.renderer.js';
import { BADGE_KINDS } from '../agent/badge.renderer.js';
import { EMBED_CARD_SIZE, embedCardSnippet } from '../agent/embed-card.renderer.js';
import { escapeHtml } from '../html.js';
import { formatUsdc } from '../site-agent-card.renderer.js';
import { copyable, isWebUrl, renderLayout } from './layout.js';

/** A checklist item as the best-practices document states it. */
export interface ChecklistItem {
  id: string;
  label: string;
  status: 'passed' | 'partial' | 'missing';
  howToFix: string | null;
}

/** Everything the agent page shows, from what the agent recompute rendered its documents from. */
export interface AgentPageView {
  baseUrl: string;
  agent: Agent;
  /** Whether the agent's ERC-8004 token is owned by its wallet (the verified badge). */
  verified: boolean;
  score: {
    score: number;
    rawScore: number;
    health: string;
    /** Why the health is what it is (health.json's reasons): none when healthy. */
    healthReasons?: readonly string[];
    dimensions: Readonly<Record<string, number>>;
    contributions: Readonly<Record<string, number>>;
    weights: Readonly<Record<string, number>>;
  };
  checklist: { items: readonly ChecklistItem[]; passed: number; partial: number; missing: number };
  skills: readonly PublishedSkill[];
  /** Similar agents, with what they share named as people read it (OASF captions and tags). */
  similar: ReadonlyArray<{ handle: string; similarity: number; sharedLabels: readonly string[] }>;
  /** Its rating as a seller by verified buyers and its refunds (rating.json); absent on older pages. */
  rating?: {
    rating: { count: number; mean: number | null; adjusted: number | null };
    refunds: { sales: number; refunds: number; refundRate: number; medianResponseSeconds: number | null };
  };
}

/** The seller's rating and refunds, as rating.json states them. */
function ratingSection(v: AgentPageView): string {
  const r = v.rating;
  if (!r) return '';
  const stars = r.rating.count
    ? `<strong>${'★'.repeat(Math.round(r.rating.mean ?? 0))}${'☆'.repeat(5 - Math.round(r.rating.mean ?? 0))} ${r.rating.mean?.toFixed(2)}</strong> from ${r.rating.count} verified buyer review${r.rating.count === 1 ? '' : 's'} <span class="muted">(adjusted ${r.rating.adjusted?.toFixed(2)})</span>`
    : '<span class="muted">No reviews yet.</span>';
  const response =
    r.refunds.medianResponseSeconds === null
      ? ''
      : `; refund requests answered in ${Math.round(r.refunds.medianResponseSeconds / 3600)} h (median)`;
  const refunds = `${r.refunds.refunds} refund${r.refunds.refunds === 1 ? '' : 's'} of ${r.refunds.sales} sale${r.refunds.sales === 1 ? '' : 's'} (${(r.refunds.refundRate * 100).toFixed(1)}%)${response}`;
  return `<h2>Rating</h2>\n<section id="rating"><p>${stars}</p><p class="muted">${escapeHtml(refunds)} · <a href="/api/agents/${escapeHtml(v.agent.handle)}/rating.json">rating.json</a> · <a href="/api/agents/${escapeHtml(v.agent.handle)}/reputation.json">reputation.json</a></p></section>`;
}

const DIMENSION_LABELS: Readonly<Record<string, string>> = {
  transparency: 'Transparency',
  reliability: 'Reliability',
  reputation: 'Reputation',
  ecosystem: 'Ecosystem',
};
const STATUS_MARK = { passed: '✓', partial: '◐', missing: '✗' } as const;

const price = (atomic: string) => (BigInt(atomic) === 0n ? 'free' : `${formatUsdc(BigInt(atomic))} USDC`);

function profileLinks(a: Agent): string {
  const links: string[] = [];
  const web = (label: string, url: string | null) => {
    if (isWebUrl(url)) links.push(`<a href="${escapeHtml(url)}" rel="nofollow noopener">${label}</a>`);
  };
  web('Website', a.website_url);
  web('Docs', a.docs_url);
  web('Contact', a.contact_url);
  if (a.contact_email && /^[^\s@<>"']+@[^\s@<>"']+$/.test(a.contact_email))
    links.push(`<a href="mailto:${escapeHtml(a.contact_email)}">${escapeHtml(a.contact_email)}</a>`);
  return links.length ? `<p>${links.join(' · ')}</p>` : '';
}

function scoreSection(v: AgentPageView): string {
  const dims = Object.entries(v.score.dimensions)
    .map(([name, value]) => {
      const pct = Math.round(Math.max(0, Math.min(1, value)) * 100);
      const weight = Math.round((v.score.weights[name] ?? 0) * 100);
      return `<div class="dim"><span>${escapeHtml(DIMENSION_LABELS[name] ?? name)} <span class="muted">${weight}%</span></span><div class="meter" role="meter" aria-valuenow="${pct}" aria-valuemin="0" aria-valuemax="100" aria-label="${escapeHtml(name)}"><span style="width:${pct}%"></span></div><span>${(v.score.contributions[name] ?? 0).toFixed(2)}</span></div>`;
    })
    .join('');
  return `<h2>Score</h2>
<section><div class="score" id="score">${v.score.score.toFixed(2)}</div>
<p class="muted">out of 100 · health <strong class="${escapeHtml(v.score.health)}">${escapeHtml(v.score.health)}</strong> · before the health multiplier ${v.score.rawScore.toFixed(2)} · <a href="/spec/market-score-v1.json">how it is computed</a></p>${
    v.score.health !== 'healthy' && v.score.healthReasons?.length
      ? `
<p id="health-reasons">Why ${escapeHtml(v.score.health)}: ${v.score.healthReasons.map(escapeHtml).join('; ')}. The checklist below says how to fix each item.</p>`
      : ''
  }
${dims}</section>`;
}

/**
 * The skill-market command that fixes a checklist item, where the client has one (docs/cli.md):
 * it sets only what is missing. Items without one (capabilities, OASF categories, the payout
 * wallet, the registration file) are fixed over HTTP alone.
 */
function fixCommand(item: ChecklistItem, a: Agent): string | undefined {
  const cli = `npx skill-market`;
  switch (item.id) {
    case 'profile-basics': {
      const flags = [
        ...(a.bio && a.bio.length >= 30 ? [] : ['--bio "What the agent does, in 30 characters or more"']),
        ...(a.avatar_url ? [] : ['--avatar-url https://example.com/avatar.png']),
      ];
      return flags.length ? `${cli} profile ${a.handle} ${flags.join(' ')}` : undefined;
    }
    case 'erc8004-identity':
      return a.token_id === null ? `${cli} register ${a.handle} --erc8004` : undefined;
    case 'contact-method':
      return `${cli} profile ${a.handle} --contact-email agent@example.com`;
    case 'documentation':
      return `${cli} profile ${a.handle} --docs-url https://example.com/docs`;
    case 'monetized-skill':
      return item.status === 'missing'
        ? `${cli} publish ${a.handle} ./my-skill --title "A skill" --price 1.5`
        : undefined;
    case 'recent-activity':
      return `${cli} publish ${a.handle} ./my-skill --title "A skill" --price 1.5`;
    default:
      return undefined;
  }
}

function checklistSection(v: AgentPageView): string {
  const items = v.checklist.items
    .map((i) => {
      const command = i.howToFix ? fixCommand(i, v.agent) : undefined;
      const fix = i.howToFix
        ? `<div class="fix">${
            command
              ? `How to fix, with the client:${copyable(command, 'data-fix="cli"')}Or over HTTP: <code data-fix="http">${escapeHtml(i.howToFix)}</code>`
              : `How to fix, over HTTP: <code data-fix="http">${escapeHtml(i.howToFix)}</code>`
          }</div>`
        : '';
      return `<li class="${i.status}" data-item="${escapeHtml(i.id)}"><span aria-hidden="true">${STATUS_MARK[i.status]}</span> ${escapeHtml(i.label)} <span class="muted">(${i.status})</span>${fix}</li>`;
    })
    .join('');
  return `<h2>Best practices</h2>
<section id="checklist"><p class="muted">${v.checklist.passed} passed, ${v.checklist.partial} partial, ${v.checklist.missing} missing · <a href="/spec/best-practices-v1.json">the checklist</a></p><ul class="plain">${items}</ul></section>`;
}

function badgesSection(v: AgentPageView): string {
  const handle = v.agent.handle;
  const links = agentLinks(v.baseUrl, handle);
  const profile = `${v.baseUrl}/agents/${handle}`;
  const badges = BADGE_KINDS.map((kind) => {
    const query = kind === 'earnings' ? '' : `?kind=${kind}`;
    return { kind, query, url: `${links.badge}${query}` };
  });
  const images = badges
    .map(
      (b) =>
        `<img src="/api/agents/${escapeHtml(handle)}/badge.svg${b.query}" alt="${b.kind} badge of @${escapeHtml(handle)}" data-kind="${b.kind}">`,
    )
    .join(' ');
  const markdown = badges.map((b) => `[![${b.kind}](${b.url})](${profile})`).join('\n');
  const html = badges
    .map((b) => `<a href="${profile}"><img src="${b.url}" alt="${b.kind} badge of @${handle}"></a>`)
    .join('\n');
  const iframe = embedCardSnippet(v.baseUrl, handle);
  return `<h2>Badges</h2>
<section id="badges"><p class="badges">${images}</p>
<p class="muted">Every badge above, ready to paste into a README or a web page (keep the lines you want):</p>
<h3>Markdown</h3>${copyable(markdown, 'data-format="markdown"')}
<h3>HTML</h3>${copyable(html, 'data-format="html"')}</section>
<h2>Embed card</h2>
<section id="embed"><p class="muted">A card for other sites, made for a ${EMBED_CARD_SIZE.width}×${EMBED_CARD_SIZE.height} frame (it fits 300 pixels and wider). As it shows:</p>
<iframe class="embed-preview" src="/api/agents/${escapeHtml(handle)}/card" title="Embed card of @${escapeHtml(handle)}" loading="lazy"></iframe>
<p class="muted">The snippet:</p>${copyable(iframe, 'data-format="iframe"')}</section>`;
}

function skillsSection(v: AgentPageView): string {
  if (!v.skills.length) return '<h2>Skills</h2>\n<section><p class="muted">No published skill yet.</p></section>';
  const items = v.skills
    .map(
      (s) =>
        `<div><a href="/skills/${escapeHtml(s.id)}"><strong>${escapeHtml(s.title)}</strong></a><br><span class="muted">${price(s.priceAtomic)}</span><br>${escapeHtml(s.preview.slice(0, 160))}${s.tags.length ? `<br>${s.tags.map((t) => `<span class="tag">${escapeHtml(t)}</span>`).join('')}` : ''}</div>`,
    )
    .join('');
  return `<h2>Skills</h2>\n<div class="grid" id="skills">${items}</div>`;
}

function similarSection(v: AgentPageView): string {
  if (!v.similar.length) return '';
  const items = v.similar
    .map(
      (s) =>
        `<li><a href="/agents/${escapeHtml(s.handle)}">@${escapeHtml(s.handle)}</a> <span class="muted">${Math.round(s.similarity * 100)}% similar${s.sharedLabels.length ? ` · shares ${escapeHtml(s.sharedLabels.slice(0, 5).join(', '))}` : ''}</span></li>`,
    )
    .join('');
  return `<h2>Similar agents</h2>\n<section id="similar"><ul class="plain">${items}</ul></section>`;
}

/** The agent page at `/agents/{handle}`: card, score, checklist, badges, skills, similar agents. */
export function renderAgentPage(v: AgentPageView): string {
  const a = v.agent;
  const name = a.display_name ?? a.handle;
  const avatar =
    isWebUrl(a.avatar_url) && a.avatar_url.startsWith('https://')
      ? `<img src="${escapeHtml(a.avatar_url)}" alt="" width="72" height="72">`
      : '';
  const links = agentLinks(v.baseUrl, a.handle);
  const body = `<div class="card who">${avatar}<div><h1>${escapeHtml(name)}</h1>
<p class="muted">@${escapeHtml(a.handle)} · ERC-8004 ${v.verified ? '<strong class="passed">verified</strong>' : 'unverified'}</p>
${a.bio ? `<p>${escapeHtml(a.bio)}</p>` : ''}${profileLinks(a)}
<p class="muted">For agents: <a href="${escapeHtml(links.agentCard)}">AgentCard</a> · <a href="${escapeHtml(links.score)}">score.json</a> · <a href="${escapeHtml(links.bestPractices)}">best-practices.json</a> · <a href="${escapeHtml(links.identity)}">identity</a></p></div></div>
${scoreSection(v)}
${ratingSection(v)}
${checklistSection(v)}
${skillsSection(v)}
${badgesSection(v)}
${similarSection(v)}`;
  return renderLayout({
    title: `${name} (@${a.handle}) · Skill Market`,
    description: a.bio ?? `${name} sells skills for software agents on Skill Market.`,
    body,
  });
}
