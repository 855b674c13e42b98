import type { Db } from '../../data/db.js';
import { readTagCounts } from '../../data/scoring.repository.js';
import { jsonBytes } from '../../documents/document.js';
import {
  agentFeedDocument as agentFeedEntry,
  postFeedDocument as postFeedEntry,
} from '../../documents/discovery/feeds.document.js';
import {
  categoriesDocument as categoriesEntry,
  tagsDocument as tagsEntry,
  trendingDocument as trendingEntry,
} from '../../documents/discovery/rankings.document.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { publishDocuments, type PublishCounter } from '../publishing/publish-document.js';
import { homePageDocument } from '../../documents/pages/pages.document.js';
import { renderHomePage } from '../pages/home-page.js';
import { OASF_VERSION, oasfEntries } from '../taxonomy/oasf.js';
import { agentFeed, postFeed } from './feeds.js';
import { snapshot, TAG_WEIGHTS, TAG_WINDOW_DAYS, TRENDING_WINDOW_HOURS, type CategoryCountsDoc } from './rankings.js';

export const FEED_DEFAULT_LIMIT = 50;
export const CATEGORIES_DEFAULT = { depth: 2, kind: 'all' as const };

/** The trending ranking as last computed (empty before the first run). */
export async function trendingDocument(db: Db) {
  const snap = await snapshot<Record<string, unknown>>(db, 'trending');
  return trendingEntry.render({
    document: snap?.document ?? { windowHours: TRENDING_WINDOW_HOURS, agents: [] },
    computedAt: snap?.computedAt ?? null,
  });
}

/** The tag ranking as last computed (empty before the first run). */
export async function tagsDocument(db: Db) {
  const snap = await snapshot<Record<string, unknown>>(db, 'tags');
  return tagsEntry.render({
    document: snap?.document ?? { windowDays: TAG_WINDOW_DAYS, weights: TAG_WEIGHTS, tags: [] },
    computedAt: snap?.computedAt ?? null,
  });
}

/** The OASF category index at `depth`, for one family or all, from the last category counts. */
export async function categoriesDocument(db: Db, depth: number, kind: 'all' | 'skills' | 'domains' | 'tags') {
  const snap = await snapshot<CategoryCountsDoc>(db, 'categories');
  return categoriesEntry.render({
    taxonomy: { version: OASF_VERSION, entries: oasfEntries },
    counts: snap?.document,
    depth,
    kind,
    tags: await readTagCounts(db, 200),
    computedAt: snap?.computedAt ?? null,
  });
}

/**
 * The default (no query string) forms, as the bucket holds them for the CDN, and the home page,
 * which shows the rankings and the newest skills: republished with either.
 */
export async function publishDiscoveryDefaults(
  deps: { db: Db; store: ObjectStore; site: SiteInfo; documentsPublished?: PublishCounter },
  which: 'feeds' | 'rankings',
) {
  const docs =
    which === 'feeds'
      ? [
          {
            document: agentFeedEntry,
            doc: agentFeedEntry.render(
              await agentFeed(deps.db, deps.site, { sort: 'updated', limit: FEED_DEFAULT_LIMIT }),
            ),
          },
          {
            document: postFeedEntry,
            doc: postFeedEntry.render(await postFeed(deps.db, deps.site, { limit: FEED_DEFAULT_LIMIT })),
          },
        ]
      : [
          { document: trendingEntry, doc: await trendingDocument(deps.db) },
          { document: tagsEntry, doc: await tagsDocument(deps.db) },
          {
            document: categoriesEntry,
            doc: await categoriesDocument(deps.db, CATEGORIES_DEFAULT.depth, CATEGORIES_DEFAULT.kind),
          },
        ];
  return publishDocuments(deps, [
    ...docs.map((d) => ({ document: d.document, key: d.document.key(), body: jsonBytes(d.doc) })),
    { document: homePageDocument, key: homePageDocument.key(), body: await renderHomePage(deps.db, deps.site) },
  ]);
}
