import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CATALOGUE,
  documentAtPath,
  EXACT_PATH_DOCUMENTS,
  keyOfPath,
  PATH_KEYED_DOCUMENTS,
  STATIC_PATHS_PATTERN,
} from '../../src/documents/catalog.js';
import { startEdge, type ServiceNode } from '../support/topology.js';

const CONF = readFileSync(join(import.meta.dirname, '../../infra/edge/edge.conf'), 'utf8');

/** The text of the `location` block that sends document paths to the bucket. */
function staticLocation(): { regex: string; body: string } {
  const start = CONF.indexOf('location ~ "');
  const end = CONF.indexOf('\n  }', start);
  const body = CONF.slice(start, end);
  const regex = /^location ~ "([^"]+)"/.exec(body)?.[1];
  if (regex === undefined) throw new Error('edge.conf: no static-document location');
  return { regex, body };
}

/** The text of the exact `location = <path>` block of a path, if any. */
function exactLocation(path: string): string | undefined {
  const start = CONF.indexOf(`location = ${path} {`);
  return start < 0 ? undefined : CONF.slice(start, CONF.indexOf('\n  }', start));
}

/** `map $uri $name { ... }` blocks: their regex entries in order and their default. */
function uriMaps(): Map<string, { entries: Array<[RegExp, string]>; fallback: string }> {
  const maps = new Map<string, { entries: Array<[RegExp, string]>; fallback: string }>();
  const lines = CONF.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const name = /^map \$uri \$(\w+) \{$/.exec(lines[i] ?? '')?.[1];
    if (name === undefined) continue;
    const map = { entries: [] as Array<[RegExp, string]>, fallback: '' };
    for (i++; i < lines.length && lines[i] !== '}'; i++) {
      const line = (lines[i] ?? '').trim();
      const regexEntry = /^"~([^"]+)" "([^"]*)";$/.exec(line);
      const fallback = /^default "([^"]*)";$/.exec(line);
      if (regexEntry?.[1] !== undefined && regexEntry[2] !== undefined)
        map.entries.push([new RegExp(regexEntry[1]), regexEntry[2]]);
      else if (fallback?.[1] !== undefined) map.fallback = fallback[1];
      else throw new Error(`edge.conf: map $${name}: cannot read "${line}"`);
    }
    maps.set(name, map);
  }
  return maps;
}

/** What nginx gives a map at `uri`: the first regex that matches, else the default. */
const mapAt = (map: { entries: Array<[RegExp, string]>; fallback: string }, uri: string) =>
  map.entries.find(([re]) => re.test(uri))?.[1] ?? map.fallback;

/** Paths the API answers and the bucket never holds. */
const NOT_DOCUMENTS = [
  '/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
  '/api/posts/x',
  '/api/posts/not-a-uuid/manifest.json',
  '/api/agents/me',
  '/api/agents/some-agent-7/posts',
  '/api/agents/x/score.json',
  '/api/discovery/search',
  '/api/discovery/tags.json.bak',
  '/spec/unknown-v1.json',
  '/openapi.json',
  '/healthz',
];

/** Stops an edge started by a test, its stub upstreams and its folder (each may not have started). */
async function stopEdgeStack(
  edge: { node: ServiceNode } | undefined,
  upstreams: ({ server: Server } | undefined)[],
  dir: string | undefined,
): Promise<void> {
  if (edge) {
    edge.node.child.kill('SIGTERM');
    await edge.node.exited;
  }
  for (const u of upstreams) u?.server.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}

