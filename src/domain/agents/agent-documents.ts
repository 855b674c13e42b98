import { findPublishedSkills, findRecentSales, type PublishedSkillRow } from '../../data/posts.repository.js';
import type { Db } from '../../data/db.js';
import type { Agent } from '../../data/schema.js';
import type { PublishedSkill } from '../../documents/agent/agent-card.renderer.js';
import { REPUTATION_LIMIT, type TrustEvent } from '../../documents/agent/reputation.document.js';
import { AGENT_DOCUMENTS, agentDocumentKey } from '../../documents/catalog.js';
import { jsonBytes } from '../../documents/document.js';
import { findPublishedIdentities, findPublishedScores, readRenderChecks } from '../../data/documents.repository.js';
import { identityFacts, type Resolution } from '../identity/erc8004.js';
import type { AgentFacts } from '../scoring/facts.js';
import { loadFactsRecorded, loadPopulation } from '../scoring/load-facts.js';
import { reputationFingerprint } from './agent-document-hashes.js';
import { withReceipts, type SignedSale } from './reputation-receipts.js';
import { readSellerRatingTotalsMany } from '../../data/reviews.repository.js';
import { readRefundCounts, refundRecord, type RefundCounts } from '../../data/refunds.repository.js';
import { readTrustEvents, trustEventMarks, type TrustEventRow } from '../../data/trust-events.repository.js';
import type { ReceiptIssuer } from '../payments/protocol/extensions/offer-receipt.js';
import { refreshIdentities } from './agent-identities.js';
import {
  agentDocumentKeys,
  agentDocumentsContext,
  agentDocumentsOf,
  agentInputsDigest,
  scoreStands,
  type AgentDocumentsDeps,
  type AgentInputs,
  type RenderedAgent,
} from './agent-documents.renderer.js';
import { readStoredSimilar, recomputeAndStoreSimilar, refreshFeatures, type SimilarAgent } from './similar.js';
import { readSimilarListDigests, readSimilarLists } from '../../data/similar-lists.repository.js';
import { signatureSnapshot } from './signature-loaders.js';

export { AGENT_DOCUMENT_NAMES, agentDocumentKey, type AgentDocumentName } from '../../documents/catalog.js';
export type { AgentDocumentsDeps, RenderedAgent, RenderedDocument } from './agent-documents.renderer.js';

const toPublishedSkill = (r: PublishedSkillRow): PublishedSkill => ({
  id: r.id,
  title: r.title,
  preview: r.preview,
  tags: r.tags,
  oasfSkills: r.oasf_skills,
  priceAtomic: r.price_atomic,
  installType: r.install_manifest?.type ?? null,
  integrity: { name: r.skill_name, version: r.version, skillDigest: r.skill_digest, signed: r.signed },
});

/** Rows grouped by their owner's id, every id present (an agent without rows has an empty list). */
function groupBy<R, T>(ids: string[], rows: R[], idOf: (r: R) => string, map: (r: R) => T): Map<string, T[]> {
  const out = new Map<string, T[]>(ids.map((id) => [id, []]));
  for (const r of rows) out.get(idOf(r))?.push(map(r));
  return out;
}

const salesOf = async (deps: { db: Db; receipts: ReceiptIssuer }, agentIds: string[]) =>
  groupBy(
    agentIds,
    await withReceipts(deps.db, deps.receipts, await findRecentSales(deps.db, agentIds, REPUTATION_LIMIT)),
    (s: SignedSale) => s.seller_id,
    (s) => s,
  );

const NO_REFUNDS: RefundCounts = { refunds: 0, requests: 0, declined: 0, medianResponseSeconds: null };

/** Each agent's rating as a seller and its refund counts (its sales are its facts'). */
const sellerRatings = async (db: Db, agentIds: string[]) => {
  const [totals, refunds] = await Promise.all([
    readSellerRatingTotalsMany(db, agentIds),
    readRefundCounts(db, agentIds),
  ]);
  return new Map([...totals].map(([id, rating]) => [id, { rating, refunds: refunds.get(id) ?? NO_REFUNDS }]));
};

/** The newest trust events (reviews, responses, refunds, on-chain feedback) of each agent. */
const eventsOf = async (deps: { db: Db }, agentIds: string[]) =>
  groupBy(
    agentIds,
    await readTrustEvents(deps.db, agentIds, REPUTATION_LIMIT),
    (e: TrustEventRow) => e.seller_id,
    (e): TrustEvent => e,
  );

/**
 * One agent's case of `refreshAndRenderAgentDocumentsMany`: its documents ready to publish and the
 * figures agent_metrics keeps.
 */
export async function refreshAndRenderAgentDocuments(
  deps: AgentDocumentsDeps,
  agent: Agent,
  now = new Date(),
  opts: { featuresFresh?: boolean } = {},
): Promise<RenderedAgent> {
  const [one] = await refreshAndRenderAgentDocumentsMany(deps, [agent], now, opts);
  if (!one) throw new Error(`agent ${agent.id} rendered no documents`);
  return one;
}

