import { SKILLS_INDEX_SHARDS, shardPath } from '@skill-market/skill-protocol/skills-index-layout';

/**
 * The Agent Skills discovery index (cloudflare/agent-skills-discovery-rfc v0.2.0) of the
 * marketplace: published skills with the RFC's members (`name`, `description`, `digest`,
 * `files`) and the marketplace's own (post id, version, seller, price, links, the seller's
 * signature, every version). The index lists the most bought skills inline and links every
 * shard; a shard lists every published skill whose id starts with its two hex digits, in the same
 * form (docs/skills.md). Pure: the same skills always render the same bytes.
 */

/** The discovery RFC's index version this document follows. */
export const SKILLS_INDEX_VERSION = '0.2.0';
export {
  SKILLS_INDEX_PATH,
  SKILLS_INDEX_SHARD_PATH,
  SKILLS_INDEX_SHARDS,
  shardOf,
} from '@skill-market/skill-protocol/skills-index-layout';

export interface IndexedFile {
  path: string;
  digest: string;
}

/** The seller's EIP-712 signature over a version (@skill-market/skill-protocol/version-signature). */
export interface IndexedSignature {
  signer: string;
  value: string;
  scheme: 'eip712';
}

export interface IndexedVersion {
  version: number;
  versionLabel: string;
  digest: string;
  files: readonly IndexedFile[];
  signature: IndexedSignature | null;
  createdAt: string;
  /** The version's static audit, beside its digests (docs/audit.md). */
  audit: IndexedAudit;
}

/** A version's audit verdict and counts as the index carries it; `report` links its audit.json. */
export interface IndexedAudit {
  verdict: 'pass' | 'warn' | 'fail' | 'pending';
  counts: { fail: number; warn: number; info: number } | null;
  overridden: boolean;
  report: string;
}

/** One published skill as the use case reads it: its current version first among `versions`. */
export interface IndexedSkill {
  id: string;
  name: string;
  description: string;
  title: string;
  seller: { handle: string; walletAddress: string };
  price: { amount: string; asset: string; decimals: number; network: string; free: boolean };
  current: IndexedVersion;
  versions: readonly IndexedVersion[];
  updatedAt: string;
  /** An extension of the discovery RFC's entry: the skill's rating by verified buyers (docs/reputation.md). */
  rating?: { count: number; mean: number | null; adjusted: number | null; reviews: string };
}

export interface SkillsIndexView {
  baseUrl: string;
  skills: readonly IndexedSkill[];
  /** The index: how many skills are published, and its shards are linked. */
  total?: number;
  /** A shard: its two hex digits. */
  shard?: string;
}

/** SKILL.md first, as the RFC asks; the rest in the order given (path order). */
const skillMdFirst = (files: readonly IndexedFile[]) => [
  ...files.filter((f) => f.path === 'SKILL.md'),
  ...files.filter((f) => f.path !== 'SKILL.md'),
];

const versionEntry = (v: IndexedVersion) => ({
  version: v.version,
  versionLabel: v.versionLabel,
  digest: v.digest,
  files: skillMdFirst(v.files),
  signature: v.signature,
  audit: v.audit,
  createdAt: v.createdAt,
});

export function renderSkillsIndex(view: SkillsIndexView) {
  const base = view.baseUrl;
  return {
    version: SKILLS_INDEX_VERSION,
    market: base,
    ...(view.shard !== undefined ? { shard: view.shard } : {}),
    skills: view.skills.map((s) => ({
      name: s.name,
      description: s.description,
      digest: s.current.digest,
      files: skillMdFirst(s.current.files),
      id: s.id,
      title: s.title,
      version: s.current.version,
      versionLabel: s.current.versionLabel,
      signature: s.current.signature,
      audit: s.current.audit,
      ...(s.rating ? { rating: s.rating } : {}),
      seller: s.seller,
      price: s.price,
      links: {
        preview: `${base}/api/posts/${s.id}`,
        full: `${base}/api/posts/${s.id}?view=full`,
        manifest: `${base}/api/posts/${s.id}/manifest.json`,
      },
      versions: s.versions.map(versionEntry),
      updatedAt: s.updatedAt,
    })),
    ...(view.total !== undefined
      ? {
          total: view.total,
          shards: SKILLS_INDEX_SHARDS.map((shard) => `${base}${shardPath(shard)}`),
        }
      : {}),
  };
}
