import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { migrate } from '../../src/data/migrate.js';
import { parseSkillMd } from '../../src/domain/skills/agent-skill.js';
import { fileDigests, skillDigest } from '@skill-market/skill-protocol/skill-digest';
import { TEST_PG_URL } from '../support/env.js';

const MIGRATIONS = join(import.meta.dirname, '../../src/data/migrations');
const FORMAT = '0019_agent_skills.sql';

const dbUrl = (name: string) => {
  const u = new URL(TEST_PG_URL);
  u.pathname = `/${name}`;
  return u.toString();
};

type File = { path: string; content: string };

describe('Agent Skills migration: skills stored before the format become Agent Skills, losing nothing', function () {
  this.timeout(60_000);
  const name = `market_agent_skills_${randomBytes(4).toString('hex')}`;
  let admin: pg.Client;
  let pool: pg.Pool;
  const posts: Record<string, { id: string; files: File[] }> = {};
  let author: string;

  const addPost = async (key: string, title: string, preview: string, files: File[], by = author) => {
    const id = (
      await pool.query(
        `INSERT INTO posts (author_id, title, preview, price_atomic) VALUES ($1, $2, $3, '1000') RETURNING id`,
        [by, title, preview],
      )
    ).rows[0].id;
    const body = JSON.stringify({ files });
    await pool.query(
      `INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes)
       VALUES ($1, 1, '1.0.0', $2, $3, $4)`,
      [
        id,
        body,
        createHash('sha256').update(body).digest('hex'),
        Buffer.byteLength(files.map((f) => f.content).join('')),
      ],
    );
    posts[key] = { id, files };
    return id;
  };

  before(async () => {
    admin = new pg.Client({ connectionString: TEST_PG_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    pool = new pg.Pool({ connectionString: dbUrl(name), max: 2 });
    // The schema as it was before the format: every migration up to 0019, applied as migrate() would.
    await pool.query(
      'CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    for (const file of readdirSync(MIGRATIONS).sort()) {
      if (file >= FORMAT) break;
      await pool.query(readFileSync(join(MIGRATIONS, file), 'utf8'));
      await pool.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
    }
    author = (
      await pool.query(`INSERT INTO agents (handle, wallet_address) VALUES ('old-seller', $1) RETURNING id`, [
        `0x${'1'.repeat(40)}`,
      ])
    ).rows[0].id;
    await addPost('plain', 'PDF Tables!', 'Extracts tables.\n  Even merged cells.', [
      { path: 'SKILL.md', content: '# PDF tables\nUse camelot "lattice" \\ then…' },
      { path: 'scripts/x.py', content: 'print(1)\n' },
    ]);
    await addPost('sameTitle', 'PDF tables', 'Another one.', [{ path: 'SKILL.md', content: '# again' }]);
    await addPost('noSkillMd', 'Héllo wörld', 'Greets.', [{ path: 'notes.md', content: 'ünï' }]);
    await addPost('valid', 'Valid one', 'p', [
      { path: 'SKILL.md', content: '---\nname: my-tool\ndescription: Does things.\n---\n# body\n' },
    ]);
    await addPost('takenName', 'Second my-tool', 'q', [
      { path: 'SKILL.md', content: '---\nname: my-tool\ndescription: Does things.\n---\n# body\n' },
    ]);
    const payment = (
      await pool.query(
        `INSERT INTO payments (purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce,
           valid_after, valid_before, resource, payload, requirements)
         VALUES ('purchase', 'settled', 2, 'eip155:84532', $1, $2, $3, '1000', $4, now(), now() + interval '1 hour', 'r', '{}', '{}')
         RETURNING id`,
        [`0x${'a'.repeat(40)}`, `0x${'b'.repeat(40)}`, `0x${'1'.repeat(40)}`, `0x${'2'.repeat(64)}`],
      )
    ).rows[0].id;
    await pool.query(
      `INSERT INTO purchases (payment_id, post_id, post_version, seller_id, buyer_address, amount_atomic, tx_hash)
       VALUES ($1, $2, 1, $3, $4, '1000', '0xabc')`,
      [payment, posts.plain!.id, author, `0x${'b'.repeat(40)}`],
    );
    expect(await migrate(pool)).to.deep.equal(
      [...readdirSync(MIGRATIONS).filter((f) => f >= FORMAT && f.endsWith('.sql'))].sort(),
    );
  });
  after(async () => {
    await pool?.end();
    await admin?.query(`DROP DATABASE IF EXISTS ${name}`);
    await admin?.end();
  });

  const stored = async (key: string) =>
    (
      await pool.query(
        `SELECT p.skill_name AS post_name, v.skill_name, v.body, v.body_sha256, v.body_bytes, v.file_digests, v.skill_digest
         FROM posts p JOIN post_versions v ON v.post_id = p.id WHERE p.id = $1`,
        [posts[key]!.id],
      )
    ).rows[0];

  it('every stored version is now a valid Agent Skill, named after its title when it had no name', async () => {
    const names: Record<string, string> = {};
    for (const key of Object.keys(posts)) {
      const row = await stored(key);
      const skill = row.body.files.find((f: File) => f.path === 'SKILL.md');
      const { manifest, problems } = parseSkillMd(skill.content);
      expect(problems, key).to.deep.equal([]);
      expect(manifest!.name).to.equal(row.skill_name).and.equal(row.post_name);
      names[key] = row.skill_name;
    }
    expect(names).to.deep.equal({
      plain: 'pdf-tables',
      sameTitle: 'pdf-tables-2',
      noSkillMd: 'h-llo-w-rld',
      valid: 'my-tool',
      takenName: 'second-my-tool',
    });
  });

  it('nothing is lost: the original text follows the new frontmatter, other files are untouched, a valid skill is kept byte for byte', async () => {
    const plain = await stored('plain');
    const skill = plain.body.files[0].content as string;
    expect(skill.endsWith(`---\n${posts.plain!.files[0]!.content}`)).to.equal(true);
    expect(parseSkillMd(skill).manifest).to.deep.include({
      description: 'Extracts tables. Even merged cells.',
      metadata: { version: '1.0.0' },
    });
    expect(plain.body.files[1]).to.deep.equal(posts.plain!.files[1]);

    const none = await stored('noSkillMd');
    expect(none.body.files.map((f: File) => f.path)).to.deep.equal(['SKILL.md', 'notes.md']);
    expect(none.body.files[1]).to.deep.equal(posts.noSkillMd!.files[0]);
    expect(none.body.files[0].content).to.contain('# Héllo wörld\n\nGreets.');

    expect((await stored('valid')).body).to.deep.equal({ files: posts.valid!.files });
    expect((await stored('takenName')).body.files[0].content).to.contain(posts.takenName!.files[0]!.content);
  });

  it('digests and measures agree with what the API computes from the files; purchases name the digest bought', async () => {
    for (const key of Object.keys(posts)) {
      const row = await stored(key);
      expect(row.skill_digest, key).to.equal(skillDigest(row.body.files));
      expect(row.file_digests, key).to.deep.equal(
        fileDigests(row.body.files).map(({ path, digest }) => ({ path, digest })),
      );
      expect(row.body_sha256, key).to.equal(createHash('sha256').update(JSON.stringify(row.body)).digest('hex'));
      expect(row.body_bytes, key).to.equal(
        row.body.files.reduce((n: number, f: File) => n + Buffer.byteLength(f.content, 'utf8'), 0),
      );
    }
    const purchase = (await pool.query('SELECT skill_digest, post_version FROM purchases')).rows[0];
    expect(purchase).to.deep.equal({ skill_digest: (await stored('plain')).skill_digest, post_version: 1 });
  });

  it('afterwards a version must carry digests that match its files, and two skills of one author cannot share a name', async () => {
    const id = posts.valid!.id;
    const insert = (digest: string) =>
      pool.query(
        `INSERT INTO post_versions (post_id, version, version_label, body, body_sha256, body_bytes, skill_name, file_digests, skill_digest)
         VALUES ($1, 2, '2.0.0', $2, 'x', 1, 'my-tool', skill_file_digests($2::jsonb), $3)`,
        [id, JSON.stringify({ files: [{ path: 'SKILL.md', content: 'x' }] }), digest],
      );
    const refused = await insert(`sha256:${'0'.repeat(64)}`).then(
      () => false,
      () => true,
    );
    expect(refused).to.equal(true);
    const taken = await pool.query(`UPDATE posts SET skill_name = 'pdf-tables' WHERE id = $1`, [id]).then(
      () => false,
      (err: { code?: string }) => err.code,
    );
    expect(taken).to.equal('23505');
  });
});