/**
 * Refreshes what the agents' documents are made of, then renders every per-agent document, ready
 * to publish, with the figures agent_metrics keeps. Writes: the similarity features and lists and
 * the identity cache (it reads the chain and fetches registration files), so it runs in the jobs
 * only, never from a request; the API answers from what the jobs published. A fixed number of
 * statements whatever the number of agents: the full recompute renders a few hundred a job.
 */
export async function refreshAndRenderAgentDocumentsMany(
  deps: AgentDocumentsDeps,
  agents: Agent[],
  now = new Date(),
  opts: {
    featuresFresh?: boolean;
    /** The similar lists were stored just before (the full recompute's similar pages): read them, not ranked again. */
    similarStored?: boolean;
    timings?: Record<string, number>;
    /** Leave out reading the reputation mirrors whose published copy has the same fingerprint (the body reads them if needed). */
    skipUnchangedReputation?: boolean;
    /** Show the published score document where it stands (see `AgentInputs.publishedScore`); not when every document is forced. */
    showPublishedScore?: boolean;
    /**
     * Leave out the agents whose inputs, published documents and standing score document are as
     * their render state records (`agentInputsDigest`; the full recompute's pages), and give each
     * agent rendered its inputs' digest, to record once its documents are published.
     */
    skipUnchanged?: boolean;
  } = {},
): Promise<Array<RenderedAgent & { inputsDigest?: string }>> {
  if (!agents.length) return [];
  const ids = agents.map((a) => a.id);
  let mark = performance.now();
  const lap = (stage: string) => {
    const t = performance.now();
    if (opts.timings) opts.timings[stage] = Math.round((opts.timings[stage] ?? 0) + t - mark);
    mark = t;
  };
  const resolutions = await refreshIdentities(deps, agents, now);
  lap('identityMs');
  // A full recompute rebuilds every agent's features in one pass before queueing the agents; a
  // change since then queues its own job, which refreshes them.
  if (!opts.featuresFresh) for (const id of ids) await refreshFeatures(deps.db, id);
  // The full recompute ranks against the worker's snapshot of every signature, in pages of its
  // own that run before its document pages, which read the stored lists. Deciding whom to leave
  // alone, a stored list's digest stands for it, and the lists are read for the agents rendered.
  const skipUnchanged = opts.skipUnchanged === true && opts.showPublishedScore === true;
  const rank = async () =>
    recomputeAndStoreSimilar(deps.db, ids, 10, opts.featuresFresh ? await signatureSnapshot(deps.db) : undefined);
  let similar = new Map<string, SimilarAgent[]>();
  let similarDigests = new Map<string, string>();
  if (skipUnchanged) {
    if (!opts.similarStored) await rank();
    similarDigests = await readSimilarListDigests(deps.db, ids);
  } else similar = opts.similarStored ? await readStoredSimilar(deps.db, ids) : await rank();
  lap('similarMs');
  const resolutionOf = (a: Agent): Resolution | null => resolutions.get(a.id) ?? null;
  const identity = (a: Agent) => {
    const r = resolutionOf(a);
    return r ? identityFacts(r, a.wallet_address) : null;
  };
  const reputationKey = (a: Agent) => agentDocumentKey(a.handle, 'reputation.json');
  const scoreKey = (a: Agent) => agentDocumentKey(a.handle, 'score.json');
  // What the rendered agents' documents read besides their facts: their published skills, the
  // published copy of their reputation mirror and score document. When deciding whom to leave
  // alone they are read only for the agents rendered, after the decision; otherwise with the rest.
  const renderReads = (subset: Agent[]) => {
    const subsetIds = subset.map((a) => a.id);
    return Promise.all([
      findPublishedSkills(deps.db, subsetIds),
      opts.skipUnchangedReputation ? findPublishedIdentities(deps.db, subset.map(reputationKey)) : undefined,
      opts.showPublishedScore
        ? findPublishedScores(
            deps.db,
            subset.map((a) => ({ id: a.id, key: scoreKey(a) })),
          )
        : undefined,
    ]);
  };
  const early = skipUnchanged ? undefined : renderReads(agents);
  // Awaited below; handled now, so a failure of the reads beside it does not leave it unhandled.
  early?.catch(() => undefined);
  const subjects = agents.map((agent) => ({ agent, identity: identity(agent) }));
  // The facts' activity and the skills' digests come from each agent's record where its posts, or
  // its purchases, are as recorded (`loadFactsRecorded`): a sale's render of its seller reads the
  // seller's purchases again, not its skills.
  const [{ facts, skillsDigests }, population, marks, ratings, checks] = await Promise.all([
    loadFactsRecorded(deps.db, subjects, now),
    loadPopulation(deps.db),
    trustEventMarks(deps.db, ids),
    sellerRatings(deps.db, ids),
    skipUnchanged
      ? readRenderChecks(
          deps.db,
          agents.map((a) => ({ id: a.id, keys: agentDocumentKeys(a.handle), scoreKey: scoreKey(a) })),
        )
      : undefined,
  ]);
  lap('factsMs');
  const inputs = agents.flatMap((agent, i) => {
    const f = facts[i];
    return f
      ? [
          {
            agent,
            facts: f,
            fingerprint: reputationFingerprint(agent, f, deps.site, deps.receipts.address, marks.get(agent.id)),
          },
        ]
      : [];
  });
  const ratingOf = (agent: Agent, f: AgentFacts) => ({
    rating: ratings.get(agent.id)?.rating ?? { count: 0, total: 0, distribution: [0, 0, 0, 0, 0] },
    refunds: refundRecord(f.settlementCountAll, ratings.get(agent.id)?.refunds ?? NO_REFUNDS),
  });
  // The agents whose documents would come out exactly as published are left alone: decided from
  // digests PostgreSQL computes or records (the published identities, the skills) and the facts.
  const digests = new Map<string, string>();
  if (skipUnchanged) {
    const context = agentDocumentsContext(deps);
    for (const { agent, facts: f, fingerprint } of inputs) {
      const { digest, scoreIdentity } = agentInputsDigest(
        context,
        agent,
        now,
        {
          resolution: resolutionOf(agent),
          similar: similarDigests.get(agent.id) ?? '',
          facts: f,
          population,
          skills: skillsDigests.get(agent.id) ?? '',
          reputation: fingerprint,
          rating: ratingOf(agent, f),
        },
        deps.site.baseUrl,
      );
      const check = checks?.get(agent.id);
      const standing = check?.scoreCopyAsRecorded === true && scoreStands(check.score, scoreIdentity, now);
      if (standing && check?.state?.inputs === digest && check.state.documents === check.documents) continue;
      digests.set(agent.id, digest);
    }
    // Apart from the facts' reads: the score computed for its identity, and the digests.
    lap('decideMs');
  }
  const toRender = skipUnchanged ? inputs.filter((a) => digests.has(a.agent.id)) : inputs;
  const [[skillRows, published, publishedScores], lists] = await Promise.all([
    early ?? renderReads(toRender.map((a) => a.agent)),
    skipUnchanged ? readSimilarLists(deps.db, [...digests.keys()]) : undefined,
  ]);
  const skills = groupBy(ids, skillRows, (r) => r.agent_id, toPublishedSkill);
  // A skill or a similar list that changed between the decision and the rows read for rendering:
  // the digest no longer describes what is rendered, so that agent's render is not recorded (the
  // next page renders it).
  const renderedSkillsDigest = new Map(skillRows.map((r) => [r.agent_id, r.skills_digest]));
  for (const id of digests.keys())
    if ((renderedSkillsDigest.get(id) ?? '') !== (skillsDigests?.get(id) ?? '')) digests.delete(id);
  if (lists) {
    for (const [id, read] of lists) similar.set(id, read.list);
    for (const id of digests.keys())
      if ((lists.get(id)?.digest ?? '') !== (similarDigests.get(id) ?? '')) digests.delete(id);
  }
  const inputsOf = (agent: Agent, f: AgentFacts, reputation: AgentInputs['reputation']): AgentInputs => ({
    resolution: resolutionOf(agent),
    similar: similar.get(agent.id) ?? [],
    facts: f,
    population,
    skills: skills.get(agent.id) ?? [],
    reputation,
    publishedScore: publishedScores?.get(agent.id),
    rating: ratingOf(agent, f),
  });
  const readReputation = (agent: Agent) => async () =>
    jsonBytes(
      AGENT_DOCUMENTS['reputation.json'].render({
        sales: (await salesOf(deps, [agent.id])).get(agent.id) ?? [],
        events: (await eventsOf(deps, [agent.id])).get(agent.id) ?? [],
        tokenId: agent.token_id,
        site: deps.site,
      }),
    );
  const unchanged = (a: { agent: Agent; fingerprint: string }) =>
    published?.get(reputationKey(a.agent))?.identity === a.fingerprint;
  const changed = toRender.filter((a) => !unchanged(a)).map((a) => a.agent.id);
  const [sales, events] = await Promise.all([salesOf(deps, changed), eventsOf(deps, changed)]);
  lap('factsMs');
  const rendered = toRender.map(({ agent, facts: f, fingerprint }) => {
    const reputation: AgentInputs['reputation'] = unchanged({ agent, fingerprint })
      ? { fingerprint, read: readReputation(agent) }
      : { fingerprint, sales: sales.get(agent.id) ?? [], events: events.get(agent.id) ?? [] };
    return {
      ...agentDocumentsOf(deps, agent, now, inputsOf(agent, f, reputation)),
      inputsDigest: digests.get(agent.id),
    };
  });
  lap('renderMs');
  return rendered;
}
