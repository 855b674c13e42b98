import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { isAddressEqual, type Address, type PublicClient } from 'viem';
import { checksummed } from '../../platform/chain/checksum.js';
import { AppError } from '../../platform/errors.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { SiteInfo } from '../../documents/site-info.js';
import { JSON_TYPE, type DocumentKind } from '../../documents/catalog.js';
import { agentLinks, renderAgentCard, type PublishedSkill } from '../../documents/agent/agent-card.renderer.js';
import { renderBadge, type BadgeKind, type BadgeStyle } from '../../documents/agent/badge.renderer.js';
import { renderEmbedCard } from '../../documents/agent/embed-card.renderer.js';
import { assertValid, SCHEMAS } from '../../documents/validate.js';
import { jsonBytes, publishedIdentities, stableHash, topStampedHash } from '../documents/publish-document.js';
import { identityFacts, resolveIdentity, type Resolution } from '../identity/erc8004.js';
import { loadFactsMany, loadPopulation } from '../scoring/load-facts.js';
import type { AgentFacts, Population } from '../scoring/facts.js';
import { scoreDocument, type ScoreDocument } from '../scoring/score.js';
import { healthReasons } from '../scoring/health.js';
import { HEALTH_MULTIPLIER } from '../scoring/methodology.js';
import { recomputeAndStoreSimilar, refreshFeatures, type SimilarAgent } from './similar.js';
import { signatureSnapshot } from './signature-loaders.js';

export const SOURCE = 'skill-market';
const IDENTITY_TTL_MS = 10 * 60_000;
const IDENTITY_READS_IN_FLIGHT = 8;

/**
 * A sale must show in the seller's documents within seconds, through any CDN: so caches may keep
 * them 5 s, and serve them stale for a minute while they refetch.
 */
export const AGENT_DOCUMENT_KINDS = {
  json: { contentType: JSON_TYPE, cache: { maxAge: 5, staleWhileRevalidate: 60 } },
  svg: { contentType: 'image/svg+xml; charset=utf-8', cache: { maxAge: 5, staleWhileRevalidate: 60 } },
  html: { contentType: 'text/html; charset=utf-8', cache: { maxAge: 5, staleWhileRevalidate: 60 } },
} satisfies Record<string, DocumentKind>;

/** The per-agent documents by file name under /api/agents/{handle}/. */
export const AGENT_DOCUMENT_NAMES = [
  'score.json',
  'best-practices.json',
  'health.json',
  'agent-card.json',
  'identity',
  'card',
  'badge.svg',
  'similar.json',
  'reputation.json',
] as const;
export type AgentDocumentName = (typeof AGENT_DOCUMENT_NAMES)[number];

export interface RenderedDocument {
  key: string;
  /** The bytes, or how to make them (JSON documents; a reputation mirror reads its sales), called only if the document is written. */
  body: string | (() => Promise<string>);
  kind: DocumentKind;
  contentHash: string;
  refreshAfterMs?: number;
}

/**
 * A score document whose only change is time passing is republished once its copy is this old:
 * under a day, so the daily recompute always refreshes it whatever the page order of the run.
 */
export const SCORE_REFRESH_MS = 20 * 3600_000;

const roundTo = (decimals: number) => {
  const f = 10 ** decimals;
  const round = (v: unknown): unknown =>
    typeof v === 'number'
      ? Math.round(v * f) / f
      : Array.isArray(v)
        ? v.map(round)
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, round(x)]))
          : v;
  return round;
};
const tenths = roundTo(1);
const hundredths = roundTo(2);

/**
 * What makes a score document different from the last one published, leaving out the passage of
 * time: the days since the last sale and publish, and the small moves of the components that decay
 * with them. Points (the score, the raw score and the contributions, 0..100) count to 0.1, the 0..1
 * figures (components, dimensions) to 0.01, every other member exactly. Without this, every active
 * agent's score document (and its metrics row, and its feed entry) changed on every recompute
 * though nothing had happened; counted to 0.01 point, half of them still did ten minutes apart.
 */
