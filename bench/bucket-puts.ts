/**
 * The client's CPU per bucket put, the way publishing puts documents (16 in flight): the object
 * store's direct SigV4-signed put against the AWS SDK's PutObjectCommand, alternating in rounds
 * against one s3rver in its own process, so the figures are this process's own CPU.
 *
 *   npx tsx bench/bucket-puts.ts [--puts 4000] [--rounds 3]
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mapBounded } from '../src/platform/bounded-map.js';
import { freePort } from '../src/platform/net.js';
import { startS3rver } from '../src/platform/object-store.js';
import { signedPut } from '../src/platform/signed-put.js';
import { quietAwsNodeVersionWarning } from '../src/platform/node-warnings.js';
import { printRunInfo } from './support/run-info.js';

if (process.argv[2] === '--serve') {
  await startS3rver(process.argv[3]!, 'bench', Number(process.argv[4]));
  process.send?.('ready');
} else {
  printRunInfo();
  quietAwsNodeVersionWarning();
  const { values } = parseArgs({
    options: { puts: { type: 'string', default: '4000' }, rounds: { type: 'string', default: '3' } },
  });
  const puts = Number(values.puts);
  const dir = mkdtempSync(join(tmpdir(), 'bench-puts-'));
  const port = await freePort();
  const server = fork(import.meta.filename, ['--serve', join(dir, 'bucket'), String(port)], {
    execArgv: ['--import', 'tsx'],
  });
  await new Promise((resolve) => server.once('message', resolve));
  const endpoint = `http://127.0.0.1:${port}`;
  const credentials = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };
  const direct = signedPut({
    endpoint,
    region: 'us-east-1',
    bucket: 'bench',
    forcePathStyle: true,
    credentials,
    maxSockets: 32,
    requestTimeoutMs: 10_000,
  });
  const sdk = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const body = Buffer.alloc(2_000, 'x');
  const headers = { 'content-type': 'application/json', 'cache-control': 'public, max-age=60' };
  const clients: Record<string, (key: string) => Promise<unknown>> = {
    direct: (key: string) => direct.put(key, body, headers),
    sdk: (key: string) =>
      sdk.send(
        new PutObjectCommand({
          Bucket: 'bench',
          Key: key,
          Body: body,
          ContentType: headers['content-type'],
          CacheControl: headers['cache-control'],
        }),
      ),
  };
  // The first round warms both clients up (code compiled, connections open): reported, not averaged.
  const results: Record<string, { cpuMs: number; seconds: number }[]> = { direct: [], sdk: [] };
  try {
    for (let round = 1; round <= Number(values.rounds); round++)
      for (const [name, put] of Object.entries(clients)) {
        const cpu = process.cpuUsage();
        const started = performance.now();
        await mapBounded(
          Array.from({ length: puts }, (_, i) => i),
          16,
          (i) => put(`api/agents/a${i % 500}/${name}-${round}-${i}.json`),
        );
        const used = process.cpuUsage(cpu);
        results[name]!.push({ cpuMs: (used.user + used.system) / 1000, seconds: (performance.now() - started) / 1000 });
      }
    for (const [name, runs] of Object.entries(results)) {
      const cpu = runs.map((r) => r.cpuMs / puts);
      const rate = runs.map((r) => puts / r.seconds);
      console.log(
        `${name.padEnd(6)} client CPU per put ${cpu.map((c) => c.toFixed(3)).join(' / ')} ms; ` +
          `puts per second ${rate.map((r) => r.toFixed(0)).join(' / ')} (s3rver bound)`,
      );
    }
    const mean = (xs: { cpuMs: number }[]) => {
      const warm = xs.slice(1);
      return warm.reduce((n, r) => n + r.cpuMs, 0) / warm.length;
    };
    console.log(`direct / sdk client CPU, warm rounds: ${(mean(results.direct!) / mean(results.sdk!)).toFixed(2)}×`);
  } finally {
    direct.close();
    sdk.destroy();
    server.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
