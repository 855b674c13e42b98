import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { freePort, sleep } from '../net.js';

/** A running anvil node. */
export interface AnvilInstance {
  rpcUrl: string;
  chainId: number;
  /** Stops anvil and resolves once the process has exited. Safe to call twice. */
  stop(): Promise<void>;
}

export interface StartAnvilOptions {
  /** Defaults to 84532 (Base Sepolia): x402 v1 clients only pay on networks they know by name. */
  chainId?: number;
  /** Defaults to a free loopback port. */
  port?: number;
  /** How long to wait for the RPC to answer. Default 10 s. */
  readyTimeoutMs?: number;
}

const require = createRequire(import.meta.url);

/**
 * Finds the anvil binary: the npm package `@foundry-rs/anvil-<os>-<arch>` (an optional
 * dependency of this project for linux-x64, the platform our machines and CI run), else
 * `anvil` on PATH (Foundry's installer puts it there on any other platform). We depend on the
 * platform package directly rather than the `@foundry-rs/anvil` wrapper because the registry
 * mirror our machines use lacks the wrapper's other platform packages, which breaks `npm ci`.
 */
export function resolveAnvilBinary(): string {
  const os = process.platform === 'win32' ? 'win32' : process.platform;
  const arch = process.arch === 'x64' ? 'amd64' : process.arch;
  const pkg = `@foundry-rs/anvil-${os}-${arch}`;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  try {
    const bin = join(dirname(require.resolve(`${pkg}/package.json`)), 'bin', exe);
    if (existsSync(bin)) return bin;
  } catch {
    // Not installed for this platform: fall back to PATH below.
  }
  return exe;
}

/**
 * Starts a local anvil node on 127.0.0.1 and waits until it answers `eth_chainId`.
 *
 * The block clock is anvil's default (wall clock) and is never moved: EIP-3009 time windows
 * are checked against real time by clients and facilitators.
 */
export async function startAnvil(opts: StartAnvilOptions = {}): Promise<AnvilInstance> {
  const chainId = opts.chainId ?? 84532;
  const bin = resolveAnvilBinary();
  // A free port can be taken between probing and binding; retry only when we chose it.
  const attempts = opts.port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    const port = opts.port ?? (await freePort());
    try {
      return await launch(bin, chainId, port, opts.readyTimeoutMs ?? 10_000);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function launch(bin: string, chainId: number, port: number, timeoutMs: number): Promise<AnvilInstance> {
  // Otherwise anvil fails to bind and exits, but whatever already listens there may answer our
  // readiness probe first (typically another anvil), and we would hand out someone else's chain.
  if (!(await portIsFree(port))) throw new Error(`cannot start anvil: 127.0.0.1:${port} is already in use`);
  const args = ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(chainId), '--silent'];
  const child = spawnWithWatchdog(bin, args);
  const rpcUrl = `http://127.0.0.1:${port}`;

  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let hasExited = false;
  const exited = new Promise<void>((resolve) => {
    const done = () => {
      hasExited = true;
      resolve();
    };
    child.once('exit', done);
    // Spawn failures (no /bin/sh, EACCES) arrive as 'error' without an 'exit'.
    child.once('error', (err) => {
      stderr += String(err);
      done();
    });
  });

  // 'exit' handlers run on process.exit() and normal end; the stdin watchdog covers signals and crashes.
  const onParentExit = () => {
    child.stdin?.destroy();
    killGroup(child, 'SIGKILL');
  };
  process.on('exit', onParentExit);

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.off('exit', onParentExit);
      // Closing stdin makes the watchdog SIGTERM anvil (and end itself); the wrapper exits once
      // anvil has. Close it even if anvil already died, so the watchdog does not linger.
      child.stdin?.destroy();
      if (hasExited) return;
      child.ref(); // we unref'd it once ready; keep the process alive until anvil is gone
      const killer = setTimeout(() => killGroup(child, 'SIGKILL'), 3000);
      await exited;
      clearTimeout(killer);
    })());

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (hasExited) {
      await stop();
      const hint = /not found|ENOENT/.test(stderr)
        ? ' (no anvil binary: on linux-x64 `npm ci` installs it; elsewhere install Foundry so `anvil` is on PATH, or set RPC_URL)'
        : '';
      throw new Error(`anvil exited before answering on ${rpcUrl}: ${stderr.trim() || 'no output'}${hint}`);
    }
    if ((await answersChainId(rpcUrl)) && !hasExited) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`anvil did not answer eth_chainId on ${rpcUrl} within ${timeoutMs} ms: ${stderr.trim()}`);
    }
    await sleep(15);
  }
  // Do not keep the parent's event loop alive just because the chain is running.
  child.unref();
  for (const pipe of [child.stdin, child.stderr]) if (pipe instanceof Socket) pipe.unref();
  return { rpcUrl, chainId, stop };
}

/**
 * Spawns anvil behind a tiny POSIX shell watchdog: the shell holds our pipe on stdin and
 * kills anvil when it reads EOF. The pipe closes when this process dies for any reason
 * (even SIGKILL), so anvil never outlives us. The shell runs in its own process group so a
 * terminal Ctrl-C reaches us (and our shutdown path) rather than anvil directly.
 */
function spawnWithWatchdog(bin: string, args: string[]): ChildProcess {
  if (process.platform === 'win32') {
    return spawn(bin, args, { stdio: ['pipe', 'ignore', 'pipe'], windowsHide: true });
  }
  const script = [
    'exec 3<&0', // keep our pipe; background jobs get /dev/null as stdin
    '"$0" "$@" </dev/null & pid=$!',
    '( cat <&3 >/dev/null; kill "$pid" 2>/dev/null ) &',
    'wait "$pid"',
  ].join('\n');
  return spawn('/bin/sh', ['-c', script, bin, ...args], { stdio: ['pipe', 'ignore', 'pipe'], detached: true });
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    if (process.platform === 'win32') child.kill(signal);
    else process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

async function answersChainId(rpcUrl: string): Promise<boolean> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    const body = (await res.json()) as { result?: string };
    return typeof body.result === 'string';
  } catch {
    return false;
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}
