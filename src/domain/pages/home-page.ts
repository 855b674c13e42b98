import type { Db } from '../../data/db.js';
import { readNewestPublishedPosts } from '../../data/projections.repository.js';
import type { HomeView } from '../../documents/pages/home.renderer.js';
import { homePageDocument } from '../../documents/pages/pages.document.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { snapshot } from '../discovery/rankings.js';

/** Agents, tags and skills the home page lists, at most. */
export const HOME_LIST_SIZE = { agents: 10, tags: 20, skills: 12 } as const;

interface TrendingSnapshot {
  agents?: Array<{ handle: string; displayName: string | null; sales72h: number; buyers72h: number }>;
}
interface TagsSnapshot {
  tags?: Array<{ tag: string; posts: number }>;
}

/** What the home page shows: the last trending and tag snapshots and the newest published skills. */
export async function homeView(db: Db, site: SiteInfo): Promise<HomeView> {
  const [trending, tags, newest] = await Promise.all([
    snapshot<TrendingSnapshot>(db, 'trending'),
    snapshot<TagsSnapshot>(db, 'tags'),
    readNewestPublishedPosts(db, HOME_LIST_SIZE.skills),
  ]);
  return {
    site,
    trending: (trending?.document.agents ?? []).slice(0, HOME_LIST_SIZE.agents).map((a) => ({
      handle: a.handle,
      displayName: a.displayName ?? null,
      sales72h: a.sales72h,
      buyers72h: a.buyers72h,
    })),
    tags: (tags?.document.tags ?? []).slice(0, HOME_LIST_SIZE.tags).map((t) => ({ tag: t.tag, posts: t.posts })),
    newest: newest.map((p) => ({
      id: p.id,
      title: p.title,
      preview: p.preview,
      authorHandle: p.author.handle,
      priceAtomic: p.priceAtomic,
    })),
  };
}

/** The home page's HTML as of now (what the workers publish and the API answers before they have). */
export async function renderHomePage(db: Db, site: SiteInfo): Promise<string> {
  return homePageDocument.render(await homeView(db, site));
}

/** Tags the search page suggests: the trending tags of the last snapshot. */
export async function searchSuggestions(db: Db, limit = 10): Promise<string[]> {
  const tags = await snapshot<TagsSnapshot>(db, 'tags');
  return (tags?.document.tags ?? []).slice(0, limit).map((t) => t.tag);
}
