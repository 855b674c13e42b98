import type { CallToolResult } from '@modelcontextprotocol/server';
import { findAgentByHandleAnyCase } from '../../data/agents.repository.js';
import { findPostWithAuthor, findVersion } from '../../data/posts.repository.js';
import { agentDocumentKey, type AgentDocumentName } from '../../documents/catalog.js';
import { previewView } from '../../documents/post.renderer.js';
import type { SearchAnswer } from '../../domain/discovery/search.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import { readPost, type PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import { AppError, DependencyUnavailableError, NotFoundError } from '../../platform/errors.js';
import type { ObjectStore } from '../../platform/object-store.js';
import { slotId, type Queues } from '../../platform/queues.js';
import type { Searching } from '../routes/discovery.routes.js';
import { auditSummary, storedAudit } from '../../documents/posts/skill-audit.document.js';
import { skillDescriptionOf } from './skill-integrity.js';
import { toolResult } from './tool-results.js';

/** The `skill://` URI of a skill's file (SEP-2640: the skill path ends with the skill's name). */
export const skillUri = (postId: string, name: string, path = 'SKILL.md') => `skill://${postId}/${name}/${path}`;

/**
 * `search_skills`: published skills matching a query, best first, with price, seller and where to
 * read each. The search is the search API's (`searching`): it waits its turn in the same queue (503
 * search_busy when that is full, as a tool error) and shares its answers for 30 s.
 */
export async function searchSkills(
  posts: PostsDeps,
  searching: Searching,
  query: string,
  limit: number,
): Promise<CallToolResult> {
  const answer = JSON.parse((await searching(query, 'posts', limit)).body.toString()) as SearchAnswer;
  const skills = [];
  for (const hit of answer.results) {
    if (hit.type !== 'post') continue;
    const post = await findPostWithAuthor(posts.db, hit.id);
    if (post?.status !== 'published') continue;
    const preview = previewView(post, posts);
    skills.push({
      postId: post.id,
      title: post.title,
      preview: post.preview,
      highlight: hit.highlight,
      score: hit.score,
      price: preview.price,
      author: preview.author,
      tags: post.tags,
      version: post.current_version,
      audit: (hit as { audit?: string }).audit ?? 'pending',
      links: preview.links,
    });
  }
  return toolResult({
    query: answer.query,
    ...(answer.didYouMean ? { didYouMean: answer.didYouMean } : {}),
    skills,
  });
}

/**
 * `get_skill_preview`: the public preview of a skill (what it does, who sells it, its price) with
 * its Agent Skill name and description, the `skill://` URI of its SKILL.md, and whether the caller
 * already has it.
 */
export async function skillPreview(
  posts: PostsDeps,
  postId: string,
  viewer: AgentClaims | undefined,
): Promise<CallToolResult> {
  const read = await readPost(posts, postId, 'preview', viewer);
  if (read.kind !== 'document') throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  const post = await findPostWithAuthor(posts.db, postId);
  if (!post) throw new NotFoundError(`Post ${postId}`, 'post_not_found');
  const version = await findVersion(posts.db, post.id, post.current_version);
  const skillMd = version.body.files.find((f) => f.path === 'SKILL.md')?.content;
  const name = version.skill_name;
  // A version whose audit failed (409) or that was taken down (410) is not sold: the caller is
  // entitled only if it already has it.
  const full = await readPost(posts, postId, 'full', viewer).catch((err: unknown) => {
    if (err instanceof AppError && (err.code === 'skill_audit_failed' || err.code === 'version_removed'))
      return undefined;
    throw err;
  });
  return toolResult({
    ...read.body,
    name,
    description: skillDescriptionOf(skillMd) ?? post.preview,
    versionLabel: version.version_label,
    files: version.body.files.map((f) => f.path),
    skillUri: skillUri(post.id, name),
    audit: auditSummary(post.id, version.version, storedAudit(version), posts.site.baseUrl),
    entitled: full?.kind === 'document',
  });
}

/** The `score.json` and `best-practices.json` documents of an agent as last published. */
export interface AgentScoreDeps {
  db: PostsDeps['db'];
  store: ObjectStore;
  queues: Queues;
}

/** A document asked for before the agent's first recompute published it (as the HTTP API answers it). */
class ScoreNotReadyError extends AppError {
  constructor(handle: string) {
    super(
      404,
      'document_not_ready',
      `The score of @${handle} is not published yet; it is being computed, ask again in a few seconds`,
      { retryAfterSeconds: 2 },
    );
  }
}

/** `get_agent_score`: an agent's market score with its dimensions, and its best-practices checklist. */
export async function agentScore(deps: AgentScoreDeps, handle: string): Promise<CallToolResult> {
  const agent = await findAgentByHandleAnyCase(deps.db, handle);
  if (!agent) throw new NotFoundError(`Agent @${handle}`, 'agent_not_found');
  const [score, checklist] = await Promise.all([
    readDocument(deps.store, agent.handle, 'score.json'),
    readDocument(deps.store, agent.handle, 'best-practices.json'),
  ]);
  if (!score || !checklist) {
    // As a read of the documents over HTTP does: the recompute is queued, one per agent per minute.
    const jobId = slotId(`agent-documents-${agent.id}-read`, new Date());
    deps.queues.documents
      .add('agent-documents', { agentId: agent.id, republish: true }, { jobId })
      .catch(() => undefined);
    throw new ScoreNotReadyError(agent.handle);
  }
  const s = score.score as Record<string, unknown>;
  return toolResult({
    handle: agent.handle,
    score: s.score,
    health: s.health,
    dimensions: s.dimensions,
    components: s.components,
    methodology: score.methodology,
    computedAt: score.computedAt,
    checklist: {
      items: checklist.items,
      passed: checklist.passed,
      partial: checklist.partial,
      completionPct: checklist.completionPct,
      computedAt: checklist.computedAt,
    },
  });
}

async function readDocument(
  store: ObjectStore,
  handle: string,
  name: AgentDocumentName,
): Promise<Record<string, unknown> | null> {
  let object: Awaited<ReturnType<ObjectStore['get']>>;
  try {
    object = await store.get(agentDocumentKey(handle, name));
  } catch (err) {
    throw new DependencyUnavailableError('bucket', 5, { cause: err });
  }
  return object ? (JSON.parse(object.body.toString('utf8')) as Record<string, unknown>) : null;
}
