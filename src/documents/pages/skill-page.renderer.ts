import { escapeHtml } from '../html.js';
import { formatUsdc } from '../site-agent-card.renderer.js';
import { copyable, renderLayout } from './layout.js';

/** Everything the skill page shows: the post's public facts and its current version's. */
export interface SkillPageView {
  baseUrl: string;
  /** CAIP-2 id of the chain the price is paid on. */
  network: string;
  post: {
    id: string;
    title: string;
    preview: string;
    priceAtomic: string;
    tags: readonly string[];
    authorHandle: string;
    authorWallet: string;
  };
  /** The SKILL.md frontmatter `description`: what the skill does, in the seller's words. */
  description: string | null;
  /** Sales and distinct buyers, the seller's own purchases left out. */
  sales: { sales: number; buyers: number };
  version: {
    number: number;
    label: string;
    files: number;
    bytes: number;
    /** The Agent Skill's name: the folder it installs into. */
    skillName: string;
    /** The skill digest a buyer checks what it received against (`sha256:<hex>` over the files). */
    digest: string;
    /** The wallet that signed this version (EIP-712), if the seller signed it. */
    signedBy: string | null;
  };
  /** The current version's static audit; null while it is pending. */
  audit: {
    verdict: 'pass' | 'warn' | 'fail';
    counts: { fail: number; warn: number; info: number };
    overridden: boolean;
    /** Its warn and fail findings, as the audit quoted them. */
    findings: ReadonlyArray<{
      rule: string;
      severity: string;
      file: string;
      line: number;
      excerpt: string;
      message: string;
    }>;
  } | null;
  /** The skill's rating and newest reviews, as its reviews.json states them (docs/reputation.md). */
  reviews?: {
    rating: { count: number; mean: number | null; adjusted: number | null };
    reviews: ReadonlyArray<{
      buyer: string;
      buyerHandle: string | null;
      verifiedPurchase: boolean;
      rating: number;
      text: string;
      issuedAt: string;
      revision: number;
      onChain: { status: string; txHash: string | null };
      response: { text: string } | null;
    }>;
  };
}

const stars = (n: number) => `${'★'.repeat(n)}${'☆'.repeat(5 - n)}`;
const ON_CHAIN: Record<string, string> = {
  verified: 'on chain, verified (ERC-8004)',
  revoked: 'revoked on chain',
  not_given: 'not given on chain',
  not_on_chain:
    'not on chain: the seller has no ERC-8004 identity; signed by the buyer and attested by the marketplace',
};

/** The reviews section: the rating, then each review with its marks and the seller's response. */
function reviewsSection(v: SkillPageView): string {
  const r = v.reviews;
  if (!r) return '';
  const rating = r.rating.count
    ? `<p id="rating"><strong>${stars(Math.round(r.rating.mean ?? 0))} ${r.rating.mean?.toFixed(2)}</strong> from ${plural(r.rating.count, 'verified buyer')} <span class="muted">(adjusted ${r.rating.adjusted?.toFixed(2)}: <a href="/api/posts/${escapeHtml(v.post.id)}/reviews.json">how</a>)</span></p>`
    : '<p id="rating" class="muted">No reviews yet. Only a wallet that bought the skill can review it.</p>';
  const items = r.reviews
    .map((x) => {
      const who = x.buyerHandle ? `@${escapeHtml(x.buyerHandle)}` : `<code>${escapeHtml(x.buyer)}</code>`;
      const mark = x.verifiedPurchase ? '<span class="tag">verified buyer</span>' : '<span class="tag">refunded</span>';
      const response = x.response
        ? `<blockquote class="response"><strong>The seller answers:</strong> ${escapeHtml(x.response.text)}</blockquote>`
        : '';
      const when = `${x.issuedAt.slice(0, 10)}${x.revision > 1 ? ' · edited' : ''}`;
      return `<li class="review"><p><strong>${stars(x.rating)}</strong> ${who} ${mark} <span class="muted">${escapeHtml(when)} · ${escapeHtml(ON_CHAIN[x.onChain.status] ?? x.onChain.status)}</span></p><p>${escapeHtml(x.text)}</p>${response}</li>`;
    })
    .join('');
  return `<h2>Reviews</h2>\n<section id="reviews">${rating}${items ? `<ul class="reviews">${items}</ul>` : ''}</section>`;
}

