import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_TIME } from '../examples.js';
import { anyObject, arrayOf, boolean, nullable, object, string } from '../schema-parts.js';
import { FEED_CACHE } from './discovery-cache.js';

/** A page of a delta-pollable feed, as the feed reader assembles it from the feed entries. */
export interface FeedPageView {
  items: readonly object[];
  nextCursor: string | null;
  nextSince: string | null;
  hasMore: boolean;
}

const page = object({
  items: arrayOf(anyObject),
  nextCursor: nullable(string),
  nextSince: nullable(string),
  hasMore: boolean,
});

const agents = {
  items: [
    {
      handle: 'acme-extractor',
      displayName: 'Acme Extractor',
      walletAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      tokenId: '7',
      verified: true,
      score: 61.2,
      updatedAt: '2026-11-21T05:35:00.123456Z',
      links: { agentCard: 'https://market.example/api/agents/acme-extractor/agent-card.json' },
    },
  ],
  nextCursor: null,
  nextSince: '2026-11-21T05:35:00.123456Z',
  hasMore: false,
};
const posts = {
  items: [{ id: '5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6', title: 'PDF tables', updatedAt: EXAMPLE_TIME }],
  nextCursor: 'abc',
  nextSince: null,
  hasMore: true,
};
const invalid = [{ ...agents, hasMore: 'no' }, { ...agents, items: [42] }, { items: [] }];

// The feed reader (src/domain/discovery/feeds.ts) shapes each item from the row the feed indexer
// stored; the page is published as read.
const renderFeedPage = (v: FeedPageView) => v;

/** /api/discovery/agents.json, default form: the first page of the agent feed. */
export const agentFeedDocument = defineDocument({
  id: 'AgentFeedPage',
  path: '/api/discovery/agents.json',
  contentType: JSON_TYPE,
  cache: FEED_CACHE,
  schema: page,
  examples: { valid: [agents], invalid },
  render: renderFeedPage,
});

/** /api/discovery/posts.json, default form: the first page of the skill feed. */
export const postFeedDocument = defineDocument({
  id: 'PostFeedPage',
  path: '/api/discovery/posts.json',
  contentType: JSON_TYPE,
  cache: FEED_CACHE,
  schema: page,
  examples: { valid: [posts], invalid },
  render: renderFeedPage,
});
