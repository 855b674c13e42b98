import type { CachePolicy } from '../cache-policy.js';
import { escapeHtml } from '../html.js';

/** Where the pages' one script is served from (this site only: the policy below allows no other). */
export const PAGE_SCRIPT_PATH = '/assets/page.js';

/**
 * The policy of every page: the only script is this site's own file (PAGE_SCRIPT_PATH: copy
 * buttons; no inline script, no other source), styles only inline, images from this site
 * (badges), https avatars and data URIs, frames only from this site (the agent page's preview of
 * its embed card), forms submit only here (the search box), and no other site frames a page (the
 * embed card is the page made for framing).
 */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' https: data:; frame-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/** Headers a page is always served with, from the bucket (the edge adds them) or from the API. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': PAGE_CSP,
  'X-Content-Type-Options': 'nosniff',
};

/** Pages follow what they show: a sale shows on the agent's page within seconds, like its documents. */
export const PAGE_CACHE: CachePolicy = { maxAge: 5, staleWhileRevalidate: 60 };

/** A link target from an agent's profile: only http(s) URLs become links (never `javascript:`). */
export const isWebUrl = (url: string | null | undefined): url is string =>
  typeof url === 'string' && /^https?:\/\/[^\s"'<>]+$/i.test(url);

const STYLE = `
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
header{background:#24292f;color:#fff}
.bar{max-width:980px;margin:0 auto;padding:10px 16px;display:flex;flex-wrap:wrap;gap:10px;align-items:center}
.site{color:#fff;font-weight:600;font-size:18px;margin-right:auto}
form.search{display:flex;gap:6px;flex:1 1 260px;max-width:420px}
form.search input{flex:1;min-width:0;padding:6px 10px;border:1px solid #d0d7de;border-radius:6px;font:inherit}
button{padding:6px 12px;border:1px solid #1f883d;border-radius:6px;background:#1f883d;color:#fff;font:inherit;cursor:pointer}
main{max-width:980px;margin:0 auto;padding:16px}
h1{font-size:28px;line-height:1.25;margin:8px 0 12px;overflow-wrap:anywhere}
h2{font-size:20px;margin:24px 0 8px}
section,.card{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:16px;margin:0 0 16px}
.muted{color:#59636e}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:12px}
.grid>div{border:1px solid #d0d7de;border-radius:6px;padding:10px;background:#fff;overflow-wrap:anywhere}
ul.plain{list-style:none;padding:0;margin:0}ul.plain li{padding:6px 0;border-bottom:1px solid #eaeef2;overflow-wrap:anywhere}
ul.plain li:last-child{border-bottom:0}
.tag{display:inline-block;padding:2px 8px;margin:2px;border-radius:12px;background:#ddf4ff;font-size:14px}
.who{display:flex;gap:16px;align-items:flex-start}.who img{border-radius:50%;flex:none}
.who>div{min-width:0;overflow-wrap:anywhere}
.score{font-size:40px;font-weight:700}
.dim{display:grid;grid-template-columns:minmax(90px,140px) 1fr 56px;gap:8px;align-items:center;margin:6px 0}
.meter{height:12px;background:#eaeef2;border-radius:6px;overflow:hidden}.meter>span{display:block;height:100%;background:#1f883d}
.passed{color:#1a7f37}.partial{color:#9a6700}.missing{color:#cf222e}
.fix{font-size:14px;color:#59636e;margin:2px 0 0 22px;overflow-wrap:anywhere}
pre,textarea{display:block;width:100%;max-width:100%;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere;font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px;margin:6px 0}
textarea{resize:vertical;height:4.5em}
pre.copy{user-select:all;-webkit-user-select:all;cursor:copy}
.snippet{position:relative;margin:6px 0}.snippet pre{margin:0;padding-right:64px}.snippet button{position:absolute;top:4px;right:4px;padding:2px 8px;font-size:13px;background:#fff;color:#1f2328;border-color:#d0d7de}
ol.steps{padding-left:20px;margin:8px 0}ol.steps li{margin:8px 0}
h3{font-size:16px;margin:16px 0 4px}
.badges img{max-width:100%;margin:0 8px 8px 0;vertical-align:middle}
iframe.embed-preview{display:block;width:100%;max-width:520px;height:160px;border:0;margin:6px 0}
mark{background:#fff8c5}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:4px 12px;margin:0}dl.facts dt{color:#59636e}dl.facts dd{margin:0;overflow-wrap:anywhere}
footer{max-width:980px;margin:0 auto;padding:16px;color:#59636e;font-size:14px}footer a{margin-right:12px}
@media (max-width:600px){h1{font-size:22px}.score{font-size:32px}.dim{grid-template-columns:90px 1fr 48px}main{padding:10px}}
`
  .trim()
  .replace(/\n/g, '');

export interface LayoutView {
  /** The page title (already text; escaped here). */
  title: string;
  /** The page's main content, HTML built by the page's renderer from escaped text. */
  body: string;
  /** The search box's current text. */
  query?: string;
  /** A one-line description for search engines and link previews. */
  description?: string;
}

/**
 * The shared page: header with the site name and a search box (a GET form to /search), the page's
 * content, and a footer linking the API description and the methodologies. One inline
 * stylesheet and the site's one script (copy buttons; the page works without it).
 */
export function renderLayout(v: LayoutView): string {
  const description = v.description
    ? `\n<meta name="description" content="${escapeHtml(v.description.slice(0, 300))}">`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(v.title)}</title>${description}
<link rel="icon" href="data:,">
<style>${STYLE}</style>
<script src="${PAGE_SCRIPT_PATH}" defer></script>
</head><body>
<header><div class="bar"><a class="site" href="/">Skill Market</a>
<form class="search" action="/search" method="get" role="search"><input type="search" name="q" value="${escapeHtml(v.query ?? '')}" placeholder="Search agents, skills, tags" aria-label="Search" maxlength="200"><button type="submit">Search</button></form></div></header>
<main>
${v.body}
</main>
<footer><a href="/openapi.json">API (OpenAPI)</a><a href="/.well-known/agent-card.json">Site AgentCard</a><a href="/spec/market-score-v1.json">Score methodology</a><a href="/spec/best-practices-v1.json">Best practices</a><a href="/api/discovery/agents.json">Agent feed</a><a href="/api/discovery/posts.json">Skill feed</a></footer>
</body></html>
`;
}

/**
 * A text to copy (a command, a snippet): shown whole and wrapped, never cut; a click selects all of
 * it, and the page script adds a Copy button (hidden until the script runs). `attrs` are trusted
 * attributes of the `pre` (already escaped).
 */
export function copyable(text: string, attrs = ''): string {
  return `<div class="snippet"><pre class="copy"${attrs ? ` ${attrs}` : ''}>${escapeHtml(text)}</pre><button type="button" class="copy-button" hidden>Copy</button></div>`;
}

/** A page that says what is not there (or what was wrong with the request), for people. */
export function renderMessagePage(title: string, message: string, query?: string): string {
  return renderLayout({
    title: `${title} · Skill Market`,
    query,
    body: `<h1>${escapeHtml(title)}</h1>\n<section><p>${escapeHtml(message)}</p><p><a href="/">Back to the home page</a></p></section>`,
  });
}