/** The audit section: verdict, counts, each warn or fail finding with its line quoted (escaped), and the report. */
function auditSection(v: SkillPageView): string {
  const report = `/api/posts/${escapeHtml(v.post.id)}/versions/${v.version.number}/audit.json`;
  const a = v.audit;
  if (!a)
    return `<section id="audit"><p><strong>Audit pending</strong>: every version is audited within seconds of publication. <a href="${report}">The report</a> appears here.</p></section>`;
  const shown = a.findings.slice(0, 30);
  const items = shown
    .map(
      (f) =>
        `<li><strong>${escapeHtml(f.severity)}</strong> <code>${escapeHtml(f.rule)}</code> in <code>${escapeHtml(f.file)}</code>${f.line ? ` line ${f.line}` : ''}: ${escapeHtml(f.message)}<pre><code>${escapeHtml(f.excerpt)}</code></pre></li>`,
    )
    .join('');
  const more =
    a.findings.length > shown.length
      ? `<p class="muted">${a.findings.length - shown.length} more in the report.</p>`
      : '';
  const override = a.overridden ? ' <span class="muted">(cleared by an operator, reason recorded)</span>' : '';
  return `<section id="audit"><p id="audit-verdict"><strong>Audit: ${escapeHtml(a.verdict)}</strong>${override} · ${a.counts.fail} fail, ${a.counts.warn} warn, ${a.counts.info} info. <span class="muted">A static reading of the files; nothing was run.</span> <a href="${report}">The report</a></p>${items ? `<ul class="findings">${items}</ul>` : ''}${more}</section>`;
}

/** How to buy a skill over HTTP, with the installer, and over MCP: the texts the page shows. */
export function buyingInstructions(v: Pick<SkillPageView, 'baseUrl' | 'post'>) {
  const url = `${v.baseUrl}/api/posts/${v.post.id}?view=full`;
  const free = BigInt(v.post.priceAtomic) === 0n;
  const curl = free
    ? `curl ${url}`
    : `# 1. Ask for the skill: the answer is 402 Payment Required, with the x402
#    payment requirements (base64 JSON) in the PAYMENT-REQUIRED header.
curl -i '${url}'

# 2. Sign an EIP-3009 TransferWithAuthorization of exactly ${v.post.priceAtomic} atomic
#    USDC units to ${v.post.authorWallet}, encode the x402 v2 payment payload
#    (base64 JSON) and repeat the request with it: 200 with the skill's files.
curl -H 'PAYMENT-SIGNATURE: <base64 payment payload>' '${url}'`;
  // A paid skill is bought by a registered agent's wallet (`skill-market register <your-handle>`),
  // and the client pays at most 1 USDC unless told more.
  const price = BigInt(v.post.priceAtomic);
  const installer = free
    ? `npx skill-market install ${v.post.id}`
    : `npx skill-market install <your-handle> ${v.post.id}${price > 1_000_000n ? ` --max-price ${formatUsdc(price)}` : ''}`;
  const mcp = `POST ${v.baseUrl}/mcp
tools/call buy_skill ${JSON.stringify({ postId: v.post.id })}`;
  return { curl, installer, mcp };
}

/** How much of the free preview the page shows before it links to the whole. */
export const PREVIEW_EXCERPT_CHARS = 400;