export function scoreContentHash(doc: ScoreDocument): string {
  const { inputs, score, ...rest } = doc;
  const { daysSinceLastSettle: _s, daysSinceLastPublish: _p, ...counts } = inputs;
  const { score: points, rawScore, contributions, ...figures } = score;
  return stableHash({
    ...rest,
    inputs: counts,
    score: { ...(hundredths(figures) as object), points: tenths({ score: points, rawScore, contributions }) },
  });
}

export interface AgentDocumentsDeps {
  db: Db;
  site: SiteInfo;
  chain: { chainId: number; identityRegistry: Address; publicClient: PublicClient };
}

export const agentDocumentKey = (handle: string, name: AgentDocumentName) => `api/agents/${handle}/${name}`;

/**
 * The cached ERC-8004 resolutions of the agents' tokens (one read for all), each refreshed from
 * the chain when stale or for another token.
 */
async function identitiesOf(
  deps: AgentDocumentsDeps,
  agents: Agent[],
  now: Date,
): Promise<Map<string, Resolution | null>> {
  const out = new Map<string, Resolution | null>(agents.map((a) => [a.id, null]));
  const withToken = agents.filter((a) => a.token_id);
  if (!withToken.length) return out;
  const cached = new Map(
    (
      await deps.db
        .selectFrom('agent_identities')
        .selectAll()
        .where(
          'agent_id',
          'in',
          withToken.map((a) => a.id),
        )
        .execute()
    ).map((r) => [r.agent_id, r]),
  );
  // Stale ones are read from the chain a few at a time (a page of a full recompute after the TTL
  // can hold a hundred), not one after another.
  const pending = [...withToken];
  const resolveNext = async (): Promise<void> => {
    const agent = pending.shift();
    if (!agent) return;
    await resolveOne(agent);
    return resolveNext();
  };
  const resolveOne = async (agent: Agent) => {
    const row = cached.get(agent.id);
    if (row && row.token_id === agent.token_id && now.getTime() - row.resolved_at.getTime() < IDENTITY_TTL_MS) {
      out.set(agent.id, {
        tokenId: row.token_id,
        registry: `eip155:${deps.chain.chainId}:${deps.chain.identityRegistry}`,
        owner: row.owner ? checksummed(row.owner) : null,
        agentWallet: row.agent_wallet ? checksummed(row.agent_wallet) : null,
        tokenUri: row.token_uri,
        registration: row.registration,
        registrationErrors: row.registration_errors,
        resolvedAt: row.resolved_at.toISOString(),
      });
      return;
    }
    const r = await resolveIdentity(
      deps.chain.publicClient,
      deps.chain.identityRegistry,
      deps.chain.chainId,
      agent.token_id!,
    );
    const fresh = {
      token_id: r.tokenId,
      owner: r.owner?.toLowerCase() ?? null,
      agent_wallet: r.agentWallet?.toLowerCase() ?? null,
      token_uri: r.tokenUri,
      registration: r.registration ? JSON.stringify(r.registration) : null,
      registration_errors: r.registrationErrors,
      resolved_at: new Date(r.resolvedAt),
    };
    await deps.db
      .insertInto('agent_identities')
      .values({ agent_id: agent.id, ...fresh })
      .onConflict((oc) => oc.column('agent_id').doUpdateSet(fresh))
      .execute();
    out.set(agent.id, r);
  };
  await Promise.all(Array.from({ length: Math.min(IDENTITY_READS_IN_FLIGHT, withToken.length) }, resolveNext));
  return out;
}

