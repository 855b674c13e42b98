import { expect } from 'chai';
import { sql } from 'kysely';
import { executePrepared, openDatabase, PREPARED, type Database } from '../../src/data/db.js';
import { createLogger } from '../../src/platform/logger.js';
import { DependencyUnavailableError } from '../../src/platform/errors.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

const log = createLogger('silent');

/** Runs a marked and an unmarked statement on one connection, and what that connection holds prepared. */
async function preparedAfterUse(database: Database) {
  return database.db.connection().execute(async (c) => {
    for (let i = 0; i < 3; i++) {
      const marked = await sql<{ n: number }>`${PREPARED} SELECT ${i}::int + 1 AS n`.execute(c);
      expect(marked.rows).to.deep.equal([{ n: i + 1 }]);
    }
    await sql`SELECT 2 AS unmarked`.execute(c);
    return (
      await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements ORDER BY 1`.execute(c)
    ).rows.map((r) => r.statement.trim());
  });
}

/** Runs `use` on a fresh PostgreSQL database through a pool of one connection, then drops it. */
async function onFreshDatabase(use: (database: Database) => Promise<void>): Promise<void> {
  let tdb: TestDatabase | undefined;
  let database: Database | undefined;
  try {
    tdb = await freshDatabase();
    database = await openDatabase({ url: tdb.url, poolMax: 1, embeddedDataDir: 'memory://', log });
    await use(database);
  } finally {
    await database?.close();
    await tdb?.drop();
  }
}

describe('statements marked PREPARED are prepared once per connection', function () {
  this.timeout(60_000);

  it('on PostgreSQL: one named statement for the marked text, none for the others', async () => {
    await onFreshDatabase(async (database) => {
      expect(await preparedAfterUse(database)).to.deep.equal(['/* prepared */ SELECT $1::int + 1 AS n']);
    });
  });

  it('a query of the builder run with executePrepared: prepared once, and the rows it returns', async () => {
    await onFreshDatabase(async (database) => {
      const { db } = database;
      const handles = [];
      for (const handle of ['nobody-1', 'nobody-2'])
        handles.push(await executePrepared(db, db.selectFrom('agents').select('handle').where('handle', '=', handle)));
      expect(handles).to.deep.equal([[], []]);
      const prepared = await sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements`.execute(db);
      expect(prepared.rows.map((r) => r.statement)).to.deep.equal([
        '/* prepared */ select "handle" from "agents" where "handle" = $1',
      ]);
    });
  });

  it('a statement prepared before a migration added a column: 503 once, then prepared afresh on another connection', async () => {
    await onFreshDatabase(async (database) => {
      const { db } = database;
      await sql`CREATE TABLE migrated (id int)`.execute(db);
      await sql`INSERT INTO migrated VALUES (1)`.execute(db);
      const read = () => sql<Record<string, unknown>>`${PREPARED} SELECT * FROM migrated`.execute(db);
      await read();
      await sql`ALTER TABLE migrated ADD COLUMN added_later int`.execute(db);
      const first = await read().then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(first).to.be.instanceOf(DependencyUnavailableError);
      const again = await read();
      expect(again.rows).to.deep.equal([{ id: 1, added_later: null }]);
    });
  });

  it('on embedded PGlite too', async () => {
    const database = await openDatabase({ poolMax: 1, embeddedDataDir: 'memory://', log });
    try {
      expect(await preparedAfterUse(database)).to.deep.equal(['/* prepared */ SELECT $1::int + 1 AS n']);
    } finally {
      await database.close();
    }
  });
});
