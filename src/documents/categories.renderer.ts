type OasfFamily = 'skills' | 'domains';

/**
 * The taxonomy the index is drawn from (the OASF release the domain validates against): its
 * version and each family's entries, parents before their children.
 */
export interface CategoryTaxonomy {
  version: string;
  entries(family: OasfFamily): readonly { path: string; id: number; depth: number; caption: string }[];
}

export interface CategoryCounts {
  counts: Record<string, Record<string, { posts: number; agents: number }>>;
  topTags: Record<string, Record<string, Array<{ tag: string; posts: number }>>>;
}

interface Node {
  path: string;
  id: number;
  caption: string;
  depth: number;
  posts: number;
  agents: number;
  children?: Node[];
  tags?: Array<{ tag: string; posts: number }>;
}

export const DEPTH_4_MEANING =
  'OASF is three levels deep. depth=4 keeps all three levels and adds a fourth: under every category, the five tags most used by the skills tagged with exactly that category.';

/** The OASF category index (seed endpoint 5) from precomputed counts: a tree per family, `depth` levels deep. */
export function renderCategories(
  taxonomy: CategoryTaxonomy,
  c: CategoryCounts | undefined,
  depth: number,
  kind: 'all' | 'skills' | 'domains' | 'tags',
  tags: Array<{ tag: string; posts: number }>,
) {
  const tree = (family: OasfFamily) => {
    const nodes = new Map<string, Node>();
    const roots: Node[] = [];
    for (const e of taxonomy.entries(family)) {
      if (e.depth > Math.min(depth, 3)) continue;
      const n = c?.counts[family]?.[e.path] ?? { posts: 0, agents: 0 };
      const node: Node = {
        path: e.path,
        id: e.id,
        caption: e.caption,
        depth: e.depth,
        posts: n.posts,
        agents: n.agents,
      };
      nodes.set(e.path, node);
      const parent = nodes.get(e.path.split('/').slice(0, -1).join('/'));
      if (parent) {
        parent.children ??= [];
        parent.children.push(node);
      } else roots.push(node);
    }
    if (depth >= 4) for (const node of nodes.values()) node.tags = c?.topTags[family]?.[node.path] ?? [];
    return roots;
  };
  return {
    oasfVersion: taxonomy.version,
    depth,
    kind,
    ...(kind === 'all' || kind === 'skills' ? { skills: tree('skills') } : {}),
    ...(kind === 'all' || kind === 'domains' ? { domains: tree('domains') } : {}),
    ...(kind === 'all' || kind === 'tags' ? { tags } : {}),
    ...(depth >= 4 ? { depthNote: DEPTH_4_MEANING } : {}),
  };
}
