import { expect } from 'chai';
import { findPublishedSkills, readPublishedSkillsDigests } from '../../src/data/posts.repository.js';
import { openTestDatabase, type OpenTestDatabase } from '../support/database.js';
import { captureStatements, tableScans, type SentStatement } from '../support/explain.js';

/**
 * An agent's documents list its newest 100 published skills, and every page of a full recompute
 * and every sale's re-render of a seller's documents reads them. A seller with thousands of
 * skills must cost the same read as one with a hundred: the newest hundred, not all of them.
 */
describe("an agent's newest published skills", function () {
  this.timeout(60_000);
  let database: OpenTestDatabase;
  const seller = '00000000-0000-4000-8000-000000000001';
  const SKILLS = 3_000;
  const LIMIT = 100;

  before(async () => {
    database = await openTestDatabase();
    // The prolific seller: 3,000 published skills a minute apart and 500 drafts; 200 others with 5 each.
    await database.pool.query(`
      INSERT INTO agents (id, handle, wallet_address)
      SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(n), 12, '0'))::uuid, 'skills-' || n, '0x' || lpad(to_hex(n), 40, '0')
      FROM generate_series(1, 201) n;
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
      SELECT gen_random_uuid(), '${seller}'::uuid, CASE WHEN i <= ${SKILLS} THEN 'published' ELSE 'draft' END, 'Skill ' || i, 'p',
             1000000, now() - i * interval '1 minute', 'skill-' || i
      FROM generate_series(1, ${SKILLS + 500}) i;
      INSERT INTO posts (id, author_id, status, title, preview, price_atomic, published_at, skill_name)
      SELECT gen_random_uuid(), a.id, 'published', 'Other ' || i, 'p', 1000000, now() - i * interval '1 hour', 'other-' || i
      FROM agents a CROSS JOIN generate_series(1, 5) i WHERE a.id <> '${seller}';
      INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
      SELECT id, 1, '1.0.0', '{"files":[]}', 'x', 0, skill_name, skill_file_digests('{"files":[]}'), skill_digest('{"files":[]}') FROM posts`);
    // As autovacuum leaves it: statistics, and the visibility map that allows index-only scans.
    await database.pool.query('VACUUM ANALYZE posts, post_versions');
  });
  after(async () => {
    await database?.close();
  });

  /** The statement sent reads at most the hundred newest of the seller's published skills. */
  const expectNewestHundredRead = async (statements: SentStatement[]) => {
    expect(statements).to.have.length(1);
    const scans = await tableScans(database.pool, statements[0]!, 'posts');
    expect(scans.map((s) => s.type)).to.not.include('Seq Scan');
    // The hundred chosen from the index, then those hundred read: nothing of the other 2,900.
    for (const scan of scans) expect(scan.rows + scan.removed, `posts rows read by ${scan.type}`).to.be.at.most(LIMIT);
    expect(scans.reduce((n, s) => n + s.rows + s.removed, 0)).to.be.at.most(2 * LIMIT);
  };

  it(`reads the skills of a seller with ${SKILLS.toLocaleString('en')} from its newest hundred, not from all`, async () => {
    const { result, statements } = await captureStatements('post_versions', () =>
      findPublishedSkills(database.db, [seller], LIMIT),
    );
    expect(result.map((r) => r.title)).to.deep.equal(Array.from({ length: LIMIT }, (_, i) => `Skill ${i + 1}`));
    await expectNewestHundredRead(statements);
  });

  it(`reads the skills digest of a seller with ${SKILLS.toLocaleString('en')} from its newest hundred, not from all`, async () => {
    const { result, statements } = await captureStatements('post_versions', () =>
      readPublishedSkillsDigests(database.db, [seller], LIMIT),
    );
    const [listed] = await findPublishedSkills(database.db, [seller], LIMIT);
    expect(result.get(seller)).to.equal(listed!.skills_digest);
    await expectNewestHundredRead(statements);
  });
});
