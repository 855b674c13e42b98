/**
 * Fills PostgreSQL with a realistic marketplace, in SQL (generate_series), in minutes.
 *
 *   npx tsx bench/generate.ts [--agents 100000] [--posts 1000000] [--purchases 5000000] [--database-url postgres://…]
 *
 * Without --database-url it creates a fresh, migrated database on 127.0.0.1:5432 and prints its URL
 * (drop it with `dropdb -h 127.0.0.1 -U postgres <name>`). Shapes are skewed the way marketplaces
 * are: a few agents publish most skills and make most sales (power law), tags follow a Zipf-like
 * popularity, a third of skills are free, activity spreads over the last 120 days, OASF categories
 * come from the real taxonomy.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freshDatabase } from '../test/support/database.js';
import { oasfEntries } from '../src/domain/taxonomy/oasf.js';
import { printRunInfo } from './support/run-info.js';
import { RULES_VERSION } from '../src/domain/audit/index.js';

printRunInfo();

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '100000' },
    posts: { type: 'string', default: '1000000' },
    purchases: { type: 'string', default: '5000000' },
    'database-url': { type: 'string' },
  },
});
const A = Number(values.agents);
const P = Number(values.posts);
const B = Number(values.purchases);

let url = values['database-url'];
if (!url) {
  const db = await freshDatabase();
  url = db.url;
  console.log(`created database ${db.name}`);
}
const client = new pg.Client({ connectionString: url });
await client.connect();
await client.query('SET synchronous_commit = off');
await client.query("SET work_mem = '256MB'");
await client.query("SET maintenance_work_mem = '1GB'");
await client.query('SET max_parallel_maintenance_workers = 2');
// The rows are consistent by construction; skipping the per-row foreign-key triggers (superuser
// only) makes the 5M-row inserts several times faster. Indexes and constraints still apply.
await client
  .query('SET session_replication_role = replica')
  .catch(() => console.log('(not superuser: foreign keys checked row by row)'));

/**
 * Drops the indexes and key constraints of `tables` (and foreign keys pointing at them) and returns
 * a function that recreates them exactly as they were, printing each step's time.
 */
async function withoutIndexes(tables: string[]) {
  const { rows: constraints } = await client.query<{ tbl: string; name: string; def: string; type: string }>(
    `SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def, contype AS type
     FROM pg_constraint
     WHERE contype IN ('p', 'u', 'f') AND (conrelid = ANY($1::regclass[]) OR confrelid = ANY($1::regclass[]))`,
    [tables],
  );
  const { rows: indexes } = await client.query<{ name: string; def: string }>(
    `SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS def FROM pg_index
     WHERE indrelid = ANY($1::regclass[]) AND indexrelid NOT IN (SELECT conindid FROM pg_constraint WHERE contype IN ('p', 'u', 'x'))`,
    [tables],
  );
  const keys = constraints.filter((c) => c.type !== 'f');
  const foreign = constraints.filter((c) => c.type === 'f');
  for (const c of [...foreign, ...keys]) await client.query(`ALTER TABLE ${c.tbl} DROP CONSTRAINT ${c.name}`);
  for (const i of indexes) await client.query(`DROP INDEX ${i.name}`);
  console.log(
    `${'drop indexes'.padEnd(28)} ${String(keys.length + indexes.length).padStart(9)} keys and indexes, ${foreign.length} foreign keys`,
  );
  return async () => {
    for (const c of keys)
      await step(`  key ${c.name}`.slice(0, 28), `ALTER TABLE ${c.tbl} ADD CONSTRAINT ${c.name} ${c.def}`);
    for (const i of indexes) await step(`  index ${i.name}`.slice(0, 28), i.def);
    for (const c of foreign) {
      await step(
        `  fk ${c.name}`.slice(0, 28),
        `ALTER TABLE ${c.tbl} ADD CONSTRAINT ${c.name} ${c.def} NOT VALID; ALTER TABLE ${c.tbl} VALIDATE CONSTRAINT ${c.name}`,
      );
    }
  };
}

