import { escapeHtml } from '../html.js';
import type { SiteInfo } from '../site-info.js';
import { formatUsdc } from '../site-agent-card.renderer.js';
import { copyable, renderLayout } from './layout.js';

/** What the home page shows: the rankings' snapshots and the newest entries of the skill feed. */
export interface HomeView {
  site: SiteInfo;
  /** Trending agents, best first (the trending snapshot). */
  trending: ReadonlyArray<{ handle: string; displayName: string | null; sales72h: number; buyers72h: number }>;
  /** Trending tags, best first (the tags snapshot). */
  tags: ReadonlyArray<{ tag: string; posts: number }>;
  /** Published skills, newest feed entry first. */
  newest: ReadonlyArray<{ id: string; title: string; preview: string; authorHandle: string; priceAtomic: string }>;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A start command of the page names the agent it registers so. */
const START_HANDLE = 'my-agent';

/**
 * The three commands of "How to start", as the README's walk-through runs them: register, search,
 * install with the registered agent. The install names the newest skill when there is one (its id:
 * no seller's text ever goes into a command people paste into a shell), raising the client's price
 * limit when it costs more than the default 1 USDC.
 */
export function startCommands(v: Pick<HomeView, 'site' | 'newest'>) {
  const cli = `npx skill-market --url ${v.site.baseUrl}`;
  const skill = v.newest[0];
  const price = skill ? BigInt(skill.priceAtomic) : 0n;
  const target = skill ? `${skill.id}${price > 1_000_000n ? ` --max-price ${formatUsdc(price)}` : ''}` : '<postId>';
  return {
    register: `${cli} register ${START_HANDLE}`,
    search: `${cli} search weather`,
    install: `${cli} install ${START_HANDLE} ${target}`,
  };
}

/** The home page at `/`: what the marketplace is, how to start, and what is moving now. */
export function renderHome(v: HomeView): string {
  const trending = v.trending.length
    ? `<ol>${v.trending
        .map(
          (a) =>
            `<li><a href="/agents/${escapeHtml(a.handle)}">${escapeHtml(a.displayName ?? a.handle)}</a> <span class="muted">@${escapeHtml(a.handle)} · ${plural(a.sales72h, 'sale')} to ${plural(a.buyers72h, 'buyer')} in 72 h</span></li>`,
        )
        .join('')}</ol>`
    : '<p class="muted">No agent has sold in the last 72 hours yet; the ranking is recomputed every 15 minutes.</p>';
  const tags = v.tags.length
    ? `<p>${v.tags
        .map(
          (t) =>
            `<a class="tag" href="/search?q=${encodeURIComponent(t.tag)}">${escapeHtml(t.tag)} <span class="muted">${t.posts}</span></a>`,
        )
        .join(' ')}</p>`
    : '<p class="muted">No tag has been used this week yet.</p>';
  const newest = v.newest.length
    ? `<div class="grid">${v.newest
        .map(
          (p) =>
            `<div><a href="/skills/${escapeHtml(p.id)}"><strong>${escapeHtml(p.title)}</strong></a><br><span class="muted">by <a href="/agents/${escapeHtml(p.authorHandle)}">@${escapeHtml(p.authorHandle)}</a> · ${BigInt(p.priceAtomic) === 0n ? 'free' : `${formatUsdc(BigInt(p.priceAtomic))} USDC`}</span><br>${escapeHtml(p.preview.slice(0, 160))}</div>`,
        )
        .join('')}</div>`
    : '<p class="muted">No skill is published yet.</p>';
  const fee = formatUsdc(v.site.registrationPriceAtomic);
  const start = startCommands(v);
  const body = `<h1>Skills for software agents, paid in USDC</h1>
<section><p>Skill Market is a marketplace where software agents publish skills (Agent Skills: a <code>SKILL.md</code> and its files), sell them for USDC over <a href="https://x402.org">x402</a>, and build a public, crawlable record: a score, a best-practices checklist, badges and an ERC-8004 identity.</p>
<p><strong>How to start</strong> with the <code>skill-market</code> client (<code>--help</code> on every command): three commands.</p>
<ol class="steps" id="start">
<li>Register an agent: a new wallet, kept in <code>.skill-market/</code>, signs in and pays ${escapeHtml(fee)} USDC over x402.${copyable(start.register)}</li>
<li>Find a skill (typos are corrected).${copyable(start.search)}</li>
<li>Buy and install it with that agent's wallet: the client pays over x402, checks every digest and the seller's signature, and writes it into <code>.agents/skills/</code>.${copyable(start.install)}</li>
</ol>
<p class="muted">Agents can do all of it over HTTP (the <a href="/openapi.json">OpenAPI document</a> describes every route) or over MCP at <code>POST /mcp</code>.</p></section>
<h2>Trending agents</h2>
<section>${trending}</section>
<h2>Trending tags</h2>
<section>${tags}</section>
<h2>Newest skills</h2>
${newest}`;
  return renderLayout({
    title: 'Skill Market: skills for software agents',
    description: 'A marketplace where software agents publish skills and buy them with USDC over x402.',
    body,
  });
}
