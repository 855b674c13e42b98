import { getAddress, type Address, type PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { SiteInfo } from '../site.js';
import { JSON_TYPE, type DocumentKind } from '../../documents/catalog.js';
import { agentLinks, renderAgentCard, type PublishedSkill } from '../../documents/agent/agent-card.renderer.js';
import { renderBadge, type BadgeKind, type BadgeStyle } from '../../documents/agent/badge.renderer.js';
import { renderEmbedCard } from '../../documents/agent/embed-card.renderer.js';
import { assertValid, SCHEMAS } from '../../documents/validate.js';
import { jsonBytes, stableHash } from '../documents/publish-document.js';
import { identityFacts, resolveIdentity, type Resolution } from '../identity/erc8004.js';
import { loadFacts, loadPopulation } from '../scoring/load-facts.js';
import { scoreDocument } from '../scoring/score.js';
import { healthReasons } from '../scoring/health.js';
import { HEALTH_MULTIPLIER } from '../scoring/methodology.js';
import { computeSimilar, refreshFeatures } from './similar.js';

export const SOURCE = 'skill-market';
const IDENTITY_TTL_MS = 10 * 60_000;

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
export const AGENT_DOCUMENT_NAMES = ['score.json', 'best-practices.json', 'health.json', 'agent-card.json', 'identity', 'card', 'badge.svg', 'similar.json', 'reputation.json'] as const;
export type AgentDocumentName = (typeof AGENT_DOCUMENT_NAMES)[number];

export interface RenderedDocument {
  key: string;
  body: string;
  kind: DocumentKind;
  contentHash: string;
}

export interface AgentDocumentsDeps {
  db: Db;
  site: SiteInfo;
  chain: { chainId: number; identityRegistry: Address; publicClient: PublicClient };
}

export const agentDocumentKey = (handle: string, name: AgentDocumentName) => `api/agents/${handle}/${name}`;

/** The cached ERC-8004 resolution of an agent's token, refreshed when stale or for another token. */
async function identityOf(deps: AgentDocumentsDeps, agent: Agent, now: Date): Promise<Resolution | null> {
  if (!agent.token_id) return null;
  const cached = await deps.db.selectFrom('agent_identities').selectAll().where('agent_id', '=', agent.id).executeTakeFirst();
  if (cached && cached.token_id === agent.token_id && now.getTime() - cached.resolved_at.getTime() < IDENTITY_TTL_MS) {
    return {
      tokenId: cached.token_id,
      registry: `eip155:${deps.chain.chainId}:${deps.chain.identityRegistry}`,
      owner: cached.owner ? getAddress(cached.owner) : null,
      agentWallet: cached.agent_wallet ? getAddress(cached.agent_wallet) : null,
      tokenUri: cached.token_uri,
      registration: cached.registration,
      registrationErrors: cached.registration_errors,
      resolvedAt: cached.resolved_at.toISOString(),
    };
  }
  const r = await resolveIdentity(deps.chain.publicClient, deps.chain.identityRegistry, deps.chain.chainId, agent.token_id);
  const row = {
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
    .values({ agent_id: agent.id, ...row })
    .onConflict((oc) => oc.column('agent_id').doUpdateSet(row))
    .execute();
  return r;
}

async function publishedSkills(db: Db, agentId: string): Promise<PublishedSkill[]> {
  const rows = await db
    .selectFrom('posts')
    .innerJoin('post_versions', (j) => j.onRef('post_versions.post_id', '=', 'posts.id').onRef('post_versions.version', '=', 'posts.current_version'))
    .select(['posts.id', 'posts.title', 'posts.preview', 'posts.tags', 'posts.oasf_skills', 'posts.price_atomic', 'post_versions.install_manifest'])
    .where('posts.author_id', '=', agentId)
    .where('posts.status', '=', 'published')
    .orderBy('posts.published_at', 'desc')
    .limit(100)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    title: r.title,
    preview: r.preview,
    tags: r.tags,
    oasfSkills: r.oasf_skills,
    priceAtomic: r.price_atomic,
    installType: (r.install_manifest as { type?: string } | null)?.type ?? null,
  }));
}

/**
 * EIP-55 checksums of buyer wallets, remembered: a full recompute writes each agent's last 100
 * buyers, and the keccak behind each checksum showed in the worker's profile (viem keeps only
 * 8,192). Bounded; the oldest half is dropped when full.
 */
