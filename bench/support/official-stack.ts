/**
 * The anchor of the paid-path bench: what a developer would build with the official x402 stack
 * instead of this service. An Express app whose paid route is guarded by `@x402/express`'s
 * `paymentMiddleware`, with the official facilitator (`x402Facilitator` from
 * `@x402/core/facilitator` and `@x402/evm`'s exact scheme, registered with its own helper) in
 * the same process, settling on the bench's chain. It sells fixed bytes (the skill responses the
 * service answered) at a fixed price.
 *
 *   node --import tsx bench/support/official-stack.ts <config.json>
 *
 * Run as its own process, like the service it is compared with, so that neither server shares an
 * event loop with the bench's buyers. Prints `official stack ready` when it listens.
 *
 * The facilitator's signer is the one the x402 examples build from a viem wallet client, with two
 * settings any deployment on this chain needs: viem's nonce manager (without it, concurrent
 * settlements from one key read the same pending nonce and collide) and the chain's polling
 * interval the service also runs with (viem's default of 4 s per receipt poll would measure the
 * setting, not the stack).
 *
 * `GET /bench/timings` (unpaid) answers the server's own time of every paid request answered 200
 * since the last call, and empties the list: from the first middleware to the moment the response
 * is written, minus the time spent inside the facilitator's verify and settle (measured by
 * wrapping the facilitator the middleware calls).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { x402Facilitator } from '@x402/core/facilitator';
import type { FacilitatorClient } from '@x402/core/server';
import type { Network, SupportedResponse } from '@x402/core/types';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { receiptOf } from '../../src/domain/payments/facilitators/builtin-facilitator.js';
import { registerExactEvmScheme as registerFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { registerExactEvmScheme as registerServerScheme } from '@x402/evm/exact/server';
import { createWalletClient, defineChain, http, publicActions, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { createNonceManager, jsonRpc } from 'viem/nonce';
import { freePort } from '../../src/platform/net.js';

/** What the bench hands the anchor: where the chain is, what it sells, at what price, to whom. */
export interface OfficialStackConfig {
  port: number;
  rpcUrl: string;
  chainId: number;
  usdc: { address: Address; name: string; version: string };
  payTo: Address;
  priceAtomic: string;
  facilitatorPrivateKey: Hex;
  pollingIntervalMs: number;
  /** The bytes sold per post id (a JSON document each), as the service answered them. */
  bodies: Record<string, string>;
}

/** One paid request answered 200: whole server time, facilitator time, and their difference. */
export interface OfficialTiming {
  totalMs: number;
  facilitatorMs: number;
  ownMs: number;
}

