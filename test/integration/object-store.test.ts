import { expect } from 'chai';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/platform/logger.js';
import { openObjectStore, startS3rver, type ObjectStore } from '../../src/platform/object-store.js';
import { PutFailedError } from '../../src/platform/signed-put.js';

const hmac = (key: Buffer | string, text: string) => createHmac('sha256', key).update(text).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/**
 * Whether a request's SigV4 signature is right for what arrived on the wire, computed here from
 * the AWS specification (canonical request, string to sign, derived key), as S3 checks it: s3rver
 * itself does not check version 4 signatures. The path is taken as sent.
 */
function signatureHolds(req: IncomingMessage, body: Buffer, secret: string): boolean {
  const auth =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
      String(req.headers.authorization ?? ''),
    );
  if (!auth) return false;
  const [, , day, region, signedHeaders, signature] = auth as unknown as string[];
  const names = signedHeaders!.split(';');
  const [path, query = ''] = (req.url ?? '').split('?');
  const canonical = [
    req.method,
    path,
    query,
    ...names.map((n) => `${n}:${String(req.headers[n] ?? '').trim()}`),
    '',
    signedHeaders,
    req.headers['x-amz-content-sha256'] === sha256(body) ? sha256(body) : 'mismatch',
  ].join('\n');
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', req.headers['x-amz-date'], scope, sha256(canonical)].join('\n');
  const key = ['s3', 'aws4_request'].reduce((k, part) => hmac(k, part), hmac(hmac(`AWS4${secret}`, day!), region!));
  return createHmac('sha256', key).update(toSign).digest('hex') === signature;
}

/**
 * The bucket's puts are signed and sent directly (src/platform/signed-put.ts), its reads go through
 * the AWS SDK: what one writes the other reads back, whatever the key, and a bucket that refuses
 * the signature refuses the put.
 */
describe('integration: the object store puts what it reads back', function () {
  this.timeout(30_000);
  const log = createLogger('silent');
  let dir: string;
  let s3: { endpoint: string; stop(): Promise<void> };
  let store: ObjectStore;
  const open = (secretAccessKey: string) =>
    openObjectStore({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: 'market-public',
      accessKeyId: 'S3RVER',
      secretAccessKey,
      forcePathStyle: true,
      embeddedDir: join(dir, 'unused'),
      log,
    });

  let verifier: Server;
  const faulted = new Set<string>();
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'object-store-'));
    const bucket = await startS3rver(join(dir, 'bucket'), 'market-public');
    // In front of s3rver, a server that refuses a put whose signature is wrong (403), as S3 does.
    verifier = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        // Keys asking for a transient failure get it on their first put.
        const fault = /\/(busy|dropped)-once\.json$/.exec(req.url ?? '')?.[1];
        if (req.method === 'PUT' && fault && !faulted.has(req.url!)) {
          faulted.add(req.url!);
          if (fault === 'busy') res.writeHead(503).end('<Error><Code>SlowDown</Code></Error>');
          else req.socket.destroy();
          return;
        }
        if (req.method === 'PUT' && !signatureHolds(req, body, 'S3RVER')) {
          res
            .writeHead(403, { 'content-type': 'application/xml' })
            .end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
          return;
        }
        const upstream = new URL(bucket.endpoint);
        const out = request(
          { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        out.end(body);
      });
    });
    await new Promise<void>((resolve) => verifier.listen(0, '127.0.0.1', resolve));
    const address = verifier.address() as { port: number };
    s3 = { endpoint: `http://127.0.0.1:${address.port}`, stop: bucket.stop };
    store = await open('S3RVER');
  });

  after(async () => {
    await store?.close();
    verifier?.close();
    await s3?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const key of [
    'api/agents/plain/score.json',
    'api/agents/with space/a+b=c&d.json',
    'api/agents/ünïcödé/名前.json',
    "api/agents/~tilde/(paren)!*'.svg",
  ])
    it(`round-trips ${JSON.stringify(key)} with its content type and cache policy`, async () => {
      const body = JSON.stringify({ key, at: Date.now() });
      await store.put(key, body, { contentType: 'application/json', cacheControl: 'public, max-age=60' });
      const got = await store.get(key);
      expect(got?.body.toString('utf8')).to.equal(body);
      expect(got?.contentType).to.equal('application/json');
      expect(got?.cacheControl).to.equal('public, max-age=60');
    });

  it('overwrites an object in place', async () => {
    const key = 'api/agents/twice/card';
    await store.put(key, 'first', { contentType: 'text/html', cacheControl: 'no-cache' });
    await store.put(key, Buffer.from('second'), { contentType: 'text/html', cacheControl: 'no-cache' });
    expect((await store.get(key))?.body.toString()).to.equal('second');
  });

  for (const fault of ['busy', 'dropped'])
    it(`tries again a put the bucket answered ${fault === 'busy' ? '503' : 'by closing the connection'}`, async () => {
      const key = `api/agents/retried/${fault}-once.json`;
      await store.put(key, '{"ok":true}', { contentType: 'application/json', cacheControl: 'no-cache' });
      expect([...faulted].some((url) => url.endsWith(`/${fault}-once.json`))).to.equal(true);
      expect((await store.get(key))?.body.toString()).to.equal('{"ok":true}');
    });

  it('fails a put the bucket refuses, and writes nothing', async () => {
    const wrong = await open('not-the-secret');
    try {
      const err = await wrong
        .put('api/agents/refused/score.json', '{}', { contentType: 'application/json', cacheControl: 'no-cache' })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).to.be.instanceOf(PutFailedError);
      expect((err as PutFailedError).status).to.equal(403);
    } finally {
      await wrong.close();
    }
    expect(await store.get('api/agents/refused/score.json')).to.equal(null);
  });
});
