import { renderCategories, type CategoryCounts, type CategoryTaxonomy } from '../categories.renderer.js';
import { defineDocument, JSON_TYPE } from '../document.js';
import { EXAMPLE_TIME } from '../examples.js';
import { anyObject, arrayOf, integer, nullable, number, object, string } from '../schema-parts.js';
import { RANKING_CACHE } from './discovery-cache.js';

/** A ranking snapshot as the rankings job stored it (or its empty form before the first run), and when. */
export interface SnapshotView {
  document: Record<string, unknown>;
  computedAt: string | null;
}

/** A ranking document: the snapshot, stamped with when it was computed. */
export const renderSnapshot = (v: SnapshotView) => ({ ...v.document, computedAt: v.computedAt });

export interface CategoriesView {
  taxonomy: CategoryTaxonomy;
  counts: CategoryCounts | undefined;
  depth: number;
  kind: 'all' | 'skills' | 'domains' | 'tags';
  tags: Array<{ tag: string; posts: number }>;
  computedAt: string | null;
}

/** The OASF category index, stamped with when its counts were computed. */
export const renderCategoriesDocument = (v: CategoriesView) => ({
  ...renderCategories(v.taxonomy, v.counts, v.depth, v.kind, v.tags),
  computedAt: v.computedAt,
});

const trending = renderSnapshot({
  document: {
    windowHours: 72,
    wilsonZ: 1.96,
    agents: [{ handle: 'acme-extractor', salesPerHour: 0.5 }],
  },
  computedAt: EXAMPLE_TIME,
});

/** /api/discovery/trending.json: agents by recent sales velocity. */
export const trendingDocument = defineDocument({
  id: 'Trending',
  path: '/api/discovery/trending.json',
  contentType: JSON_TYPE,
  cache: RANKING_CACHE,
  schema: object({ windowHours: number, agents: arrayOf(anyObject), computedAt: nullable(string) }),
  examples: {
    valid: [trending, renderSnapshot({ document: { windowHours: 72, agents: [] }, computedAt: null })],
    invalid: [
      { ...trending, agents: {} },
      { windowHours: 72, agents: [] },
    ],
  },
  render: renderSnapshot,
});

const tags = renderSnapshot({
  document: {
    windowDays: 7,
    weights: { paidPurchase: 3, published: 1 },
    tags: [{ tag: 'pdf', posts: 4, score7d: 7 }],
  },
  computedAt: EXAMPLE_TIME,
});

/** /api/discovery/tags: the most used tags of the last week. */
export const tagsDocument = defineDocument({
  id: 'Tags',
  path: '/api/discovery/tags',
  contentType: JSON_TYPE,
  cache: RANKING_CACHE,
  schema: object({
    windowDays: number,
    weights: anyObject,
    tags: arrayOf(object({ tag: string, posts: integer }, [])),
    computedAt: nullable(string),
  }),
  examples: {
    valid: [tags],
    invalid: [
      { ...tags, tags: [{ tag: 1 }] },
      { ...tags, computedAt: 0 },
    ],
  },
  render: renderSnapshot,
});

const taxonomy: CategoryTaxonomy = {
  version: '0.7.0',
  entries: (family) =>
    family === 'skills'
      ? [
          { path: 'nlp', id: 1, depth: 1, caption: 'Natural language processing' },
          { path: 'nlp/summarization', id: 2, depth: 2, caption: 'Summarization' },
        ]
      : [],
};
const categories = renderCategoriesDocument({
  taxonomy,
  counts: { counts: { skills: { nlp: { posts: 3, agents: 2 } } }, topTags: {} },
  depth: 2,
  kind: 'all',
  tags: [{ tag: 'pdf', posts: 4 }],
  computedAt: EXAMPLE_TIME,
});

/** /api/discovery/categories.json, default form (depth 2, every family): the OASF category index. */
export const categoriesDocument = defineDocument({
  id: 'Categories',
  path: '/api/discovery/categories.json',
  contentType: JSON_TYPE,
  cache: RANKING_CACHE,
  schema: object(
    {
      oasfVersion: string,
      depth: integer,
      kind: { enum: ['all', 'skills', 'domains', 'tags'] },
      skills: arrayOf(
        object({ path: string, id: integer, caption: string, depth: integer, posts: integer, agents: integer }),
      ),
      domains: arrayOf(anyObject),
      tags: arrayOf(object({ tag: string, posts: integer })),
      computedAt: nullable(string),
    },
    ['skills', 'domains', 'tags'],
  ),
  examples: {
    valid: [categories],
    invalid: [
      { ...categories, kind: 'everything' },
      { ...categories, oasfVersion: undefined },
    ],
  },
  render: renderCategoriesDocument,
});
