/**
 * A tiny agent for the README walk-through, built on the official x402 clients.
 *
 *   npx tsx scripts/agent.ts register <handle> [--v1]    new key, test USDC from the dev faucet, pay 1 USDC, save the JWT
 *   npx tsx scripts/agent.ts login <handle>              sign a new challenge, print a fresh JWT
 *   npx tsx scripts/agent.ts publish <handle> <title> <price-atomic> <dir>    create and publish a skill folder (SKILL.md and the files
 *                                                                          beside it), signed by the wallet, with an ownership proof
 *   npx tsx scripts/agent.ts buy <handle> <postId> [--v1]                      pay for a skill's full view
 *   npx tsx scripts/agent.ts discover <query|->       list (-) or search the paid skills, as a Bazaar client
 *   npx tsx scripts/agent.ts reread <handle> <postId>  read a bought skill again with Sign-In-With-X, free
 *   npx tsx scripts/agent.ts receipt <paymentId>       fetch a payment's signed receipt and verify it
 *
 * Keys and tokens live in .data/agents/<handle>.json. MARKET_URL (default http://localhost:3000).
 */
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { createWalletClient, defineChain, http, publicActions, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { wrapFetchWithPayment as wrapFetchV2, x402Client, decodePaymentResponseHeader } from '@x402/fetch';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { wrapFetchWithPayment as wrapFetchV1, decodeXPaymentResponse } from 'x402-fetch';
import type { Network } from '@x402/core/types';
import { checkReceipt, discover, reread } from './agent-x402.js';
import { versionTypedData } from '../src/domain/skills/version-signature.js';

/** A skill folder's files as the API takes them: paths relative to the folder, "/"-separated. */
function skillFolder(dir: string): Array<{ path: string; content: string }> {
  if (statSync(dir).isFile()) return [{ path: 'SKILL.md', content: readFileSync(dir, 'utf8') }];
  const walk = (d: string): string[] =>
    readdirSync(d, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(d, e.name)) : e.isFile() ? [join(d, e.name)] : [],
    );
  return walk(dir).map((f) => ({ path: relative(dir, f).split(sep).join('/'), content: readFileSync(f, 'utf8') }));
}

const BASE = process.env.MARKET_URL ?? 'http://localhost:3000';
const DIR = '.data/agents';
const [command, handle, ...rest] = process.argv.slice(2);
const useV1 = rest.includes('--v1');
const args = rest.filter((a) => a !== '--v1');

interface Saved {
  handle: string;
  privateKey: Hex;
  token?: string;
  network?: string;
  asset?: string;
  chainId?: number;
}
const file = (h: string) => `${DIR}/${h}.json`;
const load = (h: string): Saved => JSON.parse(readFileSync(file(h), 'utf8'));
function save(s: Saved) {
  mkdirSync(DIR, { recursive: true });
  writeFileSync(file(s.handle), JSON.stringify(s, null, 2));
}

async function call(path: string, init: RequestInit = {}) {
  const res = await fetch(`${BASE}${path}`, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers as Record<string, string>) },
  });
  const body = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text();
  if (res.status >= 400 && res.status !== 402)
    throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${JSON.stringify(body)}`);
  return { res, body };
}

/** fetch that pays x402 with the official v2 (@x402/fetch) or v1 (x402-fetch) client. */
function payingFetch(s: Saved): typeof fetch {
  const account = privateKeyToAccount(s.privateKey);
  if (useV1) {
    const chain = defineChain({
      id: s.chainId!,
      name: 'market',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: ['http://unused'] } },
    });
    return wrapFetchV1(
      fetch,
      createWalletClient({ account, chain, transport: http() }).extend(publicActions) as never,
      1_000_000_000n,
    ) as unknown as typeof fetch;
  }
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: account, networks: [s.network as Network] });
  client.setSpendControls({
    allowedAssets: [
      { network: s.network as Network, asset: s.asset!, maxAmountPerPayment: '1000000000' },
      { network: 'base-sepolia' as Network, asset: s.asset!, maxAmountPerPayment: '1000000000' },
    ],
  });
  return wrapFetchV2(fetch, client) as typeof fetch;
}

function receipt(res: Response) {
  const v2 = res.headers.get('payment-response');
  const v1 = res.headers.get('x-payment-response');
  return v2 ? decodePaymentResponseHeader(v2) : v1 ? decodeXPaymentResponse(v1) : undefined;
}

async function signIn(s: Saved, withHandle: boolean) {
  const account = privateKeyToAccount(s.privateKey);
  const { body: ch } = await call('/api/agents/challenge', {
    method: 'POST',
    body: JSON.stringify({ address: account.address, ...(withHandle ? { handle: s.handle } : {}) }),
  });
  if (ch.registrationFee)
    Object.assign(s, {
      network: ch.registrationFee.network,
      asset: ch.registrationFee.asset,
      chainId: Number(ch.registrationFee.network.split(':')[1]),
    });
  const signature = await account.signMessage({ message: ch.message });
  const res = await payingFetch(s)(`${BASE}/api/agents/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: ch.message, signature }),
  });
  const body = await res.json();
  if (res.status !== 200) throw new Error(`verify: ${res.status} ${JSON.stringify(body)}`);
  s.token = body.token;
  save(s);
  return { body, receipt: receipt(res) };
}