describe('contract: infra/edge/edge.conf routes exactly the catalogue', () => {
  it("its static-document location regex is the catalogue's STATIC_PATHS_PATTERN", () => {
    expect(staticLocation().regex).to.equal(STATIC_PATHS_PATTERN);
  });

  it('each alternative of the location is one catalogue entry, and each entry has one', () => {
    const inner = /^\^\/\((.*)\)\$$/.exec(staticLocation().regex)?.[1] ?? '';
    expect(inner.split('|')).to.deep.equal(PATH_KEYED_DOCUMENTS.map((d) => d.pattern));
  });

  it('a document whose path cannot be its key has an exact location sending it to its own key, as the regex one does', () => {
    expect(EXACT_PATH_DOCUMENTS.map((d) => d.path)).to.deep.equal(['/']);
    for (const document of EXACT_PATH_DOCUMENTS) {
      const body = exactLocation(document.path);
      expect(body, document.path).to.be.a('string');
      expect(body).to.contain(`proxy_pass http://market_bucket/market-public/${document.key()};`);
      expect(body).to.match(/if \(\$args != ""\) \{ return 418; \}/);
      expect(body).to.contain('error_page 418 = @api;');
      expect(body).to.contain('error_page 403 404 = @api;');
      for (const header of ['Content-Security-Policy', 'X-Content-Type-Options'])
        expect(body).to.match(new RegExp(`add_header ${header} \\$document_\\w+;`));
    }
  });

  it('only that location (and the exact ones) proxy to the bucket, with the path as the key and a query string sent to the API', () => {
    const { body } = staticLocation();
    expect(CONF.split('proxy_pass http://market_bucket').length - 1).to.equal(1 + EXACT_PATH_DOCUMENTS.length);
    expect(body).to.contain('proxy_pass http://market_bucket/market-public$uri;');
    expect(body).to.match(/if \(\$args != ""\) \{ return 418; \}/);
    expect(body).to.contain('error_page 418 = @api;');
    expect(body).to.contain('error_page 403 404 = @api;');
  });

  it('sample by sample: each entry is a static path of its own, and nothing else is', () => {
    const edge = new RegExp(staticLocation().regex);
    for (const document of CATALOGUE) {
      const exact = EXACT_PATH_DOCUMENTS.includes(document);
      expect(
        edge.test(document.samplePath) || exactLocation(document.samplePath) !== undefined,
        document.samplePath,
      ).to.equal(true);
      expect(edge.test(document.samplePath), document.samplePath).to.equal(!exact);
      expect(documentAtPath(document.samplePath), document.samplePath).to.equal(document);
    }
    for (const path of NOT_DOCUMENTS) expect(edge.test(path), path).to.equal(false);
  });

  it("adds exactly the headers each entry's module declares (the bucket keeps none of them)", () => {
    const maps = uriMaps();
    const added = new Map<string, string>();
    for (const m of [staticLocation().body, ...EXACT_PATH_DOCUMENTS.map((d) => exactLocation(d.path) ?? '')]
      .join('\n')
      .matchAll(/add_header ([\w-]+) \$(document_\w+);/g))
      if (m[1] !== undefined && m[2] !== undefined) added.set(m[1].toLowerCase(), m[2]);
    const declared = new Set(CATALOGUE.flatMap((d) => Object.keys(d.headers ?? {}).map((h) => h.toLowerCase())));
    expect([...added.keys()].sort()).to.deep.equal([...declared].sort());
    for (const [header, variable] of added) {
      const map = maps.get(variable);
      expect(map, `map $${variable}`).to.not.equal(undefined);
      if (!map) continue;
      for (const document of CATALOGUE) {
        const want = Object.entries(document.headers ?? {}).find(([h]) => h.toLowerCase() === header)?.[1] ?? '';
        expect(mapAt(map, document.samplePath), `${header} of ${document.id}`).to.equal(want);
      }
    }
  });
});

/** A stub upstream that answers 200 naming itself, except for the paths in `missing` (404). */
async function stubUpstream(
  name: string,
  seen: string[],
  missing: Set<string> = new Set(),
): Promise<{ server: Server; host: string }> {
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    const status = missing.has(req.url ?? '') ? 404 : 200;
    res.writeHead(status, { 'content-type': 'text/plain', 'cache-control': 'no-store', 'x-served-by': name });
    res.end(req.url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, host: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

// nginx is a test prerequisite (npm test's pretest installs it): without it this fails, it is never skipped.
describe('contract: edge.conf in nginx sends the catalogue to the bucket', function () {
  this.timeout(30_000);
  const bucketSeen: string[] = [];
  const apiSeen: string[] = [];
  const notPublished = CATALOGUE[0]?.samplePath ?? '/';
  let bucket: { server: Server; host: string };
  let api: { server: Server; host: string };
  let edge: { url: string; node: ServiceNode };
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-catalogue-'));
    bucket = await stubUpstream('bucket', bucketSeen, new Set([`/market-public${notPublished}`]));
    api = await stubUpstream('api', apiSeen);
    edge = await startEdge([api.host], bucket.host, dir);
  });

  after(() => stopEdgeStack(edge, [bucket, api], dir));

  const get = (path: string) => fetch(`${edge.url}${path}`);

  it("each entry's sample path is the bucket object at its key, with the entry's headers", async () => {
    for (const document of CATALOGUE.slice(1)) {
      const res = await get(document.samplePath);
      expect(res.headers.get('x-served-by'), document.samplePath).to.equal('bucket');
      // The object key is the public path without its leading slash (or the key its module names), in the market-public bucket.
      expect(await res.text()).to.equal(`/market-public/${keyOfPath(document.samplePath)}`);
      for (const [header, value] of Object.entries(document.headers ?? {}))
        expect(res.headers.get(header), `${header} of ${document.id}`).to.equal(value);
      if (!document.headers) expect(res.headers.get('content-security-policy')).to.equal(null);
    }
  });

  it('the same paths with a query string, and every other path, go to the API', async () => {
    for (const path of [...CATALOGUE.map((d) => `${d.samplePath}?style=flat`), ...NOT_DOCUMENTS]) {
      const res = await get(path);
      expect(res.headers.get('x-served-by'), path).to.equal('api');
      expect(await res.text(), path).to.equal(path);
    }
  });

  it('an AgentCard request naming an A2A-Version the cards do not serve goes to the API; 1.0, 0.3 and none to the bucket', async () => {
    // (The site card is the sample the bucket does not hold here; the per-agent card stands for both.)
    for (const path of ['/api/agents/some-agent-7/agent-card.json']) {
      for (const version of ['2.0', 'latest', '0.2']) {
        const res = await fetch(`${edge.url}${path}`, { headers: { 'A2A-Version': version } });
        expect(res.headers.get('x-served-by'), `${path} ${version}`).to.equal('api');
      }
      for (const version of ['1.0', '0.3', '1.0.1', '']) {
        const res = await fetch(`${edge.url}${path}`, { headers: { 'A2A-Version': version } });
        expect(res.headers.get('x-served-by'), `${path} ${version}`).to.equal('bucket');
      }
    }
  });

  it('a document the bucket does not hold falls back to the API at the same path', async () => {
    const res = await get(notPublished);
    expect(res.headers.get('x-served-by')).to.equal('api');
    expect(await res.text()).to.equal(notPublished);
  });
});

