import { expect } from 'chai';
import { coalesced } from '../../src/platform/coalesce.js';

describe('coalesced: calls of one turn of the event loop run as one', () => {
  it('runs the calls made in one turn once, in order, and answers each with its own output', async () => {
    const runs: number[][] = [];
    const double = coalesced(async (xs: number[]) => {
      runs.push(xs);
      return xs.map((x) => x * 2);
    });
    const outs = await Promise.all([double(1), double(2), double(3)]);
    expect(outs).to.deep.equal([2, 4, 6]);
    expect(runs).to.deep.equal([[1, 2, 3]]);
    expect(await double(4)).to.equal(8);
    expect(runs).to.deep.equal([[1, 2, 3], [4]]);
  });

  it('gives every caller of a failed run its error, and the next turn runs again', async () => {
    let fail = true;
    const f = coalesced(async (xs: string[]) => {
      if (fail) throw new Error('database unavailable');
      return xs;
    });
    const results = await Promise.allSettled([f('a'), f('b')]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    fail = false;
    expect(await f('c')).to.equal('c');
  });
});
