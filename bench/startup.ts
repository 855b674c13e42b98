/**
 * `npm start` from nothing to the site card being served, on embedded defaults (PGlite created and
 * migrated, s3rver, anvil deployed, Redis found), in a fresh data directory each run.
 *
 *   npx tsx bench/startup.ts [--runs 3]
 *
 * Target: under 30 s after `npm ci` on a fresh clone. The clock starts before `npm start` is
 * spawned and stops when the site card comes from the bucket (the edge sets Last-Modified).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { freePort } from '../src/platform/net.js';
import { eventually } from '../test/support/service.js';
import { printRunInfo } from './support/run-info.js';

printRunInfo();

const { values } = parseArgs({ options: { runs: { type: 'string', default: '3' } } });
const times: number[] = [];
for (let i = 0; i < Number(values.runs); i++) {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'market-startup-'));
  const started = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: join(import.meta.dirname, '..'),
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      QUEUE_PREFIX: `s${randomBytes(4).toString('hex')}`,
    },
    stdio: 'ignore',
    detached: true,
  });
  try {
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/.well-known/agent-card.json`)).headers.get('last-modified'),
      120_000,
      50,
    );
    times.push((performance.now() - started) / 1000);
    console.log(`run ${i + 1}: site card served after ${times.at(-1)!.toFixed(1)} s`);
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}
const sorted = [...times].sort((a, b) => a - b);
console.log(
  `\nnpm start → site card served: median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} s, worst ${sorted.at(-1)!.toFixed(1)} s (target < 30 s)`,
);
process.exit(0);