/** The newest 100 published skills of each agent, one statement for all. */
async function publishedSkillsOf(db: Db, agentIds: string[]): Promise<Map<string, PublishedSkill[]>> {
  const out = new Map<string, PublishedSkill[]>(agentIds.map((id) => [id, []]));
  const { rows } = await sql<{
    agent_id: string;
    id: string;
    title: string;
    preview: string;
    tags: string[];
    oasf_skills: string[];
    price_atomic: string;
    install_manifest: { type?: string } | null;
  }>`
    SELECT a.id AS agent_id, x.* FROM unnest(${agentIds}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      SELECT p.id, p.title, p.preview, p.tags, p.oasf_skills, p.price_atomic, v.install_manifest, p.published_at
      FROM posts p JOIN post_versions v ON v.post_id = p.id AND v.version = p.current_version
      WHERE p.author_id = a.id AND p.status = 'published'
      ORDER BY p.published_at DESC, p.id LIMIT 100) x
    ORDER BY a.ord, x.published_at DESC, x.id`.execute(db);
  for (const r of rows) {
    out.get(r.agent_id)!.push({
      id: r.id,
      title: r.title,
      preview: r.preview,
      tags: r.tags,
      oasfSkills: r.oasf_skills,
      priceAtomic: r.price_atomic,
      installType: r.install_manifest?.type ?? null,
    });
  }
  return out;
}

/**
 * What a reputation mirror is made of, short of reading it: purchases are never updated or
 * deleted, and each new one is the latest, so the agent's count of sales and its latest sale fix
 * which 100 are mirrored; the token id and the site fill in the rest. Stored as the document's
 * content hash, it lets a recompute skip reading and rendering the mirrors that cannot have changed
 * (100 purchases an agent: most of what a full recompute would otherwise read).
 */
export function reputationFingerprint(agent: Agent, facts: AgentFacts, site: SiteInfo): string {
  const parts = [
    'reputation-v1',
    REPUTATION_LIMIT,
    facts.settlementCountAll,
    facts.lastSettleAt?.toISOString() ?? '',
    agent.token_id ?? '',
    site.baseUrl,
    site.usdcAddress,
    site.network,
  ];
  return createHash('sha256').update(parts.join('|')).digest('hex');
}

const REPUTATION_LIMIT = 100;

/** Reputation mirror: what would be posted to the ERC-8004 Reputation Registry for each of an agent's last 100 settled sales. */
async function reputationEventsOf(db: Db, agents: Agent[], site: SiteInfo, limit = REPUTATION_LIMIT) {
  if (!agents.length) return new Map<string, ReturnType<typeof reputationEvent>[]>();
  const out = new Map<string, ReturnType<typeof reputationEvent>[]>(agents.map((a) => [a.id, []]));
  const { rows } = await sql<Sale & { seller_id: string }>`
    SELECT a.id AS seller_id, x.* FROM unnest(${agents.map((a) => a.id)}::uuid[]) WITH ORDINALITY a(id, ord)
    CROSS JOIN LATERAL (
      SELECT id, post_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at FROM purchases
      WHERE seller_id = a.id ORDER BY created_at DESC, id LIMIT ${limit}) x
    ORDER BY a.ord, x.created_at DESC, x.id`.execute(db);
  const tokenOf = new Map(agents.map((a) => [a.id, a.token_id]));
  for (const s of rows) out.get(s.seller_id)!.push(reputationEvent(s, tokenOf.get(s.seller_id) ?? null, site));
  return out;
}

interface Sale {
  id: string;
  post_id: string;
  buyer_address: string;
  buyer_agent_id: string | null;
  amount_atomic: string;
  tx_hash: string | null;
  created_at: Date;
}

const reputationEvent = (s: Sale, tokenId: string | null, site: SiteInfo) => ({
  id: s.id,
  kind: 'NewFeedback',
  simulated: true,
  agentId: tokenId,
  clientAddress: checksummed(s.buyer_address),
  clientIsAgent: s.buyer_agent_id !== null,
  value: 100,
  valueDecimals: 0,
  tag1: 'x402-purchase',
  tag2: s.post_id,
  endpoint: `${site.baseUrl}/api/posts/${s.post_id}?view=full`,
  amountAtomic: s.amount_atomic,
  asset: site.usdcAddress,
  network: site.network,
  txHash: s.tx_hash,
  occurredAt: s.created_at.toISOString(),
});

