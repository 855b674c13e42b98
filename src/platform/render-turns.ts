import type { Redis } from 'ioredis';

/**
 * Turns of the renders of each agent's documents, counted in Redis.
 *
 * Two renders of one agent may overlap: an event's job and the next window's, a full recompute's
 * page and a sale's job, a read that found a document missing. Nothing orders their writes to the
 * bucket, so the render that read first may write last, over documents that already showed a later
 * change. Each render takes a turn for its agents before it reads anything; once it has written,
 * it asks which of them another render took a turn for meanwhile, and renders those once more.
 * The render that writes last is then one that started after every change it must show, or one
 * that is followed by such a render.
 */
export interface RenderTurns {
  /** Takes a turn for each agent: call before the render reads. */
  take(agentIds: readonly string[]): Promise<Map<string, number>>;
  /** The agents another render took a turn for since `turns` were taken: render them once more. */
  overtaken(turns: ReadonlyMap<string, number>): Promise<string[]>;
}

/**
 * A counter per agent. It outlives any render by far; if it is lost (Redis emptied) while a render
 * runs, that render cannot tell and counts its agents as overtaken: one render too many, never a
 * stale document left.
 */
const TURN_TTL_MS = 24 * 60 * 60 * 1000;

export function redisRenderTurns(redis: Redis, prefix: string): RenderTurns {
  const key = (agentId: string) => `${prefix}:render-turn:${agentId}`;
  return {
    async take(agentIds) {
      if (!agentIds.length) return new Map();
      const tx = redis.multi();
      for (const id of agentIds) tx.incr(key(id)).pexpire(key(id), TURN_TTL_MS);
      const replies = (await tx.exec()) ?? [];
      const turns = new Map<string, number>();
      for (const [i, id] of agentIds.entries()) {
        const [err, turn] = replies[i * 2] ?? [new Error('no reply')];
        if (err) throw err;
        turns.set(id, Number(turn));
      }
      return turns;
    },
    async overtaken(turns) {
      const ids = [...turns.keys()];
      if (!ids.length) return [];
      const now = await redis.mget(ids.map(key));
      return ids.filter((id, i) => {
        const current = now[i];
        return current == null || Number(current) !== turns.get(id);
      });
    },
  };
}
