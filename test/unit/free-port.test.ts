import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { expect } from 'chai';
import { freePort } from '../../src/platform/net.js';

/** The kernel's first ephemeral port; where it cannot be read (not Linux), freePort takes the kernel's choice. */
function ephemeralLow(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 65_536;
  }
}

describe('freePort', () => {
  it('hands out ports below the range outgoing connections take, never the same one twice, each bindable', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, () => freePort()));
    expect(new Set(ports).size).to.equal(ports.length);
    for (const port of ports) {
      expect(port).to.be.at.least(10_000);
      expect(port).to.be.below(ephemeralLow());
    }
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(ports[0], '127.0.0.1', resolve);
    });
    await new Promise((resolve) => srv.close(resolve));
  });
});
