import { sql, type Selectable } from 'kysely';
import type { Executor } from './db.js';
import { notOwnPurchase } from './own-purchases.js';
import type { Agent, AgentIdentitiesTable, AgentMetricsTable, HealthStatus, Payment, Sale } from './schema.js';

export type CachedIdentity = Selectable<AgentIdentitiesTable>;

/** An identity resolution as the cache stores it (addresses lower-cased, the file as JSON text). */
export interface IdentityRow {
  token_id: string;
  owner: string | null;
  agent_wallet: string | null;
  token_uri: string | null;
  registration: string | null;
  registration_errors: string[];
  resolved_at: Date;
}

/** A published skill as an agent's card lists it. */
export interface PublishedSkillRow {
  agent_id: string;
  id: string;
  title: string;
  preview: string;
  tags: string[];
  oasf_skills: string[];
  price_atomic: string;
  install_manifest: { type?: string } | null;
  skill_name: string;
  version: number;
  skill_digest: string;
  signed: boolean;
}

/** A settled sale with the seller it belongs to and the payment it was paid with. */
export type SaleRow = Sale & { seller_id: string; payment_id: string };

/** The figures of a metrics row a recompute compares before rewriting it. */
export type MetricsFigures = Pick<
  Selectable<AgentMetricsTable>,
  'agent_id' | 'health_status' | 'published_skills' | 'unique_buyers_90d' | 'settlements_90d' | 'revenue_atomic_90d'
>;

/** A metrics row as the recompute writes it. */
export interface MetricsRow {
  agent_id: string;
  score: number;
  raw_score: number;
  health_status: HealthStatus;
  revenue_atomic_90d: string;
  unique_buyers_90d: number;
  settlements_90d: number;
  published_skills: number;
  document: string;
  computed_at: Date;
}

/** The agents with these ids, in id order. */
export async function findAgentsByIds(db: Executor, ids: string[]): Promise<Agent[]> {
  if (!ids.length) return [];
  return db.selectFrom('agents').selectAll().where('id', 'in', ids).orderBy('id').execute();
}

/** The agent with this handle (handles are stored lower-case). */
export async function findAgentByHandle(db: Executor, handle: string): Promise<Agent | undefined> {
  return db.selectFrom('agents').selectAll().where('handle', '=', handle.toLowerCase()).executeTakeFirst();
}

/** The cached identity resolutions of these agents, by agent id. */
export async function findCachedIdentities(db: Executor, agentIds: string[]): Promise<Map<string, CachedIdentity>> {
  if (!agentIds.length) return new Map();
  const rows = await db.selectFrom('agent_identities').selectAll().where('agent_id', 'in', agentIds).execute();
  return new Map(rows.map((r) => [r.agent_id, r]));
}

/** Stores an agent's fresh identity resolution in the cache. */
export async function saveCachedIdentity(db: Executor, agentId: string, row: IdentityRow): Promise<void> {
  await db
    .insertInto('agent_identities')
    .values({ agent_id: agentId, ...row })
    .onConflict((oc) => oc.column('agent_id').doUpdateSet(row))
    .execute();
}

/** The newest `limit` published skills of each agent, one statement for all, newest first. */
export async function findPublishedSkills(db: Executor, agentIds: string[], limit = 100): Promise<PublishedSkillRow[]> {
  if (!agentIds.length) return [];
  const { rows } = await sql<PublishedSkillRow>`
    SELECT a.id AS agent_id, x.* FROM unnest(${agentIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      SELECT p.id, p.title, p.preview, p.tags, p.oasf_skills, p.price_atomic, v.install_manifest, p.published_at,
        v.skill_name, v.version, v.skill_digest, v.signature IS NOT NULL AS signed
      FROM posts p JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version
      WHERE p.author_id = a.id AND p.status = 'published'
      ORDER BY p.published_at DESC, p.id LIMIT ${limit}) x
    ORDER BY a.ord, x.published_at DESC, x.id`.execute(db);
  return rows;
}

/**
 * The newest `limit` sales of each seller, one statement for all, newest first; a seller's
 * purchases of its own skills are no sales (and not counted in the facts that fingerprint them).
 */
export async function findRecentSales(db: Executor, sellerIds: string[], limit: number): Promise<SaleRow[]> {
  if (!sellerIds.length) return [];
  const { rows } = await sql<SaleRow>`
    SELECT a.id AS seller_id, x.* FROM unnest(${sellerIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      SELECT id, post_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, payment_id FROM purchases
      WHERE seller_id = a.id AND ${notOwnPurchase()} ORDER BY created_at DESC, id LIMIT ${limit}) x
    ORDER BY a.ord, x.created_at DESC, x.id`.execute(db);
  return rows;
}

/** These payments (the ones sales were paid with), in no particular order. */
export async function findPaymentsByIds(db: Executor, ids: string[]): Promise<Payment[]> {
  if (!ids.length) return [];
  const { rows } = await sql<Payment>`SELECT * FROM payments WHERE id = ANY(${ids}::uuid[])`.execute(db);
  return rows;
}

/** The figures a badge is drawn from, as the last recompute stored them, with the cached identity's owner. */
export async function findBadgeFigures(db: Executor, agentId: string) {
  return db
    .selectFrom('agent_metrics as m')
    .leftJoin('agent_identities as i', 'i.agent_id', 'm.agent_id')
    .select(['m.revenue_atomic_90d', 'm.unique_buyers_90d', 'm.published_skills', 'i.token_id', 'i.owner'])
    .where('m.agent_id', '=', agentId)
    .executeTakeFirst();
}

/** The metrics figures of these agents, by agent id. */
export async function findMetricsFigures(db: Executor, agentIds: string[]): Promise<Map<string, MetricsFigures>> {
  if (!agentIds.length) return new Map();
  const rows = await db
    .selectFrom('agent_metrics')
    .select([
      'agent_id',
      'health_status',
      'published_skills',
      'unique_buyers_90d',
      'settlements_90d',
      'revenue_atomic_90d',
    ])
    .where(sql<boolean>`agent_id = ANY(${agentIds}::uuid[])`)
    .execute();
  return new Map(rows.map((m) => [m.agent_id, m]));
}

/** Writes these agents' metrics rows (one statement for all). */
export async function saveAgentMetrics(db: Executor, rows: MetricsRow[]): Promise<void> {
  if (!rows.length) return;
  await db
    .insertInto('agent_metrics')
    .values(rows)
    .onConflict((oc) =>
      oc.column('agent_id').doUpdateSet((eb) => ({
        score: eb.ref('excluded.score'),
        raw_score: eb.ref('excluded.raw_score'),
        health_status: eb.ref('excluded.health_status'),
        revenue_atomic_90d: eb.ref('excluded.revenue_atomic_90d'),
        unique_buyers_90d: eb.ref('excluded.unique_buyers_90d'),
        settlements_90d: eb.ref('excluded.settlements_90d'),
        published_skills: eb.ref('excluded.published_skills'),
        document: eb.ref('excluded.document'),
        computed_at: eb.ref('excluded.computed_at'),
      })),
    )
    .execute();
}
