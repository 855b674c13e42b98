import { createHash } from 'node:crypto';
import type { Address, PublicClient } from 'viem';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { SiteInfo } from '../../documents/site-info.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import type { SignedSale } from './reputation-receipts.js';
import type { TrustEvent } from '../../documents/agent/reputation.document.js';
import type { RefundFigures } from '../../documents/agent/rating.document.js';
import type { RatingCounts } from '../../documents/posts/skill-reviews.document.js';
import { agentCardContent, type PublishedSkill } from '../../documents/agent/agent-card.renderer.js';
import { signCard, signedCardHash } from '../../documents/card-signature.js';
import {
  AGENT_DOCUMENT_NAMES,
  AGENT_DOCUMENTS,
  agentDocumentKey,
  type AgentDocumentName,
} from '../../documents/catalog.js';
import { codeFingerprint } from '../../platform/code-fingerprint.js';
import { jsonBytes } from '../../documents/document.js';
import { agentPageDocument } from '../../documents/pages/pages.document.js';
import { similarForPage } from '../pages/agent-page.js';
import type { PublishInput } from '../publishing/publish-document.js';
import { stableHash, topStampedHash } from '../publishing/content-hash.js';
import { identityFacts, type Resolution } from '../identity/erc8004.js';
import type { AgentFacts, Population } from '../scoring/facts.js';
import { healthReasons } from '../scoring/health.js';
import { HEALTH_MULTIPLIER } from '../scoring/methodology.js';
import { scoreDocument, type ScoreDocument } from '../scoring/score.js';
import { SCORE_REFRESH_MS, scoreContentHash } from './agent-document-hashes.js';
import type { SimilarAgent } from './similar.js';
import type { PublishedIdentity, PublishedScore } from '../../data/documents.repository.js';

/** What rendering an agent's documents reads from and writes to. */
export interface AgentDocumentsDeps {
  db: Db;
  site: SiteInfo;
  chain: { chainId: number; identityRegistry: Address; publicClient: PublicClient };
  /** Signs the receipts the reputation mirror carries. */
  receipts: ReceiptIssuer;
}

/** What the documents say they come from. */
export const SOURCE = 'skill-market';

/** Everything one agent's documents are rendered from, read beforehand. */
export interface AgentInputs {
  resolution: Resolution | null;
  similar: SimilarAgent[];
  facts: AgentFacts;
  population: Population;
  skills: PublishedSkill[];
  /** The mirror's sales, or how to read its bytes when the published copy's fingerprint matched. */
  reputation:
    | { fingerprint: string; sales: SignedSale[]; events: TrustEvent[] }
    | { fingerprint: string; read: () => Promise<string> };
  /** Its rating as a seller and its refund figures. */
  rating: { rating: RatingCounts; refunds: RefundFigures };
  /**
   * Its published score document (kept in its metrics row) with the bucket copy's identity and
   * time, when the caller read it: while that copy stands (same identity, not yet due for its
   * refresh) the embed card, the page and the metrics row show it rather than the score just
   * computed, whose only difference is time passing.
   */
  publishedScore?: PublishedScore;
}

/** A per-agent document ready to publish: its bytes, or how to read them (JSON, made only if it is written). */
export type RenderedDocument = Omit<PublishInput, 'body'> & { body: string | (() => Promise<string>) };

export type RenderedAgent = ReturnType<typeof agentDocumentsOf>;

/**
 * `value` with the members of its objects in `template`'s order (members `template` lacks last):
 * a document read back from a jsonb column, whose members PostgreSQL reorders, in the order the
 * renderer writes them, so its hash and its rendering (the dimensions' order) are the same.
 */
function inKeyOrderOf(template: unknown, value: unknown): unknown {
  if (Array.isArray(value))
    return value.map((v, i) => inKeyOrderOf(Array.isArray(template) ? template[i] : undefined, v));
  if (!value || typeof value !== 'object') return value;
  const t =
    template && typeof template === 'object' && !Array.isArray(template) ? (template as Record<string, unknown>) : {};
  const v = value as Record<string, unknown>;
  const keys = [...Object.keys(t).filter((k) => k in v), ...Object.keys(v).filter((k) => !(k in t))];
  return Object.fromEntries(keys.map((k) => [k, inKeyOrderOf(t[k], v[k])]));
}

/** Whether a published score document stands at `now` for the score just computed (`scoreIdentity`): the same identity, not yet due for its refresh. */
export const scoreStands = (published: PublishedIdentity | undefined, scoreIdentity: string, now: Date) =>
  published !== undefined &&
  published.identity === scoreIdentity &&
  now.getTime() - published.publishedAt < SCORE_REFRESH_MS;

/**
 * Whether the published score document stands at `now` (its identity is that of the score just
 * computed, `current`, and it is younger than its refresh), and if so the copy the metrics row
 * keeps of it, when that copy is the one published (the same identity). A copy that stands with
 * no such copy (no metrics row yet, or a row that missed a write) is to be written again now, so
 * that the document, the row and what shows them agree.
 */
