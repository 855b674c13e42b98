import { expect } from 'chai';
import type { Express } from 'express';
import { startTestService, type TestService } from '../support/service.js';

type Layer = { route?: { path: string; methods: Record<string, boolean> } };

/** Sample values for path parameters, so a documented path can be requested. */
const SAMPLE_PARAMS: Record<string, string> = {
  handle: 'alice',
  postId: '00000000-0000-4000-8000-000000000000',
  paymentId: '00000000-0000-4000-8000-000000000000',
  shard: '5f',
};

describe('contract: the OpenAPI document and the served routes agree', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: { openapi: string; paths: Record<string, Record<string, unknown>> };

  before(async () => {
    svc = await startTestService();
    doc = await (await fetch(`${svc.url}/openapi.json`)).json();
  });
  after(async () => svc?.stop());

  it('is OpenAPI 3.1 with a problem schema for errors', () => {
    expect(doc.openapi).to.equal('3.1.0');
    expect(Object.keys(doc.paths).length).to.be.greaterThan(5);
  });

  it('every documented operation is served (never the unknown-route 404)', async () => {
    const misses: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      const concrete = path.replace(/\{(\w+)\}/g, (_, name: string) => SAMPLE_PARAMS[name] ?? 'x');
      for (const method of Object.keys(ops)) {
        const res = await fetch(`${svc.url}${concrete}`, {
          method: method.toUpperCase(),
          headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
          body: method === 'get' ? undefined : '{}',
        });
        const body = res.headers.get('content-type')?.includes('problem+json') ? await res.json() : undefined;
        if (body?.code === 'route_not_found') misses.push(`${method.toUpperCase()} ${path}`);
      }
    }
    expect(misses, 'documented but not served').to.deep.equal([]);
  });

  it('every served route is documented', () => {
    const app = svc.service.server!.server.listeners('request')[0] as unknown as Express;
    const stack = (app as unknown as { router: { stack: Layer[] } }).router.stack;
    const served = stack
      .filter((l) => l.route)
      .flatMap((l) => Object.keys(l.route!.methods).map((m) => `${m} ${l.route!.path.replace(/:(\w+)/g, '{$1}')}`));
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
    expect(
      served.filter((s) => !documented.includes(s)),
      'served but not documented',
    ).to.deep.equal([]);
  });
});
