import { sql } from 'kysely';
import type { Executor } from './db.js';

/** What identifies the published copy of a key, and when it was written. */
export interface PublishedIdentity {
  /** Its content hash, or its bytes' SHA-256 when it has none. */
  identity: string;
  publishedAt: number;
}

/** The bookkeeping of one written object. */
export interface PublishedRecord {
  key: string;
  contentType: string;
  sha256: string;
  bytes: number;
  contentHash: string | null;
}

/** The identity of the published copy of each key that has one. */
export async function findPublishedIdentities(db: Executor, keys: string[]): Promise<Map<string, PublishedIdentity>> {
  if (!keys.length) return new Map();
  const rows = await db
    .selectFrom('published_documents')
    .select(['key', 'sha256', 'content_hash', 'published_at'])
    .where(sql<boolean>`key = ANY(${keys}::text[])`)
    .execute();
  return new Map(
    rows.map((r) => [r.key, { identity: r.content_hash ?? r.sha256, publishedAt: new Date(r.published_at).getTime() }]),
  );
}

/** An agent's published score document: its bucket copy's identity and age, and the copy its metrics row keeps. */
export interface PublishedScore extends PublishedIdentity {
  /** The metrics row's copy; null when the agent has no metrics row or the row keeps none. */
  document: Record<string, unknown> | null;
}

/**
 * For each agent whose score document is published: its identity and time, with the copy of it its
 * metrics row keeps (`key` is the agent's score document key).
 */
export async function findPublishedScores(
  db: Executor,
  agents: Array<{ id: string; key: string }>,
): Promise<Map<string, PublishedScore>> {
  if (!agents.length) return new Map();
  const { rows } = await sql<{
    agent_id: string;
    identity: string;
    published_at: Date;
    document: Record<string, unknown> | null;
  }>`
    SELECT a.id AS agent_id, coalesce(d.content_hash, d.sha256) AS identity, d.published_at, m.document
    FROM unnest(${agents.map((a) => a.id)}::uuid[], ${agents.map((a) => a.key)}::text[]) a(id, key)
    JOIN published_documents d ON d.key = a.key
    LEFT JOIN agent_metrics m ON m.agent_id = a.id`.execute(db);
  return new Map(
    rows.map((r) => [
      r.agent_id,
      { identity: r.identity, publishedAt: new Date(r.published_at).getTime(), document: r.document },
    ]),
  );
}

/**
 * Records objects just written to the bucket (one statement for all), counting each write, then
 * their owners' `document.published` events. `written: false` records a digest only (a paid
 * skill's archive, whose bytes go nowhere): no event.
 */
export async function savePublishedRecords(
  db: Executor,
  records: PublishedRecord[],
  opts: { written?: boolean } = {},
): Promise<void> {
  if (!records.length) return;
  await db
    .insertInto('published_documents')
    .values(
      records.map((r) => ({
        key: r.key,
        content_type: r.contentType,
        sha256: r.sha256,
        bytes: r.bytes,
        content_hash: r.contentHash,
      })),
    )
    .onConflict((oc) =>
      oc.column('key').doUpdateSet((eb) => ({
        sha256: eb.ref('excluded.sha256'),
        bytes: eb.ref('excluded.bytes'),
        content_type: eb.ref('excluded.content_type'),
        content_hash: eb.ref('excluded.content_hash'),
        publish_count: eb('published_documents.publish_count', '+', 1),
        published_at: new Date(),
      })),
    )
    .execute();
  if (opts.written !== false)
    await recordDocumentsPublished(
      db,
      records.map((r) => r.key),
    );
}

/**
 * Records `document.published` for each agent that owns one of these just-written keys (its own
 * documents and page, its skills' documents, pages and archives) and has an enabled webhook
 * endpoint listening to it: one event per agent, listing its paths. Agents nobody listens for get
 * no event, so a full recompute writes none for them. One statement after the bookkeeping's (a
 * crash between the two loses the event: at most once); the owners are found through the agents'
 * handle and the posts' primary key, the listeners through the endpoints' agent index.
 */
async function recordDocumentsPublished(db: Executor, keys: string[]): Promise<void> {
  await sql`
    WITH k AS (SELECT DISTINCT key FROM unnest(${keys}::text[]) AS key),
    owned AS (
      SELECT a.id AS agent_id, k.key FROM k
      JOIN agents a ON a.handle = substring(k.key FROM '^(?:api/)?agents/([a-z0-9-]+)(?:/|$)')
      UNION ALL
      SELECT p.author_id, k.key FROM k
      JOIN posts p ON p.id = substring(
        k.key FROM '^(?:api/posts|skills|\\.well-known/agent-skills/(?:skills|archives))/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:/|$)'
      )::uuid
    )
    INSERT INTO domain_events (type, agent_id, payload)
    SELECT 'document.published', o.agent_id, jsonb_build_object('paths', jsonb_agg('/' || o.key ORDER BY o.key))
    FROM owned o
    WHERE EXISTS (
      SELECT 1 FROM webhook_endpoints w
      WHERE w.agent_id = o.agent_id AND w.status = 'enabled' AND 'document.published' = ANY (w.event_types)
    )
    GROUP BY o.agent_id`.execute(db);
}

/** Forgets a key's published copy; whether there was one. */
export async function deletePublishedRecord(db: Executor, key: string): Promise<boolean> {
  const row = await db.deleteFrom('published_documents').where('key', '=', key).returning('key').executeTakeFirst();
  return row !== undefined;
}

