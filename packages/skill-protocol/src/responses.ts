import { z } from 'zod';

/**
 * The answers of the marketplace that its clients read, as zod schemas: the service documents and
 * checks its answers with them (OpenAPI, tests), and the skill-market client takes its types from
 * them, so the two cannot drift apart. The `*View` schemas at the end are the parts a client relies
 * on: picked from the answers, with what a market may omit left optional.
 */

const Digest = z.string().describe('sha256:<64 hex>');

/** A file of a skill version and the digest of its bytes. */
export const FileDigest = z.object({ path: z.string(), digest: Digest });

/** The seller's EIP-712 signature over a version (version-signature.ts), as a full view states it. */
export const VersionSignatureProof = z.object({
  signer: z.string(),
  value: z.string(),
  scheme: z.literal('eip712'),
  typedData: z.object({
    domain: z.record(z.string(), z.unknown()),
    types: z.record(z.string(), z.unknown()),
    primaryType: z.literal('SkillVersion'),
    message: z.record(z.string(), z.string()),
  }),
});

/** GET /api/posts/{id}/versions/{version}/integrity, and `integrity` of a full view. */
export const Integrity = z
  .object({
    name: z.string(),
    version: z.number(),
    versionLabel: z.string(),
    skillDigest: Digest,
    files: z.array(FileDigest),
    signature: VersionSignatureProof.nullable(),
  })
  .describe(
    "the version's Agent Skill name, file digests, skill digest and the seller's EIP-712 signature (null until signed), checkable offline",
  );

export const Price = z.object({
  amount: z.string(),
  asset: z.string(),
  decimals: z.number(),
  network: z.string(),
  payTo: z.string(),
  free: z.boolean(),
});

export const PostAuthor = z.object({ handle: z.string(), walletAddress: z.string(), agentCard: z.string() });

/** GET /api/posts/{id}: a post's public view. */
export const PostPreview = z.object({
  id: z.string(),
  view: z.enum(['preview', 'full']),
  status: z.enum(['draft', 'published', 'unpublished']),
  title: z.string(),
  preview: z.string(),
  author: PostAuthor,
  price: Price,
  tags: z.array(z.string()),
  oasfSkills: z.array(z.string()),
  oasfDomains: z.array(z.string()),
  version: z.number(),
  publishedAt: z.string().nullable(),
  updatedAt: z.string(),
  links: z.object({ manifest: z.string(), full: z.string() }),
});

/** GET /api/posts/{id}?view=full, for a reader entitled to it. */
export const PostFull = PostPreview.extend({
  versionLabel: z.string().optional(),
  files: z.array(z.object({ path: z.string(), content: z.string() })).optional(),
  installManifest: z.record(z.string(), z.unknown()).nullable().optional(),
  bodySha256: z.string().optional(),
  bodyBytes: z.number().optional(),
  integrity: Integrity.optional(),
}).describe('preview members, plus the files, install manifest and integrity for view=full');

/** A skill's rating by verified buyers: reviews counted, mean stars and the Bayesian-adjusted mean (null before any). */
export const SkillRating = z.object({
  count: z.number().int(),
  mean: z.number().nullable(),
  adjusted: z.number().nullable(),
});

/** A result of GET /api/discovery/search. */
export const SearchResult = z.object({
  type: z.enum(['agent', 'post', 'tag']),
  id: z.string().describe("an agent's handle, a skill's post id, a tag"),
  title: z.string(),
  label: z.string().describe('the title, with "(by @seller)" when another result has the same title'),
  highlight: z.string().nullable().describe('the matched words in <mark>'),
  score: z.number().describe('relevance to the query'),
  url: z.string().describe('the API document (AgentCard, skill view, tag search)'),
  page: z.string().describe('the page for people: /agents/{handle}, /skills/{postId}, /search?q={tag}'),
  seller: z
    .object({ handle: z.string(), displayName: z.string().nullable(), score: z.number() })
    .optional()
    .describe("who sells it (an agent is its own seller) and the seller's marketplace score"),
  priceAtomic: z.string().optional().describe("a skill's price in atomic USDC units (6 decimals)"),
  priceUsdc: z.string().optional().describe("a skill's price in USDC, e.g. 1.5"),
  buyers: z.number().int().optional().describe("a skill's distinct paying buyers (wallets), all time"),
  sales90d: z.number().int().optional().describe("an agent's sales of its skills in the last 90 days"),
  preview: z
    .string()
    .optional()
    .describe("the first line of a skill's preview or an agent's bio (160 characters at most)"),
  version: z.string().optional().describe('the version label the skill declares, e.g. 1.0.0'),
  audit: z
    .enum(['pass', 'warn', 'fail', 'pending'])
    .optional()
    .describe("a skill's current version's audit verdict (docs/audit.md)"),
  publishedSkills: z.number().int().optional().describe("an agent's published skills"),
  rating: SkillRating.optional().describe("a skill's rating by verified buyers (docs/reputation.md)"),
});

/** GET /api/discovery/search: what each result is and what tells it apart. */
export const SearchAnswer = z.object({
  query: z.string(),
  type: z.enum(['all', 'agents', 'posts', 'tags']),
  didYouMean: z.string().optional().describe('the query as corrected, when a word was not known'),
  results: z.array(SearchResult),
});

/** The seller's signature over a version as the discovery index lists it (no typed data). */
export const IndexSignature = z.object({ signer: z.string(), value: z.string(), scheme: z.literal('eip712') });

/** A version's static audit as the index lists it (a market that audits nothing leaves it out). */
export const IndexAudit = z.object({
  verdict: z.enum(['pass', 'warn', 'fail', 'pending']),
  counts: z.object({ fail: z.number().int(), warn: z.number().int(), info: z.number().int() }).nullable(),
  overridden: z.boolean(),
  report: z.string(),
});

