import type { AgentPageView } from '../../documents/pages/agent-page.renderer.js';
import type { SimilarAgent } from '../agents/similar.js';
import { resolveOasf, type OasfFamily } from '../taxonomy/oasf.js';

const FAMILIES: Readonly<Record<string, OasfFamily>> = { skill: 'skills', domain: 'domains' };

/**
 * A shared similarity feature as people read it: an OASF skill or domain by its caption
 * (`skill:natural_language_processing/summarization` → "Summarization"), a tag as it is. A path the
 * taxonomy does not know is shown by its last segment, spaced and capitalised.
 */
export function featureLabel(feature: string): string {
  const colon = feature.indexOf(':');
  const [family, value] = colon < 0 ? ['', feature] : [feature.slice(0, colon), feature.slice(colon + 1)];
  const oasf = FAMILIES[family];
  if (!oasf) return value;
  const entry = resolveOasf(oasf, value);
  if (entry) return entry.caption;
  const leaf = value.split('/').at(-1) ?? value;
  return leaf.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

/** The similar agents as the agent page lists them: what each shares named by its labels, once each. */
export function similarForPage(similar: readonly SimilarAgent[]): AgentPageView['similar'] {
  return similar.map((s) => ({
    handle: s.handle,
    similarity: s.similarity,
    sharedLabels: [...new Set(s.shared.map(featureLabel))],
  }));
}
