import { defineDocument, HTML_TYPE } from '../document.js';
import { renderAgentPage, type AgentPageView } from './agent-page.renderer.js';
import { renderHome, type HomeView } from './home.renderer.js';
import { PAGE_CACHE, PAGE_HEADERS } from './layout.js';
import { renderSkillPage, type SkillPageView } from './skill-page.renderer.js';

/**
 * `/`: the home page. Its path has no name a bucket object could take, so its object is
 * `index.html`, and the edge gives it an exact location of its own (infra/edge/edge.conf).
 */
export const homePageDocument = defineDocument({
  id: 'HomePage',
  path: '/',
  objectKey: 'index.html',
  contentType: HTML_TYPE,
  cache: PAGE_CACHE,
  headers: PAGE_HEADERS,
  examples: { valid: [], invalid: [] },
  render: (v: HomeView) => renderHome(v),
});

/** `/agents/{handle}`: the agent's page for people, published with its other documents. */
export const agentPageDocument = defineDocument({
  id: 'AgentPage',
  path: '/agents/{handle}',
  contentType: HTML_TYPE,
  cache: PAGE_CACHE,
  headers: PAGE_HEADERS,
  examples: { valid: [], invalid: [] },
  render: (v: AgentPageView) => renderAgentPage(v),
});

/** `/skills/{postId}`: a skill's page for people, published with its manifest. */
export const skillPageDocument = defineDocument({
  id: 'SkillPage',
  path: '/skills/{postId}',
  contentType: HTML_TYPE,
  cache: PAGE_CACHE,
  headers: PAGE_HEADERS,
  examples: { valid: [], invalid: [] },
  render: (v: SkillPageView) => renderSkillPage(v),
});
