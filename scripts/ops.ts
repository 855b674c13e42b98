/**
 * Operator commands for the runbook (docs/operations.md). Reads the same environment as the
 * service (DATABASE_URL, REDIS_URL, QUEUE_PREFIX).
 *
 *   npx tsx scripts/ops.ts payment <paymentId>      the payment's row and what to do about it
 *   npx tsx scripts/ops.ts settle <paymentId>       resolve an in-flight payment from the chain now
 *   npx tsx scripts/ops.ts republish <handle>       re-render and write one agent's documents, even unchanged ones
 *   npx tsx scripts/ops.ts enqueue <job> [json]     any job by name, e.g. recompute-all, population-stats, site-card
 *
 * Every command enqueues with a fresh job id, so it runs even when a job with the usual id
 * already completed or gave up.
 */
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { Redis } from 'ioredis';
import { JOBS } from '../jobs/index.js';
import { loadConfig } from '../src/platform/config.js';
import { createQueues, closeQueues, type Queues } from '../src/platform/queues.js';

export interface OpsDeps {
  pool: pg.Pool;
  queues: Queues;
}

const USAGE = 'usage: ops.ts payment <id> | settle <id> | republish <handle> | enqueue <job> [json]';

async function enqueue(deps: OpsDeps, name: string, data: unknown): Promise<string> {
  const job = JOBS[name];
  if (!job) throw new Error(`unknown job "${name}"; known: ${Object.keys(JOBS).join(', ')}`);
  const payload = job.payload.safeParse(data);
  if (!payload.success)
    throw new Error(`invalid payload for ${name}: ${payload.error.issues.map((i) => i.message).join('; ')}`);
  const jobId = `ops-${name}-${Date.now()}`;
  await deps.queues[job.queue].add(name, payload.data, { jobId });
  return `enqueued ${name} on queue ${job.queue} as ${jobId}`;
}

/** Runs one command; returns what to print. Throws with a message for bad input. */
export async function runOps(deps: OpsDeps, args: string[]): Promise<string> {
  const [command, arg, extra] = args;
  if (!command || !arg) throw new Error(USAGE);
  switch (command) {
    case 'payment': {
      const { rows } = await deps.pool.query(
        `SELECT id, purpose, status, payer, pay_to, amount_atomic, nonce, facilitator, tx_hash, failure_reason, settle_attempts, created_at, updated_at, settled_at
         FROM payments WHERE id::text = $1`,
        [arg],
      );
      if (!rows[0]) throw new Error(`no payment ${arg}`);
      const p = rows[0];
      const advice: Record<string, string> = {
        pending: 'a request is verifying it; after 90 s the reconciler releases it (nothing charged)',
        verified: 'verified, not yet sent; after 90 s the reconciler releases it (nothing charged)',
        settling: 'sent or being sent; `settle` resolves it from the chain (authorizationState, then the logs)',
        settled: 'final: the transfer is on chain and its effect (agent or entitlement) was written once',
        failed: 'final: refused by the facilitator or reverted; nothing was charged',
        expired: 'final: the authorization expired unused; nothing was charged',
      };
      return `${JSON.stringify(p, null, 2)}\n${p.status}: ${advice[p.status] ?? ''}`;
    }
    case 'settle':
      return enqueue(deps, 'settle-payment', { paymentId: arg });
    case 'republish': {
      const { rows } = await deps.pool.query<{ id: string }>('SELECT id FROM agents WHERE handle = $1', [arg]);
      if (!rows[0]) throw new Error(`no agent @${arg}`);
      // The publisher skips content whose hash it already put; forget those hashes so every
      // document is written again (the object may be gone from the bucket).
      await deps.pool.query("DELETE FROM published_documents WHERE key LIKE 'api/agents/' || $1 || '/%'", [arg]);
      return enqueue(deps, 'agent-documents', { agentId: rows[0].id });
    }
    case 'enqueue': {
      let data: unknown = {};
      if (extra) {
        try {
          data = JSON.parse(extra);
        } catch {
          throw new Error(`the payload must be JSON, got ${extra}`);
        }
      }
      // A full recompute started by hand is its own run, not a repeat of the hour's scheduled one.
      if (arg === 'recompute-all' && typeof data === 'object' && data && !('run' in data))
        data = { ...data, run: `ops-${Date.now()}` };
      return enqueue(deps, arg, data);
    }
    default:
      throw new Error(USAGE);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const config = loadConfig();
  if (!config.database.url || !config.redis.url) {
    console.error(
      'ops.ts talks to a running deployment: set DATABASE_URL and REDIS_URL (and QUEUE_PREFIX if not "market")',
    );
    process.exit(2);
  }
  const pool = new pg.Pool({ connectionString: config.database.url, max: 1 });
  const redis = new Redis(config.redis.url, { maxRetriesPerRequest: null });
  const queues = createQueues(redis, config.redis.prefix);
  const code = await runOps({ pool, queues }, process.argv.slice(2)).then(
    (out) => {
      console.log(out);
      return 0;
    },
    (err: Error) => {
      console.error(err.message);
      return 2;
    },
  );
  await closeQueues(queues);
  redis.disconnect();
  await pool.end();
  process.exit(code);
}
