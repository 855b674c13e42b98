import { expect } from 'chai';
import { mapBounded } from '../../src/platform/bounded-map.js';

describe('mapBounded', () => {
  it('keeps at most the limit in flight and returns results in input order', async () => {
    let inFlight = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const done = mapBounded([1, 2, 3, 4, 5], 2, async (n) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise<void>((resolve) => gates.push(resolve));
      inFlight--;
      return n * 10;
    });
    // Release the calls one at a time, newest first, so they finish out of order.
    while (gates.length || inFlight) {
      await Promise.resolve();
      gates.pop()?.();
      await new Promise((r) => setImmediate(r));
    }
    expect(await done).to.deep.equal([10, 20, 30, 40, 50]);
    expect(most).to.equal(2);
  });

  it('maps nothing for no items, and rejects with the first failure', async () => {
    expect(await mapBounded([], 4, async () => 1)).to.deep.equal([]);
    let error: unknown;
    await mapBounded([1, 2], 1, async (n) => {
      if (n === 1) throw new Error('first');
      return n;
    }).catch((err: unknown) => {
      error = err;
    });
    expect(error).to.be.instanceOf(Error);
  });

  it('after a failure starts nothing more, and rejects only once the calls in flight have ended', async () => {
    const started: number[] = [];
    let slowEnded = false;
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const done = mapBounded([1, 2, 3, 4], 2, async (n) => {
      started.push(n);
      if (n === 1) {
        await slow;
        slowEnded = true;
        return n;
      }
      throw new Error(`failed ${n}`);
    });
    let settled = false;
    const outcome = done.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    void outcome.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled, 'still waiting for the call in flight').to.equal(false);
    release();
    expect(await outcome).to.equal('failed 2');
    expect(slowEnded).to.equal(true);
    expect(started).to.deep.equal([1, 2]);
  });
});
