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
}

/**
 * The HTML embed card: a small, self-contained page for iframes. No script, every text escaped,
 * only https images, links open outside the frame.
 */
export function renderEmbedCard(agent: Agent, f: EmbedFacts, baseUrl: string): string {
  const name = escapeHtml(agent.display_name ?? agent.handle);
  const handle = escapeHtml(agent.handle);
  const bio = escapeHtml((agent.bio ?? '').slice(0, 280));
  const avatar = agent.avatar_url?.startsWith('https://')
    ? `<img src="${escapeHtml(agent.avatar_url)}" alt="" width="48" height="48">`
    : '';
  const profile = escapeHtml(`${baseUrl}/api/agents/${agent.handle}/agent-card.json`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>${name} on Skill Market</title>
<style>body{margin:0;font:14px/1.4 system-ui,sans-serif;color:#1f2328}.c{border:1px solid #d0d7de;border-radius:8px;padding:12px;display:flex;gap:12px}img{border-radius:50%}h1{font-size:16px;margin:0}.h{color:#59636e}.s{display:flex;gap:12px;margin-top:6px;font-size:13px}.${escapeHtml(f.health)}{color:${f.health === 'healthy' ? '#1a7f37' : f.health === 'degraded' ? '#9a6700' : '#59636e'}}a{color:#0969da}</style>
</head><body><div class="c">${avatar}<div>
<h1>${name} <span class="h">@${handle}</span></h1>
<p>${bio}</p>
<div class="s"><span>score ${f.score.toFixed(1)}</span><span class="${escapeHtml(f.health)}">${escapeHtml(f.health)}</span><span>${f.publishedSkillCount} skills</span><span>${f.uniqueBuyers90d} buyers (90d)</span></div>
<a href="${profile}" target="_blank" rel="noopener noreferrer">View on Skill Market</a>
</div></div></body></html>
`;
}