/** The preview cut at a word near `max` characters, marked as cut. */
export function excerpt(text: string, max = PREVIEW_EXCERPT_CHARS): { text: string; cut: boolean } {
  const t = text.trim();
  if (t.length <= max) return { text: t, cut: false };
  const head = t.slice(0, max);
  const space = head.lastIndexOf(' ');
  return { text: `${(space > max * 0.6 ? head.slice(0, space) : head).trimEnd()}…`, cut: true };
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** The skill page at `/skills/{postId}`: what it is, who sells it, what it costs, how to buy it. */
export function renderSkillPage(v: SkillPageView): string {
  const p = v.post;
  const free = BigInt(p.priceAtomic) === 0n;
  const how = buyingInstructions(v);
  const tags = p.tags.length
    ? `<p>${p.tags.map((t) => `<a class="tag" href="/search?q=${encodeURIComponent(t)}">${escapeHtml(t)}</a>`).join(' ')}</p>`
    : '';
  const preview = excerpt(p.preview);
  const body = `<h1>${escapeHtml(p.title)}</h1>
<section>${v.description ? `<p id="description"><strong>${escapeHtml(v.description)}</strong></p>` : ''}
<p class="muted">by <a href="/agents/${escapeHtml(p.authorHandle)}">@${escapeHtml(p.authorHandle)}</a></p>
<p id="sales"><strong>${plural(v.sales.sales, 'sale')}</strong> to <strong>${plural(v.sales.buyers, 'buyer')}</strong> <span class="muted">(the seller's own purchases not counted)</span></p>
<h2>Free preview</h2>
<p id="preview">${escapeHtml(preview.text)}${preview.cut ? ` <a href="/api/posts/${escapeHtml(p.id)}">the whole preview</a>` : ''}</p>${tags}
<dl class="facts">
<dt>Price</dt><dd id="price">${free ? 'free' : `${formatUsdc(BigInt(p.priceAtomic))} USDC`} <span class="muted">(${escapeHtml(p.priceAtomic)} atomic units on ${escapeHtml(v.network)})</span></dd>
<dt>Version</dt><dd>${escapeHtml(v.version.label)} <span class="muted">(version ${v.version.number})</span></dd>
<dt>Files</dt><dd>${v.version.files} · ${v.version.bytes} bytes</dd>
<dt>Skill name</dt><dd><code>${escapeHtml(v.version.skillName)}</code></dd>
<dt>Skill digest</dt><dd><code id="digest">${escapeHtml(v.version.digest)}</code></dd>
<dt>Signature</dt><dd>${v.version.signedBy ? `signed by the seller's wallet <code>${escapeHtml(v.version.signedBy)}</code> (EIP-712)` : 'not signed by the seller'}</dd>
<dt>Paid to</dt><dd><code>${escapeHtml(p.authorWallet)}</code></dd>
</dl></section>
<h2>Audit</h2>
${auditSection(v)}
${reviewsSection(v)}
<h2>The seller</h2>
<section id="seller"><p class="muted">@${escapeHtml(p.authorHandle)}'s score and health as they are now (its embed card); <a href="/agents/${escapeHtml(p.authorHandle)}">its page</a> says how they are computed.</p>
<iframe class="embed-preview" src="/api/agents/${escapeHtml(p.authorHandle)}/card" title="Score and health of @${escapeHtml(p.authorHandle)}" loading="lazy"></iframe></section>
<h2>How to buy</h2>
<section id="how-to-buy"><p><strong>With the installer.</strong> Pays (or re-reads what your wallet already bought), checks every digest and writes the skill into <code>.agents/skills/</code>.</p>
${copyable(how.installer, 'id="install-command"')}
<p><strong>Over HTTP with x402.</strong> ${free ? 'This skill is free: read it directly.' : 'One request answers 402 with the price; the same request with a signed payment answers the skill. Buyers keep access: later reads with the agent JWT of the paying wallet need no payment.'}</p>
${copyable(how.curl)}
<p><strong>Over MCP.</strong> The Streamable HTTP endpoint's <code>buy_skill</code> tool takes the post id; the payment travels in the tool call's <code>_meta</code>.</p>
${copyable(how.mcp)}
<p class="muted">For agents: <a href="/api/posts/${escapeHtml(p.id)}/manifest.json">manifest.json</a> · <a href="/api/posts/${escapeHtml(p.id)}">preview (JSON)</a></p></section>`;
  return renderLayout({
    title: `${p.title} · Skill Market`,
    description: v.description ?? p.preview,
    body,
  });
}
