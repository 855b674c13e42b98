/**
 * Where a new search's time goes, one query at a time (no queueing): the vocabulary lookup (typo
 * correction), the ranked matches of agents and skills (with the audit verdicts and ratings of the
 * skills returned), and the tag matches, each timed on its own, for queries of the kinds bench/discovery.ts
 * sends (one or two common words, a word with a number, a word with a letter dropped, a handle),
 * stage by stage as `search` (src/domain/discovery/search.ts) runs them. Prints each
 * stage's mean, p50 and p99, and the slowest ranked matches with what the vocabulary knew of
 * their words (skills and agents holding each).
 *
 *   npx tsx bench/search-stages.ts --database-url postgres://… [--queries 400]
 */
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/data/db.js';
import { createLogger } from '../src/platform/logger.js';
import { analyseWords, matchText, queryWords } from '../src/domain/discovery/search-words.js';
import { readRankedMatches } from '../src/data/search.repository.js';
import { searchTags } from '../src/domain/discovery/search-tags.js';
import { WIDESPREAD_POSTINGS } from '../src/domain/discovery/search.js';
import { printRunInfo } from './support/run-info.js';
import { fmt, pct } from './support/stats.js';

printRunInfo();

const { values } = parseArgs({
  options: { 'database-url': { type: 'string' }, queries: { type: 'string', default: '400' } },
});
const url = values['database-url'];
if (!url) throw new Error('--database-url is required (run bench/generate.ts first)');
const database = await openDatabase({ url, poolMax: 4, embeddedDataDir: 'memory://', log: createLogger('silent') });
const { db, pool } = database;
try {
  const common = (
    await pool.query<{ word: string }>(
      `SELECT word FROM search_vocabulary WHERE word <> '' ORDER BY posts + agents DESC LIMIT 500`,
    )
  ).rows.map((r) => r.word);
  const agents = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM agents')).rows[0]!.n;
  const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
  const typo = (w: string) => {
    const i = 1 + Math.floor(Math.random() * Math.max(1, w.length - 2));
    return w.slice(0, i) + w.slice(i + 1);
  };
  const queries = Array.from({ length: Number(values.queries) }, () => {
    const r = Math.random();
    return r < 0.35
      ? `${pick(common)} ${pick(common)}`
      : r < 0.6
        ? `${pick(common)} ${Math.floor(Math.random() * 10_000)}`
        : r < 0.8
          ? typo(pick(common.filter((w) => w.length >= 4)))
          : `agent-${1 + Math.floor(Math.random() * agents)}`;
  });
  const stages: Record<'vocabulary' | 'ranked' | 'tags' | 'whole', number[]> = {
    vocabulary: [],
    ranked: [],
    tags: [],
    whole: [],
  };
  const slow: Array<{ ms: number; q: string; words: string }> = [];
  for (const q of queries) {
    const t0 = performance.now();
    const { rows: info, totals } = await analyseWords(db, queryWords(q));
    const t1 = performance.now();
    const forPosts = matchText(info, totals?.posts, 'posts');
    if (info.length)
      await readRankedMatches(db, {
        agents: matchText(info, totals?.agents, 'agents'),
        posts: forPosts,
        handle: q.trim().toLowerCase(),
        limit: 20,
        tiered: totals?.tiered ?? false,
        widespread: (info.find((r) => r.word === forPosts.typed)?.posts ?? 0) > WIDESPREAD_POSTINGS,
      });
    const t2 = performance.now();
    await searchTags(db, q, 20);
    const t3 = performance.now();
    stages.vocabulary.push(t1 - t0);
    stages.ranked.push(t2 - t1);
    stages.tags.push(t3 - t2);
    stages.whole.push(t3 - t0);
    slow.push({
      ms: t2 - t1,
      q,
      words: info.map((i) => `${i.word} (${i.posts ?? 0} skills, ${i.agents ?? 0} agents)`).join(', '),
    });
  }
  console.log(`\n== a new search's stages, ${queries.length} queries one at a time (ms) ==`);
  for (const [name, xs] of Object.entries(stages))
    console.log(
      `${name.padEnd(20)} mean ${fmt(xs.reduce((a, b) => a + b, 0) / xs.length)}  p50 ${fmt(pct(xs, 50))}  p99 ${fmt(pct(xs, 99))}`,
    );
  console.log('slowest ranked matches:');
  for (const s of slow.sort((a, b) => b.ms - a.ms).slice(0, 8)) console.log(`  ${fmt(s.ms)}  "${s.q}": ${s.words}`);
} finally {
  await database.close();
}
