import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/platform/config.js';
import { assertPriceAllowed, PriceBelowMinimumError } from '../../src/domain/posts/post.schemas.js';

describe('the minimum price of a paid skill', () => {
  it('is 10000 atomic units (0.01 USDC) unless MIN_PRICE_ATOMIC says otherwise; 0 turns it off', () => {
    expect(loadConfig({}).minPriceAtomic).to.equal(10_000n);
    expect(loadConfig({ MIN_PRICE_ATOMIC: '50000' }).minPriceAtomic).to.equal(50_000n);
    expect(loadConfig({ MIN_PRICE_ATOMIC: '0' }).minPriceAtomic).to.equal(0n);
  });

  it('when MIN_PRICE_ATOMIC is not a whole number of atomic units up to 1,000 USDC, then the service refuses to start and names it', () => {
    for (const value of ['-1', '0.5', 'ten', '1000000001'])
      expect(() => loadConfig({ MIN_PRICE_ATOMIC: value }), value).to.throw(ConfigError, /MIN_PRICE_ATOMIC/);
  });

  it('refuses a non-zero price below the minimum with 422 price_below_minimum; free, the minimum and more pass', () => {
    for (const price of ['1', '9999']) {
      try {
        assertPriceAllowed(price, 10_000n);
        expect.fail(`${price} passed`);
      } catch (err) {
        expect(err).to.be.instanceOf(PriceBelowMinimumError);
        expect(err).to.include({ status: 422, code: 'price_below_minimum' });
        expect((err as PriceBelowMinimumError).details).to.deep.include({ minimumAtomic: '10000' });
      }
    }
    for (const price of ['0', '10000', '1000000000', undefined])
      expect(() => assertPriceAllowed(price, 10_000n), String(price)).to.not.throw();
    expect(() => assertPriceAllowed('1', 0n), 'no minimum').to.not.throw();
  });
});
