import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/platform/net.js';

const ROOT = join(import.meta.dirname, '../..');

/**
 * The machine's yardstick for a bench run: requests per second a bare Express route serves the same
 * bytes at, from its own process, to `clients` concurrent clients for `seconds`. Figures of one run
 * divided by this one can be compared across days; raw figures cannot (machines of one kind differ
 * up to 3× from day to day).
 */
export async function bareExpressRps(opts: { clients: number; seconds: number; body: Buffer }): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'yardstick-'));
  const file = join(dir, 'body');
  writeFileSync(file, opts.body);
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/support/bare-express.ts', String(port), file], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`bare Express exited with ${code}`)));
      child.stdout?.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    });
    const url = `http://127.0.0.1:${port}/bare`;
    const deadline = Date.now() + opts.seconds * 1000;
    const started = performance.now();
    let served = 0;
    await Promise.all(
      Array.from({ length: opts.clients }, async () => {
        while (Date.now() < deadline) {
          const res = await fetch(url);
          await res.arrayBuffer();
          if (res.ok) served++;
        }
      }),
    );
    return served / ((performance.now() - started) / 1000);
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}