/**
 * An API that answers an AgentCard path as the card routes do: 400 `no-store` to an A2A-Version the
 * cards do not serve, else the card, cacheable (a shared cache keeps it).
 */
async function cardApi(seen: string[]): Promise<{ server: Server; host: string }> {
  const server = createServer((req, res) => {
    seen.push(req.url ?? '');
    const version = String(req.headers['a2a-version'] ?? '');
    if (!/^((0\.3|1\.0)(\.\d+)?)?$/.test(version)) {
      res.writeHead(400, { 'content-type': 'application/a2a+json', 'cache-control': 'no-store' });
      res.end('{"error":{"status":"FAILED_PRECONDITION"}}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=300' });
    res.end('{"name":"card"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, host: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

describe('contract: edge.conf in nginx never answers an unsupported A2A-Version from the cache', function () {
  this.timeout(30_000);
  const apiSeen: string[] = [];
  let bucket: { server: Server; host: string };
  let api: { server: Server; host: string };
  let edge: { url: string; node: ServiceNode };
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'edge-a2a-version-'));
    // Nothing is published: every card request falls back to the API, whose answers nginx caches.
    const unpublished = createServer((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    await new Promise<void>((resolve) => unpublished.listen(0, '127.0.0.1', resolve));
    bucket = { server: unpublished, host: `127.0.0.1:${(unpublished.address() as AddressInfo).port}` };
    api = await cardApi(apiSeen);
    edge = await startEdge([api.host], bucket.host, dir);
  });

  after(() => stopEdgeStack(edge, [bucket, api], dir));

  const get = (path: string, version?: string) =>
    fetch(`${edge.url}${path}`, { headers: version === undefined ? {} : { 'A2A-Version': version } });

  // The bucket-miss fallback (@api) and a path the static location does not take (a handle in capitals: `location /`).
  for (const path of ['/api/agents/some-agent-7/agent-card.json', '/api/agents/Some-Agent-7/agent-card.json']) {
    it(`${path}: a card the API answered for 1.0 is cached, and still a later 2.0 request gets the 400`, async () => {
      const first = await get(path, '1.0');
      expect(first.status).to.equal(200);
      await first.text();
      // The card is in the cache: the next supported request does not reach the API.
      const cached = await get(path);
      expect(cached.status).to.equal(200);
      expect(cached.headers.get('x-cache'), 'the card is cached').to.equal('HIT');
      await cached.text();

      const before = apiSeen.length;
      const refused = await get(path, '2.0');
      expect(refused.status, 'an unsupported version is never the cached card').to.equal(400);
      expect(await refused.text()).to.contain('FAILED_PRECONDITION');
      expect(apiSeen.length).to.equal(before + 1);
      // And the 400 takes nothing from the cache: supported requests still get the card.
      const after = await get(path, '0.3');
      expect(after.status).to.equal(200);
      expect(after.headers.get('x-cache')).to.equal('HIT');
    });
  }
});
