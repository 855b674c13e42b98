/**
 * Where a marketplace's Agent Skills discovery index lives, and how it is sharded (docs/skills.md,
 * "Discovery index"): the index lists the most bought skills inline and links 256 shards; a shard
 * lists every published skill whose id starts with its two hex digits. The service publishes
 * these paths and a client reads them, so both take them from here.
 */

export const SKILLS_INDEX_PATH = '/.well-known/agent-skills/index.json';
/** A shard's path, in the OpenAPI template form of the service's document catalogue. */
export const SKILLS_INDEX_SHARD_PATH = '/.well-known/agent-skills/shards/{shard}.json';

/** The shards of the index: 00 to ff. */
export const SKILLS_INDEX_SHARDS: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);

/** The shard that lists a skill: the first two hex digits of its id. */
export const shardOf = (postId: string) => postId.slice(0, 2).toLowerCase();

/** The path of a shard. */
export const shardPath = (shard: string) => SKILLS_INDEX_SHARD_PATH.replace('{shard}', shard);
