import { expect } from 'chai';
import { isPublicAddress } from '../../src/platform/outbound-fetch.js';

describe('outbound fetches: which addresses count as public', () => {
  it('loopback, private, link-local, reserved and documentation ranges are not public, in every IPv4 and IPv6 spelling', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '203.0.113.9',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '2001:db8::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::7f00:1',
      '::ffff:0:7f00:1',
      '64:ff9b::a00:1',
      '2002:7f00:1::1',
    ]) {
      expect(isPublicAddress(address), address).to.equal(false);
    }
  });

  it('public addresses are public', () => {
    for (const address of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])
      expect(isPublicAddress(address), address).to.equal(true);
  });
});
