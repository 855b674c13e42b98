import { expect } from 'chai';
import { withFreshNonceOnConflict } from '../../src/domain/payments/facilitators/nonce-sender.js';

describe('settlement transactions whose nonce another process took', () => {
  it('forget the local nonce and resend until the node accepts', async () => {
    let calls = 0;
    let resets = 0;
    const hash = await withFreshNonceOnConflict(
      async () => {
        calls++;
        if (calls < 3)
          throw Object.assign(
            new Error('Nonce provided for the transaction is lower than the current nonce of the account.'),
            { details: 'nonce too low' },
          );
        return '0xabc';
      },
      () => resets++,
    );
    expect(hash).to.equal('0xabc');
    expect(calls).to.equal(3);
    expect(resets).to.equal(2);
  });

  it('pass any other failure through at once, without resending', async () => {
    let calls = 0;
    const err = await withFreshNonceOnConflict(
      async () => {
        calls++;
        throw new Error('execution reverted: FiatTokenV2: authorization is used or canceled');
      },
      () => undefined,
    ).catch((e: Error) => e);
    expect(err).to.be.instanceOf(Error).with.property('message').that.contains('authorization is used');
    expect(calls).to.equal(1);
  });

  it("give up after the last attempt with the node's error", async () => {
    let calls = 0;
    const err = await withFreshNonceOnConflict(
      async () => {
        calls++;
        throw new Error('replacement transaction underpriced');
      },
      () => undefined,
      3,
    ).catch((e: Error) => e);
    expect(err.message).to.equal('replacement transaction underpriced');
    expect(calls).to.equal(3);
  });
});
