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
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { loadConfig } from '../src/platform/config.js';
import { createLogger } from '../src/platform/logger.js';
import { startService, type RunningService } from '../src/bootstrap/service.js';
import { populationStatsJob } from '../jobs/population-stats.job.js';
import { runDemo, type DemoPhase } from './demo/marketplace.js';

const { values } = parseArgs({
  options: {
    agents: { type: 'string', default: '24' },
    purchases: { type: 'string', default: '150' },
    seconds: { type: 'string', default: '90' },
    seed: { type: 'string', default: '402' },
    url: { type: 'string' },
    exit: { type: 'boolean', default: false },
  },
});
const positive = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name} must be a whole number, got "${v}"`);
    process.exit(2);
  }
  return n;
};
const agents = positive('agents', values.agents);
const purchases = positive('purchases', values.purchases);
const seconds = positive('seconds', values.seconds);
if (agents < 2) {
  console.error('--agents must be at least 2 (agents buy from each other)');
  process.exit(2);
}

let service: RunningService | undefined;
let baseUrl = values.url?.replace(/\/$/, '');
let adminToken: string | undefined;
if (!baseUrl) {
  const dataDir = '.data/demo';
  rmSync(dataDir, { recursive: true, force: true });
  console.log(`starting the service on embedded defaults (data in ${dataDir}) …`);
  // Rankings refresh every minute (not every 15) so trending fills up while you watch.
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'error',
    QUEUE_PREFIX: 'demo',
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
  seed: Number(values.seed),
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
    `${paid} paid purchases and ${result.purchases.length - paid} free reads in ${Math.round((Date.now() - started) / 1000)} s.`,
);
if (result.failures.length) {
  console.log(`${result.failures.length} step(s) failed:`);
  for (const f of result.failures.slice(0, 10)) console.log(`  - ${f}`);
}

// Documents are recomputed within seconds of each sale; rankings are population-wide, so refresh
// them once more now rather than waiting for the next minute.
console.log('refreshing rankings and waiting for the last documents …');
if (service)
  await service.runtime.queues.documents.add(populationStatsJob.name, {}, { jobId: `demo-final-${Date.now()}` });
await new Promise((r) => setTimeout(r, 3000));
const trending = await (await fetch(`${baseUrl}/api/discovery/trending.json`)).json().catch(() => undefined);
const top: string = trending?.items?.[0]?.handle ?? trending?.agents?.[0]?.handle ?? result.agents[0]?.handle;
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
  [`@${top}'s similar agents`, `/api/agents/${top}/similar.json`],
  [`@${top}'s reputation mirror`, `/api/agents/${top}/reputation.json`],
  ...(someSkill ? ([['a skill manifest', `/api/posts/${someSkill.id}/manifest.json`]] as [string, string][]) : []),
  ['score methodology', '/spec/market-score-v1.json'],
  ['OpenAPI', '/openapi.json'],
];
const width = Math.max(...links.map(([label]) => label.length)) + 2;
console.log('\nOpen these:');
for (const [label, path] of links) console.log(`  ${label.padEnd(width)} ${baseUrl}${path}`);
if (adminToken) {
  console.log(`  ${'queue dashboard (any user)'.padEnd(width)} ${baseUrl}/admin/queues   password: ${adminToken}`);
  console.log(`  ${'metrics'.padEnd(width)} curl -H 'authorization: Bearer ${adminToken}' ${baseUrl}/metrics`);
}

if (!service) process.exit(result.failures.length ? 1 : 0);
if (values.exit) {
  await service.stop();
  process.exit(result.failures.length ? 1 : 0);
}
console.log('\nThe marketplace keeps running; press Ctrl-C to stop.');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    void service!.stop().then(() => process.exit(0));
  });
}
