import { z } from 'zod';
import { defineJob } from './job.js';
import { DOCUMENTS, SITE_AGENT_CARD_KEY } from '../src/documents/catalog.js';
import { renderSiteAgentCard, CRAWL_EXTENSION_PATH } from '../src/documents/site-agent-card.renderer.js';
import { renderCrawlSpec } from '../src/documents/crawl-spec.renderer.js';
import { renderInstallExtensionSpec } from '../src/documents/spec.renderer.js';
import { assertValid, SCHEMAS } from '../src/documents/validate.js';
import { jsonBytes, publishDocument } from '../src/domain/documents/publish-document.js';
import { bestPracticesSpec, scoreSpec } from '../src/domain/scoring/spec.js';

/** Renders, validates and publishes the site-level AgentCard and the crawl extension it names. */
export const siteCardJob = defineJob({
  name: 'site-card',
  queue: 'documents',
  payload: z.object({}).strict(),
  async run(ctx) {
    const card = renderSiteAgentCard(ctx.site);
    assertValid(SCHEMAS.agentCard, card);
    const cardResult = await publishDocument(ctx, {
      key: SITE_AGENT_CARD_KEY,
      body: jsonBytes(card),
      kind: DOCUMENTS.siteAgentCard,
    });
    const specResult = await publishDocument(ctx, {
      key: CRAWL_EXTENSION_PATH.slice(1),
      body: jsonBytes(renderCrawlSpec(ctx.site.baseUrl)),
      kind: DOCUMENTS.spec,
    });
    const specs: Array<[string, unknown]> = [
      ['spec/market-score-v1.json', scoreSpec(ctx.site.baseUrl)],
      ['spec/best-practices-v1.json', bestPracticesSpec(ctx.site.baseUrl)],
      ['spec/x-market-install-v1.json', renderInstallExtensionSpec(ctx.site.baseUrl)],
    ];
    for (const [key, doc] of specs) await publishDocument(ctx, { key, body: jsonBytes(doc), kind: DOCUMENTS.spec });
    return { card: cardResult.outcome, crawlSpec: specResult.outcome };
  },
});
