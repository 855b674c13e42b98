#!/usr/bin/env node
/**
 * Runs before `npm test` (npm's pretest): checks, within seconds, what the suite talks to, and sets
 * up what it can. PostgreSQL and Redis must be running (they hold data, so they are not started
 * here); nginx (the multi-process topology test runs infra/edge/edge.conf in it) and chromium (the
 * browser tests drive it) are installed from Debian's packages when missing and this runs as root.
 * Anything else missing stops the run with what to install, instead of failing minutes into the suite.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const pgUrl = new URL(process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const redisUrl = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
const problems = [];

/** Opens a TCP connection, sends `probe` (if any) and resolves with the first bytes answered. */
function talk(host, port, probe, timeoutMs = 3000) {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      if (probe) return socket.write(probe);
      clearTimeout(timer);
      socket.end();
      resolve('');
    });
    socket.once('data', (d) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(d.toString());
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

const onPath = (cmd) =>
  [
    '/usr/sbin',
    '/usr/bin',
    '/sbin',
    '/bin',
    '/usr/local/sbin',
    '/usr/local/bin',
    ...(process.env.PATH ?? '').split(':'),
  ].some((dir) => dir && existsSync(join(dir, cmd)));

// PostgreSQL: a TCP answer on the configured port (the suite connects with TEST_DATABASE_URL).
const pgHost = pgUrl.hostname || '127.0.0.1';
const pgPort = Number(pgUrl.port || 5432);
await talk(pgHost, pgPort, '').catch((err) =>
  problems.push(
    `PostgreSQL does not answer at ${pgHost}:${pgPort} (${err.message}). Install and start it: ` +
      `apt-get install postgresql && pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start ` +
      `(trust auth for postgres on 127.0.0.1), or set TEST_DATABASE_URL.`,
  ),
);

// Redis: PING answers +PONG.
const redisHost = redisUrl.hostname || '127.0.0.1';
const redisPort = Number(redisUrl.port || 6379);
await talk(redisHost, redisPort, 'PING\r\n')
  .then((answer) => {
    if (!answer.startsWith('+PONG')) throw new Error(`answered ${JSON.stringify(answer.trim())}`);
  })
  .catch((err) =>
    problems.push(
      `Redis does not answer PING at ${redisHost}:${redisPort} (${err.message}). Install and start it: ` +
        `apt-get install redis-server && redis-server --daemonize yes --save "" --appendonly no, or set TEST_REDIS_URL.`,
    ),
  );

// The local chain: the anvil binary comes with npm ci on linux-x64.
const anvil = join(ROOT, 'node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil');
if (!existsSync(anvil) && !onPath('anvil'))
  problems.push('anvil is missing: run npm ci (linux-x64), or install Foundry so anvil is on PATH.');

// Debian packages the suite runs: installed here when it can be (as root with apt-get).
// Chromium is looked for where the browser tests launch it (test/support/browser.ts).
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DEBIAN_TOOLS = [
  {
    command: 'nginx',
    pkg: 'nginx-light',
    why: 'the topology test runs infra/edge/edge.conf in it',
    present: () => onPath('nginx'),
  },
  {
    command: chromium,
    pkg: 'chromium',
    why: 'the browser tests drive it with playwright-core; CHROMIUM_PATH names another build',
    present: () => existsSync(chromium),
  },
];
const absent = DEBIAN_TOOLS.filter((t) => !t.present());
if (absent.length) {
  const root = process.getuid?.() === 0;
  const pkgs = absent.map((t) => t.pkg);
  for (const t of absent) console.log(`${t.command} is missing (${t.why})`);
  if (root && onPath('apt-get')) {
    console.log(`installing ${pkgs.join(' ')} from Debian's packages…`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    const ran = (...args) => spawnSync('apt-get', args, { stdio: 'inherit', env }).status === 0;
    ran('update', '-qq') && ran('install', '-y', '-qq', ...pkgs);
  }
  for (const t of absent.filter((t) => !t.present()))
    problems.push(`${t.command} is missing (${t.why}): apt-get install ${t.pkg}`);
}

if (problems.length) {
  console.error(`\nThe tests cannot run yet:\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
  process.exit(1);
}
console.log(
  `test prerequisites: PostgreSQL ${pgHost}:${pgPort}, Redis ${redisHost}:${redisPort}, anvil, nginx, chromium`,
);
