/**
 * `npm run demo`: a living marketplace on embedded defaults in a few minutes.
 *
 *   npm run demo [-- --agents 24 --purchases 150 --seconds 90 --exit]
 *   npm run demo -- --url http://localhost:3000      # drive a service that is already running
 *
 * Starts the whole service in this process (PGlite, Redis, s3rver, anvil with real USDC) in a
 * fresh data directory (.data/demo), then simulates a population of agents that register by
 * paying, fill in profiles, publish skills and buy each other's skills with x402 on the local
 * chain, then review what they bought (on chain for a seller with an ERC-8004 identity) and ask for
 * refunds, one refunded and one declined, with a progress bar. At the end it registers one more agent, a funded buyer whose key and
 * token it saves in the client's agents folder (.skill-market/, as `skill-market register` does),
 * prints the pages to open (home, the top seller, a skill, a search), then the JSON documents, and
 * the one command that buys and installs a skill with that buyer; it keeps serving until Ctrl-C (or
 * exits with --exit).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import cliProgress from 'cli-progress';
import { privateKeyToAccount } from 'viem/accounts';
import { AgentHome, DEFAULT_HOME } from '../src/cli/agent-home.js';
import { MarketApi } from '../src/cli/market-api.js';
import type { RunningService } from '../src/bootstrap/service.js';
import type { DemoPhase } from './demo/marketplace.js';

const whole = (min: number) => (v: string) => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < min) throw new InvalidArgumentError(`a whole number of at least ${min}`);
  return n;
};
const values = new Command('npm run demo --')
  .description(
    'Starts the marketplace on embedded defaults (or drives one at --url) and fills it with a simulated ' +
      'population of agents that register, publish skills and buy from each other over x402; then prints ' +
      'the links to open, and keeps serving until Ctrl-C.',
  )
  .option('--agents <n>', 'agents to register (at least 2: they buy from each other)', whole(2), 24)
  .option('--purchases <n>', 'purchases to make', whole(0), 150)
  .option('--seconds <n>', 'longest the trading phase may take', whole(0), 90)
  .option('--seed <n>', 'seed of the simulated population', whole(0), 402)
  .option('--url <url>', 'drive a service already running there instead of starting one')
  .option('--home <dir>', `the skill-market agents folder the demo buyer is saved in`, DEFAULT_HOME)
  .option('--exit', 'stop when the population is in place, without printing the links (they would be dead)')
  .addHelpText(
    'after',
    '\nExamples:\n  npm run demo\n  npm run demo -- --agents 40 --purchases 400 --seconds 180 --exit\n  npm run demo -- --url http://localhost:3000',
  )
  .parse(process.argv)
  .opts<{
    agents: number;
    purchases: number;
    seconds: number;
    seed: number;
    url?: string;
    home: string;
    exit?: boolean;
  }>();
const { agents, purchases, seconds } = values;

// The service and the simulation load only once the command line is understood (--help is instant).
const { loadConfig } = await import('../src/platform/config.js');
const { createLogger } = await import('../src/platform/logger.js');
const { startService } = await import('../src/bootstrap/service.js');
const { populationStatsJob } = await import('../jobs/population-stats.job.js');
const { runDemo } = await import('./demo/marketplace.js');

let service: RunningService | undefined;
let baseUrl = values.url?.replace(/\/$/, '');
let adminToken: string | undefined;
if (!baseUrl) {
  const dataDir = '.data/demo';
  // Its own queue prefix: two demos (or a demo and a service) may share one Redis.
  const queuePrefix = `demo-${randomBytes(4).toString('hex')}`;
  rmSync(dataDir, { recursive: true, force: true });
  console.log(`starting the service on embedded defaults (data in ${dataDir}) …`);
  // Rankings refresh every minute (not every 15) so trending fills up while you watch.
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    QUEUE_PREFIX: queuePrefix,
    POPULATION_CRON: '* * * * *',
    // The simulated population signs in and publishes from one address, far faster than any agent.
    RATE_LIMITS: 'off',
    ...process.env,
  });
  service = await startService('all', config, createLogger(config.logLevel, { role: 'all' }));
  baseUrl = service.runtime.site.baseUrl;
  adminToken = service.runtime.adminToken;
  console.log(`service ready at ${baseUrl}`);
}

const bars = new cliProgress.MultiBar(
  {
    format: ' {phase} |{bar}| {value}/{total}  {detail}',
    barsize: 30,
    hideCursor: true,
    clearOnComplete: false,
    noTTYOutput: !process.stdout.isTTY,
    notTTYSchedule: 5000,
    autopadding: true,
  },
  cliProgress.Presets.shades_classic,
);
let bar: cliProgress.SingleBar | undefined;
const labels: Record<DemoPhase, string> = {
  registering: 'agents register',
  publishing: 'profiles, skills',
  trading: 'purchases',
  trust: 'reviews, refunds',
};
const started = Date.now();
const result = await runDemo({
  baseUrl,
  agents,
  purchases,
  tradingSeconds: seconds,
  seed: values.seed,
  onPhase: (phase, total) => {
    bar?.update({ detail: 'done' });
    bar?.stop();
    bar = bars.create(total, 0, { phase: labels[phase].padEnd(16), detail: '' });
  },
  onStep: (detail) => bar?.increment({ detail: detail.length > 70 ? `${detail.slice(0, 67)}…` : detail }),
});
bar?.update({ detail: 'done' });
bars.stop();

const paid = result.purchases.filter((p) => p.paid).length;
console.log(
  `\n${result.agents.length} agents registered, ${result.skills.length} skills published, ` +
    `${paid} paid purchases and ${result.purchases.length - paid} free reads in ${Math.round((Date.now() - started) / 1000)} s; ` +
    `${result.agents.filter((a) => a.erc8004AgentId).length} agents hold an ERC-8004 identity.`,
);
const verifiedReviews = result.reviews.filter((r) => r.onChain === 'verified').length;
const refunded = result.refunds.filter((r) => r.outcome === 'refunded').length;
console.log(
  `${result.reviews.length} reviews by verified buyers (${verifiedReviews} given on the ERC-8004 Reputation Registry and ` +
    `verified, ${result.reviews.filter((r) => r.onChain === 'not_on_chain').length} not on chain: their seller has no identity), ` +
    `${result.reviews.filter((r) => r.response).length} seller response, ${refunded} refund settled and ` +
    `${result.refunds.length - refunded} request declined.`,
);
if (result.failures.length) {
  console.log(`${result.failures.length} step(s) failed:`);
  for (const f of result.failures.slice(0, 10)) console.log(`  - ${f}`);
}

// Documents are recomputed within seconds of each sale; rankings are population-wide, so refresh
// them once more now rather than waiting for the next minute, and wait until every ranking shows.
console.log('refreshing rankings and waiting for the last documents …');
if (service)
  await service.runtime.queues.documents.add(populationStatsJob.name, {}, { jobId: `demo-final-${Date.now()}` });
const json = async (path: string) => (await fetch(`${baseUrl}${path}`)).json().catch(() => undefined);
const filled = async () => {
  const [trending, tags, top] = await Promise.all([
    json('/api/discovery/trending.json'),
    json('/api/discovery/tags'),
    json('/api/discovery/agents.json?sort=top&limit=1'),
  ]);
  return trending?.agents?.length && tags?.tags?.length && top?.items?.length ? trending : undefined;
};
let trending: { agents?: Array<{ handle: string }> } | undefined = await filled();
for (const deadline = Date.now() + 60_000; !trending && Date.now() < deadline; trending = await filled())
  await new Promise((r) => setTimeout(r, 500));
if (!trending) console.log('  (the rankings are not filled yet: they refresh every minute while the demo runs)');
const top: string = trending?.agents?.[0]?.handle ?? result.agents[0]?.handle ?? '';
const verified = result.agents.find((a) => a.erc8004AgentId)?.handle;
const paidSkills = result.skills.filter((s) => s.priceAtomic !== '0');
const someSkill =
  result.skills.find((s) => s.seller === top && s.priceAtomic !== '0') ??
  result.skills.find((s) => s.seller === top) ??
  result.skills[0];
// The client pays at most 1 USDC unless told more (--max-price): prefer a skill within that.
const withinDefault = paidSkills.filter((s) => BigInt(s.priceAtomic) <= 1_000_000n);
const toBuy = withinDefault.find((s) => s.seller === top) ?? withinDefault[0] ?? paidSkills[0] ?? someSkill;
const pages: [string, string][] = [
  ['home', '/'],
  [`@${top}'s page (top seller)`, `/agents/${top}`],
  ...(someSkill ? ([[`a skill: "${someSkill.title}"`, `/skills/${someSkill.id}`]] as [string, string][]) : []),
  ...(verified && verified !== top
    ? ([[`@${verified}'s page (ERC-8004 verified)`, `/agents/${verified}`]] as [string, string][])
    : []),
  ['search (typos work)', '/search?q=extracton'],
];
// The identity document says whether an agent's ERC-8004 token is its own; the top seller may have
// none, so a verified agent's is shown beside it, each labelled for what it shows.
const identities: [string, string][] =
  verified === top
    ? [[`@${top}'s ERC-8004 identity (verified)`, `/api/agents/${top}/identity`]]
    : [
        [`@${top}'s identity (no ERC-8004 token)`, `/api/agents/${top}/identity`],
        ...(verified
          ? ([[`@${verified}'s ERC-8004 identity (verified)`, `/api/agents/${verified}/identity`]] as [
              string,
              string,
            ][])
          : []),
      ];
const documents: [string, string][] = [
  ['site agent card', '/.well-known/agent-card.json'],
  ['agent feed (delta-pollable)', '/api/discovery/agents.json'],
  ['skill feed', '/api/discovery/posts.json'],
  ['trending agents', '/api/discovery/trending.json'],
  ['trending tags', '/api/discovery/tags'],
  ['OASF categories', '/api/discovery/categories.json?depth=4'],
  ['search API', '/api/discovery/search?q=extracton'],
  [`@${top}'s A2A card`, `/api/agents/${top}/agent-card.json`],
  [`@${top}'s score`, `/api/agents/${top}/score.json`],
  [`@${top}'s best practices`, `/api/agents/${top}/best-practices.json`],
  [`@${top}'s health`, `/api/agents/${top}/health.json`],
  [`@${top}'s badge`, `/api/agents/${top}/badge.svg`],
  [`@${top}'s badge (buyers)`, `/api/agents/${top}/badge.svg?kind=buyers&style=for-the-badge`],
  [`@${top}'s embed card`, `/api/agents/${top}/card`],
  ...identities,
  ...(verified ? ([['verified agents', '/api/discovery/agents.json?verified=true']] as [string, string][]) : []),
  [`@${top}'s similar agents`, `/api/agents/${top}/similar.json`],
  [`@${top}'s reputation mirror`, `/api/agents/${top}/reputation.json`],
  ...(someSkill ? ([["the skill's manifest", `/api/posts/${someSkill.id}/manifest.json`]] as [string, string][]) : []),
  ['score methodology', '/spec/market-score-v1.json'],
  ['OpenAPI', '/openapi.json'],
];
// Reviews and refunds: the skills reviewed (on chain and not), the seller's rating and trust events, the refunds' public records.
const reviewed = (onChain: boolean) => {
  const of = result.reviews.filter((r) => (r.onChain === 'not_on_chain') !== onChain);
  const postId = [...new Set(of.map((r) => r.postId))].sort(
    (a, b) => of.filter((r) => r.postId === b).length - of.filter((r) => r.postId === a).length,
  )[0];
  return postId ? { postId, seller: of.find((r) => r.postId === postId)!.seller } : undefined;
};
const onChainSkill = reviewed(true);
const offChainSkill = reviewed(false);
const titleOf = (postId: string) => result.skills.find((s) => s.id === postId)?.title ?? postId;
const trust: [string, string][] = [
  ...(onChainSkill
    ? ([
        [`"${titleOf(onChainSkill.postId)}" reviews (on chain)`, `/api/posts/${onChainSkill.postId}/reviews.json`],
        [`"${titleOf(onChainSkill.postId)}" page, with its reviews`, `/skills/${onChainSkill.postId}`],
        [`@${onChainSkill.seller}'s rating and refund rate`, `/api/agents/${onChainSkill.seller}/rating.json`],
        [`@${onChainSkill.seller}'s trust events`, `/api/agents/${onChainSkill.seller}/reputation.json`],
      ] as [string, string][])
    : []),
  ...(offChainSkill
    ? ([
        [
          `"${titleOf(offChainSkill.postId)}" reviews (not on chain)`,
          `/api/posts/${offChainSkill.postId}/reviews.json`,
        ],
      ] as [string, string][])
    : []),
  ...result.refunds.map(
    (r) => [`@${r.buyer}'s refund request (${r.outcome})`, `/api/purchases/${r.paymentId}/refund`] as [string, string],
  ),
];
if (service && values.exit) {
  await service.stop();
  process.exit(result.failures.length ? 1 : 0);
}

/**
 * A buyer of one's own: a new agent with test USDC from the faucet, registered by paying, its key
 * and token saved where `skill-market` looks for them (`<home>/<handle>.key` and `.json`, 0600).
 */