function standingScore(
  published: PublishedScore | undefined,
  current: ScoreDocument,
  identity: string,
  now: Date,
): { stands: false } | { stands: true; document: ScoreDocument | undefined } {
  if (!published || !scoreStands(published, identity, now)) return { stands: false };
  const document = published.document ? (inKeyOrderOf(current, published.document) as ScoreDocument) : undefined;
  return { stands: true, document: document && scoreContentHash(document) === identity ? document : undefined };
}

/** The bucket keys of one agent's ten documents and its page. */
export function agentDocumentKeys(handle: string): string[] {
  return [...AGENT_DOCUMENT_NAMES.map((name) => agentDocumentKey(handle, name)), agentPageDocument.key({ handle })];
}

/** JSON of what a digest reads: amounts (bigint) as strings, dates as ISO strings. */
const digestJson = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

/**
 * What `agentInputsDigest` reads of one agent: its inputs, with its similar list, its published
 * skills and its reputation mirror each as a digest of what they are rendered from (the list's and
 * the skills' digests are read in PostgreSQL, `readSimilarListDigests` and
 * `readPublishedSkillsDigests`; the mirror's is its fingerprint).
 */
export type DigestInputs = Pick<AgentInputs, 'resolution' | 'facts' | 'population' | 'rating'> & {
  similar: string;
  skills: string;
  reputation: string;
};

/**
 * Everything `agentDocumentsOf` would render one agent's documents from, as a digest, and the
 * identity of the score document it would compute. The same digest, with every document still
 * published as last recorded and a score document that stands (that identity, not due for its
 * refresh, the metrics row's copy as recorded), means rendering would give the same documents and
 * skip them all (the full recompute's pages leave such an agent alone). Time enters only where the
 * documents show it: the score's identity (which leaves out what decay moves), the health reasons,
 * and the score document's refresh. The population's breakpoints reach the documents only through
 * the score, so its identity stands for them (they move with nearly every sale in the market). The
 * code's fingerprint and the site's, chain's and signers' settings are in `context`, computed once for a page.
 */
export function agentInputsDigest(
  context: string,
  agent: Agent,
  now: Date,
  { resolution, similar, facts, population, skills, reputation, rating }: DigestInputs,
  baseUrl: string,
): { digest: string; scoreIdentity: string } {
  const scoreIdentity = scoreContentHash(scoreDocument(facts, population, now, { baseUrl, source: SOURCE }));
  // Columns no document shows and that move on their own: the feed's change mark, the search vector.
  const {
    change_txid: _changed,
    search: _search,
    ...row
  } = agent as Agent & { change_txid?: unknown; search?: unknown };
  const digest = createHash('sha256')
    .update(context)
    .update(
      // Without a replacer, which slowed this by half: the facts' revenue is their only bigint.
      JSON.stringify([
        row,
        resolution,
        similar,
        { ...facts, revenueAtomic90d: facts.revenueAtomic90d.toString() },
        skills,
        reputation,
        rating,
        scoreIdentity,
        healthReasons(facts, now),
      ]),
    )
    .digest('hex');
  return { digest, scoreIdentity };
}

/**
 * What every agent's documents share and `agentInputsDigest` must name: the code that renders
 * them, the site's settings, the card signer's protected header (algorithm and key id, as the
 * card's own identity names it), the chain and the receipts' signer.
 */
export function agentDocumentsContext(deps: Pick<AgentDocumentsDeps, 'site' | 'chain' | 'receipts'>): string {
  const { cardSigner, ...site } = deps.site;
  return digestJson([
    codeFingerprint(),
    site,
    signedCardHash({}, cardSigner),
    deps.chain.chainId,
    deps.chain.identityRegistry,
    deps.receipts.address,
  ]);
}

/** The digest of the identities an agent's documents are published with (`agentDocumentKeys` order); undefined when one is missing. */
export function documentsDigest(identities: Array<string | undefined>): string | undefined {
  if (identities.some((i) => i === undefined)) return undefined;
  return createHash('sha256').update(identities.join('\n')).digest('hex');
}

/**
 * One agent's ten documents and its page from what was read for it (pure: no reads, no writes), each with what
 * identifies its content, and the figures its metrics row keeps.
 */
