import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/data/db.js';
import { agentScoreDocument } from '../../src/documents/agent/score.document.js';
import { jsonBytes } from '../../src/documents/document.js';
import { DocumentInvalidError } from '../../src/documents/validate.js';
import { publishDocument, publishDocuments } from '../../src/domain/publishing/publish-document.js';
import { createLogger } from '../../src/platform/logger.js';
import { openObjectStore, type ObjectStore } from '../../src/platform/object-store.js';
import { freshDatabase, type TestDatabase } from '../support/database.js';

/**
 * Publishing checks every JSON document against its catalogue schema before any write: an invalid
 * document fails with DocumentInvalidError and leaves the bucket and published_documents as they were.
 */
describe('integration: publishing refuses a document its catalogue schema refuses', function () {
  this.timeout(60_000);
  let tdb: TestDatabase;
  let database: Database;
  let store: ObjectStore;
  let dir: string;
  const log = createLogger('silent');
  const document = agentScoreDocument;
  const [valid] = document.examples.valid;
  const [invalid] = document.examples.invalid;

  before(async () => {
    tdb = await freshDatabase();
    database = await openDatabase({ url: tdb.url, poolMax: 2, embeddedDataDir: 'memory://', log });
    dir = mkdtempSync(join(tmpdir(), 'publish-validation-'));
    store = await openObjectStore({
      region: 'us-east-1',
      bucket: 'market-public',
      forcePathStyle: true,
      embeddedDir: join(dir, 'bucket'),
      log,
    });
  });

  after(async () => {
    await store?.close();
    await database?.close();
    await tdb?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const deps = () => ({ db: database.db, store });
  const rowOf = (key: string) =>
    database.db.selectFrom('published_documents').selectAll().where('key', '=', key).executeTakeFirst();
  const publishing = async (fn: () => Promise<unknown>): Promise<unknown> => {
    try {
      await fn();
    } catch (err) {
      return err;
    }
    return undefined;
  };

  it('the score document has examples its schema accepts and refuses', () => {
    expect(valid).to.not.equal(undefined);
    expect(invalid).to.not.equal(undefined);
  });

  it('an invalid document is refused: no object is put and no row is written', async () => {
    const key = document.key({ handle: 'never-valid' });
    const err = await publishing(() => publishDocument(deps(), { document, key, body: jsonBytes(invalid) }));
    expect(err).to.be.instanceOf(DocumentInvalidError);
    expect((err as DocumentInvalidError).retryable).to.equal(false);
    expect(await store.get(key)).to.equal(null);
    expect(await rowOf(key)).to.equal(undefined);
  });

  it('a valid document is published: the object and its row are written', async () => {
    const key = document.key({ handle: 'valid-agent' });
    const body = jsonBytes(valid);
    const result = await publishDocument(deps(), { document, key, body });
    // Identified by its bytes' SHA-256 (it has no content hash).
    expect(result).to.deep.equal({
      key,
      outcome: 'published',
      identity: createHash('sha256').update(body).digest('hex'),
    });
    const object = await store.get(key);
    expect(object?.body.toString('utf8')).to.equal(body);
    expect(object?.contentType).to.equal(document.contentType);
    expect(object?.cacheControl).to.equal(document.cacheControl);
    expect((await rowOf(key))?.bytes).to.equal(Buffer.byteLength(body));
  });

  it('an invalid replacement leaves the published object and its row unchanged', async () => {
    const key = document.key({ handle: 'replaced-agent' });
    const body = jsonBytes(valid);
    await publishDocument(deps(), { document, key, body });
    const rowBefore = await rowOf(key);
    const err = await publishing(() => publishDocument(deps(), { document, key, body: jsonBytes(invalid) }));
    expect(err).to.be.instanceOf(DocumentInvalidError);
    expect((await store.get(key))?.body.toString('utf8')).to.equal(body);
    expect(await rowOf(key)).to.deep.equal(rowBefore);
  });

  it('one invalid document in a batch stops the whole batch before any write', async () => {
    const good = document.key({ handle: 'batch-good' });
    const bad = document.key({ handle: 'batch-bad' });
    const err = await publishing(() =>
      publishDocuments(deps(), [
        { document, key: good, body: jsonBytes(valid) },
        { document, key: bad, body: jsonBytes(invalid) },
      ]),
    );
    expect(err).to.be.instanceOf(DocumentInvalidError);
    for (const key of [good, bad]) {
      expect(await store.get(key), key).to.equal(null);
      expect(await rowOf(key), key).to.equal(undefined);
    }
  });
});