export type RenderedAgent = Awaited<ReturnType<typeof renderOne>>;

/**
 * Renders every per-agent document from PostgreSQL (and the chain, for the ERC-8004 identity),
 * validates the A2A card, and returns them ready to publish, plus the figures agent_metrics keeps.
 * One agent's case of renderAgentDocumentsMany, which the jobs run. Never from a request: it
 * writes similarity features and the identity cache, reads the chain and fetches the registration
 * file. The API answers from what the jobs published.
 */
export async function renderAgentDocuments(
  deps: AgentDocumentsDeps,
  agent: Agent,
  now = new Date(),
  opts: { featuresFresh?: boolean } = {},
): Promise<RenderedAgent> {
  return (await renderAgentDocumentsMany(deps, [agent], now, opts))[0]!;
}

/**
 * The documents of many agents, read with a fixed number of statements whatever their number:
 * the full recompute renders a few hundred agents a job.
 */
export async function renderAgentDocumentsMany(
  deps: AgentDocumentsDeps,
  agents: Agent[],
  now = new Date(),
  opts: {
    featuresFresh?: boolean;
    timings?: Record<string, number>;
    /** Leave out reading the reputation mirrors whose published copy has the same fingerprint (the body reads them if needed). */
    skipUnchangedReputation?: boolean;
  } = {},
): Promise<RenderedAgent[]> {
  if (!agents.length) return [];
  const ids = agents.map((a) => a.id);
  let mark = performance.now();
  const lap = (stage: string) => {
    const t = performance.now();
    if (opts.timings) opts.timings[stage] = Math.round((opts.timings[stage] ?? 0) + t - mark);
    mark = t;
  };
  const resolutions = await identitiesOf(deps, agents, now);
  lap('identityMs');
  // A full recompute rebuilds every agent's features in one pass before queueing the agents; a
  // change since then queues its own job, which refreshes them.
  if (!opts.featuresFresh) for (const id of ids) await refreshFeatures(deps.db, id);
  // The full recompute's pages rank against the worker's snapshot of every signature.
  const similar = await recomputeAndStoreSimilar(
    deps.db,
    ids,
    10,
    opts.featuresFresh ? await signatureSnapshot(deps.db) : undefined,
  );
  lap('similarMs');
  const identity = (a: Agent) => {
    const r = resolutions.get(a.id);
    return r ? identityFacts(r, a.wallet_address) : null;
  };
  const [facts, population, skills, published] = await Promise.all([
    loadFactsMany(
      deps.db,
      agents.map((agent) => ({ agent, identity: identity(agent) })),
      now,
    ),
    loadPopulation(deps.db),
    publishedSkillsOf(deps.db, ids),
    opts.skipUnchangedReputation
      ? publishedIdentities(
          deps.db,
          agents.map((a) => agentDocumentKey(a.handle, 'reputation.json')),
        )
      : undefined,
  ]);
  const fingerprints = agents.map((agent, i) => reputationFingerprint(agent, facts[i]!, deps.site));
  const unchanged = (i: number) =>
    published?.get(agentDocumentKey(agents[i]!.handle, 'reputation.json'))?.identity === fingerprints[i];
  const events = await reputationEventsOf(
    deps.db,
    agents.filter((_, i) => !unchanged(i)),
    deps.site,
  );
  const reputation = agents.map((agent, i) =>
    unchanged(i)
      ? {
          fingerprint: fingerprints[i]!,
          read: async () => jsonBytes((await reputationEventsOf(deps.db, [agent], deps.site)).get(agent.id) ?? []),
        }
      : { fingerprint: fingerprints[i]!, events: events.get(agent.id)! },
  );
  lap('factsMs');
  const rendered = agents.map((agent, i) =>
    renderOne(deps, agent, now, {
      resolution: resolutions.get(agent.id) ?? null,
      similar: similar.get(agent.id)!,
      facts: facts[i]!,
      population,
      skills: skills.get(agent.id)!,
      reputation: reputation[i]!,
    }),
  );
  lap('renderMs');
  return rendered;
}

