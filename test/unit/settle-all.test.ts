import { expect } from 'chai';
import { allSettledOrThrow } from '../../src/platform/settle-all.js';

describe('allSettledOrThrow', () => {
  it('answers every value in order', async () => {
    expect(await allSettledOrThrow([Promise.resolve(1), Promise.resolve('two'), 3])).to.deep.equal([1, 'two', 3]);
  });

  it('throws the first failure in order only once the work beside it has ended', async () => {
    let release: () => void = () => undefined;
    let ended = false;
    const slow = new Promise<string>((resolve) => {
      release = () => resolve('done');
    }).then((v) => {
      ended = true;
      return v;
    });
    const outcome = allSettledOrThrow([
      Promise.reject(new Error('first')),
      slow,
      Promise.reject(new Error('second')),
    ]).then(
      () => 'resolved',
      (err: Error) => ({ message: err.message, ended }),
    );
    // Both failures have happened; the slow read still runs, so nothing is thrown yet.
    await new Promise((r) => setImmediate(r));
    let answered = false;
    void outcome.then(() => {
      answered = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(answered).to.equal(false);
    release();
    expect(await outcome).to.deep.equal({ message: 'first', ended: true });
  });
});
