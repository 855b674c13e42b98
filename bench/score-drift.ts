/**
 * What moves a score document's identity (`scoreContentHash`, the hash a recompute compares before
 * rewriting it) when only time passes: for a random sample of agents, the score documents computed
 * now and `--minutes` later, with the facts and the population breakpoints read at each instant.
 * Counts the identities changed by time alone (same facts and breakpoints, a later clock), by the
 * facts read later (sales leaving the 90-day window, skills the 30-day one), by the breakpoints
 * computed later, and by all three, and lists the members that differ where the identity changed.
 * Reads only; nothing is written.
 *
 *   npx tsx bench/score-drift.ts --database-url postgres://… [--agents 3000] [--minutes 3,50]
 */
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { openDatabase } from '../src/data/db.js';
import type { Agent } from '../src/data/schema.js';
import { createLogger } from '../src/platform/logger.js';
import { POPULATION_METRICS } from '../src/data/population.repository.js';
import { scoreContentHash } from '../src/domain/agents/agent-document-hashes.js';
import type { Population } from '../src/domain/scoring/facts.js';
import { loadFactsMany, measurePopulation } from '../src/domain/scoring/load-facts.js';
import { scoreDocument } from '../src/domain/scoring/score.js';
import { printRunInfo } from './support/run-info.js';

printRunInfo();

const { values } = parseArgs({
  options: {
    'database-url': { type: 'string' },
    agents: { type: 'string', default: '3000' },
    minutes: { type: 'string', default: '3,50' },
  },
});
const url = values['database-url'];
if (!url) throw new Error('--database-url is required (run bench/generate.ts first)');
const database = await openDatabase({ url, poolMax: 4, embeddedDataDir: 'memory://', log: createLogger('silent') });
const { db } = database;

/** The breakpoints `recomputeAndStorePopulation` would store at `now`, without storing them. */
async function populationAt(now: Date): Promise<Population> {
  const measured = await measurePopulation(db, now);
  const pop: Population = { uniqueBuyers: [], settlements: [], paidSkills: [], incomingSimilar: [] };
  for (const name of POPULATION_METRICS) pop[name] = measured[name].breakpoints;
  return pop;
}

/** The document's members as dotted paths, for saying which differ. */
const members = (o: Record<string, unknown>, prefix = ''): Array<[string, string]> =>
  Object.entries(o).flatMap(([k, v]) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? members(v as Record<string, unknown>, `${prefix}${k}.`)
      : [[`${prefix}${k}`, JSON.stringify(v)] as [string, string]],
  );

const { rows: agents } =
  await sql<Agent>`SELECT * FROM agents ORDER BY random() LIMIT ${Number(values.agents)}`.execute(db);
const ctx = { baseUrl: 'https://market.example', source: 'skill-market' };
const inputs = agents.map((agent) => ({ agent, identity: null }));
const t0 = new Date();
const [facts0, pop0] = [await loadFactsMany(db, inputs, t0), await populationAt(t0)];
console.log(`${facts0.length} agents, identities compared with those computed at ${t0.toISOString()}`);
for (const minutes of values.minutes.split(',').map(Number)) {
  const t1 = new Date(t0.getTime() + minutes * 60_000);
  const [facts1, pop1] = [await loadFactsMany(db, inputs, t1), await populationAt(t1)];
  const changed = { time: 0, facts: 0, breakpoints: 0, all: 0 };
  const differing = new Map<string, number>();
  for (const [i, f0] of facts0.entries()) {
    const f1 = facts1[i];
    if (!f1) continue;
    const base = scoreDocument(f0, pop0, t0, ctx);
    const identity = scoreContentHash(base);
    const moved = (doc: typeof base) => scoreContentHash(doc) !== identity;
    if (moved(scoreDocument(f0, pop0, t1, ctx))) changed.time++;
    if (moved(scoreDocument(f1, pop0, t1, ctx))) changed.facts++;
    if (moved(scoreDocument(f0, pop1, t0, ctx))) changed.breakpoints++;
    const later = scoreDocument(f1, pop1, t1, ctx);
    if (!moved(later)) continue;
    changed.all++;
    const was = new Map(members(base));
    for (const [path, v] of members(later))
      if (was.get(path) !== v) differing.set(path, (differing.get(path) ?? 0) + 1);
  }
  console.log(
    `${minutes} min later: identities changed by time alone ${changed.time}, with the facts read then ${changed.facts}, ` +
      `by the breakpoints computed then ${changed.breakpoints}, by all three ${changed.all}`,
  );
  const top = [...differing].sort((a, b) => b[1] - a[1]).slice(0, 12);
  if (top.length) console.log(`  members differing where it changed: ${top.map(([p, n]) => `${p} ${n}`).join(', ')}`);
}
await database.close();
