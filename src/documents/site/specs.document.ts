import { INSTALL_EXTENSION_PATH } from '../agent/agent-card.renderer.js';
import { renderCrawlSpec } from '../crawl-spec.renderer.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_SITE } from '../examples.js';
import { anyObject, arrayOf, number, object, specSchema, string } from '../schema-parts.js';
import { CRAWL_EXTENSION_PATH } from '../site-agent-card.renderer.js';
import {
  renderBestPracticesSpec,
  renderInstallExtensionSpec,
  renderScoreSpec,
  type BestPracticeRule,
  type ScoreMethodology,
} from '../spec.renderer.js';
import { SPEC_CACHE } from './spec-cache.js';

const base = EXAMPLE_SITE.baseUrl;

const crawl = renderCrawlSpec(base);
/** /spec/crawl-v1.json: the crawl extension the site card names. */
export const crawlSpecDocument = defineDocument({
  id: 'CrawlExtensionSpec',
  path: CRAWL_EXTENSION_PATH,
  contentType: JSON_TYPE,
  cache: SPEC_CACHE,
  schema: specSchema({ description: string, params: anyObject }),
  examples: {
    valid: [crawl],
    invalid: [
      { ...crawl, $id: 42 },
      { ...crawl, params: undefined },
    ],
  },
  render: (baseUrl: string) => renderCrawlSpec(baseUrl),
});

const score = {
  $id: `${base}/spec/market-score-v1.json`,
  title: 'Skill Market agent score, v1',
  version: 'v1',
  summary: 'score = rawScore x health multiplier.',
  weights: { transparency: 0.25 },
  dimensions: {},
  health: {},
  constants: {},
  inputs: {},
  invariants: ['score = rawScore x score.health.multiplier'],
  documentPaths: {},
};
/** /spec/market-score-v1.json: the score methodology, from the scorer's own constants. */
export const scoreSpecDocument = defineDocument({
  id: 'ScoreMethodology',
  path: '/spec/market-score-v1.json',
  contentType: JSON_TYPE,
  cache: SPEC_CACHE,
  schema: specSchema({
    version: string,
    summary: string,
    weights: { type: 'object', additionalProperties: number },
    dimensions: anyObject,
    health: anyObject,
    constants: anyObject,
    inputs: anyObject,
    invariants: arrayOf(string),
    documentPaths: anyObject,
  }),
  examples: {
    valid: [score],
    invalid: [
      { ...score, weights: { transparency: 'a quarter' } },
      { ...score, version: 1 },
    ],
  },
  render: (v: { baseUrl: string; methodology: ScoreMethodology }) => renderScoreSpec(v.baseUrl, v.methodology),
});

const practices = renderBestPracticesSpec(base, [
  { id: 'profile-complete', label: 'Profile complete', anchor: 'profile-complete', rule: 'passed: name and bio set' },
]);
/** /spec/best-practices-v1.json: the checklist's items, an anchor each. */
export const bestPracticesSpecDocument = defineDocument({
  id: 'BestPracticesMethodology',
  path: '/spec/best-practices-v1.json',
  contentType: JSON_TYPE,
  cache: SPEC_CACHE,
  schema: specSchema({
    version: string,
    summary: string,
    items: arrayOf(object({ anchor: string, $anchor: string, id: string, label: string, rule: string })),
    documentPath: string,
  }),
  examples: {
    valid: [practices],
    invalid: [
      { ...practices, items: [{ id: 'x' }] },
      { ...practices, title: undefined },
    ],
  },
  render: (v: { baseUrl: string; items: readonly BestPracticeRule[] }) => renderBestPracticesSpec(v.baseUrl, v.items),
});

const install = renderInstallExtensionSpec(base);
/** /spec/x-market-install-v1.json: the install extension per-agent cards carry. */
export const installExtensionSpecDocument = defineDocument({
  id: 'InstallExtensionSpec',
  path: INSTALL_EXTENSION_PATH,
  contentType: JSON_TYPE,
  cache: SPEC_CACHE,
  schema: specSchema({ description: string, params: anyObject }),
  examples: {
    valid: [install],
    invalid: [
      { ...install, $id: 'not a uri' },
      { ...install, params: [] },
    ],
  },
  render: (baseUrl: string) => renderInstallExtensionSpec(baseUrl),
});
