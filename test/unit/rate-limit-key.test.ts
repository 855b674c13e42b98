import { expect } from 'chai';
import { clientKey } from '../../src/api/middleware/rate-limit.js';
import { parseRateLimits, DEFAULT_RATE_LIMITS } from '../../src/platform/rate-limit-policy.js';

describe('rate limits: who is counted, and the policy an operator writes', () => {
  it('an IPv4 client is counted by its address, also when it arrives IPv4-mapped', () => {
    expect(clientKey('203.0.113.7')).to.equal('203.0.113.7');
    expect(clientKey('::ffff:203.0.113.7')).to.equal('203.0.113.7');
  });

  it('IPv6 clients of one /64 share one count, whichever addresses they use in it', () => {
    const a = clientKey('2001:db8:1:2:aaaa::1');
    expect(clientKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).to.equal(a);
    expect(clientKey('2001:0db8:0001:0002::9')).to.equal(a);
    expect(clientKey('2001:db8:1:3::1')).to.not.equal(a);
    expect(clientKey('::1')).to.equal('0:0:0:0::/64');
  });

  it('RATE_LIMITS overrides named buckets, turns limits off, and names a bad pair', () => {
    expect(parseRateLimits(undefined)).to.deep.equal(DEFAULT_RATE_LIMITS);
    expect(parseRateLimits('search=5, posting=7')).to.deep.equal({ ...DEFAULT_RATE_LIMITS, search: 5, posting: 7 });
    expect(parseRateLimits('off')).to.equal(undefined);
    expect(() => parseRateLimits('searches=5')).to.throw(/"searches=5"/);
    expect(() => parseRateLimits('search=0')).to.throw(/"search=0"/);
  });
});