/** An archive of a skill version: its URL and the SHA-256 of its bytes (the RFC's `package`). */
export const IndexPackage = z.object({ url: z.string(), digest: Digest });

export const IndexVersion = z.object({
  version: z.number().int(),
  versionLabel: z.string(),
  digest: Digest,
  files: z.array(FileDigest),
  package: IndexPackage.optional(),
  signature: IndexSignature.nullable(),
  audit: IndexAudit.optional(),
  createdAt: z.string(),
});

/** A skill of /.well-known/agent-skills/index.json: the RFC's members, then the marketplace's. */
export const IndexEntry = z.object({
  name: z.string(),
  description: z.string(),
  type: z
    .enum(['skill-md', 'archive'])
    .optional()
    .describe("the discovery draft's artifact type (an index with `$schema`)"),
  url: z.string().optional().describe("the draft's artifact URL"),
  digest: Digest.describe(
    'with `$schema`, the SHA-256 of the artifact; without (the RFC v0.2.0 form, a shard), the skill digest',
  ),
  skillDigest: Digest.optional().describe('the skill digest over the files (RFC v0.2.0)'),
  files: z.array(FileDigest),
  package: IndexPackage.optional(),
  id: z.string(),
  title: z.string(),
  version: z
    .union([z.number().int(), z.string()])
    .describe('the semantic version (the draft), or the version number (a market before it)'),
  versionNumber: z.number().int().optional(),
  versionLabel: z.string(),
  signature: IndexSignature.nullable(),
  audit: IndexAudit.optional(),
  rating: SkillRating.extend({ reviews: z.string() })
    .optional()
    .describe("an extension field: the skill's rating by verified buyers (docs/reputation.md)"),
  seller: z.object({ handle: z.string(), walletAddress: z.string() }),
  price: Price.omit({ payTo: true }),
  links: z.object({ preview: z.string(), full: z.string(), manifest: z.string() }),
  versions: z.array(IndexVersion),
  updatedAt: z.string(),
});

/**
 * /.well-known/agent-skills/index.json, the Agent Skills discovery index (RFC v0.2.0) of a
 * marketplace: the most bought skills inline, how many are published, and the 256 shards that list
 * every one; a shard (/.well-known/agent-skills/shards/{xx}.json) has the same form, with `shard`.
 * Its JSON Schema, with the RFC's patterns, is the document's (src/documents).
 */
export const SkillsIndex = z.object({
  $schema: z.string().optional().describe('the Agent Skills discovery draft schema the index follows'),
  version: z.string().describe('the discovery RFC version the index follows, e.g. 0.2.0'),
  market: z.string(),
  skills: z.array(IndexEntry),
  total: z.number().int().optional().describe('how many skills are published (the index, not a shard)'),
  shards: z.array(z.string()).optional().describe('every shard, by URL (the index, not a shard)'),
  shard: z.string().optional().describe("a shard's two hex digits: the first two of its skills' ids"),
});

export type FileDigest = z.infer<typeof FileDigest>;
export type Integrity = z.infer<typeof Integrity>;
export type Price = z.infer<typeof Price>;
export type PostPreview = z.infer<typeof PostPreview>;
export type PostFull = z.infer<typeof PostFull>;
export type SearchResult = z.infer<typeof SearchResult>;
export type SearchAnswer = z.infer<typeof SearchAnswer>;
export type IndexEntry = z.infer<typeof IndexEntry>;
export type IndexAudit = z.infer<typeof IndexAudit>;
export type SkillsIndex = z.infer<typeof SkillsIndex>;

// What a client relies on. A signature's typed data is rebuilt from the statement, never read;
// the index's `versions`, `links` and times, and a search result's `label` and `page`, are used
// when present; a result's type is any string, so a market that adds a kind of result still lists.

/** A version's signature as a client checks it: the signer and the value (the scheme when stated). */
export const SignatureView = IndexSignature.partial({ scheme: true });
export const IntegrityView = Integrity.extend({ signature: SignatureView.nullable() });
export const PreviewView = PostPreview.pick({ id: true, title: true, status: true, version: true }).extend({
  author: PostAuthor.pick({ handle: true, walletAddress: true }),
  price: Price.omit({ payTo: true }),
});
export const FullView = PreviewView.extend({
  ...PostFull.pick({ versionLabel: true, files: true }).shape,
  integrity: IntegrityView.optional(),
});
export const IndexVersionView = IndexVersion.omit({ createdAt: true });
/**
 * An index entry as the installer reads it, whichever form the market serves: `digest` the skill
 * digest, `version` the version number, and `artifact` the draft's artifact (or the RFC's package).
 */
export const IndexEntryView = IndexEntry.omit({ links: true, updatedAt: true, versions: true }).extend({
  version: z.number().int(),
  versions: z.array(IndexVersionView).optional(),
  artifact: z.object({ type: z.enum(['skill-md', 'archive']), url: z.string(), digest: Digest }).optional(),
});
export const SkillsIndexView = SkillsIndex.omit({ market: true }).extend({ skills: z.array(IndexEntryView) });
export const SearchHit = SearchResult.omit({ type: true, highlight: true, score: true })
  .partial({ label: true, page: true })
  .extend({ type: z.string() });

export type SignatureView = z.infer<typeof SignatureView>;
export type IntegrityView = z.infer<typeof IntegrityView>;
export type PreviewView = z.infer<typeof PreviewView>;
export type FullView = z.infer<typeof FullView>;
export type IndexVersionView = z.infer<typeof IndexVersionView>;
export type IndexEntryView = z.infer<typeof IndexEntryView>;
export type SkillsIndexView = z.infer<typeof SkillsIndexView>;
export type SearchHit = z.infer<typeof SearchHit>;
