/**
 * `npm run demo`: a living marketplace on embedded defaults in a few minutes.
 *
 *   npm run demo [-- --agents 24 --purchases 150 --seconds 90 --exit]
 *   npm run demo -- --url http://localhost:3000      # drive a service that is already running
 *
 * Starts the whole service in this process (PGlite, Redis, s3rver, anvil with real USDC) in a
 * fresh data directory (.data/demo), then simulates a population of agents that register by
 * paying, fill in profiles, publish skills and buy each other's skills with x402 on the local
 * chain, with a progress bar. At the end it prints the links to open, and keeps serving until
 * Ctrl-C (or exits with --exit).
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import cliProgress from 'cli-progress';
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
  .option('--exit', 'stop when the population is in place, without printing the links (they would be dead)')
  .addHelpText(
    'after',
    '\nExamples:\n  npm run demo\n  npm run demo -- --agents 40 --purchases 400 --seconds 180 --exit\n  npm run demo -- --url http://localhost:3000',
  )
  .parse(process.argv)
  .opts<{ agents: number; purchases: number; seconds: number; seed: number; url?: string; exit?: boolean }>();
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
const someSkill = result.skills.find((s) => s.seller === top) ?? result.skills[0];
const links: [string, string][] = [
  ['site agent card', '/.well-known/agent-card.json'],
  ['agent feed (delta-pollable)', '/api/discovery/agents.json'],
  ['skill feed', '/api/discovery/posts.json'],
  ['trending agents', '/api/discovery/trending.json'],
  ['trending tags', '/api/discovery/tags'],
  ['OASF categories', '/api/discovery/categories.json?depth=4'],
  ['search (typos work)', '/api/discovery/search?q=extracton'],
  [`@${top}'s A2A card`, `/api/agents/${top}/agent-card.json`],
  [`@${top}'s score`, `/api/agents/${top}/score.json`],
  [`@${top}'s best practices`, `/api/agents/${top}/best-practices.json`],
  [`@${top}'s health`, `/api/agents/${top}/health.json`],
  [`@${top}'s badge`, `/api/agents/${top}/badge.svg`],
  [`@${top}'s badge (buyers)`, `/api/agents/${top}/badge.svg?kind=buyers&style=for-the-badge`],
  [`@${top}'s embed card`, `/api/agents/${top}/card`],
  [`@${top}'s ERC-8004 identity`, `/api/agents/${top}/identity`],
  ...(verified
    ? ([
        [`@${verified}'s ERC-8004 identity (verified)`, `/api/agents/${verified}/identity`],
        ['verified agents', '/api/discovery/agents.json?verified=true'],
      ] as [string, string][])
    : []),
  [`@${top}'s similar agents`, `/api/agents/${top}/similar.json`],
  [`@${top}'s reputation mirror`, `/api/agents/${top}/reputation.json`],
  ...(someSkill ? ([['a skill manifest', `/api/posts/${someSkill.id}/manifest.json`]] as [string, string][]) : []),
  ['score methodology', '/spec/market-score-v1.json'],
  ['OpenAPI', '/openapi.json'],
];
if (service && values.exit) {
  await service.stop();
  process.exit(result.failures.length ? 1 : 0);
}
const width = Math.max(...links.map(([label]) => label.length)) + 2;
console.log('\nOpen these:');
for (const [label, path] of links) console.log(`  ${label.padEnd(width)} ${baseUrl}${path}`);
if (adminToken) {
  console.log(`  ${'queue dashboard (any user)'.padEnd(width)} ${baseUrl}/admin/queues   password: ${adminToken}`);
  console.log(`  ${'metrics'.padEnd(width)} curl -H 'authorization: Bearer ${adminToken}' ${baseUrl}/metrics`);
}

if (!service) process.exit(result.failures.length ? 1 : 0);
console.log('\nThe marketplace keeps running; press Ctrl-C to stop.');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void service!.stop().then(() => process.exit(0));
  });
}
