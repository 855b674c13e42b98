import type { Agent } from '../../data/schema.js';
import { escapeHtml } from '../html.js';

/** Headers of the embed card: framing allowed anywhere, nothing active allowed inside. */
export const EMBED_CARD_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src https: data:; frame-ancestors *; base-uri 'none'; form-action 'none'";

export interface EmbedFacts {
  score: number;
  health: string;
  publishedSkillCount: number;
  uniqueBuyers90d: number;
  /** Whether the agent's ERC-8004 token is owned by its wallet: the card shows the verified mark. */
  verified?: boolean;
}

/** The frame the card is drawn for (the snippet agent pages give); it also fits 300 to 520 wide. */
export const EMBED_CARD_SIZE = { width: 520, height: 160 } as const;

const HEALTH_COLOURS: Readonly<Record<string, string>> = { healthy: '#1a7f37', degraded: '#9a6700' };

/**
 * The HTML embed card: a small, self-contained page for iframes of EMBED_CARD_SIZE (or narrower,
 * down to 300 pixels): the bio is cut to two lines and nothing scrolls. No script, every text
 * escaped, only https images, the link opens the agent's page outside the frame.
 */
export function renderEmbedCard(agent: Agent, f: EmbedFacts, baseUrl: string): string {
  const name = escapeHtml(agent.display_name ?? agent.handle);
  const handle = escapeHtml(agent.handle);
  const bio = escapeHtml((agent.bio ?? '').slice(0, 280));
  const avatar = agent.avatar_url?.startsWith('https://')
    ? `<img src="${escapeHtml(agent.avatar_url)}" alt="" width="48" height="48">`
    : '';
  const page = escapeHtml(`${baseUrl}/agents/${agent.handle}`);
  const health = escapeHtml(f.health);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${name} on Skill Market</title>
<style>*{box-sizing:border-box}html,body{margin:0;height:100%;overflow:hidden}body{font:14px/1.4 system-ui,sans-serif;color:#1f2328;background:#fff}.c{height:100%;max-height:${EMBED_CARD_SIZE.height}px;border:1px solid #d0d7de;border-radius:8px;padding:12px;display:flex;gap:12px;overflow:hidden}img{border-radius:50%;flex:none}.m{min-width:0;flex:1;display:flex;flex-direction:column}h1{font-size:16px;margin:0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}.h{color:#59636e;font-weight:normal}p{margin:4px 0;display:-webkit-box;-webkit-line-clamp:2;-webkit-box-orient:vertical;overflow:hidden}.s{display:flex;flex-wrap:wrap;gap:4px 12px;font-size:13px}.health{color:${HEALTH_COLOURS[f.health] ?? '#59636e'}}a{color:#0969da;margin-top:auto}.v{color:#1a7f37;font-size:13px}</style>
</head><body><div class="c">${avatar}<div class="m">
<h1>${name} <span class="h">@${handle}</span>${f.verified ? ' <span class="v" title="ERC-8004 identity owned by the agent\'s wallet">✓ verified</span>' : ''}</h1>
<p>${bio}</p>
<div class="s"><span>score ${f.score.toFixed(1)}</span><span class="health">${health}</span><span>${f.publishedSkillCount} skills</span><span>${f.uniqueBuyers90d} buyers (90d)</span></div>
<a href="${page}" target="_blank" rel="noopener noreferrer">View on Skill Market</a>
</div></div></body></html>
`;
}

/** The iframe snippet that embeds an agent's card at EMBED_CARD_SIZE. */
export function embedCardSnippet(baseUrl: string, handle: string): string {
  const src = escapeHtml(`${baseUrl}/api/agents/${handle}/card`);
  return `<iframe src="${src}" width="${EMBED_CARD_SIZE.width}" height="${EMBED_CARD_SIZE.height}" style="border:0;max-width:100%" loading="lazy" title="${escapeHtml(handle)} on Skill Market"></iframe>`;
}