/** What an agent's documents were last rendered from, and the digest of their identities then (`agent_render_states`). */
export interface RenderState {
  inputs: string;
  documents: string;
}

/** What decides, for one agent, whether its documents would come out as published (`readRenderChecks`). */
export interface RenderCheck {
  /** Its render state, if recorded. */
  state: RenderState | undefined;
  /**
   * The digest of the identities its documents are published with now, in the order of the keys
   * given (`documentsDigest`); undefined when one of them is not published.
   */
  documents: string | undefined;
  /** Its score document's identity and time, when published. */
  score: PublishedIdentity | undefined;
  /** Whether its metrics row keeps the very score document copy it kept when the state was recorded. */
  scoreCopyAsRecorded: boolean;
}

/**
 * For each agent (its document keys, its score document's among them): its render state, the
 * digest of its documents' published identities and its score document's identity, time and
 * copy, computed in PostgreSQL (two statements for all), so a page reads one row an agent where it
 * would read eleven identities and a score document.
 */
export async function readRenderChecks(
  db: Executor,
  agents: Array<{ id: string; keys: string[]; scoreKey: string }>,
): Promise<Map<string, RenderCheck>> {
  if (!agents.length) return new Map();
  const flat = agents.flatMap((a) => a.keys.map((key, ord) => ({ id: a.id, key, ord })));
  const keysEach = agents[0]?.keys.length ?? 0;
  if (agents.some((a) => a.keys.length !== keysEach)) throw new Error('every agent has the same document keys');
  // Raw SQL: unnest of parallel arrays, sha256 over the identities in key order, md5 of a jsonb's text.
  const [digests, scores] = await Promise.all([
    sql<{ agent_id: string; documents: string | null }>`
      SELECT k.agent_id, CASE WHEN count(d.key) = ${keysEach} THEN
        encode(sha256(convert_to(string_agg(coalesce(d.content_hash, d.sha256), chr(10) ORDER BY k.ord), 'UTF8')), 'hex') END AS documents
      FROM unnest(${flat.map((f) => f.id)}::uuid[], ${flat.map((f) => f.key)}::text[], ${flat.map((f) => f.ord)}::int[]) k(agent_id, key, ord)
      LEFT JOIN published_documents d ON d.key = k.key
      GROUP BY k.agent_id`.execute(db),
    sql<{
      agent_id: string;
      identity: string | null;
      published_at: Date | null;
      copy_as_recorded: boolean;
      inputs: string | null;
      documents: string | null;
    }>`
      SELECT a.id AS agent_id, coalesce(d.content_hash, d.sha256) AS identity, d.published_at,
        coalesce(s.score_copy = md5(m.document::text), false) AS copy_as_recorded, s.inputs, s.documents
      FROM unnest(${agents.map((a) => a.id)}::uuid[], ${agents.map((a) => a.scoreKey)}::text[]) a(id, key)
      LEFT JOIN published_documents d ON d.key = a.key
      LEFT JOIN agent_metrics m ON m.agent_id = a.id
      LEFT JOIN agent_render_states s ON s.agent_id = a.id`.execute(db),
  ]);
  const documentsOf = new Map(digests.rows.map((r) => [r.agent_id, r.documents ?? undefined]));
  return new Map(
    scores.rows.map((r) => [
      r.agent_id,
      {
        state: r.inputs !== null && r.documents !== null ? { inputs: r.inputs, documents: r.documents } : undefined,
        documents: documentsOf.get(r.agent_id),
        score:
          r.identity !== null && r.published_at !== null
            ? { identity: r.identity, publishedAt: new Date(r.published_at).getTime() }
            : undefined,
        scoreCopyAsRecorded: r.copy_as_recorded,
      },
    ]),
  );
}

/** A render state to record, with the score document the page saved in the metrics row or found kept there. */
export type RenderStateRecord = RenderState & { scoreCopy: string };

/**
 * Records the render states given (one statement), skipping agents deleted meanwhile. Each keeps
 * the MD5 of its metrics row's score document copy only while that copy is the one the page saved
 * or kept (`scoreCopy`): a copy another recompute wrote meanwhile is not recorded (NULL), so the
 * next page renders that agent again.
 */
export async function saveRenderStates(db: Executor, states: Map<string, RenderStateRecord>): Promise<void> {
  if (!states.size) return;
  const rows = [...states];
  await sql`
    INSERT INTO agent_render_states (agent_id, inputs, documents, score_copy)
    SELECT s.id, s.inputs, s.documents, CASE WHEN m.document = s.copy::jsonb THEN md5(m.document::text) END
    FROM unnest(${rows.map(([id]) => id)}::uuid[], ${rows.map(([, s]) => s.inputs)}::text[], ${rows.map(([, s]) => s.documents)}::text[],
      ${rows.map(([, s]) => s.scoreCopy)}::text[]) s(id, inputs, documents, copy)
    JOIN agents a ON a.id = s.id
    LEFT JOIN agent_metrics m ON m.agent_id = s.id
    ON CONFLICT (agent_id) DO UPDATE SET inputs = excluded.inputs, documents = excluded.documents, score_copy = excluded.score_copy
    WHERE (agent_render_states.inputs, agent_render_states.documents, agent_render_states.score_copy)
      IS DISTINCT FROM (excluded.inputs, excluded.documents, excluded.score_copy)`.execute(db);
}
