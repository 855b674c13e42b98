import type { Insertable, Selectable, Updateable } from 'kysely';
import type { AgentMetrics, Agents, Payments, Posts, PublishedDocuments, Purchases } from './schema.generated.js';

/**
 * The row types the rest of the service reads. The table types themselves (`DB` and one interface
 * per table) are generated from the migrated database into schema.generated.ts (`npm run db:types`);
 * the shapes of JSON columns are in column-types.ts. Amounts (numeric) and bigints come back from
 * `pg` as strings, which keeps money exact; convert with BigInt() where arithmetic is needed.
 */
export type * from './schema.generated.js';
export type { Capabilities, FileDigest, PostFile, SkillBody } from './column-types.js';

export type PostStatus = Post['status'];
export type PaymentStatus = Payment['status'];
export type HealthStatus = Selectable<AgentMetrics>['health_status'];

/** The table types under the names the repositories and renderers use. */
export type {
  AgentIdentities as AgentIdentitiesTable,
  AgentMetrics as AgentMetricsTable,
  AgentSimilar as AgentSimilarTable,
  PostVersions as PostVersionsTable,
} from './schema.generated.js';

/**
 * Columns only the database's own statements use: the full-text search vector and the id of the
 * transaction that last changed the row (the feed indexer's). Rows the service passes around leave them out.
 */
type Bookkeeping = 'search' | 'change_txid';

export type Agent = Omit<Selectable<Agents>, Bookkeeping>;
export type NewAgent = Insertable<Agents>;
export type AgentUpdate = Updateable<Agents>;
export type Post = Omit<Selectable<Posts>, Bookkeeping>;
export type Payment = Selectable<Payments>;
export type Purchase = Selectable<Purchases>;
/** A settled sale as the reputation mirror reads and shows it. */
export type Sale = Pick<
  Purchase,
  'id' | 'post_id' | 'buyer_address' | 'buyer_agent_id' | 'amount_atomic' | 'tx_hash' | 'created_at'
>;
export type PublishedDocument = Selectable<PublishedDocuments>;
