import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { sql } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { registerAgent, type Agent } from '../support/agents.js';
import { newBuyer } from '../support/buyers.js';
import { eventually, startTestService, type TestService } from '../support/service.js';
import { publishSignedSkill } from '../support/skills.js';
import { JITTER, nominalRetryDelayMs } from '../../src/domain/webhooks/retry-schedule.js';
import { listenForWebhooks } from '../../src/cli/webhooks.js';
import { runCli } from '../support/cli.js';
import { jobContext } from '../../src/bootstrap/service.js';
import {
  DELIVERY_LOG_DAYS,
  pruneDeliveryLog,
  STRANDED_AFTER_MS,
  sweepStrandedDeliveries,
} from '../../src/domain/webhooks/deliveries.use-cases.js';

/** A shortened schedule, so that a whole run of retries takes under a second (docs/webhooks.md has the real one). */
const RETRY_BASE_MS = 100;
const MAX_ATTEMPTS = 4;
const TIMEOUT_MS = 800;
const PRICE = 20_000n;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A real HTTP receiver on 127.0.0.1: records every request; `/failing` answers 503, `/redirect`
 * 302 to `/redirect-target`, `/slow` never answers, anything else 200.
 */
async function startReceiver(): Promise<{ base: string; got: Received[]; server: Server }> {
  const got: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      got.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
      if (path === '/failing') return void res.writeHead(503).end('x'.repeat(5000));
      if (path === '/redirect') return void res.writeHead(302, { location: '/redirect-target' }).end();
      if (path === '/slow') return; // never answers
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, server };
}

const verify = (secret: string, r: Received) =>
  new Webhook(secret).verify(r.body, {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  }) as {
    id: string;
    type: string;
    timestamp: string;
    sequence: number;
    agentId: string;
    data: Record<string, unknown>;
  };