async function saveBuyer(): Promise<{ handle: string; keyFile: string } | string> {
  const home = AgentHome.of(process.cwd(), {}, values.home);
  const handle = `demo-buyer-${randomBytes(3).toString('hex')}`;
  const api = new MarketApi(baseUrl!);
  const { key, keyFile } = await home.newKey(handle);
  const wallet = privateKeyToAccount(key);
  await home.save({ handle, address: wallet.address, market: api.base, keyFile });
  if (!(await api.faucet(wallet.address, 20_000_000n))) return 'this market has no faucet (not a development chain)';
  const done = await api.signIn(wallet, await api.challenge(wallet.address, handle));
  await home.save({
    handle,
    address: wallet.address,
    market: api.base,
    keyFile,
    token: done.token,
    agentId: done.agent.id,
  });
  const path = resolve(home.dir, keyFile);
  const shown = relative(process.cwd(), path);
  return { handle, keyFile: shown.startsWith('..') || isAbsolute(shown) ? path : shown };
}
const buyer = await saveBuyer().catch((err: Error) => `could not register a buyer: ${err.message}`);

const width = Math.max(...[...pages, ...documents, ...trust].map(([label]) => label.length)) + 2;
const print = (title: string, links: [string, string][]) => {
  console.log(`\n${title}`);
  for (const [label, path] of links) console.log(`  ${label.padEnd(width)} ${baseUrl}${path}`);
};
print('Open these pages:', pages);
print('The same marketplace as JSON, for agents:', documents);
if (trust.length) print('Reviews by verified buyers, and refunds:', trust);
if (result.flagged.length) {
  console.log('\nFlagged by the audit (not for sale; the installer refuses them):');
  for (const f of result.flagged) console.log(`  ${`"${f.title}" (${f.why})`.padEnd(width)} ${baseUrl}/skills/${f.id}`);
}
console.log(
  `  ${`@${top}'s seller dashboard`.padEnd(width)} ${baseUrl}/agents/${top}/analytics   sign in with its agent token`,
);
if (adminToken) {
  console.log(`  ${'queue dashboard'.padEnd(width)} ${baseUrl}/admin/queues   sign in with: ${adminToken}`);
  console.log(
    `  ${'moderation queue'.padEnd(width)} ${baseUrl}/admin/moderation   the admin token is the password (any user name)`,
  );
  console.log(`  ${'metrics'.padEnd(width)} curl -H 'authorization: Bearer ${adminToken}' ${baseUrl}/metrics`);
}

if (typeof buyer === 'string') console.log(`\n(no buyer saved: ${buyer})`);
else if (toBuy) {
  console.log(
    `\nA funded buyer, @${buyer.handle}, is saved in ${values.home}/. Buy and install "${toBuy.title}" with it:`,
  );
  const maxPrice = BigInt(toBuy.priceAtomic) > 1_000_000n ? ` --max-price ${Number(toBuy.priceAtomic) / 1e6}` : '';
  // The client finds the buyer's key by its handle in the agents folder (--home when not the default).
  const home = values.home === DEFAULT_HOME ? '' : ` --home ${dirname(buyer.keyFile)}`;
  console.log(`  npx skill-market --url ${baseUrl}${home} install ${buyer.handle} ${toBuy.id}${maxPrice}`);
}

if (!service) process.exit(result.failures.length ? 1 : 0);
console.log('\nThe marketplace keeps running; press Ctrl-C to stop.');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void service!.stop().then(() => process.exit(0));
  });
}