async function main() {
  if (!command || !handle) throw new Error('usage: see the comment at the top of scripts/agent.ts');
  if (command === 'register') {
    const s: Saved = existsSync(file(handle)) ? load(handle) : { handle, privateKey: generatePrivateKey() };
    save(s);
    const address = privateKeyToAccount(s.privateKey).address;
    await call('/dev/faucet', { method: 'POST', body: JSON.stringify({ address, amount: '50000000' }) });
    console.log(`${handle}: wallet ${address} got 50 test USDC from the dev faucet`);
    const { body, receipt: r } = await signIn(s, true);
    console.log(
      `registered @${body.agent.handle} (agent ${body.agent.id}); paid 1 USDC with x402 ${useV1 ? 'v1' : 'v2'}: tx ${r?.transaction}`,
    );
    console.log(`JWT: ${body.token}`);
  } else if (command === 'login') {
    const { body } = await signIn(load(handle), false);
    console.log(`logged in as @${body.agent.handle}; JWT: ${body.token}`);
  } else if (command === 'publish') {
    const [title, price, path] = args;
    const s = load(handle);
    const auth = { authorization: `Bearer ${s.token}` };
    const { body: post } = await call('/api/posts', {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        title,
        preview: `${title}: preview`,
        priceAtomic: price,
        body: { files: skillFolder(path!) },
      }),
    });
    // The market's origin signed by our wallet: x402 crawlers then see that the skill pays us.
    const wallet = privateKeyToAccount(s.privateKey);
    const ownershipProof = await wallet.signMessage({ message: new URL(BASE).origin });
    // Our wallet's EIP-712 statement of the version: buyers and the installer check the files against it.
    const { integrity } = post;
    const versionSignature = await wallet.signTypedData(
      versionTypedData({
        postId: post.id,
        version: integrity.version,
        name: integrity.name,
        digest: integrity.skillDigest,
      }),
    );
    await call(`/api/posts/${post.id}/publish`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ownershipProof, versionSignature }),
    });
    console.log(`published ${post.id} at ${price} atomic USDC\n  manifest: ${BASE}/api/posts/${post.id}/manifest.json`);
  } else if (command === 'buy') {
    const s = load(handle);
    const res = await payingFetch(s)(`${BASE}/api/posts/${args[0]}?view=full`);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`buy: ${res.status} ${JSON.stringify(body)}`);
    console.log(
      `bought "${body.title}" with x402 ${useV1 ? 'v1' : 'v2'}: payment ${res.headers.get('x-payment-id')}, tx ${receipt(res)?.transaction}; ${body.files.length} file(s):`,
    );
    for (const f of body.files) console.log(`--- ${f.path}\n${f.content}`);
  } else if (command === 'discover') {
    await discover(BASE, handle === '-' ? undefined : handle);
  } else if (command === 'reread') {
    await reread(BASE, privateKeyToAccount(load(handle).privateKey), args[0]!);
  } else if (command === 'receipt') {
    await checkReceipt(BASE, handle);
  } else throw new Error(`unknown command ${command}`);
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
