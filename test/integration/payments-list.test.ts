import { expect } from 'chai';
import { decodePaymentResponseHeader } from '@x402/core/http';
import { registerAgent, type Agent } from '../support/agents.js';
import { startTestService, type TestService } from '../support/service.js';
import { skillBody } from '../support/skills.js';

describe('payments: an agent lists its own, anyone finds a settlement by its transaction', function () {
  this.timeout(120_000);
  let svc: TestService;
  let seller: Agent;
  let buyer: Agent;
  let paymentId: string;
  let txHash: string;
  const get = (path: string, init?: RequestInit) => fetch(`${svc.url}${path}`, init);

  before(async () => {
    svc = await startTestService();
    seller = await registerAgent(svc, 'ledger-seller');
    buyer = await registerAgent(svc, 'ledger-buyer');
    const created = await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Ledger lines',
        preview: 'A skill bought to list a payment.',
        priceAtomic: '750000',
        body: skillBody('ledger-lines'),
      },
    });
    expect(created.status).to.equal(201);
    const postId = (await created.json()).id;
    expect((await seller.api(`/api/posts/${postId}/publish`, { method: 'POST' })).status).to.equal(200);
    const paid = await buyer.payV2(`${svc.url}/api/posts/${postId}?view=full`);
    expect(paid.status).to.equal(200);
    paymentId = paid.headers.get('x-payment-id')!;
    txHash = decodePaymentResponseHeader(paid.headers.get('payment-response')!).transaction;
  });
  after(async () => svc?.stop());

  it("lists the buyer's purchase and registration, newest first, with the payer's own fields", async () => {
    const res = await buyer.api('/api/payments');
    expect(res.status).to.equal(200);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const { items, nextCursor } = await res.json();
    expect(items.map((p: { purpose: string }) => p.purpose)).to.deep.equal(['purchase', 'registration']);
    expect(items[0]).to.include({ id: paymentId, status: 'settled', amount: '750000', txHash });
    expect(items[0].payer.toLowerCase()).to.equal(buyer.address.toLowerCase());
    expect(nextCursor).to.equal(null);
  });

  it("lists the seller's sale next to its registration", async () => {
    const { items } = await (await seller.api('/api/payments')).json();
    expect(items.map((p: { id: string }) => p.id)).to.include(paymentId);
    expect(items).to.have.length(2);
  });

  it('walks page by page with the cursor, each payment once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: Array<{ id: string }>; nextCursor: string | null } = await (
        await buyer.api(`/api/payments?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      expect(page.items).to.have.length(1);
      seen.push(page.items[0]!.id);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).to.have.length(2);
    expect(new Set(seen).size).to.equal(2);
    expect(seen[0]).to.equal(paymentId);
  });

  it("finds a settlement by its transaction hash for anyone, without the payer's fields", async () => {
    const res = await get(`/api/payments?txHash=${txHash}`);
    expect(res.status).to.equal(200);
    const { items } = await res.json();
    expect(items).to.have.length(1);
    expect(items[0]).to.include({ id: paymentId, txHash });
    expect(items[0]).to.not.have.property('payer');
  });

  it('pages through payments created within one millisecond without skipping any', async () => {
    const wallet = seller.address.toLowerCase();
    for (const [n, micros] of ['123456', '123789', '123999'].entries())
      await svc.service.runtime.database.pool.query(
        `INSERT INTO payments (id, purpose, status, protocol_version, network, asset, payer, pay_to, amount_atomic, nonce,
                               valid_after, valid_before, resource, payload, requirements, created_at, updated_at)
         VALUES (gen_random_uuid(), 'purchase', 'failed', 2, 'eip155:84532', '0x${'0'.repeat(39)}a', '0x${'b'.repeat(40)}', $1, 1,
                 '0x' || md5($2) || md5('n' || $2), now(), now() + interval '5 minutes', 'https://market.example/x', '{}', '{}',
                 $3::timestamptz, now())`,
        [wallet, `same-ms-${n}`, `2026-01-02T03:04:05.${micros}Z`],
      );
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { items: Array<{ id: string; createdAt: string }>; nextCursor: string | null } = await (
        await seller.api(`/api/payments?limit=1${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      seen.push(...page.items.map((p) => p.id));
      cursor = page.nextCursor;
    } while (cursor);
    const { items: all } = await (await seller.api('/api/payments?limit=100')).json();
    expect(all).to.have.length(5);
    expect(seen).to.deep.equal(all.map((p: { id: string }) => p.id));
  });

  it('refuses what it cannot answer with a clear problem', async () => {
    const anonymous = await get('/api/payments');
    expect(anonymous.status).to.equal(401);
    expect((await anonymous.json()).code).to.equal('token_missing');

    const forged = (text: string) => Buffer.from(text).toString('base64url');
    for (const bad of [
      'not-a-cursor',
      forged('-100000-01-01T00:00:00.000000Z|00000000-0000-4000-8000-000000000000'),
      forged('2026-13-45T00:00:00.000000Z|00000000-0000-4000-8000-000000000000'),
      forged('2026-01-01T00:00:00.000000Z|nope'),
    ]) {
      const cursor = await buyer.api(`/api/payments?cursor=${bad}`);
      expect(cursor.status, bad).to.equal(400);
      expect((await cursor.json()).invalidParams[0].name).to.equal('cursor');
    }

    const badHash = await get('/api/payments?txHash=0x1234');
    expect(badHash.status).to.equal(400);
    expect((await badHash.json()).invalidParams[0].name).to.equal('txHash');

    // A transaction hash where a payment id belongs says where to look instead.
    const byHash = await get(`/api/payments/${txHash}`);
    expect(byHash.status).to.equal(400);
    expect((await byHash.json()).invalidParams[0].reason).to.contain('/api/payments?txHash=');
  });
});