interface AgentInputs {
  resolution: Resolution | null;
  similar: SimilarAgent[];
  facts: AgentFacts;
  population: Population;
  skills: PublishedSkill[];
  /** The mirror's events, or how to read them when the published copy's fingerprint matched. */
  reputation: { fingerprint: string; events: unknown[] } | { fingerprint: string; read: () => Promise<string> };
}

function renderOne(
  deps: AgentDocumentsDeps,
  agent: Agent,
  now: Date,
  { resolution, similar, facts, population, skills, reputation }: AgentInputs,
) {
  const base = deps.site.baseUrl;
  const links = agentLinks(base, agent.handle);
  const score = scoreDocument(facts, population, now, { baseUrl: base, source: SOURCE });
  const health = score.score.health.status;

  const card = renderAgentCard(agent, skills, deps.site);
  assertValid(SCHEMAS.agentCard, card);

  const json: Record<string, unknown> = {
    'score.json': score,
    'best-practices.json': {
      $schema: `${base}/spec/best-practices-v1.json`,
      source: SOURCE,
      agent: { handle: agent.handle },
      ...score.bestPractices,
      computedAt: now.toISOString(),
    },
    'health.json': {
      agent: { handle: agent.handle },
      status: health,
      multiplier: HEALTH_MULTIPLIER[health],
      healthScore: score.score.components.reliability.healthScore,
      reasons: healthReasons(facts, now),
      lastPublishAt: facts.lastPublishAt?.toISOString() ?? null,
      lastSettleAt: facts.lastSettleAt?.toISOString() ?? null,
      publishedSkillCount: facts.publishedSkillCount,
      methodology: `${base}/spec/market-score-v1.json#health`,
      computedAt: now.toISOString(),
    },
    'agent-card.json': card,
    identity: {
      agent: { handle: agent.handle, walletAddress: facts.walletAddress },
      erc8004: resolution
        ? {
            ...resolution,
            ownerMatchesWallet: identityFacts(resolution, agent.wallet_address).ownerMatches,
            payoutMatchesAgentWallet: identityFacts(resolution, agent.wallet_address).payoutMatches,
          }
        : null,
      howToRegister: resolution
        ? null
        : `Call register(tokenURI) on the IdentityRegistry ${deps.chain.identityRegistry} (eip155:${deps.chain.chainId}) from ${facts.walletAddress}, then PATCH /api/agents/me with erc8004AgentId.`,
      links,
    },
    'similar.json': {
      agent: { handle: agent.handle },
      method: similar[0]?.method ?? 'idf-jaccard',
      similar: similar.map((s) => ({
        handle: s.handle,
        similarity: s.similarity,
        shared: s.shared,
        agentCard: agentLinks(base, s.handle).agentCard,
      })),
      methodology:
        'IDF-weighted Jaccard over OASF skills and domains and skill tags (idf = ln(1 + N/df)); buyer-wallet Jaccard when the agent has no features',
      computedAt: now.toISOString(),
    },
  };
  // Compared by content hash; the bytes are made only for a document that is written (most are not).
  // Each of these is stamped only at its top level (score.json has its own hash); a stamp-named
  // member inside an agent's registration file (identity) is the agent's content and counts.
  const documents: RenderedDocument[] = Object.entries(json).map(([name, doc]) => ({
    key: agentDocumentKey(agent.handle, name as AgentDocumentName),
    body: async () => jsonBytes(doc),
    kind: AGENT_DOCUMENT_KINDS.json,
    ...(name === 'score.json'
      ? { contentHash: scoreContentHash(score), refreshAfterMs: SCORE_REFRESH_MS }
      : { contentHash: topStampedHash(doc as Record<string, unknown>) }),
  }));
  documents.push({
    key: agentDocumentKey(agent.handle, 'reputation.json'),
    body: 'events' in reputation ? jsonBytes(reputation.events) : reputation.read,
    kind: AGENT_DOCUMENT_KINDS.json,
    contentHash: reputation.fingerprint,
  });
  const badge = renderBadge({
    revenueAtomic90d: facts.revenueAtomic90d,
    uniqueBuyers90d: facts.uniqueBuyers90d,
    publishedSkillCount: facts.publishedSkillCount,
    verified: Boolean(resolution && identityFacts(resolution, agent.wallet_address).ownerMatches),
  });
  const embed = renderEmbedCard(
    agent,
    {
      score: score.score.score,
      health,
      publishedSkillCount: facts.publishedSkillCount,
      uniqueBuyers90d: facts.uniqueBuyers90d,
    },
    base,
  );
  documents.push(
    {
      key: agentDocumentKey(agent.handle, 'badge.svg'),
      body: badge,
      kind: AGENT_DOCUMENT_KINDS.svg,
      contentHash: stableHash(badge),
    },
    {
      key: agentDocumentKey(agent.handle, 'card'),
      body: embed,
      kind: AGENT_DOCUMENT_KINDS.html,
      contentHash: stableHash(embed),
    },
  );
  return {
    documents,
    facts,
    score,
    metrics: {
      score: score.score.score,
      raw_score: score.score.rawScore,
      health_status: health,
      revenue_atomic_90d: facts.revenueAtomic90d.toString(),
      unique_buyers_90d: facts.uniqueBuyers90d,
      settlements_90d: facts.settlementCount90d,
      published_skills: facts.publishedSkillCount,
    },
  };
}

