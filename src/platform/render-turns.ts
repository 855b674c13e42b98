import type { Redis } from 'ioredis';

/**
 * Turns of the renders of each agent's documents, kept in Redis.
 *
 * Two renders of one agent may overlap: an event's job and the next window's, a full recompute's
 * page and a sale's job, a read that found a document missing. Nothing orders their writes to the
 * bucket, nor their bookkeeping rows, so the render that read first may write last, over documents
 * that already showed a later change, or leave the bookkeeping naming what the bucket no longer
 * holds. So each render takes a turn for its agents before it reads anything, marks the agents it
 * is about to write for as being written at its turn, and once it has written asks which of them a
 * later turn began writing meanwhile: those it may have written over, and they are written again,
 * whole, by a render that starts after it. A later render that begins writing only after this one
 * finished writes last anyway, so it calls for nothing: two renders that merely overlap do not
 * cause a third.
 */
export interface RenderTurns {
  /** Takes a turn for each agent: call before the render reads. */
  take(agentIds: readonly string[]): Promise<Map<string, number>>;
  /** Marks the agents as being written at these turns: call before the first write. */
  writing(turns: ReadonlyMap<string, number>): Promise<void>;
  /**
   * The agents whose documents a later turn began writing since `writing` (or whose marks were
   * lost), each with what names the turn that overtook it (for the job that writes it again).
   */
  overtaken(turns: ReadonlyMap<string, number>): Promise<Map<string, string>>;
}

/** Long past any render; an agent not rendered for this long starts its turns afresh. */
const TURN_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * A hash an agent (`turn`, `writing`). An agent's first turn starts at the current time in
 * microseconds, not at 1, so turns taken after the hash was lost (expired, or Redis emptied) are
 * still later than any taken before, and the ids they name are new.
 */
const TAKE = `
local turn = redis.call('HINCRBY', KEYS[1], 'turn', 1)
if turn == 1 then
  turn = tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'turn', ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return turn`;

/** The `writing` mark only moves forward. */
const WRITING = `
local was = tonumber(redis.call('HGET', KEYS[1], 'writing') or '0')
if tonumber(ARGV[1]) > was then redis.call('HSET', KEYS[1], 'writing', ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

export function redisRenderTurns(redis: Redis, prefix: string): RenderTurns {
  const key = (agentId: string) => `${prefix}:render-turn:${agentId}`;
  /** Runs one command an agent in a pipeline, throwing the first error. */
  const each = async (ids: readonly string[], add: (p: ReturnType<Redis['pipeline']>, id: string) => void) => {
    const p = redis.pipeline();
    for (const id of ids) add(p, id);
    const replies = (await p.exec()) ?? [];
    return ids.map((_, i) => {
      const [err, value] = replies[i] ?? [new Error('no reply from Redis')];
      if (err) throw err;
      return value;
    });
  };
  return {
    async take(agentIds) {
      if (!agentIds.length) return new Map();
      const start = String(Date.now() * 1000);
      const turns = await each(agentIds, (p, id) => p.eval(TAKE, 1, key(id), start, TURN_TTL_MS));
      return new Map(agentIds.map((id, i) => [id, Number(turns[i])]));
    },
    async writing(turns) {
      if (!turns.size) return;
      await each([...turns.keys()], (p, id) => p.eval(WRITING, 1, key(id), turns.get(id) ?? 0, TURN_TTL_MS));
    },
    async overtaken(turns) {
      const entries = [...turns];
      if (!entries.length) return new Map();
      const marks = await each(
        entries.map(([id]) => id),
        (p, id) => p.hget(key(id), 'writing'),
      );
      const out = new Map<string, string>();
      for (const [i, [id, turn]] of entries.entries()) {
        const mark = marks[i] as string | null;
        if (mark == null) out.set(id, `lost-${turn}`);
        else if (Number(mark) > turn) out.set(id, mark);
      }
      return out;
    },
  };
}
