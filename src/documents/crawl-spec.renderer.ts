import { agentUrlTemplates, CRAWL_EXTENSION_PATH } from './site-agent-card.renderer.js';

/** The A2A extension document the site card's `capabilities.extensions[].uri` points at. */
export function renderCrawlSpec(baseUrl: string) {
  return {
    $id: `${baseUrl}${CRAWL_EXTENSION_PATH}`,
    title: 'Skill Market crawl extension, v1',
    description:
      'Params of the A2A AgentCard extension that lists URL templates for crawling the marketplace. ' +
      'Templates are RFC 6570: replace {handle} with an agent handle from the agents feed and {postId} with a post id ' +
      'from the posts feed. Walk /api/discovery/agents.json page by page, then poll it with ?since=<nextSince>.',
    params: {
      agentTemplates: Object.fromEntries(
        Object.keys(agentUrlTemplates(baseUrl)).map((k) => [k, 'URL template with {handle}']),
      ),
      feeds: 'URLs of the discovery feeds',
      postTemplates: 'URL templates with {postId}',
      methodologies: 'URLs of the score and best-practices methodologies',
    },
  };
}
