import { expect } from 'chai';
import {
  DEFAULT_RETRY_SCHEDULE,
  JITTER,
  nominalRetryDelayMs,
  nominalRetrySpanMs,
  retryDelayMs,
} from '../../src/domain/webhooks/retry-schedule.js';
import {
  webhookBackoff,
  DeliveryRetryError,
  FANOUT_JOB_OPTIONS,
} from '../../src/domain/webhooks/deliveries.use-cases.js';
import { jobsFor } from '../../src/domain/events/dispatcher.js';

const HOUR = 3_600_000;

describe('the webhook retry schedule', () => {
  it('doubles from 30 s, is capped at 12 h, and spans about three days over 17 attempts', () => {
    const nominal = Array.from({ length: 16 }, (_, i) => nominalRetryDelayMs(i + 1, DEFAULT_RETRY_SCHEDULE.baseMs));
    expect(nominal.slice(0, 4)).to.deep.equal([30_000, 60_000, 120_000, 240_000]);
    expect(nominal[10]).to.equal(30_720_000);
    expect(nominal.slice(11)).to.deep.equal([12 * HOUR, 12 * HOUR, 12 * HOUR, 12 * HOUR, 12 * HOUR]);
    const span = nominalRetrySpanMs(DEFAULT_RETRY_SCHEDULE);
    expect(span / HOUR).to.be.within(72, 80);
    // With every draw at an extreme of the jitter the span stays between 2.5 and 4 days.
    const drawn = (r: number) =>
      Array.from({ length: 16 }, (_, i) => retryDelayMs(i + 1, DEFAULT_RETRY_SCHEDULE, () => r) ?? 0).reduce(
        (a, b) => a + b,
      );
    expect(drawn(0) / HOUR).to.be.within(60, 72);
    expect(drawn(0.999999) / HOUR).to.be.within(88, 96);
  });

  it('draws each delay within ±20 % of the nominal one, from the random source it is given', () => {
    const schedule = { baseMs: 1000, maxAttempts: 10 };
    expect(retryDelayMs(3, schedule, () => 0)).to.equal(4000 * (1 - JITTER));
    expect(retryDelayMs(3, schedule, () => 0.5)).to.equal(4000);
    expect(retryDelayMs(3, schedule, () => 0.75)).to.equal(4000 * 1.1);
    for (let i = 0; i < 200; i++) expect(retryDelayMs(2, schedule)).to.be.within(1600, 2400);
  });

  it('has no retry left after the last attempt failed', () => {
    expect(retryDelayMs(16, DEFAULT_RETRY_SCHEDULE, () => 0.5)).to.equal(12 * HOUR);
    expect(retryDelayMs(17, DEFAULT_RETRY_SCHEDULE, () => 0.5)).to.equal(undefined);
    expect(retryDelayMs(1, { baseMs: 1000, maxAttempts: 1 })).to.equal(undefined);
  });

  it('BullMQ waits the delay the failed attempt drew, and a short pause for a run that could not attempt', () => {
    expect(webhookBackoff(3, 'webhook-schedule', new DeliveryRetryError(123_456, 'answered 503'))).to.equal(123_456);
    expect(webhookBackoff(1, 'webhook-schedule', new Error('database down'))).to.equal(1000);
    expect(webhookBackoff(30, 'webhook-schedule', new Error('database down'))).to.equal(60_000);
  });

  it('a fan-out job outlasts a three-day outage: its tries, a minute apart at most, span that long', () => {
    const plan = jobsFor(
      { id: '7', type: 'purchase.settled', agent_id: null, post_id: null, payload: {} } as never,
      Date.now(),
    ).find((j) => j.name === 'webhook-fanout');
    expect(plan?.opts).to.deep.equal(FANOUT_JOB_OPTIONS);
    let waited = 0;
    for (let n = 1; n < FANOUT_JOB_OPTIONS.attempts; n++)
      waited += webhookBackoff(n, 'webhook-schedule', new Error('down'));
    expect(waited / HOUR).to.be.within(72, 80);
  });

  it('a failed payment, an audit or a report is told by webhook and recomputes none of the agent’s documents', () => {
    const event = (type: string) =>
      ({ id: '9', type, agent_id: 'a1', post_id: 'p1', payload: { version: 2 }, created_at: new Date() }) as never;
    for (const type of ['payment.failed', 'post.audited', 'report.filed', 'document.published'])
      expect(jobsFor(event(type), 0).map((j) => j.name)).to.deep.equal(['webhook-fanout']);
    expect(jobsFor(event('purchase.settled'), 0).map((j) => j.name)).to.deep.equal([
      'agent-documents',
      'webhook-fanout',
    ]);
  });
});