async function step(label: string, sql: string, params: unknown[] = []) {
  const started = performance.now();
  const res = await client.query(sql, params);
  console.log(
    `${label.padEnd(28)} ${String(res.rowCount ?? '').padStart(9)} rows  ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

const total = performance.now();
// Titles, previews and bios are drawn from a vocabulary of real words: a curated list of what skills
// are about first (the most used), then every word of the OASF captions. Word k of the list is drawn
// with probability falling like a power law (index = N × random()², so the first word is in about 4%
// of draws and the 600th in well under 0.1%), the way words spread over real listings.
const curated = `pdf invoices ocr sql email translation scraping charts tables data extraction summaries reports
  csv json api webhooks spreadsheets receipts contracts legal finance accounting tax payroll crm sales leads
  marketing seo content writing copy blog social posts images video audio transcription subtitles speech
  voice chat support tickets helpdesk routing triage classification sentiment moderation spam fraud risk
  compliance kyc identity documents forms signatures scanning parsing validation cleaning deduplication
  matching search ranking recommendations embeddings vectors retrieval rag knowledge graphs ontology
  schema migration postgres mysql mongodb redis kafka queues pipelines etl warehouse dashboards metrics
  monitoring alerts logs tracing incidents oncall deployment kubernetes docker terraform cloud aws gcp
  azure billing pricing quotes orders inventory shipping logistics tracking customs suppliers procurement
  hr recruiting resumes interviews onboarding calendar scheduling meetings notes minutes agendas travel
  booking expenses reimbursement budgets forecasting planning analytics statistics regression clustering
  anomalies timeseries maps geocoding addresses weather news feeds rss alerts crypto wallets tokens
  payments usdc invoicing reconciliation ledger audit security vulnerabilities scanning secrets keys
  certificates testing unit integration coverage refactoring review linting formatting docs markdown
  latex slides presentations diagrams mermaid ui design figma accessibility localization i18n chinese
  spanish german french japanese hindi arabic portuguese medical clinical radiology pharmacy insurance
  claims real estate listings mortgage banking loans credit scoring education tutoring quizzes grading
  research papers citations patents trademarks ecommerce shopify catalog products descriptions reviews`
  .split(/\s+/)
  .filter(Boolean);
const vocabulary = [
  ...new Set([
    ...curated,
    ...oasfEntries('skills')
      .concat(oasfEntries('domains'))
      .flatMap((e) => `${e.path} ${e.caption}`.toLowerCase().split(/[^a-z]+/))
      .filter((w) => w.length > 2),
  ]),
];
const skills = oasfEntries('skills').map((e) => e.path);
const domains = oasfEntries('domains').map((e) => e.path);
await step(
  'vocabulary',
  `
  CREATE TEMP TABLE vocab_word AS SELECT ARRAY[${vocabulary.map((w) => `'${w}'`).join(',')}]::text[] AS w, ${vocabulary.length} AS n;
  CREATE TEMP TABLE vocab_skill AS SELECT row_number() OVER () - 1 AS i, p FROM unnest($1::text[]) p;
  CREATE TEMP TABLE vocab_domain AS SELECT row_number() OVER () - 1 AS i, p FROM unnest($2::text[]) p;`
    .replace(/\$1/, `'{${skills.map((s) => `"${s}"`).join(',')}}'`)
    .replace(/\$2/, `'{${domains.map((s) => `"${s}"`).join(',')}}'`),
);

const word = 'v.w[1 + floor(v.n * power(random(), 2))::int]';
console.log(`vocabulary: ${vocabulary.length} words`);

// Bulk inserts through GIN's pending list (merged once at the end) rather than entry by entry;
// the search indexes run without it afterwards (migration 0011).
await client.query(
  'ALTER INDEX agents_search_idx SET (fastupdate = on); ALTER INDEX posts_search_idx SET (fastupdate = on)',
);
await step(
  'agents',
  `
  INSERT INTO agents (id, handle, wallet_address, display_name, bio, avatar_url, contact_email, docs_url, capabilities, oasf_skills, oasf_domains, created_at, updated_at)
  SELECT md5('agent' || g)::uuid, 'agent-' || g, '0x' || lpad(to_hex(g), 40, '0'),
         'Agent ' || g,
         CASE WHEN g % 3 = 0 THEN initcap(${word}) || ' and ' || ${word} || ' for ' || ${word} || ' teams; also ' || ${word} || ' ' || ${word} || '.' END,
         CASE WHEN g % 4 = 0 THEN 'https://cdn.example/a/' || g || '.png' END,
         CASE WHEN g % 5 = 0 THEN 'ops' || g || '@agents.example' END,
         CASE WHEN g % 6 = 0 THEN 'https://docs.example/' || g END,
         CASE WHEN g % 7 = 0 THEN jsonb_build_object('mcp', 'https://mcp.example/' || g) ELSE '{}'::jsonb END,
         CASE WHEN g % 2 = 0 THEN ARRAY[(SELECT p FROM vocab_skill WHERE vocab_skill.i = (g * 7) % (SELECT count(*) FROM vocab_skill))] ELSE '{}' END,
         CASE WHEN g % 3 = 0 THEN ARRAY[(SELECT p FROM vocab_domain WHERE vocab_domain.i = (g * 11) % (SELECT count(*) FROM vocab_domain))] ELSE '{}' END,
         now() - (random() * interval '200 days'), now() - (random() * interval '100 days')
  FROM generate_series(1, $1) g, vocab_word v`,
  [A],
);

// Authors follow a power law: agent k publishes about 1/k^0.8 as much as agent 1.
await step(
  'posts',
  `
  INSERT INTO posts (id, author_id, status, title, preview, price_atomic, tags, oasf_skills, oasf_domains, first_published_at, published_at, created_at, updated_at, skill_name)
  SELECT md5('post' || j)::uuid,
         md5('agent' || (1 + floor($2 * power(random(), 2.5)))::int)::uuid,
         CASE WHEN j % 20 = 0 THEN 'draft' WHEN j % 50 = 1 THEN 'unpublished' ELSE 'published' END,
         initcap(${word}) || ' ' || ${word} || ' ' || ${word},
         'Turns ' || ${word} || ' ' || ${word} || ' into ' || ${word} || ' ' || ${word} || ' for ' || ${word} || ' and ' || ${word} || ' work.',
         CASE WHEN j % 3 = 0 THEN 0 ELSE (1 + (j % 50)) * 100000 END,
         ARRAY['tag-' || floor(2000 * power(random(), 3))::int, 'tag-' || floor(2000 * power(random(), 3))::int],
         ARRAY[(SELECT p FROM vocab_skill WHERE vocab_skill.i = (j * 13) % (SELECT count(*) FROM vocab_skill))],
         CASE WHEN j % 2 = 0 THEN ARRAY[(SELECT p FROM vocab_domain WHERE vocab_domain.i = (j * 17) % (SELECT count(*) FROM vocab_domain))] ELSE '{}' END,
         t, t, t - interval '1 day', t, 'skill-' || j
  FROM (SELECT j, now() - (random() * interval '120 days') AS t FROM generate_series(1, $1) j) s, vocab_word v`,
  [P, A],
);

await step(
  'search indexes',
  `
  SELECT gin_clean_pending_list('agents_search_idx'::regclass) + gin_clean_pending_list('posts_search_idx'::regclass);
  ALTER INDEX agents_search_idx SET (fastupdate = off); ALTER INDEX posts_search_idx SET (fastupdate = off)`,
);
await step(
  'post versions',
  `
  INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, install_manifest, skill_name, file_digests, skill_digest,
                             audit_verdict, audit_rules_version, audit_report, audited_at)
  SELECT id, 1, '1.0.0', body, md5(id::text) || md5(title), octet_length(body #>> '{files,0,content}'),
         CASE WHEN price_atomic > 0 THEN '{"type":"npm","package":"@agents/skill"}'::jsonb END,
         skill_name, skill_file_digests(body), skill_digest(body),
         -- A SKILL.md of plain instructions: audited as it would be (pass, no findings).
         'pass', ${RULES_VERSION}, '{"rulesVersion":${RULES_VERSION},"verdict":"pass","counts":{"fail":0,"warn":0,"info":0},"findings":[],"unreadable":[],"truncated":false}', created_at
  FROM posts, LATERAL (SELECT jsonb_build_object('files', jsonb_build_array(jsonb_build_object('path', 'SKILL.md', 'content',
    E'---\nname: ' || skill_name || E'\ndescription: ' || to_json(preview)::text || E'\n---\n# ' || title || E'\n'))) AS body) b`,
);

// Purchases of published paid posts, skewed towards popular posts, by 200k buyer wallets
// (a fifth of them registered agents); each has its settled payment.
await step(
  'paid post index',
  `
  CREATE TEMP TABLE paid AS SELECT row_number() OVER (ORDER BY id) - 1 AS k, id, author_id, price_atomic
  FROM posts WHERE status = 'published' AND price_atomic > 0;
  CREATE INDEX ON paid (k); ANALYZE paid;`,
);
await step(
  'purchases (staging)',
  `
  CREATE TEMP TABLE sale AS
  SELECT n, p.id AS post_id, p.author_id, p.price_atomic,
         '0x' || lpad(to_hex(1000000 + floor(200000 * random())::int), 40, '0') AS buyer,
         now() - (random() * interval '120 days') AS at
  FROM (SELECT n, floor((SELECT count(*) FROM paid) * power(random(), 3))::int AS k FROM generate_series(1, $1) n) s
  JOIN paid p USING (k)`,
  [B],
);
// Millions of random-key index inserts are the slow part of a bulk load; building each index once
// from sorted data afterwards is several times faster. Constraints come back validated.
const rebuild = await withoutIndexes(['payments', 'purchases']);
await step(
  'payments',
  `
  INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce, valid_after, valid_before, resource, post_id, tx_hash, payload, requirements, created_at, updated_at, settled_at)
  SELECT md5('pay' || n)::uuid, 'purchase', 'settled', 2, 'eip155:84532', '0x' || repeat('0', 39) || 'a', buyer,
         '0x' || lpad(to_hex(abs(hashtext(author_id::text))), 40, '0'), price_atomic, '0x' || md5('nonce' || n) || md5('n' || n),
         at - interval '10 minutes', at + interval '5 minutes', 'https://market.example/api/posts/' || post_id || '?view=full', post_id,
         '0x' || md5('tx' || n) || md5('t' || n), '{}', '{}', at, at, at
  FROM sale`,
);
await step(
  'purchases',
  `
  INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, buyer_agent_id, amount_atomic, tx_hash, created_at, skill_digest)
  SELECT md5('pay' || n)::uuid, sale.post_id, 1, author_id, buyer,
         CASE WHEN n % 5 = 0 THEN md5('agent' || (1 + n % $1))::uuid END,
         price_atomic, '0x' || md5('tx' || n) || md5('t' || n), at, v.skill_digest
  FROM sale JOIN post_versions v ON v.post_id = sale.post_id AND v.version = 1`,
  [A],
);
await rebuild();
// The generated skills get no manifest or page of their own: the benches measure the agents'
// documents, the feeds, the Bazaar and search. The skill documents' cursors start after the
// generated rows, as a marketplace's do once its pages are published (migration 0031).
await step(
  'skill documents caught up',
  `INSERT INTO projection_watermarks (projection, watermark)
   SELECT cursor, pg_current_xact_id() FROM (VALUES ('skill-documents'), ('skill-documents:sales')) c(cursor)
   ON CONFLICT (projection) DO UPDATE SET watermark = excluded.watermark, after_id = DEFAULT`,
);
// As autovacuum leaves a live database: statistics gathered, and every page marked all-visible, so
// an index-only scan reads no table rows.
await step('vacuum and analyze', 'VACUUM (ANALYZE)');
await client.end();
console.log(
  `\ngenerated ${A} agents, ${P} posts, ${B} purchases in ${((performance.now() - total) / 1000).toFixed(1)} s`,
);
console.log(`DATABASE_URL=${url}`);
