import { expect } from 'chai';
import http from 'node:http';
import fc from 'fast-check';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { registerAgent, type Agent } from '../support/agents.js';
import {
  operationsOf,
  requestFor,
  wellFormedRequestFor,
  type FuzzContext,
  type FuzzRequest,
  type Operation,
} from '../support/fuzz.js';
import { skillBody, skillName } from '../support/skills.js';

/** Total generated requests; CI runs the default. FUZZ_REQUESTS and FUZZ_SEED reproduce or widen a run. */
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 20_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261125);
/** Requests in flight at once: a batch is one property run, so a failure shrinks to a small batch. */
const BATCH = 8;
/** FUZZ_COLLECT=1 runs every request and lists what went wrong, rather than stopping at the first. */
const COLLECT = process.env.FUZZ_COLLECT === '1';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * The whole API driven from its own /openapi.json with generated requests: values that follow each
 * parameter's schema and values that are hostile to what lies behind it (NUL characters, lone
 * surrogates, malformed percent-encoding, impossible dates, numeric extremes, broken bodies and
 * encodings, junk bearer tokens and payment headers, wrong methods). Every answer must be below
 * 500; every 4xx must be a problem+json body with a snake_case code; the service must be healthy
 * after.
 */
describe('reliability: generated hostile requests against every operation', function () {
  this.timeout(600_000);
  let svc: TestService;
  let seller: Agent;
  /** Owns a skill whose token the generated requests never carry, so it stays published and paid. */
  let owner: Agent;
  const agent = new http.Agent({ keepAlive: true, maxSockets: BATCH });
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);

  before(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    svc = await startTestService({ RATE_LIMITS: 'off' });
    seller = await registerAgent(svc, 'fuzz-seller');
    owner = await registerAgent(svc, 'fuzz-owner');
    // The agents' pages are published by the workers after registration; until then their paths
    // answer 503 document_not_ready by design. The generated requests start on a prepared service.
    for (const handle of ['fuzz-seller', 'fuzz-owner'])
      await eventually(
        async () => ((await fetch(`${svc.url}/agents/${handle}`)).status === 200 ? true : undefined),
        30_000,
      );
  });
  after(async () => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    agent.destroy();
    await svc?.stop();
  });

  function send(req: FuzzRequest): Promise<Answer> {
    const url = new URL(svc.url);
    return new Promise((resolve, reject) => {
      const r = http.request(
        {
          host: url.hostname,
          port: url.port,
          method: req.method,
          path: req.target,
          headers: { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
          agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      r.setTimeout(15_000, () => r.destroy(new Error(`no answer within 15 s to ${req.method} ${req.target}`)));
      r.on('error', reject);
      r.end(req.body);
    });
  }

  /** What a client is owed for one answer; the reason it is not, or undefined. */
  function violation(req: FuzzRequest, a: Answer): string | undefined {
    if (a.status >= 500) return `status ${a.status}: ${a.body.slice(0, 300)}`;
    if (a.status < 400 || req.method === 'HEAD') return undefined;
    // A page for people asked for by a browser (Accept prefers text/html): its errors are pages too,
    // sent with the pages' Content-Security-Policy (docs/documents.md, "Pages for people").
    if (String(a.headers['content-type']).startsWith('text/html') && !req.target.startsWith('/api/'))
      return /text\/html/.test(req.headers.accept ?? '') && a.headers['content-security-policy']
        ? undefined
        : `a ${a.status} page to a request that did not ask for one, or without its policy`;
    if (!String(a.headers['content-type']).startsWith('application/problem+json'))
      return `a ${a.status} without problem+json (${a.headers['content-type']})`;
    let problem: { code?: unknown; status?: unknown };
    try {
      problem = JSON.parse(a.body);
    } catch {
      return `a ${a.status} whose body is not JSON`;
    }
    if (typeof problem.code !== 'string' || !/^[a-z][a-z0-9_]*$/.test(problem.code))
      return `a ${a.status} without a snake_case code`;
    if (problem.status !== a.status) return `a ${a.status} whose problem says status ${String(problem.status)}`;
    if (a.status === 405 && !a.headers.allow) return 'a 405 without Allow';
    return undefined;
  }

  it(`answers ${REQUESTS} generated requests with no 5xx, a problem body on every 4xx, and stays healthy`, async () => {
    // Real values for path parameters, so generated requests also reach past the lookups.
    const publish = async (author: Agent, title: string) => {
      const created = await author.api('/api/posts', {
        method: 'POST',
        json: {
          title,
          preview: 'A skill that exists so requests can find it.',
          priceAtomic: '1000000',
          tags: ['fuzz'],
          body: skillBody(skillName(title), '# fuzz'),
        },
      });
      const id = (await created.json()).id as string;
      expect((await author.api(`/api/posts/${id}/publish`, { method: 'POST' })).status).to.equal(200);
      return id;
    };
    const postId = await publish(seller, 'Fuzzed skill');
    const stablePostId = await publish(owner, 'Skill nobody fuzzes away');
    const manifest = await (await fetch(`${svc.url}/api/posts/${stablePostId}/manifest.json`)).json();

    const doc = await (await fetch(`${svc.url}/openapi.json`)).json();
    // The queue dashboard is an operator's HTML app behind the admin token; it is not fuzzed here.
    const operations = operationsOf(doc).filter((op) => !op.path.startsWith('/admin/'));
    const methodsByPath = new Map<string, Set<string>>();
    for (const op of operations)
      (methodsByPath.get(op.path) ?? methodsByPath.set(op.path, new Set()).get(op.path)!).add(op.method);
    const chain = svc.service.runtime.chain;
    const ctx: FuzzContext = {
      known: {
        handle: [seller.handle, owner.handle, 'nobody-here'],
        postId: [stablePostId, postId, '00000000-0000-4000-8000-000000000000'],
        paymentId: ['00000000-0000-4000-8000-000000000000'],
      },
      token: seller.token,
      payment: {
        payTo: owner.account.address,
        asset: chain.usdc.address,
        network: `eip155:${chain.chainId}`,
        amount: String(manifest.price?.amountAtomic ?? '1000000'),
      },
      methodsByPath,
    };

    const byOperation = new Map<string, number>();
    const paidOperations = new Set(operations.filter((op) => op.paid).map((op) => op.operationId));
    const paidStatuses = new Map<number, number>();
    const byStatus = new Map<number, number>();
    let sent = 0;
    const failures: string[] = [];
    // Three hostile requests to one well-formed one, spread evenly over the operations; paid
    // operations get mostly well-formed ones, which carry structured payment headers to the paywall.
    const anyRequest = fc.oneof(
      ...operations.map((op: Operation) =>
        fc.oneof(
          { weight: op.paid ? 1 : 3, arbitrary: requestFor(op, ctx) },
          { weight: op.paid ? 3 : 1, arbitrary: wellFormedRequestFor(op, ctx) },
        ),
      ),
    );
    const started = performance.now();
    await fc
      .assert(
        fc.asyncProperty(fc.array(anyRequest, { minLength: BATCH, maxLength: BATCH }), async (batch) => {
          const answers = await Promise.all(batch.map(send));
          sent += batch.length;
          batch.forEach((req, i) => {
            const a = answers[i]!;
            byOperation.set(req.operationId, (byOperation.get(req.operationId) ?? 0) + 1);
            byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
            if (paidOperations.has(req.operationId)) paidStatuses.set(a.status, (paidStatuses.get(a.status) ?? 0) + 1);
            const wrong = violation(req, a);
            if (wrong && failures.length < 50)
              failures.push(
                `${req.method} ${req.target} ${JSON.stringify(req.headers)} ${req.body?.toString('base64') ?? ''}\n   -> ${wrong}`,
              );
          });
          if (!COLLECT && failures.length) throw new Error('violation');
        }),
        { seed: SEED, numRuns: Math.ceil(REQUESTS / BATCH), endOnFailure: true },
      )
      .catch((err) => {
        // fast-check's own report repeats the whole batch; the violating requests are what matter.
        const where = /path: "([^"]*)"/.exec((err as Error).message)?.[1];
        throw new Error(
          `seed ${SEED}${where ? ` path ${where}` : ''}: a generated request was mishandled:\n${failures.join('\n')}`,
        );
      });
    if (failures.length) throw new Error(`generated requests were mishandled:\n${failures.join('\n')}`);
    const seconds = (performance.now() - started) / 1000;
    const fiveXx = [...byStatus].filter(([s]) => s >= 500).reduce((n, [, c]) => n + c, 0);
    console.log(
      `      fuzz: ${sent} requests over ${operations.length} operations in ${seconds.toFixed(1)} s (seed ${SEED}); 5xx: ${fiveXx}; ` +
        `statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort(([a], [b]) => a - b)))}; on paid operations ${JSON.stringify(Object.fromEntries(paidStatuses))}`,
    );
    expect(sent).to.be.at.least(REQUESTS);
    expect(fiveXx).to.equal(0);
    expect(byOperation.size, 'every operation was tried').to.equal(operations.length);

    // Healthy after: liveness, readiness, and a normal read and sign-in still work.
    expect((await fetch(`${svc.url}/healthz`)).status).to.equal(200);
    expect(await (await fetch(`${svc.url}/readyz`)).json()).to.include({ status: 'ready' });
    // (The generated requests may have unpublished or edited the skill with the seller's token.)
    expect((await fetch(`${svc.url}/api/discovery/agents.json`)).status).to.equal(200);
    expect((await fetch(`${svc.url}/.well-known/agent-card.json`)).status).to.equal(200);
    expect((await seller.api('/api/agents/me')).status).to.equal(200);
    expect(uncaught, 'no uncaught exception or unhandled rejection').to.deep.equal([]);
  });
});
