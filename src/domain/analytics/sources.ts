import type { Source } from '../../data/analytics.repository.js';

/** What a request's own context says about where it came from: its transport and its Referer. */
export interface RequestContext {
  transport: 'http' | 'mcp';
  /** The Referer header, if any. Only its path on this site is read; another site's URL is never stored. */
  referer?: string;
  /** This site's hosts (PUBLIC_BASE_URL's, and the one the request was sent to), to tell our own pages from other sites. */
  siteHosts: readonly string[];
}

/**
 * The referrer source of a request, from its own context only (no cookie, no third-party script):
 * an MCP tool call is `mcp`; an HTTP request whose Referer is one of this site's pages is `search`
 * (the search page and API), `feeds` (the discovery feeds), `bazaar` (the x402 Bazaar discovery
 * API) or `pages` (any other page: home, agent, skill); anything else (no Referer, another site) is
 * `direct`. Only the class is kept, never the URL.
 */
export function sourceOf(ctx: RequestContext): Source {
  if (ctx.transport === 'mcp') return 'mcp';
  if (!ctx.referer) return 'direct';
  let url: URL;
  try {
    url = new URL(ctx.referer);
  } catch {
    return 'direct';
  }
  if (!ctx.siteHosts.includes(url.host)) return 'direct';
  const path = url.pathname;
  if (path === '/search' || path === '/api/discovery/search') return 'search';
  if (path.startsWith('/discovery/') || path.startsWith('/api/bazaar') || path.startsWith('/.well-known/x402'))
    return 'bazaar';
  if (path.startsWith('/api/discovery/') || path.startsWith('/feeds/') || /\.(atom|rss|xml)$/.test(path))
    return 'feeds';
  return 'pages';
}
