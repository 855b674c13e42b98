/**
 * A skill bought over MCP next to the same skill bought over HTTP, in one run against one service
 * process: the same buyer, the same price, the same paywall, facilitator and chain. Purchases
 * alternate between the two transports, so both see the same conditions.
 *
 *   npx tsx bench/mcp-purchase.ts [--purchases 200]
 *
 * Each purchase is measured twice, as a client lives it: the unpaid request that answers the
 * payment requirement (HTTP 402 with PAYMENT-REQUIRED; MCP buy_skill answering a PaymentRequired
 * tool error), then the paid request (PAYMENT-SIGNATURE; buy_skill with `_meta["x402/payment"]`)
 * that settles on the local chain and returns the skill. The MCP client is the SDK's own
 * (Client + StreamableHTTPClientTransport), initialized once. Authorizations are signed before the
 * clock starts. Ends with an audit: every purchase is exactly one settled payment and one on-chain
 * transfer.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { startServiceProcess } from './support/service-process.js';
import { registerAgent } from '../test/support/agents.js';
import { balanceOf, signAuthorization, v2Header } from '../test/support/buyers.js';
import { buySkill, connectMcp } from '../test/support/mcp.js';
import { printRunInfo } from './support/run-info.js';
import { fmt, pct } from './support/stats.js';

printRunInfo();

const { values } = parseArgs({ options: { purchases: { type: 'string', default: '200' } } });
const PURCHASES = Number(values.purchases);
const WARM_UP = 20;
const PRICE = 10_000n; // 0.01 USDC

const svc = await startServiceProcess();
try {
  const chain = svc.chain;
  process.stdout.write(`service up at ${svc.url}; publishing a skill and funding a buyer…\n`);
  const seller = await registerAgent({ url: svc.url, chain }, 'bench-mcp-seller');
  const post = await (
    await seller.api('/api/posts', {
      method: 'POST',
      json: {
        title: 'Bench weather report',
        preview: 'A skill bought over HTTP and over MCP.',
        body: {
          files: [
            {
              path: 'SKILL.md',
              content: `---\nname: bench-weather-report\ndescription: Writes a weather report.\n---\n# Weather report\n${'lorem '.repeat(200)}`,
            },
            { path: 'scripts/fetch.sh', content: '#!/bin/sh\ncurl -s "https://forecast.example/$1"\n' },
          ],
        },
        priceAtomic: PRICE.toString(),
      },
    })
  ).json();
  await seller.api(`/api/posts/${post.id}/publish`, { method: 'POST' });
  const fullUrl = `${svc.url}/api/posts/${post.id}?view=full`;
  const template = decodePaymentRequiredHeader((await fetch(fullUrl)).headers.get('payment-required')!).accepts[0]!;

  const buyer = privateKeyToAccount(generatePrivateKey());
  const total = 2 * (PURCHASES + WARM_UP);
  await chain.faucet!(buyer.address, BigInt(total) * PRICE);
  const sellerBefore = await balanceOf(chain, seller.address);
  process.stdout.write(`pre-signing ${total} authorizations…\n`);
  const signed: Awaited<ReturnType<typeof signAuthorization>>[] = [];
  for (let k = 0; k < total; k++)
    signed.push(
      await signAuthorization(buyer, chain, {
        to: template.payTo as `0x${string}`,
        value: PRICE,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
      }),
    );

  const mcp = await connectMcp(svc.url);
  const samples = {
    http: { requirement: [] as number[], paid: [] as number[] },
    mcp: { requirement: [] as number[], paid: [] as number[] },
  };
  const refused = new Map<string, number>();
  const refuse = (key: string) => refused.set(key, (refused.get(key) ?? 0) + 1);
  let settled = 0;

  const viaHttp = async (record: boolean) => {
    let t0 = performance.now();
    const challenge = await fetch(fullUrl);
    await challenge.arrayBuffer();
    const requirementMs = performance.now() - t0;
    if (challenge.status !== 402) return refuse(`http requirement ${challenge.status}`);
    const header = v2Header({ ...template }, signed.pop()!);
    t0 = performance.now();
    const res = await fetch(fullUrl, { headers: { 'PAYMENT-SIGNATURE': header } });
    const body = await res.json();
    const paidMs = performance.now() - t0;
    if (res.status !== 200 || !Array.isArray(body.files)) return refuse(`http ${res.status} ${body.code ?? ''}`);
    settled++;
    if (!record) return;
    samples.http.requirement.push(requirementMs);
    samples.http.paid.push(paidMs);
  };

  const viaMcp = async (record: boolean) => {
    let t0 = performance.now();
    const required = await buySkill(mcp, post.id);
    const requirementMs = performance.now() - t0;
    if (!required.isError || !required.structuredContent?.accepts) return refuse('mcp requirement not answered');
    const payment = JSON.parse(
      Buffer.from(v2Header({ ...template }, signed.pop()!), 'base64').toString('utf8'),
    ) as PaymentPayload;
    t0 = performance.now();
    const result: CallToolResult = await buySkill(mcp, post.id, payment);
    const paidMs = performance.now() - t0;
    if (result.isError || !result._meta?.['x402/payment-response']) {
      const reason = (result.structuredContent as { error?: unknown } | undefined)?.error;
      return refuse(`mcp ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`);
    }
    settled++;
    if (!record) return;
    samples.mcp.requirement.push(requirementMs);
    samples.mcp.paid.push(paidMs);
  };

  process.stdout.write(`warm-up: ${WARM_UP} purchases each way, unrecorded\n`);
  for (let i = 0; i < WARM_UP; i++) {
    await viaHttp(false);
    await viaMcp(false);
  }
  process.stdout.write(`measuring: ${PURCHASES} purchases each way, alternating\n`);
  for (let i = 0; i < PURCHASES; i++) {
    // Which goes first alternates too, so neither always follows the other's settlement.
    if (i % 2) {
      await viaHttp(true);
      await viaMcp(true);
    } else {
      await viaMcp(true);
      await viaHttp(true);
    }
  }
  await mcp.close();

  const db = new pg.Client({ connectionString: svc.database.url });
  await db.connect();
  const settledRows = (
    await db.query<{ n: number }>("SELECT count(*)::int AS n FROM payments WHERE status = 'settled' AND post_id = $1", [
      post.id,
    ])
  ).rows[0]!.n;
  const purchases = (
    await db.query<{ n: number }>('SELECT count(*)::int AS n FROM purchases WHERE post_id = $1', [post.id])
  ).rows[0]!.n;
  await db.end();
  const sellerDelta = (await balanceOf(chain, seller.address)) - sellerBefore;

  const line = (label: string, xs: number[]) =>
    `${label}: p50 ${fmt(pct(xs, 50))} ms, p95 ${fmt(pct(xs, 95))} ms (${xs.length} purchases)`;
  console.log('\n== a skill bought over MCP and over HTTP (x402 v2, built-in facilitator, anvil, PostgreSQL) ==');
  console.log(
    `one buyer, sequential, alternating; price ${PRICE} atomic; ${WARM_UP} unrecorded warm-up purchases each`,
  );
  console.log(line('HTTP  paid request (GET ?view=full + PAYMENT-SIGNATURE)', samples.http.paid));
  console.log(line('MCP   paid request (tools/call buy_skill + _meta["x402/payment"])', samples.mcp.paid));
  console.log(line('HTTP  payment requirement (402)', samples.http.requirement));
  console.log(line('MCP   payment requirement (PaymentRequired tool error)', samples.mcp.requirement));
  console.log(
    `MCP minus HTTP at p50: paid ${fmt(pct(samples.mcp.paid, 50) - pct(samples.http.paid, 50))} ms, requirement ${fmt(pct(samples.mcp.requirement, 50) - pct(samples.http.requirement, 50))} ms`,
  );
  if (refused.size) console.log(`refused: ${JSON.stringify(Object.fromEntries(refused))}`);
  console.log(
    `audit: ${settled} purchases answered; settled payments ${settledRows}, purchases recorded ${purchases}; seller received ${sellerDelta} (expected ${BigInt(settled) * PRICE})`,
  );
  console.log(
    settledRows === settled && purchases === settled && sellerDelta === BigInt(settled) * PRICE
      ? 'one charge per purchase: ledger and chain agree'
      : 'MISMATCH: ledger and chain disagree',
  );
} finally {
  await svc.stop();
}
