import { expect } from 'chai';
import { startTestService, eventually, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { jobContext } from '../../src/bootstrap/service.js';
import { search } from '../../src/domain/discovery/search.js';
import { SearchAnswerBody } from '../../src/api/routes/discovery.routes.js';
import { trigrams, trigramSimilarity } from '../../src/domain/discovery/search-tags.js';
import { refreshSearchVocabulary } from '../../src/data/search.repository.js';
import { openDatabase } from '../../src/data/db.js';
import { createLogger } from '../../src/platform/logger.js';
import { populationStatsJob } from '../../jobs/population-stats.job.js';
import { refreshSearchTier } from '../../src/domain/discovery/search-tier.js';
import { skillBody, skillName } from '../support/skills.js';

const skill = (title: string, preview: string, tags: string[], price: string, oasfSkills: string[] = []) => ({
  title,
  preview,
  tags,
  priceAtomic: price,
  oasfSkills,
  oasfDomains: ['technology/software_engineering'],
  body: skillBody(skillName(title), `# ${title}`),
});

describe('discovery: trending, tags, categories and search', function () {
  this.timeout(90_000);
  let svc: TestService;
  let seller: Agent;
  let quiet: Agent;
  const get = async (path: string) => {
    const res = await fetch(`${svc.url}${path}`);
    return { status: res.status, body: await res.json() };
  };

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'table-wizard');
    quiet = await registerAgent(svc, 'quiet-scribe');
    await seller.api('/api/agents/me', {
      method: 'PATCH',
      json: { displayName: 'Table Wizard', bio: 'Extracts tables from scanned invoices and PDF reports.' },
    });
    const ids: string[] = [];
    for (const s of [
      skill(
        'PDF table extraction',
        'Pull clean tables out of PDF reports, merged cells included.',
        ['pdf', 'tables'],
        '500000',
        ['natural_language_processing/information_retrieval_synthesis'],
      ),
      skill('Invoice OCR', 'Read scanned invoices into structured JSON.', ['ocr', 'invoices'], '700000'),
    ]) {
      const post = await (await seller.api('/api/posts', { method: 'POST', json: s })).json();
      await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
      ids.push(post.id);
    }
    const free = await (
      await quiet.api('/api/posts', {
        method: 'POST',
        json: skill('Poetry helper', 'Suggests rhymes for verses.', ['poetry'], '0'),
      })
    ).json();
    await quiet.api(`/api/posts/${free.id}/publish`, { method: 'POST' });
    const chain = svc.service.runtime.chain;
    const [b1, b2] = await Promise.all([newBuyer(chain), newBuyer(chain)]);
    for (const [buyer, id] of [
      [b1, ids[0]],
      [b1, ids[0]],
      [b2, ids[0]],
      [b2, ids[1]],
    ] as const) {
      expect((await buyer.payV2(`${svc.url}/api/posts/${id}?view=full`)).status).to.equal(200);
    }
    await populationStatsJob.run(jobContext(svc.service.runtime), {});
  });
  after(async () => svc?.stop());

  it('trending ranks sellers by 72-hour velocity weighted by buyer diversity', async () => {
    const { status, body } = await get('/api/discovery/trending.json');
    expect(status).to.equal(200);
    expect(body.windowHours).to.equal(72);
    const top = body.agents[0];
    expect(top).to.include({ rank: 1, handle: 'table-wizard', sales72h: 4, buyers72h: 2 });
    expect(top.buyerDiversity).to.be.greaterThan(0).and.lessThan(0.5);
    expect(top.trendScore).to.be.closeTo((4 / 72) * top.buyerDiversity, 1e-6);
    expect(String(top.trendScore)).to.match(/^\d+(\.\d{1,6})?$/, 'published to six decimals');
    expect(body.agents.map((a: { handle: string }) => a.handle)).to.not.include('quiet-scribe');
  });

  it('trending tags weigh paid purchases above new listings', async () => {
    const { body } = await get('/api/discovery/tags');
    const score = (t: string) => body.tags.find((x: { tag: string }) => x.tag === t)?.score7d;
    expect(score('pdf')).to.equal(3 * 3 + 1); // three paid purchases, one listing
    expect(score('poetry')).to.equal(1); // a listing, no purchase
    expect(body.tags[0].tag).to.be.oneOf(['pdf', 'tables']);
  });

  it('categories count skills and agents at every level; depth 4 adds the top tags under the deepest categories', async () => {
    const d1 = (await get('/api/discovery/categories.json?depth=1&kind=skills')).body;
    expect(d1).to.not.have.property('domains');
    const nlp = d1.skills.find((n: { path: string }) => n.path === 'natural_language_processing');
    expect(nlp).to.include({ depth: 1, posts: 1, agents: 1 });
    expect(nlp).to.not.have.property('children');
    const d4 = (await get('/api/discovery/categories.json?depth=4')).body;
    expect(d4.depthNote).to.match(/three levels/);
    const leaf = d4.skills
      .find((n: { path: string }) => n.path === 'natural_language_processing')
      .children.find((n: { path: string }) => n.path === 'natural_language_processing/information_retrieval_synthesis');
    expect(leaf.tags.map((t: { tag: string }) => t.tag)).to.have.members(['pdf', 'tables']);
    const tags = (await get('/api/discovery/categories.json?kind=tags')).body;
    expect(tags.tags.map((t: { tag: string }) => t.tag)).to.include('poetry');
  });

  it('search finds agents, skills and tags, typos included, ranked, with highlights', async () => {
    const exact = (await get('/api/discovery/search?q=pdf%20tables')).body;
    expect(exact.results[0]).to.include({ type: 'post', title: 'PDF table extraction' });
    expect(exact.results[0].highlight).to.contain('<mark>');
    const typo = (await get('/api/discovery/search?q=extracton&type=posts')).body;
    expect(typo.results.map((r: { title: string }) => r.title)).to.include('PDF table extraction');
    expect(typo.didYouMean).to.equal('extract'); // corrected through the search vocabulary (a stem)
    const agent = (await get('/api/discovery/search?q=table-wizrd&type=agents')).body;
    expect(agent.results[0]).to.include({ type: 'agent', id: 'table-wizard' });
    const tag = (await get('/api/discovery/search?q=invoic&type=tags')).body;
    expect(tag.results[0]).to.include({ type: 'tag', id: 'invoices' });
    // Stop words are not "corrected" into other words.
    const stop = (await get('/api/discovery/search?q=tables%20for%20invoices')).body;
    expect(stop).to.not.have.property('didYouMean');
    // Letters with combining marks are part of the word (Devanagari, decomposed accents).
    expect((await get(`/api/discovery/search?q=${encodeURIComponent('हिन्दी')}`)).status).to.equal(200);
    const invoices = (await get('/api/discovery/search?q=scanned%20invoices')).body;
    expect(invoices.results.map((r: { type: string }) => r.type)).to.include.members(['agent', 'post']);
  });

  it('search results can be told apart: seller and score, price, buyers, preview, version, page; a repeated title is labelled by seller', async () => {
    // A second seller lists a skill of the same title, free.
    const twin = await (
      await quiet.api('/api/posts', {
        method: 'POST',
        json: skill('Invoice OCR', 'Reads invoices aloud.\nA second line.', ['ocr'], '0'),
      })
    ).json();
    expect((await quiet.api(`/api/posts/${twin.id}/publish`, { method: 'POST' })).status).to.equal(200);
    const base = svc.service.runtime.site.baseUrl;
    // The buyers of a skill come from its Bazaar listing, which the feed indexer keeps.
    const answer = await eventually(async () => {
      const a = await search(svc.service.runtime.database.db, svc.service.runtime.site, 'invoice ocr', 'all', 20);
      const paid = a.results.find((r) => r.type === 'post' && r.seller?.handle === 'table-wizard');
      return paid?.buyers === 1 && a.results.some((r) => r.id === twin.id) ? a : undefined;
    }, 30_000);
    const paid = answer.results.find((r) => r.type === 'post' && r.seller?.handle === 'table-wizard');
    const free = answer.results.find((r) => r.id === twin.id);
    expect(paid).to.deep.include({
      title: 'Invoice OCR',
      label: 'Invoice OCR (by @table-wizard)',
      priceAtomic: '700000',
      priceUsdc: '0.7',
      buyers: 1,
      preview: 'Read scanned invoices into structured JSON.',
      version: '1.0.0',
      page: `${base}/skills/${paid?.id}`,
      url: `${base}/api/posts/${paid?.id}`,
    });
    expect(paid?.seller).to.include({ handle: 'table-wizard', displayName: 'Table Wizard' });
    expect(paid?.seller?.score).to.be.a('number').and.greaterThan(0);
    expect(free).to.deep.include({
      label: 'Invoice OCR (by @quiet-scribe)',
      priceUsdc: '0',
      buyers: 0,
      preview: 'Reads invoices aloud.',
    });
    const agents = await search(svc.service.runtime.database.db, svc.service.runtime.site, 'table wizard', 'agents', 5);
    const agent = agents.results.find((r) => r.id === 'table-wizard');
    expect(agent).to.deep.include({
      label: 'Table Wizard',
      page: `${base}/agents/table-wizard`,
      preview: 'Extracts tables from scanned invoices and PDF reports.',
      sales90d: 4,
      publishedSkills: 2,
    });
    // The API answers the same, as its OpenAPI document describes it.
    const api = (await get('/api/discovery/search?q=invoice%20ocr&type=posts')).body;
    expect(SearchAnswerBody.safeParse(api).success).to.equal(true);
    expect(api.results.map((r: { label: string }) => r.label)).to.include.members([
      'Invoice OCR (by @table-wizard)',
      'Invoice OCR (by @quiet-scribe)',
    ]);
    const openapi = (await get('/openapi.json')).body;
    const item =
      openapi.paths['/api/discovery/search'].get.responses['200'].content['application/json'].schema.properties.results
        .items.properties;
    expect(item).to.include.keys('label', 'page', 'seller', 'priceUsdc', 'buyers', 'preview', 'version');
  });

  it('a very long word planted in a preview breaks neither the vocabulary nor typo correction', async () => {
    const post = await (
      await quiet.api('/api/posts', { method: 'POST', json: skill('Long word', `a${'a'.repeat(299)} rhymes`, [], '0') })
    ).json();
    expect((await quiet.api(`/api/posts/${post.id}/publish`, { method: 'POST' })).status).to.equal(200);
    await refreshSearchVocabulary(svc.service.runtime.database.db);
    const res = await get('/api/discovery/search?q=aaaa');
    expect(res.status).to.equal(200);
    expect(
      (await get('/api/discovery/search?q=rhymse&type=posts')).body.results.map((r: { title: string }) => r.title),
    ).to.include('Poetry helper');
  });

  it('the default forms are bucket objects served by the edge; parameterized forms come from the API', async () => {
    for (const path of [
      '/api/discovery/trending.json',
      '/api/discovery/tags',
      '/api/discovery/categories.json',
      '/api/discovery/agents.json',
      '/api/discovery/posts.json',
    ]) {
      const res = await eventually(
        async () => {
          const r = await fetch(`${svc.url}${path}`);
          return r.status === 200 && r.headers.get('last-modified') ? r : undefined;
        },
        10_000,
        100,
      );
      expect(res.headers.get('cache-control'), path).to.match(/max-age=\d+/);
      expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    }
    const api = await fetch(`${svc.url}/api/discovery/categories.json?depth=3`);
    expect(api.headers.get('last-modified')).to.equal(null);
    expect((await api.json()).depth).to.equal(3);
  });

  it('every bound is enforced with 400 naming the parameter', async () => {
    for (const [path, name] of [
      ['/api/discovery/search', 'q'],
      ['/api/discovery/search?q=a', 'q'],
      ['/api/discovery/search?q=pdf&limit=51', 'limit'],
      ['/api/discovery/search?q=pdf&limit=0', 'limit'],
      ['/api/discovery/search?q=pdf&type=users', 'type'],
      ['/api/discovery/categories.json?depth=5', 'depth'],
      ['/api/discovery/categories.json?depth=0', 'depth'],
      ['/api/discovery/categories.json?kind=colors', 'kind'],
    ] as const) {
      const { status, body } = await get(path);
      expect(status, path).to.equal(400);
      expect(
        body.invalidParams.map((p: { name: string }) => p.name),
        path,
      ).to.include(name);
    }
  });

  it('tags are matched in the API exactly as pg_trgm would: same trigrams, same similarity', async () => {
    const { pool } = svc.service.runtime.database;
    const pairs = [
      ['invoices', 'invoic'],
      ['tag-12', 'tag-120'],
      ['PDF Tables', 'pdf-tables'],
      ['scrapng', 'scraping'],
      ['ocr', 'ocr-invoices'],
      ['a', 'ab'],
      ['élan vital', 'elan'],
      ['x_y z', 'x y'],
      ['12', 'tag-12'],
      ['हिन्दी', 'हिन्दी'],
    ];
    for (const [a, b] of pairs) {
      const { rows } = await pool.query<{ s: number }>('SELECT similarity($1, $2) AS s', [a, b]);
      expect(trigramSimilarity(trigrams(a!), trigrams(b!)), `${a} / ${b}`).to.be.closeTo(rows[0]!.s, 1e-6);
    }
    // And the API's tag search (through its trigram index) answers what PostgreSQL would.
    for (const q of ['invoic', 'PDF', 'tables pdf', 'oc', 'poetry', 'xyz']) {
      const { rows } = await pool.query<{ tag: string; score: number }>(
        `SELECT tag, similarity(tag, $1) + CASE WHEN strpos(lower(tag), lower($1)) > 0 THEN 0.5 ELSE 0 END AS score FROM tag_stats
         WHERE similarity(tag, $1) >= 0.3 OR strpos(lower(tag), lower($1)) > 0 ORDER BY score DESC, posts DESC, tag COLLATE "C" LIMIT 20`,
        [q],
      );
      const api = (await get(`/api/discovery/search?q=${encodeURIComponent(q)}&type=tags`)).body.results;
      expect(
        api.map((r: { id: string; score: number }) => [r.id, r.score]),
        q,
      ).to.deep.equal(rows.map((r) => [r.tag, Math.round(r.score * 1e4) / 1e4]));
    }
  });

  it('the search and vocabulary indexes keep no pending list, so a search never scans unmerged entries', async () => {
    const { pool } = svc.service.runtime.database;
    const { rows } = await pool.query<{ name: string; options: string[] }>(
      `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c
       WHERE c.relname IN ('agents_search_idx', 'posts_search_idx', 'search_vocabulary_trgm_idx', 'search_tier_posts_search_idx') ORDER BY 1`,
    );
    expect(rows).to.deep.equal([
      { name: 'agents_search_idx', options: ['fastupdate=off'] },
      { name: 'posts_search_idx', options: ['fastupdate=off'] },
      { name: 'search_tier_posts_search_idx', options: ['fastupdate=off'] },
      { name: 'search_vocabulary_trgm_idx', options: ['fastupdate=off'] },
    ]);
  });

  it('the population statistics wait on no row a recompute page is writing', async () => {
    const { pool } = svc.service.runtime.database;
    // The statistics on connections of their own, so a wait of theirs is told from the workers'.
    const url = new URL(svc.database.url);
    url.searchParams.set('application_name', 'statistics-under-test');
    const own = await openDatabase({
      url: url.toString(),
      poolMax: 2,
      embeddedDataDir: 'memory://',
      log: createLogger('silent'),
    });
    const { rows: scores } = await pool.query<{ agent_id: string; score: number }>(
      'SELECT agent_id, score FROM agent_metrics',
    );
    // Scores a recompute has just committed reorder the agents, so anything ranking them by score
    // has work to do; then a page's transaction holds its agents' rows while the statistics run.
    await pool.query('UPDATE agent_metrics SET score = -score');
    const holder = await pool.connect();
    let run: Promise<unknown> = Promise.resolve();
    try {
      await holder.query('BEGIN');
      const { rows: held } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await holder.query('SELECT 1 FROM agent_metrics m JOIN agents a ON a.id = m.agent_id FOR UPDATE');
      let finished = false;
      run = populationStatsJob.run({ ...jobContext(svc.service.runtime), db: own.db }, {}).finally(() => {
        finished = true;
      });
      const waiting = async () =>
        (
          await pool.query(
            `SELECT 1 FROM pg_stat_activity WHERE application_name = 'statistics-under-test' AND $1::int = ANY(pg_blocking_pids(pid))`,
            [held[0]!.pid],
          )
        ).rowCount! > 0;
      await eventually(async () => finished || (await waiting()), 60_000, 20);
      expect(await waiting(), 'a statement of the statistics waits on a row the page holds').to.equal(false);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
      await run;
      await own.close();
      await pool.query(
        'UPDATE agent_metrics m SET score = s.score FROM unnest($1::uuid[], $2::float8[]) s(agent_id, score) WHERE m.agent_id = s.agent_id',
        [scores.map((r) => r.agent_id), scores.map((r) => r.score)],
      );
    }
  });

  it('two vocabulary rebuilds at once both succeed, one after the other', async () => {
    const { db, pool } = svc.service.runtime.database;
    const words = async () =>
      (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM search_vocabulary')).rows[0]!.n;
    await refreshSearchVocabulary(db);
    const expected = await words();
    // Hold both at their first write, then let them go together.
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE search_vocabulary IN SHARE MODE');
      const both = [refreshSearchVocabulary(db), refreshSearchVocabulary(db)];
      // Both wait: one on the table (behind the lock), one on the other's advisory lock.
      await eventually(
        async () =>
          (
            await pool.query(`SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted AND a.datname = current_database()
                             AND (l.relation = 'search_vocabulary'::regclass OR l.locktype = 'advisory')`)
          ).rowCount === 2,
        10_000,
        20,
      );
      await holder.query('COMMIT');
      expect(await Promise.all(both)).to.deep.equal([expected - 1, expected - 1]); // the totals row is not counted
    } finally {
      await holder.query('ROLLBACK'); // a no-op after the commit; frees the lock if the test failed first
      holder.release();
    }
    expect(await words()).to.equal(expected);
  });

  it('the search tier answers common words from the best and newest skills; the full index fills what it cannot', async () => {
    const { db, pool } = svc.service.runtime.database;
    const titles = async (path: string) => (await get(path)).body.results.map((r: { title: string }) => r.title);
    const draft = async (title: string) =>
      (
        await (
          await quiet.api('/api/posts', { method: 'POST', json: skill(title, 'Balances a ledger.', ['ledgers'], '0') })
        ).json()
      ).id as string;
    const publish = async (title: string) => {
      const id = await draft(title);
      expect((await quiet.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
      return id;
    };
    // The oldest of them ranks highest for "ledger" (three times in its title), and stays out of the tier.
    for (const t of ['Ledger ledger ledger', 'Ledger alpha', 'Ledger beta', 'Ledger gamma', 'Ledger delta'])
      await publish(t);
    await refreshSearchVocabulary(db);
    // A tier of three: every skill here is new, so the two with paid sales, then the newest.
    // The publishes queue agent recomputes; a rebuild re-copies what changed since the oldest
    // transaction still running, so one of theirs would put every new skill in the tier.
    const documents = svc.service.runtime.queues.documents;
    await eventually(
      async () =>
        Object.values(await documents.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).every(
          (n) => n === 0,
        ),
      30_000,
      100,
    );
    expect(await refreshSearchTier(db, { size: 3, minimumPublished: 0 })).to.equal(3);
    const tier = async () =>
      (
        await pool.query<{ title: string }>(
          'SELECT p.title FROM search_tier_posts t JOIN posts p ON p.id = t.post_id ORDER BY 1',
        )
      ).rows.map((r) => r.title);
    expect(await tier()).to.deep.equal(['Invoice OCR', 'Ledger delta', 'PDF table extraction']);
    // Enough tier matches for the page: answered from the tier alone, though a skill outside it ranks higher.
    expect(await titles('/api/discovery/search?q=ledger&type=posts&limit=1')).to.deep.equal(['Ledger delta']);
    // Too few: the full index fills the page, best first; on equal rank the tier's skill comes first.
    expect((await titles('/api/discovery/search?q=ledger&type=posts&limit=3')).slice(0, 2)).to.deep.equal([
      'Ledger ledger ledger',
      'Ledger delta',
    ]);
    // A skill published now joins the tier at once, and is found by its common words.
    await publish('Ledger epsilon');
    expect(await tier()).to.include('Ledger epsilon');
    expect(await titles('/api/discovery/search?q=ledgers&type=posts&limit=2')).to.have.members([
      'Ledger delta',
      'Ledger epsilon',
    ]);
    // An unpublished skill leaves it.
    const delta = (await pool.query<{ id: string }>("SELECT id FROM posts WHERE title = 'Ledger delta'")).rows[0]!.id;
    expect((await quiet.api(`/api/posts/${delta}/unpublish`, { method: 'POST' })).status).to.equal(200);
    expect(await tier()).to.not.include('Ledger delta');
    // (Another spelling of the query: the API keeps each answer for its 30 s max-age.)
    expect(await titles('/api/discovery/search?q=Ledger&type=posts&limit=1')).to.deep.equal(['Ledger epsilon']);

    // A skill published while a rebuild runs is in the new tier: its publish wrote into the old table,
    // which the swap drops, and the rebuild's copy could not see it yet.
    const zeta = await draft('Ledger zeta');
    // Searches of several words run as prepared statements: run one on many connections before the swap.
    const spellings = Array.from({ length: 12 }, (_, i) => `balances${' '.repeat(i + 1)}ledger`);
    for (const q of spellings)
      expect((await get(`/api/discovery/search?q=${encodeURIComponent(q)}&type=posts&limit=50`)).status).to.equal(200);
    const publisher = await pool.connect();
    try {
      await publisher.query('BEGIN');
      await publisher.query("UPDATE posts SET status = 'published', published_at = now() WHERE id = $1", [zeta]);
      await publisher.query(
        'INSERT INTO search_tier_posts (post_id, search) SELECT id, search FROM posts WHERE id = $1',
        [zeta],
      );
      const rebuilding = refreshSearchTier(db, { size: 3, minimumPublished: 0 });
      // The rebuild has copied without it and now waits to drop the table the publish wrote into.
      await eventually(
        async () =>
          (await pool.query(`SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'search_tier_posts'::regclass`))
            .rowCount! > 0,
        10_000,
        20,
      );
      await publisher.query('COMMIT');
      expect(await rebuilding).to.equal(3);
    } finally {
      publisher.release();
    }
    expect(await tier()).to.include('Ledger zeta');
    // The prepared statements still work on the swapped-in table, and see the skill.
    for (const q of spellings) {
      const found = await titles(`/api/discovery/search?q=${encodeURIComponent(q.toUpperCase())}&type=posts&limit=50`);
      expect(found, q).to.include('Ledger zeta');
    }

    // The swap keeps the table's key and its GIN index without a pending list.
    const { rows } = await pool.query<{ name: string; options: string[] | null }>(
      `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c WHERE c.relname LIKE 'search_tier_posts%' AND c.relkind = 'i' ORDER BY 1`,
    );
    expect(rows).to.deep.equal([
      { name: 'search_tier_posts_pkey', options: null },
      { name: 'search_tier_posts_search_idx', options: ['fastupdate=off'] },
    ]);
    // With a tier, a one-word search is prepared too (its full-index branch only serves words rare in
    // the tier, so its plan does not depend on the word); without one it is planned with the word.
    const preparedSearches = async () => {
      const own = await openDatabase({
        url: svc.database.url,
        poolMax: 1,
        embeddedDataDir: 'memory://',
        log: createLogger('silent'),
      });
      try {
        expect((await search(own.db, svc.service.runtime.site, 'ledger', 'posts', 5)).results).to.not.be.empty;
        return (await own.pool.query(`SELECT 1 FROM pg_prepared_statements WHERE statement LIKE '%tier_matches%'`))
          .rowCount;
      } finally {
        await own.close();
      }
    };
    expect(await preparedSearches()).to.equal(1);

    // A small marketplace keeps no tier.
    expect(await refreshSearchTier(db)).to.equal(0);
    expect(await tier()).to.deep.equal([]);
    expect(await preparedSearches()).to.equal(0);
  });
});

