import { expect } from 'chai';
import type pg from 'pg';
import type { Db } from '../../src/data/db.js';
import { readVocabularyWords } from '../../src/data/search.repository.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements, tableScans } from '../support/explain.js';

/**
 * A word the vocabulary does not know is corrected to the closest word it does know. A real
 * marketplace's vocabulary holds hundreds of thousands of words, so the lookup must find its
 * candidates through an index, never by computing an edit distance against every word.
 */
describe('the search vocabulary: a mistyped word corrected through its indexes', function () {
  this.timeout(120_000);
  let opened: OpenTestDatabase;
  let pool: pg.Pool;
  let db: Db;
  const WORDS = 50_000;

  before(async () => {
    opened = await openTestDatabase();
    ({ pool, db } = opened);
    // 50,000 made-up words of 5 to 12 letters, one in 60 starting as each word the queries below
    // mean (so the prefix index has neighbours to skip), of letters none of those words has, so
    // none is within two edits of a query; then the real words, and the totals row.
    await pool.query(
      `INSERT INTO search_vocabulary (word, posts, agents)
       SELECT DISTINCT coalesce((ARRAY['ho', 'ag', 'cr', 'ex'])[1 + i % 60], '')
              || translate(substr(md5(i::text), 1, 5 + i % 8), '0123456789abcdef', 'bdfjklmqsuvwbdfj'), 1, 0
       FROM generate_series(1, $1::int) i
       ON CONFLICT DO NOTHING`,
      [WORDS],
    );
    await pool.query(
      `INSERT INTO search_vocabulary (word, posts, agents) VALUES
         ('horizon', 40, 2), ('agent', 900, 300), ('crypto', 120, 9), ('extract', 60, 4), ('hqx', 3, 0),
         ('', 100000, 10000)
       ON CONFLICT (word) DO UPDATE SET posts = excluded.posts, agents = excluded.agents`,
    );
    await pool.query('ANALYZE search_vocabulary');
  });
  after(() => opened?.close());

  it('suggests the closest known word by trigrams or by edits, reading a bounded part of the vocabulary', async () => {
    // Trigram-similar (horizn, cypto), and swapped letters that share too few trigrams (agnet).
    for (const [typed, meant] of [
      ['horizn', 'horizon'],
      ['cypto', 'crypto'],
      ['agnet', 'agent'],
      ['extracton', 'extract'],
    ]) {
      const { result, statements } = await captureStatements('levenshtein_less_equal', () =>
        readVocabularyWords(db, [typed!]),
      );
      expect(result.rows, typed).to.deep.equal([{ word: typed, posts: null, agents: null, suggestion: meant }]);
      expect(statements).to.have.length(1);
      const scans = await tableScans(pool, statements[0]!, 'search_vocabulary');
      expect(
        scans.filter((s) => s.type === 'Seq Scan'),
        `${typed}: ${JSON.stringify(scans)}`,
      ).to.deep.equal([]);
      const read = scans.reduce((n, s) => n + s.rows + s.removed, 0);
      expect(read, `${typed}: vocabulary rows read`).to.be.below(WORDS / 10);
    }
  });

  it('leaves a word of two letters as typed: its trigrams are in too many words to look through', async () => {
    // hqx shares two of hq's three trigrams (similarity 0.4), enough for a longer word.
    const { rows } = await readVocabularyWords(db, ['hq']);
    expect(rows).to.deep.equal([{ word: 'hq', posts: null, agents: null, suggestion: null }]);
  });
});