describe('Webhooks: sellers hear of their sales, signed, retried, disabled when failing for good', function () {
  this.timeout(120_000);
  let svc: TestService;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let seller: Agent;
  let buyer: Agent;
  let other: Agent;
  const skills: string[] = [];
  let sellerHook: { id: string; secret: string };
  let buyerHook: { id: string; secret: string };

  const createHook = async (a: Agent, path: string, eventTypes: string[]) => {
    const res = await a.api('/api/webhooks', { method: 'POST', json: { url: `${receiver.base}${path}`, eventTypes } });
    expect(res.status, await res.clone().text()).to.equal(201);
    return (await res.json()) as { id: string; secret: string; status: string };
  };
  const at = (path: string) => receiver.got.filter((r) => r.path === path);
  const deliveries = async (a: Agent, hookId: string) => {
    const res = await a.api(`/api/webhooks/${hookId}/deliveries`);
    expect(res.status).to.equal(200);
    return (await res.json()).deliveries as Array<Record<string, unknown>>;
  };
  /** A sale of skill `i` to a fresh wallet that is no agent. */
  const sellTo = async (i: number) => {
    const wallet = await newBuyer(svc.service.runtime.chain);
    const res = await wallet.payV2(`${svc.url}/api/posts/${skills[i]}?view=full`);
    expect(res.status).to.equal(200);
    return res.headers.get('x-payment-id')!;
  };

  before(async () => {
    receiver = await startReceiver();
    svc = await startTestService({
      WEBHOOK_RETRY_BASE_MS: String(RETRY_BASE_MS),
      WEBHOOK_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    [seller, buyer, other] = await Promise.all([
      registerAgent(svc, 'hook-seller'),
      registerAgent(svc, 'hook-buyer'),
      registerAgent(svc, 'hook-other'),
    ]);
    for (const n of [1, 2, 3, 4])
      skills.push(
        await publishSignedSkill(seller, {
          title: `Hooked skill ${n}`,
          preview: 'Sold to test webhooks.',
          priceAtomic: PRICE.toString(),
          tags: ['testing'],
          skill: `hooked-skill-${n}`,
        }),
      );
    sellerHook = await createHook(seller, '/seller', ['sale.settled', 'endpoint.disabled']);
    buyerHook = await createHook(buyer, '/buyer', ['entitlement.granted']);
  });
  after(async () => {
    receiver?.server.closeAllConnections();
    receiver?.server.close();
    await svc?.stop();
  });

  it('a sale reaches the seller within 2 s, signed (verified with standardwebhooks), and the buyer agent hears of its entitlement', async () => {
    const res = await buyer.payV2(`${svc.url}/api/posts/${skills[0]}?view=full`);
    expect(res.status).to.equal(200);
    const paid = Date.now();
    const paymentId = res.headers.get('x-payment-id');
    const sale = await eventually(
      async () => at('/seller').find((r) => verify(sellerHook.secret, r).data.paymentId === paymentId),
      2000,
      20,
    );
    expect(sale.at - paid).to.be.below(2000);
    const event = verify(sellerHook.secret, sale);
    expect(event).to.deep.include({ type: 'sale.settled', agentId: seller.id });
    expect(event.data).to.deep.include({
      paymentId,
      skillId: skills[0],
      amount: PRICE.toString(),
      buyerAgentId: buyer.id,
    });
    expect(event.data.buyer).to.match(new RegExp(`^${buyer.address}$`, 'i'));
    expect(sale.headers['webhook-id']).to.equal(event.id);
    expect(Date.parse(event.timestamp)).to.be.within(paid - 30_000, paid);
    expect(event.sequence).to.be.a('number');
    // Another secret does not verify it: the signature is the endpoint's.
    expect(() => verify(buyerHook.secret, sale)).to.throw();

    const granted = await eventually(async () => at('/buyer')[0], 2000, 20);
    expect(verify(buyerHook.secret, granted)).to.deep.include({ type: 'entitlement.granted', agentId: buyer.id });

    const log = await eventually(async () =>
      (await deliveries(seller, sellerHook.id)).find((d) => d.status === 'succeeded'),
    );
    expect(log).to.deep.include({
      eventType: 'sale.settled',
      attempts: 1,
      responseStatus: 200,
      responseExcerpt: '{"ok":true}',
    });
    expect(log.latencyMs).to.be.a('number');
  });

  it('a failing receiver gets its retries on the schedule, then the endpoint is disabled and its owner told', async () => {
    const failing = await createHook(seller, '/failing', ['sale.settled']);
    const paymentId = await sellTo(1);
    const tries = await eventually(
      async () => {
        const mine = at('/failing').filter((r) => verify(failing.secret, r).data.paymentId === paymentId);
        return mine.length >= MAX_ATTEMPTS ? mine : undefined;
      },
      15_000,
      20,
    );
    // One message, retried: the same webhook-id each time, each attempt signed afresh.
    expect(new Set(tries.map((r) => r.headers['webhook-id'])).size).to.equal(1);
    const gaps = tries.slice(1).map((r, i) => r.at - tries[i]!.at);
    gaps.forEach((gap, i) => {
      const nominal = nominalRetryDelayMs(i + 1, RETRY_BASE_MS);
      // Never earlier than the schedule allows; later only by the queue's own latency.
      expect(gap, `gap ${i + 1}`).to.be.at.least(nominal * (1 - JITTER) - 15);
      expect(gap, `gap ${i + 1}`).to.be.below(nominal * (1 + JITTER) + 1500);
    });
    expect(gaps[2]).to.be.above(gaps[0]!);

    const endpoint = await eventually(async () => {
      const { endpoints } = await (await seller.api('/api/webhooks')).json();
      return endpoints.find((e: { id: string; status: string }) => e.id === failing.id && e.status === 'disabled');
    });
    expect(endpoint.disabledReason).to.match(/retry schedule/);
    const [failed] = (await deliveries(seller, failing.id)).filter((d) => d.eventType === 'sale.settled');
    expect(failed).to.deep.include({ status: 'failed', attempts: MAX_ATTEMPTS, responseStatus: 503 });
    expect((failed!.responseExcerpt as string).length).to.equal(1024);
    // No attempt beyond the schedule.
    expect(at('/failing').filter((r) => verify(failing.secret, r).data.paymentId === paymentId)).to.have.length(
      MAX_ATTEMPTS,
    );

    // The owner's other endpoint hears of it.
    const told = await eventually(async () =>
      at('/seller')
        .map((r) => verify(sellerHook.secret, r))
        .find((e) => e.type === 'endpoint.disabled' && e.data.endpointId === failing.id),
    );
    expect(told.data.deliveryId).to.equal(failed!.id);

    // Operators see it in /metrics.
    const metrics = await (
      await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminToken}` } })
    ).text();
    expect(metrics).to.match(/^webhook_endpoints_disabled [1-9]/m);
    expect(metrics).to.match(/^webhook_deliveries\{outcome="failed"\} [1-9]/m);
    expect(metrics).to.match(/^queue_jobs\{queue="webhooks",state="completed"\}/m);
    // And the queue dashboard lists the webhooks queue with its jobs.
    const dashboard = await fetch(`${svc.url}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    expect(dashboard.status).to.equal(200);
    const { queues } = (await dashboard.json()) as { queues: Array<{ name: string }> };
    expect(queues.map((q) => q.name)).to.include('webhooks');
  });

  it('a redirecting or silent receiver costs one bounded attempt and no redirect is followed', async () => {
    const redirect = await createHook(seller, '/redirect', ['sale.settled']);
    const slow = await createHook(seller, '/slow', ['sale.settled']);
    const asked = Date.now();
    for (const hook of [redirect, slow])
      expect((await seller.api(`/api/webhooks/${hook.id}/ping`, { method: 'POST' })).status).to.equal(202);
    const [r] = await eventually(async () => {
      const d = await deliveries(seller, redirect.id);
      return d[0]?.status === 'failed' ? d : undefined;
    });
    expect(r).to.deep.include({ eventType: 'ping', responseStatus: 302, attempts: 1 });
    expect(at('/redirect-target')).to.have.length(0);
    const [s] = await eventually(async () => {
      const d = await deliveries(seller, slow.id);
      return d[0]?.status === 'failed' ? d : undefined;
    }, 10_000);
    expect(s).to.deep.include({ responseStatus: null, attempts: 1 });
    expect(s!.error).to.match(/within 800 ms/);
    expect(Date.now() - asked).to.be.below(8000);
    for (const hook of [redirect, slow])
      expect((await seller.api(`/api/webhooks/${hook.id}`, { method: 'DELETE' })).status).to.equal(204);
  });

  it('redelivery sends a past event again, signed afresh under the same webhook-id', async () => {
    const [first] = (await deliveries(seller, sellerHook.id)).filter((d) => d.eventType === 'sale.settled');
    const before = at('/seller').length;
    const res = await seller.api(`/api/webhooks/${sellerHook.id}/deliveries/${first!.id}/redeliver`, {
      method: 'POST',
    });
    expect(res.status).to.equal(202);
    const again = await res.json();
    expect(again).to.deep.include({ messageId: first!.messageId, redelivery: 1, status: 'pending' });
    const got = await eventually(async () =>
      at('/seller')
        .slice(before)
        .find((r) => r.headers['webhook-id'] === first!.messageId),
    );
    expect(verify(sellerHook.secret, got).data).to.deep.equal(
      first!.payload && (first!.payload as { data: unknown }).data,
    );
    await eventually(async () =>
      (await deliveries(seller, sellerHook.id)).find((d) => d.id === again.id && d.status === 'succeeded'),
    );
    // Someone else's delivery, or a disabled endpoint, is not redelivered.
    expect(
      (await other.api(`/api/webhooks/${sellerHook.id}/deliveries/${first!.id}/redeliver`, { method: 'POST' })).status,
    ).to.equal(404);
  });

  it('a deleted endpoint receives nothing more, not even the retries queued for it', async () => {
    const flaky = await createHook(seller, '/failing', ['sale.settled']);
    const paymentId = await sellTo(2);
    const mine = () =>
      at('/failing').filter((r) => {
        try {
          return verify(flaky.secret, r).data.paymentId === paymentId;
        } catch {
          return false;
        }
      });
    await eventually(async () => mine().length >= 1, 10_000, 10);
    // While its delivery is being retried, asking for it again is refused: one pending delivery per event.
    const [pending] = (await deliveries(seller, flaky.id)).filter((d) => d.status === 'pending');
    const again = await seller.api(`/api/webhooks/${flaky.id}/deliveries/${pending!.id}/redeliver`, {
      method: 'POST',
    });
    expect(again.status).to.equal(409);
    expect((await again.json()).code).to.equal('webhook_redelivery_pending');
    expect((await seller.api(`/api/webhooks/${flaky.id}`, { method: 'DELETE' })).status).to.equal(204);
    const seen = mine().length;
    // Its retries were due within 2.5 × the base delay; give them the whole remaining schedule and more.
    const remaining = [1, 2, 3].reduce((t, n) => t + nominalRetryDelayMs(n, RETRY_BASE_MS) * (1 + JITTER), 0);
    await new Promise((r) => setTimeout(r, remaining + 500));
    expect(mine().length).to.equal(seen);
    expect(seen).to.be.below(MAX_ATTEMPTS);
    expect((await seller.api(`/api/webhooks/${flaky.id}/deliveries`)).status).to.equal(404);
  });

  it('refuses private, link-local and own-host URLs, unknown and oversize event lists, with stable codes', async () => {
    const refused = async (a: Agent, body: unknown) => {
      const res = await a.api('/api/webhooks', { method: 'POST', json: body });
      expect(res.headers.get('content-type')).to.match(/application\/problem\+json/);
      return { status: res.status, code: (await res.json()).code };
    };
    const ownPort = new URL(svc.url).port;
    for (const [url, code] of [
      ['https://10.0.0.7/hook', 'webhook_url_private'],
      ['https://169.254.169.254/latest/meta-data/', 'webhook_url_private'],
      ['https://[fd12::1]/hook', 'webhook_url_private'],
      [`http://127.0.0.1:${ownPort}/api/webhooks`, 'webhook_url_own_host'],
      [`http://localhost:${ownPort}/`, 'webhook_url_own_host'],
      ['http://93.184.215.14/hook', 'webhook_url_scheme'],
      ['gopher://93.184.215.14/', 'webhook_url_invalid'],
    ] as const)
      expect(await refused(other, { url, eventTypes: ['sale.settled'] }), url).to.deep.equal({ status: 422, code });
    expect(
      await refused(other, { url: `${receiver.base}/x`, eventTypes: ['sale.settled', 'sale.exploded'] }),
    ).to.deep.equal({
      status: 422,
      code: 'webhook_event_type_unknown',
    });
    expect(
      await refused(other, {
        url: `${receiver.base}/x`,
        eventTypes: Array.from({ length: 500 }, () => 'sale.settled'),
      }),
    ).to.deep.equal({ status: 422, code: 'webhook_event_types_too_many' });
    // Nothing was stored.
    expect((await (await other.api('/api/webhooks')).json()).endpoints).to.deep.equal([]);
    // Changing a URL passes the same filter.
    const patched = await buyer.api(`/api/webhooks/${buyerHook.id}`, {
      method: 'PATCH',
      json: { url: 'https://192.168.0.10/' },
    });
    expect(patched.status).to.equal(422);
    // Without a token, nothing; with another agent's, someone else's endpoint does not exist.
    expect((await fetch(`${svc.url}/api/webhooks`)).status).to.equal(401);
    expect((await other.api(`/api/webhooks/${sellerHook.id}`, { method: 'DELETE' })).status).to.equal(404);
    expect((await other.api(`/api/webhooks/${sellerHook.id}/rotate-secret`, { method: 'POST' })).status).to.equal(404);
  });

  it('an agent has at most five endpoints', async () => {
    for (let i = 0; i < 5; i++) await createHook(other, `/other-${i}`, ['review.created']);
    const res = await other.api('/api/webhooks', {
      method: 'POST',
      json: { url: `${receiver.base}/other-5`, eventTypes: ['review.created'] },
    });
    expect(res.status).to.equal(409);
    expect((await res.json()).code).to.equal('webhook_endpoint_limit');
  });

  it('each event reaches an endpoint once; after a rotation both secrets verify for a while', async () => {
    const rotated = await (await seller.api(`/api/webhooks/${sellerHook.id}/rotate-secret`, { method: 'POST' })).json();
    expect(rotated.secret)
      .to.match(/^whsec_/)
      .and.not.equal(sellerHook.secret);
    const paymentId = await sellTo(3);
    const sale = await eventually(async () =>
      at('/seller').find((r) => {
        try {
          return verify(rotated.secret, r).data.paymentId === paymentId;
        } catch {
          return false;
        }
      }),
    );
    expect(verify(sellerHook.secret, sale).data.paymentId).to.equal(paymentId);
    const ids = at('/seller')
      .filter((r) => !r.headers['webhook-id']?.toString().startsWith('msg_ping'))
      .map((r) => r.headers['webhook-id']);
    // Every message once, but the one redelivered on request.
    expect(ids.length - new Set(ids).size).to.equal(1);
  });

  it('skill-market webhooks listen verifies and prints a delivery, and refuses a forged one', async () => {
    const hook = await createHook(seller, '/cli', ['sale.settled']);
    const out: string[] = [];
    const err: string[] = [];
    const listener = await listenForWebhooks(
      { secret: hook.secret, port: 0, host: '127.0.0.1' },
      { out: (l) => out.push(l), err: (l) => err.push(l) },
    );
    try {
      const moved = await seller.api(`/api/webhooks/${hook.id}`, { method: 'PATCH', json: { url: listener.url } });
      expect(moved.status).to.equal(200);
      expect((await seller.api(`/api/webhooks/${hook.id}/ping`, { method: 'POST' })).status).to.equal(202);
      await eventually(async () => out.find((l) => l.startsWith('ping  msg_ping_')));
      expect(out.join('\n')).to.include(hook.id);
      const [logged] = await eventually(async () => {
        const d = await deliveries(seller, hook.id);
        return d[0]?.status === 'succeeded' ? d : undefined;
      });
      expect(logged).to.deep.include({ responseStatus: 204 });
      const forged = await fetch(listener.url, {
        method: 'POST',
        headers: {
          'webhook-id': 'msg_forged',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': 'v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
        },
        body: '{"type":"sale.settled"}',
      });
      expect(forged.status).to.equal(401);
      expect(err.join('\n')).to.include('msg_forged');
    } finally {
      await listener.close();
      await seller.api(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
    }
  });

  it('a seller hears of its skill audited, a payment for it that failed, and a report about it (not who filed it)', async () => {
    const trustSeller = await registerAgent(svc, 'hook-trust-seller');
    const hook = await createHook(trustSeller, '/trust', ['skill.audited', 'payment.failed', 'report.filed']);
    const heard = (type: string) =>
      at('/trust')
        .map((r) => verify(hook.secret, r))
        .filter((e) => e.type === type);
    const skill = await publishSignedSkill(trustSeller, {
      title: 'Audited and reported',
      preview: 'Sold to test the trust events.',
      priceAtomic: PRICE.toString(),
      tags: ['testing'],
      skill: 'audited-and-reported',
    });
    const [audited] = await eventually(async () =>
      heard('skill.audited').length ? heard('skill.audited') : undefined,
    );
    expect(audited!.agentId).to.equal(trustSeller.id);
    expect(audited!.data).to.deep.include({ skillId: skill, version: 1 });
    expect(audited!.data.verdict).to.be.oneOf(['pass', 'warn', 'fail']);
    expect(audited!.data.rulesVersion).to.be.a('number');

    // A wallet without the funds signs a real authorization: the facilitator refuses it.
    const broke = await newBuyer(svc.service.runtime.chain, 0n);
    const refused = await broke.payV2(`${svc.url}/api/posts/${skill}?view=full`);
    expect(refused.status).to.equal(402);
    const [failed] = await eventually(async () =>
      heard('payment.failed').length ? heard('payment.failed') : undefined,
    );
    expect(failed!.data).to.deep.include({ skillId: skill, amount: PRICE.toString(), buyerAgentId: null });
    expect(String(failed!.data.buyer).toLowerCase()).to.equal(broke.address.toLowerCase());
    expect(failed!.data.reason).to.match(/^[a-z_]+$/);

    const report = (text: string) =>
      other.api('/api/reports', { method: 'POST', json: { postId: skill, reason: 'spam', text } });
    expect((await report('First words of the reporter')).status).to.equal(201);
    const [filed] = await eventually(async () => (heard('report.filed').length ? heard('report.filed') : undefined));
    expect(filed!.data).to.deep.include({ skillId: skill, reason: 'spam' });
    expect(JSON.stringify(filed)).to.not.include(other.id).and.not.include('First words');
    // A repeat merged into the open report is not a new one: no second event (recorded with the report).
    expect((await report('Said again')).status).to.equal(201);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM domain_events WHERE type = 'report.filed' AND post_id = ${skill}`.execute(
      svc.service.runtime.database.db,
    );
    expect(rows[0]!.n).to.equal(1);
  });

  it('a delivery whose job was lost or gave up is queued again by the sweep; one with a live job is left to it', async () => {
    const db = svc.service.runtime.database.db;
    const queue = svc.service.runtime.queues.webhooks;
    const [past] = await deliveries(buyer, buyerHook.id);
    const hooks = {
      lost: await createHook(buyer, '/stranded-lost', ['entitlement.granted']),
      gaveUp: await createHook(buyer, '/stranded-gave-up', ['entitlement.granted']),
      live: await createHook(buyer, '/stranded-live', ['entitlement.granted']),
    };
    // Deliveries recorded by a fan-out whose jobs Redis then lost: pending, with no job.
    const rows = await db
      .insertInto('webhook_deliveries')
      .values(
        Object.values(hooks).map((h) => ({
          endpoint_id: h.id,
          message_id: String(past!.messageId),
          event_type: 'entitlement.granted',
          payload: JSON.stringify(past!.payload),
          max_attempts: MAX_ATTEMPTS,
        })),
      )
      .returning(['id', 'endpoint_id'])
      .execute();
    const idOf = (h: { id: string }) => rows.find((r) => r.endpoint_id === h.id)!.id;
    // One whose job failed for good: BullMQ keeps a failed job, and with it its id.
    const gaveUpJob = `webhook-delivery-${idOf(hooks.gaveUp)}`;
    await queue.add('webhook-delivery', { deliveryId: 'not-a-delivery' }, { jobId: gaveUpJob, attempts: 1 });
    await eventually(async () => (await queue.getJob(gaveUpJob))?.isFailed());
    // One whose job is still to run (an hour away): the sweep leaves it alone.
    const liveJob = `webhook-delivery-${idOf(hooks.live)}`;
    await queue.add('webhook-delivery', { deliveryId: idOf(hooks.live) }, { jobId: liveJob, delay: 3_600_000 });

    // Nothing is overdue yet by the sweep's measure.
    const { requeue } = jobContext(svc.service.runtime).webhooks;
    expect((await sweepStrandedDeliveries({ db, requeue })).requeued).to.equal(0);
    // Eleven minutes on (an injected clock), the two without a live job are queued again.
    const later = () => new Date(Date.now() + STRANDED_AFTER_MS + 60_000);
    expect((await sweepStrandedDeliveries({ db, requeue, now: later })).requeued).to.equal(2);
    for (const [path, h] of [
      ['/stranded-lost', hooks.lost],
      ['/stranded-gave-up', hooks.gaveUp],
    ] as const) {
      const got = await eventually(async () => at(path)[0]);
      expect(verify(h.secret, got).id).to.equal(past!.messageId);
      await eventually(async () => (await deliveries(buyer, h.id)).find((d) => d.status === 'succeeded'));
    }
    expect(await (await queue.getJob(liveJob))?.isDelayed()).to.equal(true);
    expect(at('/stranded-live')).to.have.length(0);
    // A second sweep finds nothing more to queue: each delivery went out once.
    expect((await sweepStrandedDeliveries({ db, requeue, now: later })).requeued).to.equal(0);
    expect(at('/stranded-lost')).to.have.length(1);
    await (await queue.getJob(liveJob))?.remove();
    for (const h of Object.values(hooks)) await buyer.api(`/api/webhooks/${h.id}`, { method: 'DELETE' });
  });

  it('an agent that listens hears of its own documents published, one event per agent listing the paths', async () => {
    const hook = await createHook(buyer, '/docs', ['document.published']);
    const changed = await buyer.api('/api/agents/me', {
      method: 'PATCH',
      json: { bio: `Edited at ${Date.now()}, a bio long enough to count.` },
    });
    expect(changed.status, await changed.clone().text()).to.equal(200);
    const own = (path: string) => path.startsWith(`/api/agents/${buyer.handle}/`) || path === `/agents/${buyer.handle}`;
    const event = await eventually(async () =>
      at('/docs')
        .map((r) => verify(hook.secret, r))
        .find((e) => e.type === 'document.published' && (e.data.paths as string[]).some(own)),
    );
    expect(event.agentId).to.equal(buyer.id);
    // Only its own documents: nobody else's paths, and the other agents (not listening) got no event.
    for (const path of event.data.paths as string[]) expect(path).to.not.include(seller.handle);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM domain_events WHERE type = 'document.published' AND agent_id <> ${buyer.id}`.execute(
      svc.service.runtime.database.db,
    );
    expect(rows[0]!.n).to.equal(0);
    await buyer.api(`/api/webhooks/${hook.id}`, { method: 'DELETE' });
  });

  it('the delivery log keeps finished deliveries for 30 days; pending ones stay until their schedule ends', async () => {
    const db = svc.service.runtime.database.db;
    const old = new Date(Date.now() - (DELIVERY_LOG_DAYS + 1) * 86_400_000);
    const row = (status: 'succeeded' | 'pending', messageId: string) => ({
      endpoint_id: sellerHook.id,
      message_id: messageId,
      event_type: 'sale.settled',
      payload: JSON.stringify({}),
      max_attempts: 1,
      status,
      created_at: old,
    });
    await db
      .insertInto('webhook_deliveries')
      .values([row('succeeded', 'evt_old_done'), row('pending', 'evt_old_pending')])
      .execute();
    const kept = (await deliveries(seller, sellerHook.id)).length;
    expect((await pruneDeliveryLog(db)).deleted).to.equal(1);
    const left = await deliveries(seller, sellerHook.id);
    expect(left.map((d) => d.messageId))
      .to.include('evt_old_pending')
      .and.not.include('evt_old_done');
    expect(left).to.have.length(kept - 1);
  });

  it('skill-market webhooks create, list and delete manage an agent endpoint; a refused URL says why', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'skill-market-cli-webhooks-'));
    const cli = (args: string[]) => runCli(args, { cwd, url: svc.url });
    try {
      expect((await cli(['register', 'hook-cli'])).code).to.equal(0);
      const created = await cli([
        'webhooks',
        'create',
        'hook-cli',
        `${receiver.base}/cli-made`,
        '--events',
        'sale.settled,review.created',
      ]);
      expect(created.code, created.err).to.equal(0);
      const id = /^endpoint (\S+)/m.exec(created.out)?.[1];
      expect(created.out).to.match(/^secret whsec_\S+$/m);
      const listed = await cli(['webhooks', 'list', 'hook-cli']);
      expect(listed.out).to.include(`${id}  enabled`).and.include('/cli-made');
      const refused = await cli(['webhooks', 'create', 'hook-cli', 'https://10.0.0.9/x', '--events', 'sale.settled']);
      expect(refused.code).to.not.equal(0);
      expect(refused.err).to.include('webhook_url_private');
      expect((await cli(['webhooks', 'delete', 'hook-cli', id!])).code).to.equal(0);
      expect((await cli(['webhooks', 'list', 'hook-cli'])).out).to.include('has no webhook endpoints');
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