/**
 * A badge of any kind and style from what the last recompute stored: the figures of its metrics
 * row (written with the published badge, from the same facts) and its cached identity. A pure
 * read, for the API: rendering from the facts would refresh the identity from the chain and write
 * its cache. Null when the agent has not been recomputed yet.
 */
export async function readBadge(db: Db, agent: Agent, kind: BadgeKind, style: BadgeStyle): Promise<string | null> {
  const row = await db
    .selectFrom('agent_metrics as m')
    .leftJoin('agent_identities as i', 'i.agent_id', 'm.agent_id')
    .select(['m.revenue_atomic_90d', 'm.unique_buyers_90d', 'm.published_skills', 'i.token_id', 'i.owner'])
    .where('m.agent_id', '=', agent.id)
    .executeTakeFirst();
  if (!row) return null;
  // As the recompute decides it: the cached resolution counts only for the token the agent links now.
  const verified = Boolean(
    agent.token_id &&
      row.token_id === agent.token_id &&
      row.owner &&
      isAddressEqual(row.owner as Address, agent.wallet_address as Address),
  );
  return renderBadge(
    {
      revenueAtomic90d: BigInt(row.revenue_atomic_90d),
      uniqueBuyers90d: row.unique_buyers_90d,
      publishedSkillCount: row.published_skills,
      verified,
    },
    kind,
    style,
  );
}

/**
 * A per-agent document asked for before the agent's first recompute published it. Answered 404
 * (there is nothing to show yet) with its own code, so clients can tell it from an unknown agent
 * and ask again shortly; the request has queued the recompute.
 */
export class DocumentNotReadyError extends AppError {
  constructor(
    handle: string,
    name: string,
    readonly retryAfterSeconds: number,
  ) {
    super(
      404,
      'document_not_ready',
      `The ${name} document of @${handle} is not published yet; it is being computed, ask again in a few seconds`,
      { retryAfterSeconds },
    );
  }
}
