import { findAgentsByIds } from '../../data/agents.repository.js';
import { findMetricsFigures, saveAgentMetrics, type MetricsFigures } from '../../data/scoring.repository.js';
import type { Agent } from '../../data/schema.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { publishDocuments, type PublishCounter } from '../publishing/publish-document.js';
import { agentDocumentKey, refreshAndRenderAgentDocumentsMany, type AgentDocumentsDeps } from './agent-documents.js';
import { agentDocumentKeys, documentsDigest, type RenderedAgent } from './agent-documents.renderer.js';
import { saveRenderStates, type RenderStateRecord } from '../../data/documents.repository.js';

export interface PublishAgentDocumentsDeps extends AgentDocumentsDeps {
  store: ObjectStore;
  documentsPublished?: PublishCounter;
}

export interface AgentDocumentsOutcome {
  agents: number;
  /** Agents left alone: their documents would come out as published (`skipUnchanged`). */
  leftAlone: number;
  published: number;
  unchanged: number;
  /** Metrics rows written. */
  rewritten: number;
  /** Time per stage, in ms: identity, similar, facts, render, publish, metrics. */
  timings: Record<string, number>;
  rendered: Array<{ agent: Agent; metrics: RenderedAgent['metrics'] }>;
}

type Figures = Pick<
  MetricsFigures,
  'health_status' | 'published_skills' | 'unique_buyers_90d' | 'settlements_90d' | 'revenue_atomic_90d'
>;
const figuresOf = (m: Figures) =>
  `${m.health_status}|${m.published_skills}|${m.unique_buyers_90d}|${m.settlements_90d}|${m.revenue_atomic_90d}`;

/**
 * Which metrics rows to rewrite. The row follows the published score document: rewritten when that
 * document was (something material changed, or it was due for its daily refresh) or a figure it
 * keeps moved. Rewriting a figure the agent feed shows marks the agent changed (a trigger,
 * migration 0015), and the feed indexer moves it if its item, as shown, differs.
 */
export function staleMetrics<T extends { agent: Agent; metrics: Figures }>(
  rendered: T[],
  before: Map<string, Figures>,
  republished: Set<string>,
): T[] {
  return rendered.filter(({ agent, metrics }) => {
    const was = before.get(agent.id);
    return (
      !was || republished.has(agentDocumentKey(agent.handle, 'score.json')) || figuresOf(was) !== figuresOf(metrics)
    );
  });
}

/**
 * Recomputes the agents' score, checklist, health, card, badge, identity, similar list and
 * reputation mirror, publishes what changed, and records the figures feeds and rankings read: a
 * fixed number of statements for the whole set, so a batch costs little more than one agent.
 * `republish` writes every document whatever its bookkeeping says (a read found one missing), and
 * renders them as a first render would; `rewrite` only writes every document (another render may
 * have written over this agent's, bookkeeping and all). `beforeWrite` is called with the agents
 * rendered, once they are and before anything of theirs is written.
 */
export async function recomputeAndPublishAgentDocuments(
  deps: PublishAgentDocumentsDeps,
  agentIds: string[],
  opts: {
    featuresFresh?: boolean;
    similarStored?: boolean;
    republish?: boolean;
    rewrite?: boolean;
    skipUnchanged?: boolean;
    beforeWrite?: (agentIds: string[]) => Promise<void>;
  } = {},
): Promise<AgentDocumentsOutcome> {
  // Load and render.
  const agents = await findAgentsByIds(deps.db, agentIds);
  if (!agents.length)
    return { agents: 0, leftAlone: 0, published: 0, unchanged: 0, rewritten: 0, timings: {}, rendered: [] };
  const timings: Record<string, number> = {};
  const rendered = await refreshAndRenderAgentDocumentsMany(deps, agents, new Date(), {
    featuresFresh: opts.featuresFresh,
    similarStored: opts.similarStored,
    timings,
    skipUnchangedReputation: !opts.republish,
    showPublishedScore: !opts.republish,
    skipUnchanged: opts.skipUnchanged && !opts.republish,
  });
  // Save the documents.
  let mark = performance.now();
  if (rendered.length) await opts.beforeWrite?.(rendered.map((r) => r.agent.id));
  const results = await publishDocuments(
    deps,
    rendered.flatMap((r) => r.documents),
    { force: opts.republish || opts.rewrite },
  );
  timings.publishMs = Math.round(performance.now() - mark);
  mark = performance.now();
  const republished = new Set(results.filter((r) => r.outcome === 'published').map((r) => r.key));
  // Decide which metrics rows moved, and save them.
  const pairs = rendered.map((r) => ({ agent: r.agent, metrics: r.metrics, score: r.score }));
  const before = await findMetricsFigures(
    deps.db,
    pairs.map((p) => p.agent.id),
  );
  const stale = staleMetrics(pairs, before, republished);
  const computedAt = new Date();
  await saveAgentMetrics(
    deps.db,
    stale.map(({ agent, metrics, score }) => ({
      agent_id: agent.id,
      ...metrics,
      document: JSON.stringify(score),
      computed_at: computedAt,
    })),
  );
  // Last, once the documents and the metrics rows are saved: what each agent's documents were
  // rendered from (the full recompute's pages), with the identities now published.
  const identityOf = new Map(results.map((r) => [r.key, r.identity]));
  const states = new Map<string, RenderStateRecord>();
  for (const r of rendered) {
    const documents = documentsDigest(agentDocumentKeys(r.agent.handle).map((k) => identityOf.get(k)));
    // The score document this page saved in the metrics row, or found kept there: the record keeps
    // the row's copy only while it is this one (another recompute may have written the row since).
    if (r.inputsDigest !== undefined && documents !== undefined)
      states.set(r.agent.id, { inputs: r.inputsDigest, documents, scoreCopy: JSON.stringify(r.score) });
  }
  await saveRenderStates(deps.db, states);
  timings.metricsMs = Math.round(performance.now() - mark);
  return {
    agents: agents.length,
    leftAlone: agents.length - rendered.length,
    published: republished.size,
    unchanged: results.length - republished.size,
    rewritten: stale.length,
    timings,
    rendered: pairs.map(({ agent, metrics }) => ({ agent, metrics })),
  };
}