async function main(configPath: string) {
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as OfficialStackConfig;
  const network = `eip155:${config.chainId}` as Network;
  const chain = defineChain({
    id: config.chainId,
    name: 'local',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [config.rpcUrl] } },
  });
  const account = privateKeyToAccount(config.facilitatorPrivateKey, {
    nonceManager: createNonceManager({ source: jsonRpc() }),
  });
  const wallet = createWalletClient({
    account,
    chain,
    transport: http(config.rpcUrl),
    pollingInterval: config.pollingIntervalMs,
  }).extend(publicActions);
  const signer = toFacilitatorEvmSigner({
    address: account.address,
    readContract: (args) => wallet.readContract(args),
    // The signer interface declares typed data as plain records; viem checks them at run time.
    verifyTypedData: (args) => wallet.verifyTypedData(args as Parameters<typeof wallet.verifyTypedData>[0]),
    writeContract: (args) => wallet.writeContract(args),
    sendTransaction: (args) => wallet.sendTransaction(args),
    // The service's receipt wait (receiptOf): viem's block watcher alone, on a chain that mines on
    // arrival with one buyer as its only traffic, can miss a mined receipt until its 180 s timeout
    // (seen in this stack's single-buyer pass), which would measure anvil, not the stack.
    waitForTransactionReceipt: (args) =>
      receiptOf(
        () => wallet.getTransactionReceipt({ hash: args.hash }),
        () => wallet.waitForTransactionReceipt(args),
        config.pollingIntervalMs,
      ),
    getCode: (args) => wallet.getCode(args),
  });
  const facilitator = registerFacilitatorScheme(new x402Facilitator(), { signer, networks: network });

  // The facilitator as the middleware sees it, timed per request.
  const current = new AsyncLocalStorage<{ facilitatorMs: number }>();
  const timed = async <T>(call: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await call();
    } finally {
      const store = current.getStore();
      if (store) store.facilitatorMs += performance.now() - t0;
    }
  };
  const client: FacilitatorClient = {
    verify: (payload, requirements) => timed(() => facilitator.verify(payload, requirements)),
    settle: (payload, requirements) => timed(() => facilitator.settle(payload, requirements)),
    getSupported: async () => facilitator.getSupported() as SupportedResponse,
  };
  const resourceServer = registerServerScheme(new x402ResourceServer(client), { networks: [network] });

  const timings: OfficialTiming[] = [];
  const app = express();
  app.get('/bench/timings', (_req, res) => {
    res.json(timings.splice(0));
  });
  // First in the chain: starts the clock and the per-request facilitator account. The payment
  // middleware buffers the handler's response until settlement and then calls this `end`.
  app.use((req, res, next) => {
    const started = performance.now();
    const store = { facilitatorMs: 0 };
    const end = res.end.bind(res) as (...args: unknown[]) => typeof res;
    res.end = ((...args: unknown[]) => {
      if (res.statusCode === 200 && req.path.startsWith('/api/posts/')) {
        const totalMs = performance.now() - started;
        timings.push({ totalMs, facilitatorMs: store.facilitatorMs, ownMs: totalMs - store.facilitatorMs });
      }
      return end(...args);
    }) as typeof res.end;
    current.run(store, next);
  });
  app.use(
    paymentMiddleware(
      {
        'GET /api/posts/*': {
          accepts: {
            scheme: 'exact',
            network,
            payTo: config.payTo,
            price: {
              amount: config.priceAtomic,
              asset: config.usdc.address,
              extra: { name: config.usdc.name, version: config.usdc.version },
            },
            maxTimeoutSeconds: 60,
          },
          description: 'A skill',
          mimeType: 'application/json',
        },
      },
      resourceServer,
    ),
  );
  app.get('/api/posts/:id', (req, res) => {
    const body = config.bodies[req.params.id];
    if (body === undefined) {
      res.status(404).json({ code: 'not_found' });
      return;
    }
    res.set('Cache-Control', 'no-store').type('application/json').send(body);
  });
  app.listen(config.port, '127.0.0.1', () => console.log('official stack ready'));
}

/** The anchor as a running process: its URL, the timings it measured, and how to stop it. */
export interface OfficialStack {
  url: string;
  /** The timings of the paid requests answered 200 since the last call. */
  takeTimings(): Promise<OfficialTiming[]>;
  stop(): Promise<void>;
}

/** Starts the anchor as its own process on `config` (its port chosen here) and waits until it listens. */
export async function startOfficialStack(config: Omit<OfficialStackConfig, 'port'>): Promise<OfficialStack> {
  const dir = mkdtempSync(join(tmpdir(), 'official-stack-'));
  const file = join(dir, 'config.json');
  const port = await freePort();
  writeFileSync(file, JSON.stringify({ ...config, port }));
  const child = spawn(
    process.execPath,
    ['--max-semi-space-size=32', '--import', 'tsx', 'bench/support/official-stack.ts', file],
    {
      cwd: join(import.meta.dirname, '../..'),
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`the official stack exited with ${code}`)));
      child.stdout?.on('data', (d: Buffer) => {
        process.stdout.write(d);
        if (d.toString().includes('official stack ready')) resolve();
      });
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    takeTimings: async () => (await (await fetch(`${url}/bench/timings`)).json()) as OfficialTiming[],
    stop,
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main(process.argv[2]!);
