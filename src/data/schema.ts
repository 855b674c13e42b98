import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/**
 * Row types of the tables in `migrations/`. Amounts (numeric) and bigints come back from `pg` as
 * strings, which keeps money exact; convert with BigInt() where arithmetic is needed.
 */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T = unknown> = ColumnType<T, string | T, string | T>;
type Amount = ColumnType<string, string | bigint | number, string | bigint | number>;

export type PostStatus = 'draft' | 'published' | 'unpublished';
export type PaymentStatus = 'pending' | 'verified' | 'settling' | 'settled' | 'failed' | 'expired';
export type HealthStatus = 'healthy' | 'degraded' | 'dormant';

export interface Capabilities {
  mcp?: string;
  a2a?: string;
  x402?: string;
}

export interface AgentsTable {
  id: Generated<string>;
  handle: string;
  display_name: string | null;
  wallet_address: string;
  token_id: string | null;
  bio: string | null;
  avatar_url: string | null;
  website_url: string | null;
  contact_email: string | null;
  contact_url: string | null;
  docs_url: string | null;
  capabilities: ColumnType<Capabilities, string | Capabilities | undefined, string | Capabilities>;
  oasf_skills: ColumnType<string[], string[] | undefined, string[]>;
  oasf_domains: ColumnType<string[], string[] | undefined, string[]>;
  install_manifest: Json<Record<string, unknown>> | null;
  registration_payment_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PostsTable {
  id: Generated<string>;
  author_id: string;
  status: ColumnType<PostStatus, PostStatus | undefined, PostStatus>;
  title: string;
  preview: string;
  price_atomic: Amount;
  tags: ColumnType<string[], string[] | undefined, string[]>;
  oasf_skills: ColumnType<string[], string[] | undefined, string[]>;
  oasf_domains: ColumnType<string[], string[] | undefined, string[]>;
  current_version: ColumnType<number, number | undefined, number>;
  /** The Agent Skill name (SKILL.md frontmatter `name`): the folder it installs into; unique per author. */
  skill_name: string;
  first_published_at: NullableTimestamp;
  published_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PostFile {
  path: string;
  content: string;
}

export interface PostVersionsTable {
  post_id: string;
  version: number;
  version_label: string;
  body: Json<{ files: PostFile[] }>;
  body_sha256: string;
  body_bytes: number;
  install_manifest: Json<Record<string, unknown>> | null;
  created_at: Timestamp;
  /** The SKILL.md frontmatter `name` of this version (the post's skill name). */
  skill_name: string;
  /** `[{path, digest}]`, path-ordered `sha256:<hex>` digests of the files. */
  file_digests: Json<Array<{ path: string; digest: string }>>;
  /** `sha256:<hex>` over the files (src/domain/skills/skill-digest.ts). */
  skill_digest: string;
  /** The seller's EIP-712 signature over the version (lowercase wallet, 0x hex), once given. */
  signer: ColumnType<string | null, string | null | undefined, string | null>;
  signature: ColumnType<string | null, string | null | undefined, string | null>;
  signed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

export interface AuthChallengesTable {
  nonce: string;
  address: string;
  handle: string | null;
  message: string;
  issued_at: Timestamp;
  expires_at: Date | string;
  used_at: NullableTimestamp;
  payment_id: string | null;
}

export interface PaymentsTable {
  id: Generated<string>;
  purpose: 'registration' | 'purchase';
  status: PaymentStatus;
  protocol_version: 1 | 2;
  scheme: ColumnType<string, string | undefined, string>;
  network: string;
  asset: string;
  payer: string;
  pay_to: string;
  amount_atomic: Amount;
  nonce: string;
  valid_after: Date | string;
  valid_before: Date | string;
  resource: string;
  post_id: string | null;
  agent_id: string | null;
  registration_handle: string | null;
  registration_wallet: string | null;
  facilitator: string | null;
  tx_hash: string | null;
  failure_reason: string | null;
  settle_attempts: ColumnType<number, number | undefined, number>;
  /** The client's x402 payment-identifier (idempotency key), when it sent one. */
  payment_identifier: ColumnType<string | null, string | null | undefined, string | null>;
  payload: Json<Record<string, unknown>>;
  requirements: Json<Record<string, unknown>>;
  created_at: Timestamp;
  updated_at: Timestamp;
  settled_at: NullableTimestamp;
}

/** A Sign-In-With-X nonce that granted access once (the replay check). */
export interface SiwxUsedNoncesTable {
  nonce: string;
  address: string;
  resource: string;
  used_at: ColumnType<Date, Date | undefined, Date>;
}

export interface PurchasesTable {
  id: Generated<string>;
  payment_id: string;
  post_id: string;
  post_version: number;
  seller_id: string;
  buyer_address: string;
  buyer_agent_id: string | null;
  amount_atomic: Amount;
  tx_hash: string;
  created_at: Timestamp;
  /** The skill digest of the version bought (`post_version`). */
  skill_digest: string;
}

export interface DomainEventsTable {
  id: ColumnType<string, never, never>;
  type: string;
  agent_id: string | null;
  post_id: string | null;
  payload: Json<Record<string, unknown>>;
  created_at: Timestamp;
  dispatched_at: NullableTimestamp;
  claimed_until: NullableTimestamp;
}

export interface AgentMetricsTable {
  agent_id: string;
  score: number;
  raw_score: number;
  health_status: HealthStatus;
  rank: number | null;
  revenue_atomic_90d: Amount;
  unique_buyers_90d: number;
  settlements_90d: number;
  published_skills: number;
  document: Json<Record<string, unknown>> | null;
  computed_at: Timestamp;
}

export interface PublishedDocumentsTable {
  key: string;
  content_type: string;
  sha256: string;
  bytes: number;
  publish_count: ColumnType<number, number | undefined, number>;
  content_hash: string | null;
  first_published_at: Timestamp;
  published_at: Timestamp;
}

export interface AgentIdentitiesTable {
  agent_id: string;
  token_id: string;
  owner: string | null;
  agent_wallet: string | null;
  token_uri: string | null;
  registration: Json<Record<string, unknown>> | null;
  registration_errors: ColumnType<string[], string[] | undefined, string[]>;
  resolved_at: Timestamp;
}

export interface AgentSimilarTable {
  agent_id: string;
  similar_id: string;
  rank: number;
  similarity: number;
  method: 'idf-jaccard' | 'buyer-overlap';
  shared: ColumnType<string[], string[] | undefined, string[]>;
}

export interface PopulationStatsTable {
  name: string;
  breakpoints: number[];
  population: number;
  computed_at: Timestamp;
}

export interface AgentFeaturesTable {
  agent_id: string;
  feature: string;
}

export interface FeatureDfTable {
  feature: string;
  df: number;
}

export interface AgentSignatureTable {
  agent_id: string;
  feature: string;
  weight: number;
}

export interface FeedEntriesTable {
  kind: 'agent' | 'post';
  entity_id: string;
  feed_at: Date;
}

export interface DiscoverySnapshotsTable {
  name: string;
  document: Json<Record<string, unknown>>;
  computed_at: Timestamp;
}

export interface TagStatsTable {
  tag: string;
  posts: number;
  score_7d: number;
}

export interface SearchVocabularyTable {
  word: string;
  posts: number;
  agents: number;
}

export interface SearchTierPostsTable {
  post_id: string;
  search: string;
}

export interface DB {
  agents: AgentsTable;
  posts: PostsTable;
  post_versions: PostVersionsTable;
  auth_challenges: AuthChallengesTable;
  payments: PaymentsTable;
  siwx_used_nonces: SiwxUsedNoncesTable;
  purchases: PurchasesTable;
  domain_events: DomainEventsTable;
  agent_metrics: AgentMetricsTable;
  published_documents: PublishedDocumentsTable;
  agent_identities: AgentIdentitiesTable;
  agent_similar: AgentSimilarTable;
  population_stats: PopulationStatsTable;
  agent_features: AgentFeaturesTable;
  feature_df: FeatureDfTable;
  agent_signature: AgentSignatureTable;
  feed_entries: FeedEntriesTable;
  discovery_snapshots: DiscoverySnapshotsTable;
  tag_stats: TagStatsTable;
  search_vocabulary: SearchVocabularyTable;
  search_tier_posts: SearchTierPostsTable;
}

export type Agent = Selectable<AgentsTable>;
export type NewAgent = Insertable<AgentsTable>;
export type AgentUpdate = Updateable<AgentsTable>;
export type Post = Selectable<PostsTable>;
export type Payment = Selectable<PaymentsTable>;
export type Purchase = Selectable<PurchasesTable>;
/** A settled sale as the reputation mirror reads and shows it. */
export type Sale = Pick<
  Purchase,
  'id' | 'post_id' | 'buyer_address' | 'buyer_agent_id' | 'amount_atomic' | 'tx_hash' | 'created_at'
>;
export type PublishedDocument = Selectable<PublishedDocumentsTable>;
