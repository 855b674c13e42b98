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
/**
 * The `$schema` of the Agent Skills discovery draft (agentskills/agentskills, docs/well-known-uri.mdx;
 * cloudflare/agent-skills-discovery-rfc at its current head): a reader of that draft ignores an
 * index without it. The index carries it; a shard, whose `digest` keeps the RFC's meaning, does not.
 */
export const AGENT_SKILLS_DISCOVERY_SCHEMA = 'https://schemas.agentskills.io/discovery/0.2.0/schema.json';

/** The draft's semantic version of a marketplace version: versions are numbered, each a major. */
export const semverOf = (version: number) => `${version}.0.0`;
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
  /** The version's archive (its URL and the SHA-256 of its bytes), once it is published. */
  archive?: { url: string; digest: string };
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

/** The URL of a version's archive (a paid skill's answers 402 until bought, docs/skills.md). */
export const archiveUrl = (baseUrl: string, postId: string, version: number) =>
  `${baseUrl}/.well-known/agent-skills/archives/${postId}/${version}.tar.gz`;

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
  ...(v.archive ? { package: v.archive } : {}),
  signature: v.signature,
  audit: v.audit,
  createdAt: v.createdAt,
});

/**
 * The members that locate and check a skill's current artifact. In the index (both formats), the
 * draft's `type`, `url` and `digest` (the SHA-256 of the archive's bytes), the RFC's `package`
 * (the same archive) and `files`, and the RFC's manifest digest as `skillDigest`: the two formats
 * give `digest` different meanings, and the current drafts of both agree on the artifact's. In a
 * shard (the RFC's form only), `digest` is the manifest digest, as in RFC v0.2.0.
 */
function artifactMembers(s: IndexedSkill, draft: boolean) {
  const { archive } = s.current;
  if (draft && !archive) throw new Error(`skills index: ${s.id} has no archive`);
  return draft && archive
    ? { type: 'archive' as const, url: archive.url, digest: archive.digest, skillDigest: s.current.digest }
    : { digest: s.current.digest, skillDigest: s.current.digest };
}

export function renderSkillsIndex(view: SkillsIndexView) {
  const base = view.baseUrl;
  const draft = view.total !== undefined;
  return {
    ...(draft ? { $schema: AGENT_SKILLS_DISCOVERY_SCHEMA } : {}),
    version: SKILLS_INDEX_VERSION,
    market: base,
    ...(view.shard !== undefined ? { shard: view.shard } : {}),
    skills: view.skills.map((s) => ({
      name: s.name,
      description: s.description,
      ...artifactMembers(s, draft),
      files: skillMdFirst(s.current.files),
      ...(s.current.archive ? { package: s.current.archive } : {}),
      id: s.id,
      title: s.title,
      version: semverOf(s.current.version),
      versionNumber: s.current.version,
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
