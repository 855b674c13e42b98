import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import {
  messagesFor,
  WEBHOOK_DATA,
  WEBHOOK_EVENT_TYPES,
  WEBHOOK_SOURCE_EVENTS,
  WebhookMessage,
  type SourceEvent,
} from '../../src/domain/webhooks/webhook-events.js';
import { signedHeaders } from '../../src/domain/webhooks/deliveries.use-cases.js';
import { checkEventTypes, newSecret } from '../../src/domain/webhooks/webhooks.use-cases.js';
import type { AppError } from '../../src/platform/errors.js';

const SELLER = '11111111-1111-4111-8111-111111111111';
const BUYER_AGENT = '22222222-2222-4222-8222-222222222222';
const POST = '33333333-3333-4333-8333-333333333333';
const WALLET = '0x00000000000000000000000000000000000000b1';
const at = new Date('2026-11-28T12:00:00.000Z');

const event = (type: string, payload: Record<string, unknown>, agent: string | null = SELLER): SourceEvent => ({
  id: '42',
  type,
  agent_id: agent,
  post_id: POST,
  payload,
  created_at: at,
});

describe('webhook messages from domain events', () => {
  it('a settled purchase is a sale for the seller and an entitlement for a buyer agent, with the event time and sequence', () => {
    const out = messagesFor(
      event('purchase.settled', { paymentId: 'p1', buyer: WALLET, buyerAgentId: BUYER_AGENT, amount: '250000' }),
    );
    expect(out.map((m) => [m.agentId, m.message.type])).to.deep.equal([
      [SELLER, 'sale.settled'],
      [BUYER_AGENT, 'entitlement.granted'],
    ]);
    const sale = out[0]!.message;
    expect(sale).to.deep.include({ id: 'evt_42_sale.settled', timestamp: at.toISOString(), sequence: 42 });
    expect(sale.data).to.deep.equal({
      paymentId: 'p1',
      skillId: POST,
      buyer: WALLET,
      buyerAgentId: BUYER_AGENT,
      amount: '250000',
    });
    for (const m of out) expect(WebhookMessage.safeParse(m.message).success).to.equal(true);
  });

  it('a wallet that is no agent gets no entitlement message', () => {
    const out = messagesFor(
      event('purchase.settled', { paymentId: 'p1', buyer: WALLET, buyerAgentId: null, amount: '1' }),
    );
    expect(out.map((m) => m.message.type)).to.deep.equal(['sale.settled']);
  });

  it('each source event gives the documented type, whose data passes its schema', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['review.posted', { reviewId: 'r', buyer: WALLET, rating: 4, revision: 0 }, 'review.created'],
      ['review.revoked', { reviewId: 'r', buyer: WALLET }, 'review.revoked'],
      ['refund.requested', { paymentId: 'p', reason: 'does_not_work' }, 'refund.requested'],
      [
        'purchase.refunded',
        { paymentId: 'p', refundId: 'f', amount: '5', buyer: WALLET, txHash: '0xab' },
        'refund.settled',
      ],
      ['moderation.taken_down', { action: 'a', reason: 'malware', version: null }, 'skill.taken_down'],
      [
        'webhook.endpoint_disabled',
        { endpointId: 'e', url: 'https://x.example/', deliveryId: 'd' },
        'endpoint.disabled',
      ],
      [
        'payment.failed',
        { paymentId: 'p', buyer: WALLET, buyerAgentId: null, amount: '5', reason: 'insufficient_funds' },
        'payment.failed',
      ],
      ['post.audited', { version: 2, verdict: 'warn', rulesVersion: 3 }, 'skill.audited'],
      ['report.filed', { reportId: 'r', reason: 'spam' }, 'report.filed'],
      ['document.published', { paths: ['/api/agents/alice/score.json'] }, 'document.published'],
    ];
    for (const [source, payload, type] of cases) {
      expect(WEBHOOK_SOURCE_EVENTS.has(source), source).to.equal(true);
      const [m] = messagesFor(event(source, payload));
      expect(m?.message.type, source).to.equal(type);
      expect(WEBHOOK_DATA[type as keyof typeof WEBHOOK_DATA].safeParse(m?.message.data).success, source).to.equal(true);
    }
  });

  it('an event the schema does not fit is refused rather than sent in another shape', () => {
    expect(() => messagesFor(event('review.posted', { reviewId: 'r', buyer: 'not-an-address', rating: 4 }))).to.throw();
  });

  it('events webhooks do not carry give no message', () => {
    expect(messagesFor(event('post.updated', {}))).to.deep.equal([]);
    expect(WEBHOOK_SOURCE_EVENTS.has('post.updated')).to.equal(false);
  });
});

describe('webhook signatures and event type lists', () => {
  it('signs with the standardwebhooks package, and with the previous secret too while it lasts', () => {
    const secret = newSecret();
    const previous = newSecret();
    const body = JSON.stringify({ hello: 'world' });
    const d = {
      message_id: 'evt_1_sale.settled',
      secret,
      previous_secret: previous,
      previous_secret_until: new Date(Date.now() + 60_000),
    };
    const headers = signedHeaders(d, new Date(), body);
    expect(headers['webhook-signature']?.split(' ')).to.have.length(2);
    expect(new Webhook(secret).verify(body, headers)).to.deep.equal({ hello: 'world' });
    expect(new Webhook(previous).verify(body, headers)).to.deep.equal({ hello: 'world' });
    const expired = signedHeaders({ ...d, previous_secret_until: new Date(Date.now() - 1) }, new Date(), body);
    expect(() => new Webhook(previous).verify(body, expired)).to.throw();
    expect(() => new Webhook(secret).verify(`${body} `, headers)).to.throw();
  });

  it('refuses unknown types, repeated types and oversize lists with stable codes', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as AppError).code;
      }
      return undefined;
    };
    expect(checkEventTypes(['sale.settled', 'review.created'])).to.deep.equal(['sale.settled', 'review.created']);
    expect(code(() => checkEventTypes(['sale.settled', 'sale.exploded']))).to.equal('webhook_event_type_unknown');
    expect(code(() => checkEventTypes(['sale.settled', 'sale.settled']))).to.equal('webhook_event_types_too_many');
    expect(code(() => checkEventTypes(Array.from({ length: 17 }, (_, i) => `t${i}`)))).to.equal(
      'webhook_event_types_too_many',
    );
    expect(WEBHOOK_EVENT_TYPES.length).to.be.at.most(16);
  });
});
