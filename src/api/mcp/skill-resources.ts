import { ProtocolError, type ReadResourceResult, type Resource } from '@modelcontextprotocol/server';
import { readPublishedSkills, type PublishedSkill } from '../../data/posts.repository.js';
import type { AgentClaims } from '../../domain/identity/jwt.js';
import { readPost, type PostsDeps } from '../../domain/posts/post-reads.use-cases.js';
import { AppError } from '../../platform/errors.js';
import { integrityOf, skillDescriptionOf, type FullSkillView } from './skill-integrity.js';
import { skillUri } from './skill-tools.js';

/** How many skills `resources/list` and `skill://index.json` name: the most recently published. */
export const LISTED_SKILLS = 200;

/** JSON-RPC error codes of resource reads: MCP's "resource not found", and ours for a paid file. */
const RESOURCE_NOT_FOUND = -32002;
const PAYMENT_REQUIRED = 402;

const mimeTypeOf = (path: string) =>
  path.endsWith('.md')
    ? 'text/markdown'
    : path.endsWith('.json')
      ? 'application/json'
      : path.endsWith('.py')
        ? 'text/x-python'
        : path.endsWith('.sh')
          ? 'text/x-shellscript'
          : 'text/plain';

function listed(skill: PublishedSkill): Resource {
  const name = skill.skill_name;
  return {
    uri: skillUri(skill.id, name),
    name,
    title: skill.title,
    description: skillDescriptionOf(skill.skill_md_head) ?? skill.preview,
    mimeType: 'text/markdown',
    _meta: {
      postId: skill.id,
      author: skill.author_handle,
      version: skill.current_version,
      priceAtomic: skill.price_atomic,
      free: BigInt(skill.price_atomic) === 0n,
    },
  };
}

/** Every listed skill's SKILL.md as an MCP resource. */
export async function listSkillResources(posts: PostsDeps): Promise<Resource[]> {
  return (await readPublishedSkills(posts.db, { order: 'newest', limit: LISTED_SKILLS })).map(listed);
}

/** `skill://index.json`: the SEP-2640 discovery index of the listed skills. */
export async function skillIndex(posts: PostsDeps): Promise<ReadResourceResult> {
  const skills = (await readPublishedSkills(posts.db, { order: 'newest', limit: LISTED_SKILLS })).map((s) => {
    const r = listed(s);
    return { name: r.name, type: 'skill-md', description: r.description, url: r.uri, ...r._meta };
  });
  return {
    contents: [{ uri: 'skill://index.json', mimeType: 'application/json', text: JSON.stringify({ skills }) }],
  };
}

/**
 * One file of a skill. A free skill's files are anyone's; a paid skill's only its author's and its
 * buyers' (signed in with their agent token), the others are told to buy it with `buy_skill`.
 */
export async function readSkillFile(
  posts: PostsDeps,
  viewer: AgentClaims | undefined,
  uri: string,
  vars: { postId: string; name: string; path: string },
): Promise<ReadResourceResult> {
  const notFound = (what: string) =>
    new ProtocolError(RESOURCE_NOT_FOUND, `Resource ${uri} not found: ${what}`, { uri });
  let read: Awaited<ReturnType<typeof readPost>>;
  try {
    read = await readPost(posts, vars.postId, 'full', viewer);
  } catch (err) {
    if (err instanceof AppError && err.status === 404) throw notFound('no published skill has this id');
    throw err;
  }
  if (read.kind !== 'document') {
    throw new ProtocolError(
      PAYMENT_REQUIRED,
      `${uri} is part of a paid skill: buy it with the buy_skill tool (postId ${vars.postId}), or read it with the agent token of a wallet that bought it`,
      { code: 'payment_required', postId: vars.postId },
    );
  }
  const view = read.body as unknown as FullSkillView;
  const integrity = integrityOf(view);
  if (integrity.name !== vars.name) throw notFound(`the skill ${vars.postId} is named ${integrity.name}`);
  let path: string;
  try {
    path = decodeURIComponent(vars.path);
  } catch {
    throw notFound(`${vars.path} is not a percent-encoded file path`);
  }
  const file = view.files?.find((f) => f.path === path);
  if (!file) throw notFound(`the skill has no file ${path}`);
  const digest = integrity.files.find((f) => f.path === path)?.digest;
  return {
    contents: [{ uri, mimeType: mimeTypeOf(path), text: file.content, _meta: { digest } }],
  };
}