describe('discovery: searches beyond the slots wait their turn, and beyond the queue are shed', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ SEARCH_CONCURRENCY: '1', SEARCH_QUEUE_MAX: '2', SEARCH_QUEUE_WAIT_MS: '2000' });
  });
  after(async () => svc?.stop());

  it('one search runs at a time, two wait in the process, the next gets 503 with Retry-After; all that waited are answered; one waiting too long gets 503', async () => {
    const { pool } = svc.service.runtime.database;
    // A request that would hang (answered only after the lock goes) fails the test quickly instead.
    const search = (q: string) =>
      fetch(`${svc.url}/api/discovery/search?q=${q}`, { signal: AbortSignal.timeout(8000) });
    // Searches of this database whose word lookup waits on the lock (start-up jobs may rebuild the vocabulary too).
    const waiting = async () =>
      (
        await pool.query(`SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                         WHERE NOT l.granted AND a.datname = current_database() AND l.relation = 'search_vocabulary'::regclass
                           AND a.query LIKE '%levenshtein_less_equal%'`)
      ).rowCount!;
    // Hold the vocabulary: every search stops at its word lookup until the lock goes.
    const holder = await pool.connect();
    let held = true;
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE search_vocabulary IN ACCESS EXCLUSIVE MODE');
      const first = search('ledger');
      await eventually(async () => (await waiting()) === 1, 10_000, 20);
      const queued = [search('invoice'), search('poetry')];
      await new Promise((r) => setTimeout(r, 300));
      // The two waiting searches have not reached PostgreSQL.
      expect(await waiting()).to.equal(1);
      const shed = await search('tables');
      expect(shed.status).to.equal(503);
      expect(shed.headers.get('retry-after')).to.equal('1');
      expect(shed.headers.get('content-type')).to.match(/^application\/problem\+json/);
      expect((await shed.json()).code).to.equal('search_busy');
      await holder.query('COMMIT');
      held = false;
      for (const res of await Promise.all([first, ...queued])) expect(res.status).to.equal(200);
    } finally {
      if (held) await holder.query('ROLLBACK');
      holder.release();
    }
    // The slot and the queue are free again.
    expect((await search('tables')).status).to.equal(200);

    // A search that waits longer than SEARCH_QUEUE_WAIT_MS (2 s here) is answered 503, and skipped when its turn comes.
    const again = await pool.connect();
    held = true;
    try {
      await again.query('BEGIN');
      await again.query('LOCK TABLE search_vocabulary IN ACCESS EXCLUSIVE MODE');
      const running = search('receipts');
      await eventually(async () => (await waiting()) === 1, 10_000, 20);
      const started = Date.now();
      const late = await search('budgets');
      expect(late.status).to.equal(503);
      expect((await late.json()).code).to.equal('search_busy');
      expect(Date.now() - started).to.be.within(1500, 6000);
      await again.query('COMMIT');
      held = false;
      expect((await running).status).to.equal(200);
    } finally {
      if (held) await again.query('ROLLBACK');
      again.release();
    }
    // Each shed search is counted by why: the full queue once, the long wait once.
    const metrics = await (
      await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminToken}` } })
    ).text();
    expect(metrics).to.match(/^searches_shed_total\{reason="queue_full"\} 1$/m);
    expect(metrics).to.match(/^searches_shed_total\{reason="waited_too_long"\} 1$/m);
  });
});
