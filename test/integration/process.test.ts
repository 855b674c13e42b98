import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/platform/net.js';
import { eventually } from '../support/service.js';

const ROOT = join(import.meta.dirname, '../..');

function startProcess(env: Record<string, string>, role = 'all') {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', role], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe('the service as a process (npm start on embedded defaults)', function () {
  this.timeout(90_000);

  it('serves a schema-valid site card with no configuration, then stops cleanly on SIGTERM within 10 s', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'market-proc-'));
    const port = await freePort();
    // Only what keeps this run apart from others on the machine: port, data dir, queue prefix.
    const proc = startProcess({
      PORT: String(port),
      DATA_DIR: dataDir,
      QUEUE_PREFIX: `p${randomBytes(4).toString('hex')}`,
    });
    let child: ChildProcess | undefined = proc.child;
    try {
      const started = Date.now();
      const res = await eventually(
        async () => {
          const r = await fetch(`http://127.0.0.1:${port}/.well-known/agent-card.json`);
          // Last-Modified is set only by the edge, i.e. the card came from the bucket.
          return r.status === 200 && r.headers.get('last-modified') ? r : undefined;
        },
        60_000,
        200,
      );
      const readyMs = Date.now() - started;
      expect(readyMs).to.be.lessThan(60_000);
      const card = await res.json();
      expect(card.protocolVersion).to.equal('0.3.0');

      const stopAsked = Date.now();
      proc.child.kill('SIGTERM');
      const code = await proc.exited;
      child = undefined;
      expect(code, proc.output().slice(-2000)).to.equal(0);
      expect(Date.now() - stopAsked).to.be.lessThan(10_000);
      expect(proc.output()).to.contain('stopped cleanly');
    } finally {
      child?.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('in production mode with dev parts, refuses to start and says what is missing', async () => {
    const proc = startProcess({ NODE_ENV: 'production' });
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.contain('DATABASE_URL is required in production');
  });

  it('a split role refuses embedded defaults, which it could not share', async () => {
    const proc = startProcess({ PORT: String(await freePort()) }, 'worker');
    expect(await proc.exited).to.equal(2);
    expect(proc.output()).to.match(/Role "worker" shares its data/);
  });
});