export function agentDocumentsOf(
  deps: Pick<AgentDocumentsDeps, 'site' | 'chain'>,
  agent: Agent,
  now: Date,
  { resolution, similar, facts, population, skills, reputation, rating, publishedScore }: AgentInputs,
) {
  const base = deps.site.baseUrl;
  const computedAt = now.toISOString();
  const current = scoreDocument(facts, population, now, { baseUrl: base, source: SOURCE });
  const identity = scoreContentHash(current);
  // Decided here, once, for the score document and what shows its figures: while the published
  // copy stands it is not written again, and the card, page and metrics row show it, so none of
  // them states a score newer than score.json. Standing without the row's copy of it, it is written
  // again now (due at once), with the score just computed, which everything else shows.
  const standing = standingScore(publishedScore, current, identity, now);
  const kept = standing.stands ? standing.document : undefined;
  const score = kept ?? current;
  const refreshAfterMs = kept ? undefined : standing.stands ? 0 : SCORE_REFRESH_MS;
  const health = score.score.health.status;
  const reasons = healthReasons(facts, now);
  const matches = resolution ? identityFacts(resolution, agent.wallet_address) : null;

  const json = {
    'score.json': AGENT_DOCUMENTS['score.json'].render(score),
    'best-practices.json': AGENT_DOCUMENTS['best-practices.json'].render({
      baseUrl: base,
      source: SOURCE,
      handle: agent.handle,
      checklist: score.bestPractices,
      computedAt,
    }),
    'health.json': AGENT_DOCUMENTS['health.json'].render({
      baseUrl: base,
      handle: agent.handle,
      status: health,
      multiplier: HEALTH_MULTIPLIER[health],
      healthScore: score.score.components.reliability.healthScore ?? 0,
      reasons,
      lastPublishAt: facts.lastPublishAt,
      lastSettleAt: facts.lastSettleAt,
      publishedSkillCount: facts.publishedSkillCount,
      computedAt,
    }),
    identity: AGENT_DOCUMENTS.identity.render({
      baseUrl: base,
      handle: agent.handle,
      walletAddress: facts.walletAddress,
      erc8004:
        resolution && matches
          ? { resolution, ownerMatches: matches.ownerMatches, payoutMatches: matches.payoutMatches }
          : null,
      chainId: deps.chain.chainId,
      identityRegistry: deps.chain.identityRegistry,
    }),
    'similar.json': AGENT_DOCUMENTS['similar.json'].render({
      baseUrl: base,
      handle: agent.handle,
      similar,
      computedAt,
    }),
    'rating.json': AGENT_DOCUMENTS['rating.json'].render({ handle: agent.handle, ...rating, site: deps.site }),
  } satisfies Partial<Record<AgentDocumentName, Record<string, unknown>>>;

  const input = (name: AgentDocumentName, rest: Omit<RenderedDocument, 'document' | 'key'>): RenderedDocument => ({
    document: AGENT_DOCUMENTS[name],
    key: agentDocumentKey(agent.handle, name),
    ...rest,
  });
  // Compared by content hash; the bytes are made only for a document that is written (most are not).
  // Each of these is stamped only at its top level (score.json has its own hash); a stamp-named
  // member inside an agent's registration file (identity) is the agent's content and counts.
  const documents: RenderedDocument[] = (
    Object.entries(json) as Array<[keyof typeof json, Record<string, unknown>]>
  ).map(([name, doc]) =>
    input(name, {
      body: async () => jsonBytes(doc),
      ...(name === 'score.json'
        ? { contentHash: identity, ...(refreshAfterMs === undefined ? {} : { refreshAfterMs }) }
        : { contentHash: topStampedHash(doc) }),
    }),
  );
  // The card is signed only if it is written: its hash covers what the signature is made of.
  const card = agentCardContent(agent, skills, deps.site);
  documents.push(
    input('agent-card.json', {
      body: async () => jsonBytes(signCard(card, deps.site.cardSigner)),
      contentHash: signedCardHash(card, deps.site.cardSigner),
    }),
    input('reputation.json', {
      body:
        'sales' in reputation
          ? jsonBytes(
              AGENT_DOCUMENTS['reputation.json'].render({
                sales: reputation.sales,
                events: reputation.events,
                tokenId: agent.token_id,
                site: deps.site,
              }),
            )
          : reputation.read,
      contentHash: reputation.fingerprint,
    }),
  );
  const badge = AGENT_DOCUMENTS['badge.svg'].render({
    revenueAtomic90d: facts.revenueAtomic90d,
    uniqueBuyers90d: facts.uniqueBuyers90d,
    publishedSkillCount: facts.publishedSkillCount,
    verified: Boolean(matches?.ownerMatches),
  });
  const embed = AGENT_DOCUMENTS.card.render({
    agent,
    facts: {
      score: score.score.score,
      health,
      publishedSkillCount: facts.publishedSkillCount,
      uniqueBuyers90d: facts.uniqueBuyers90d,
      verified: Boolean(matches?.ownerMatches),
    },
    baseUrl: base,
  });
  // The page for people shows what the documents above state; it has no time in it, so its bytes
  // change only when something it shows does.
  const page = agentPageDocument.render({
    baseUrl: base,
    agent,
    verified: Boolean(matches?.ownerMatches),
    score: { ...score.score, health, healthReasons: reasons },
    checklist: score.bestPractices,
    skills,
    similar: similarForPage(similar),
    rating: { rating: json['rating.json'].rating, refunds: json['rating.json'].refunds },
  });
  documents.push(
    input('badge.svg', { body: badge, contentHash: stableHash(badge) }),
    input('card', { body: embed, contentHash: stableHash(embed) }),
    { document: agentPageDocument, key: agentPageDocument.key({ handle: agent.handle }), body: page },
  );
  return {
    agent,
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
