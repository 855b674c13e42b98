import type { SettleResponse } from '@x402/core/types';
import { isAddressEqual } from 'viem';
import type { Eip3009Transfer } from '../protocol/eip3009.js';
import { NotSentError } from './facilitator.js';
import { RecordState } from './record-state.js';

/** An authorization waiting for its batch, and how to answer the requests that wait for it. */
export interface QueuedTransfer {
  transfer: Eip3009Transfer;
  /** Whether the payment is recorded as being settled yet; nothing is sent for it before. */
  record: RecordState;
  /** A batch waited for its record already: later batches go without it until it is done. */
  waited: boolean;
  queuedAt: number;
  done(result: SettleResponse): void;
  fail(err: unknown): void;
}

export interface BatchQueueOptions {
  /** The most authorizations in one batch. */
  maxBatch: number;
  /** The longest a batch waits for its payments to be recorded as being settled. */
  recordWaitMs: number;
}

/**
 * The authorizations waiting to be sent, in arrival order, each once: a second request for one
 * queued or in flight (a retry overlapping the live request, copies of one request) shares the
 * first one's answer instead of failing the simulation against it. It hands out batches of one
 * token, and holds a batch back until its payments are recorded as being settled.
 */
export class BatchQueue {
  private readonly waiting: QueuedTransfer[] = [];
  private readonly inFlight = new Map<string, { entry: QueuedTransfer; answer: Promise<SettleResponse> }>();

  constructor(private readonly opts: BatchQueueOptions) {}

  /**
   * Queues a transfer; resolves with its own settlement answer. `ready` is the write of its
   * payment's record; a copy of a transfer already queued or in flight adds its own write to that
   * one's and shares its answer (whichever of their claims wins, the payment is recorded).
   */
  add(transfer: Eip3009Transfer, ready?: Promise<void>): Promise<SettleResponse> {
    const key = keyOf(transfer);
    const known = this.inFlight.get(key);
    if (known) {
      if (ready) known.entry.record.add(ready);
      return known.answer;
    }
    let entry!: QueuedTransfer;
    const answer = new Promise<SettleResponse>((done, fail) => {
      // Forgotten the moment it is answered: a copy arriving after that is a payment of its own.
      const forget = () => this.inFlight.delete(key);
      entry = {
        transfer,
        record: new RecordState(ready),
        waited: false,
        queuedAt: Date.now(),
        done: (result) => {
          forget();
          done(result);
        },
        fail: (err) => {
          forget();
          fail(err);
        },
      };
    });
    this.inFlight.set(key, { entry, answer });
    this.waiting.push(entry);
    return answer;
  }

  /** The next batch, taken off the queue: up to `maxBatch` of the oldest transfer's token, oldest first. */
  take(): QueuedTransfer[] | undefined {
    const first = this.waiting[0];
    if (!first) return undefined;
    const token = first.transfer.token;
    const batch = this.waiting.filter((e) => isAddressEqual(e.transfer.token, token)).slice(0, this.opts.maxBatch);
    const taken = new Set(batch);
    this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((e) => !taken.has(e)));
    return batch;
  }

  /** Whether a transfer is back in the queue (see `recorded`). */
  holds(entry: QueuedTransfer): boolean {
    return this.waiting.includes(entry);
  }

  /**
   * The entries recorded as being settled, in order, after waiting up to `recordWaitMs` for those
   * no batch waited for yet. One whose record failed is answered with NotSentError; one not
   * recorded yet goes back to the head of the queue, and no later batch waits for it.
   */
  async recorded(entries: QueuedTransfer[]): Promise<QueuedTransfer[]> {
    const awaited = entries.filter((e) => e.record.state === 'pending' && !e.waited);
    if (awaited.length) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(awaited.map((e) => e.record.settled)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, this.opts.recordWaitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    const go: QueuedTransfer[] = [];
    const again: QueuedTransfer[] = [];
    for (const e of entries) {
      const { state } = e.record;
      if (state === 'done') go.push(e);
      else if (state === 'pending') {
        e.waited = true;
        again.push(e);
      } else e.fail(new NotSentError(state.failed));
    }
    this.waiting.unshift(...again);
    return go;
  }
}

/**
 * Every signed field and the signature: a copy altered anywhere (a forged signature over someone's
 * payer and nonce, another validity window under theirs) shares nothing with the real one.
 */
function keyOf(t: Eip3009Transfer): string {
  return [t.token, t.from, t.to, t.value, t.validAfter, t.validBefore, t.nonce, t.signature]
    .map((field) => String(field).toLowerCase())
    .join(':');
}
