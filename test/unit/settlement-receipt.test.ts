import { expect } from 'chai';
import { receiptOf } from '../../src/domain/payments/facilitators/builtin-facilitator.js';

const notMined = () => Object.assign(new Error('Transaction receipt could not be found.'), { name: 'NotFound' });

describe('waiting for a settlement transaction to be mined', () => {
  it('finds a receipt the block watcher never reports (no new block comes)', async () => {
    let asked = 0;
    const receipt = await receiptOf(
      async () => {
        asked++;
        if (asked < 4) throw notMined();
        return { status: 'success' };
      },
      () => new Promise<{ status: string }>(() => {}),
      5,
    );
    expect(receipt).to.deep.equal({ status: 'success' });
    expect(asked).to.equal(4);
  });

  it("takes the watcher's answer, and its timeout, and then stops asking", async () => {
    let asked = 0;
    const get = async () => {
      asked++;
      throw notMined();
    };
    const timedOut = await receiptOf(
      get,
      () => new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), 30)),
      5,
    ).catch((err: Error) => err.message);
    expect(timedOut).to.equal('timed out');
    const after = asked;
    await new Promise((r) => setTimeout(r, 100));
    expect(asked, 'no receipt asked for after the wait ended').to.be.at.most(after + 1);
    expect(await receiptOf(get, async () => 'mined', 5)).to.equal('mined');
  });
});
