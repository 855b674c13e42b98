import type { Db } from '../../data/db.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { JSON_TYPE, type DocumentKind } from '../../documents/catalog.js';
import { renderCategories } from '../../documents/categories.renderer.js';
import { OASF_VERSION, oasfEntries } from '../taxonomy/oasf.js';
import { jsonBytes, publishDocuments } from '../documents/publish-document.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { agentFeed, postFeed } from './feeds.js';
import { snapshot, TAG_WEIGHTS, TAG_WINDOW_DAYS, TRENDING_WINDOW_HOURS, type CategoryCountsDoc } from './rankings.js';

/** Feeds change with every indexed change; rankings every 15 minutes. */
export const DISCOVERY_KINDS = {
  feed: { contentType: JSON_TYPE, cache: { maxAge: 5, staleWhileRevalidate: 30 } },
  ranking: { contentType: JSON_TYPE, cache: { maxAge: 60, staleWhileRevalidate: 600 } },
} satisfies Record<string, DocumentKind>;

export const FEED_DEFAULT_LIMIT = 50;
export const CATEGORIES_DEFAULT = { depth: 2, kind: 'all' as const };

export async function trendingDocument(db: Db) {
  const snap = await snapshot<Record<string, unknown>>(db, 'trending');
  return {
    ...(snap?.document ?? { windowHours: TRENDING_WINDOW_HOURS, agents: [] }),
    computedAt: snap?.computedAt ?? null,
  };
}

export async function tagsDocument(db: Db) {
  const snap = await snapshot<Record<string, unknown>>(db, 'tags');
  return {
    ...(snap?.document ?? { windowDays: TAG_WINDOW_DAYS, weights: TAG_WEIGHTS, tags: [] }),
    computedAt: snap?.computedAt ?? null,
  };
}

export async function categoriesDocument(db: Db, depth: number, kind: 'all' | 'skills' | 'domains' | 'tags') {
  const snap = await snapshot<CategoryCountsDoc>(db, 'categories');
  const tags = await db
    .selectFrom('tag_stats')
    .select(['tag', 'posts'])
    .orderBy('posts', 'desc')
    .orderBy('tag')
    .limit(200)
    .execute();
  return {
    ...renderCategories({ version: OASF_VERSION, entries: oasfEntries }, snap?.document, depth, kind, tags),
    computedAt: snap?.computedAt ?? null,
  };
}

/** The default (no query string) forms, as the bucket holds them for the CDN. */
export async function publishDiscoveryDefaults(
  deps: { db: Db; store: ObjectStore; site: SiteInfo },
  which: 'feeds' | 'rankings',
) {
  const docs =
    which === 'feeds'
      ? [
          {
            key: 'api/discovery/agents.json',
            doc: await agentFeed(deps.db, deps.site, { sort: 'updated', limit: FEED_DEFAULT_LIMIT }),
            kind: DISCOVERY_KINDS.feed,
          },
          {
            key: 'api/discovery/posts.json',
            doc: await postFeed(deps.db, deps.site, { limit: FEED_DEFAULT_LIMIT }),
            kind: DISCOVERY_KINDS.feed,
          },
        ]
      : [
          { key: 'api/discovery/trending.json', doc: await trendingDocument(deps.db), kind: DISCOVERY_KINDS.ranking },
          { key: 'api/discovery/tags', doc: await tagsDocument(deps.db), kind: DISCOVERY_KINDS.ranking },
          {
            key: 'api/discovery/categories.json',
            doc: await categoriesDocument(deps.db, CATEGORIES_DEFAULT.depth, CATEGORIES_DEFAULT.kind),
            kind: DISCOVERY_KINDS.ranking,
          },
        ];
  return publishDocuments(
    deps,
    docs.map((d) => ({ key: d.key, body: jsonBytes(d.doc), kind: d.kind })),
  );
}