const checksums = new Map<string, Address>();
function checksummed(address: string): Address {
  let c = checksums.get(address);
  if (!c) {
    if (checksums.size >= 200_000) for (const k of [...checksums.keys()].slice(0, 100_000)) checksums.delete(k);
    c = getAddress(address);
    checksums.set(address, c);
  }
  return c;
}

/** Reputation mirror: what would be posted to the ERC-8004 Reputation Registry for each settled sale. */
async function reputationEvents(db: Db, agent: Agent, site: SiteInfo, limit = 100) {
  const sales = await db
    .selectFrom('purchases')
    .select(['id', 'post_id', 'buyer_address', 'buyer_agent_id', 'amount_atomic', 'tx_hash', 'created_at'])
    .where('seller_id', '=', agent.id)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute();
  return sales.map((s) => ({
    id: s.id,
    kind: 'NewFeedback',
    simulated: true,
    agentId: agent.token_id,
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
  }));
}

/**
 * Renders every per-agent document from PostgreSQL (and the chain, for the ERC-8004 identity),
 * validates the A2A card, and returns them ready to publish, plus the figures agent_metrics keeps.
 * The API renders the same way when a document is not in the bucket yet, so a document never
 * has two implementations.
 */
export async function renderAgentDocuments(deps: AgentDocumentsDeps, agent: Agent, now = new Date(), opts: { featuresFresh?: boolean } = {}) {
  const resolution = await identityOf(deps, agent, now);
  // A full recompute rebuilds every agent's features in one pass before queueing the agents; a
  // change since then queues its own job, which refreshes them.
  if (!opts.featuresFresh) await refreshFeatures(deps.db, agent.id);
  const similar = await computeSimilar(deps.db, agent.id);
  const [facts, population, skills, reputation] = await Promise.all([
    loadFacts(deps.db, agent, resolution ? identityFacts(resolution, agent.wallet_address) : null, now),
    loadPopulation(deps.db),
    publishedSkills(deps.db, agent.id),
    reputationEvents(deps.db, agent, deps.site),
  ]);
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
      similar: similar.map((s) => ({ handle: s.handle, similarity: s.similarity, shared: s.shared, agentCard: agentLinks(base, s.handle).agentCard })),
      methodology: 'IDF-weighted Jaccard over OASF skills and domains and skill tags (idf = ln(1 + N/df)); buyer-wallet Jaccard when the agent has no features',
      computedAt: now.toISOString(),
    },
    'reputation.json': reputation,
  };
  const documents: RenderedDocument[] = Object.entries(json).map(([name, doc]) => ({
    key: agentDocumentKey(agent.handle, name as AgentDocumentName),
    body: jsonBytes(doc),
    kind: AGENT_DOCUMENT_KINDS.json,
    contentHash: stableHash(doc),
  }));
  const badge = renderBadge({ revenueAtomic90d: facts.revenueAtomic90d, uniqueBuyers90d: facts.uniqueBuyers90d, publishedSkillCount: facts.publishedSkillCount, verified: Boolean(resolution && identityFacts(resolution, agent.wallet_address).ownerMatches) });
  const embed = renderEmbedCard(agent, { score: score.score.score, health, publishedSkillCount: facts.publishedSkillCount, uniqueBuyers90d: facts.uniqueBuyers90d }, base);
  documents.push(
    { key: agentDocumentKey(agent.handle, 'badge.svg'), body: badge, kind: AGENT_DOCUMENT_KINDS.svg, contentHash: stableHash(badge) },
    { key: agentDocumentKey(agent.handle, 'card'), body: embed, kind: AGENT_DOCUMENT_KINDS.html, contentHash: stableHash(embed) },
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

/** A badge with the caller's kind and style, from the same facts as the published one. */
export async function renderBadgeFor(deps: AgentDocumentsDeps, agent: Agent, kind: BadgeKind, style: BadgeStyle) {
  const resolution = await identityOf(deps, agent, new Date());
  const facts = await loadFacts(deps.db, agent, resolution ? identityFacts(resolution, agent.wallet_address) : null, new Date());
  return renderBadge({ revenueAtomic90d: facts.revenueAtomic90d, uniqueBuyers90d: facts.uniqueBuyers90d, publishedSkillCount: facts.publishedSkillCount, verified: Boolean(facts.identity?.ownerMatches) }, kind, style);
}
