import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort, sleep } from '../../src/platform/net.js';

/** How long a starting redis-server may take to answer; it takes tens of ms, a loaded machine far more. */
const READY_WITHIN_MS = 10_000;

/**
 * A redis-server of a test's own, so the test can take it away and bring it back on the same port
 * without touching the Redis every other test shares. Nothing is persisted (`--save ''
 * --appendonly no`): a restarted server starts empty, as a Redis that lost its memory does.
 */
export class RedisServer {
  private child: ChildProcess | undefined;
  private frozen = false;

  private constructor(readonly port: number) {}

  /** Starts one on `port`, or on a free port when none is given, and resolves once it answers. */
  static async start(port?: number): Promise<RedisServer> {
    // A free port can be taken by someone else before redis-server binds it: then take another.
    for (let attempt = 1; ; attempt++) {
      const server = new RedisServer(port ?? (await freePort()));
      try {
        await server.restart();
        return server;
      } catch (err) {
        if (port !== undefined || attempt >= 3) throw err;
      }
    }
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** The redis-server process, for a test that signals it itself; undefined after `kill` or `stop`. */
  get process(): ChildProcess | undefined {
    return this.child;
  }

  /** Whether the process is there (it may be frozen). */
  get running(): boolean {
    return this.child !== undefined;
  }

  /** Starts it (again, after `kill` or `stop`) on its port; resolves once it answers. */
  async restart(): Promise<void> {
    if (this.child) throw new Error(`redis-server on port ${this.port} is already running`);
    const child = spawn(
      'redis-server',
      ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    // Never outlive the test process, even one that ends without running its `after` hooks.
    const killOnExit = () => child.kill('SIGKILL');
    process.once('exit', killOnExit);
    child.once('exit', () => process.off('exit', killOnExit));
    await new Promise<void>((resolve, reject) => child.once('spawn', resolve).once('error', reject));
    this.child = child;
    this.frozen = false;
    const deadline = Date.now() + READY_WITHIN_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        this.child = undefined;
        throw new Error(
          `redis-server on port ${this.port} exited (${child.exitCode ?? child.signalCode}) before answering`,
        );
      }
      // Its own answer, not that of another server already on the port (this one would then exit).
      if ((await serverPid(this.url)) === child.pid) return;
      await sleep(20);
    }
    await this.kill();
    throw new Error(`redis-server on port ${this.port} did not answer within ${READY_WITHIN_MS} ms`);
  }

  /** Stops it answering while its connections stay open (SIGSTOP), as a partition or a stalled host does. */
  freeze(): void {
    if (!this.child) return;
    this.child.kill('SIGSTOP');
    this.frozen = true;
  }

  /** Lets a frozen server answer again (SIGCONT); it goes on with the connections it had. */
  thaw(): void {
    if (!this.child || !this.frozen) return;
    this.child.kill('SIGCONT');
    this.frozen = false;
  }

  /** Kills it the way a crash or an OOM kill does (SIGKILL: no shutdown, connections reset); resolves once it is gone. */
  async kill(): Promise<void> {
    await this.end('SIGKILL');
  }

  /** Shuts it down in order (SIGTERM), thawing it first if it is frozen; resolves once it is gone. */
  async stop(): Promise<void> {
    this.thaw();
    await this.end('SIGTERM');
  }

  private async end(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    this.child = undefined;
    this.frozen = false;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  }
}

/** The pid of the Redis answering at `url`, if one answers. */
async function serverPid(url: string): Promise<number | undefined> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 500,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    const pid = /^process_id:(\d+)/m.exec(await probe.info('server'))?.[1];
    return pid === undefined ? undefined : Number(pid);
  } catch {
    return undefined;
  } finally {
    probe.disconnect();
  }
}
