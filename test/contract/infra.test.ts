import { expect } from 'chai';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { EnvSchema, loadConfig, ConfigError } from '../../src/platform/config.js';
import { STATIC_PATH_PATTERNS, isStaticPath } from '../../src/documents/catalog.js';

const INFRA = join(import.meta.dirname, '../../infra');
const envFile = (name: string) =>
  Object.fromEntries(
    readFileSync(join(INFRA, 'env', name), 'utf8')
      .split('\n')
      .filter((l) => l.trim() && !l.startsWith('#'))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

describe('infra/: the deployment files agree with the code', () => {
  it('compose runs the production topology: PostgreSQL, Redis, S3, two APIs, two workers, a scheduler, the edge', () => {
    const compose = parse(readFileSync(join(INFRA, 'compose.yaml'), 'utf8'), { merge: true });
    const services = compose.services as Record<string, { command?: string[] }>;
    expect(Object.keys(services)).to.include.members(['postgres', 'redis', 'minio', 'api-1', 'api-2', 'worker-1', 'worker-2', 'scheduler', 'edge']);
    const roles = Object.values(services).map((s) => s.command?.[0]);
    expect(roles.filter((r) => r === 'api')).to.have.length(2);
    expect(roles.filter((r) => r === 'worker')).to.have.length(2);
    expect(roles.filter((r) => r === 'scheduler')).to.have.length(1);
    // Workers cap their heap (a full recompute stays near 450 MiB); the API keeps V8's default, and the shared environment stays in.
    const env = (name: string) => (compose.services[name] as { environment?: Record<string, string> }).environment ?? {};
    for (const w of ['worker-1', 'worker-2']) expect(env(w)).to.include({ NODE_OPTIONS: '--max-old-space-size=640', REDIS_URL: 'redis://redis:6379' });
    expect(env('api-1')).to.not.have.property('NODE_OPTIONS');
    const scripts = JSON.parse(readFileSync(join(INFRA, '../package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts['start:worker']).to.contain('--max-old-space-size=640');
    expect(scripts['start:api']).to.not.contain('--max-old-space-size');
  });

  it('every environment file sets only variables the service reads, and each parses', () => {
    const known = Object.keys(EnvSchema.shape);
    for (const name of readdirSync(join(INFRA, 'env'))) {
      const env = envFile(name);
      expect(Object.keys(env).filter((k) => !known.includes(k)), `${name}: unknown variables`).to.deep.equal([]);
      expect(() => EnvSchema.parse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== '')))).to.not.throw();
    }
  });

  it('production with its secrets left blank refuses to start and names each missing secret', () => {
    const env = envFile('production.env');
    const err = (() => {
      try {
        loadConfig(env);
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(err).to.be.instanceOf(ConfigError);
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'TREASURY_ADDRESS', 'JWT_PRIVATE_KEY', 'ADMIN_TOKEN']) expect(err!.message).to.contain(name);
  });

  it("the edge's static-path regex routes exactly the catalog's static paths to the bucket", () => {
    const conf = readFileSync(join(INFRA, 'edge/edge.conf'), 'utf8');
    const source = /location ~ "([^"]+)"/.exec(conf)![1]!;
    const edge = new RegExp(source);
    const samples = [
      '/.well-known/agent-card.json',
      '/spec/market-score-v1.json',
      '/spec/best-practices-v1.json',
      '/api/discovery/agents.json',
      '/api/discovery/posts.json',
      '/api/discovery/trending.json',
      '/api/discovery/categories.json',
      '/api/discovery/tags',
      '/api/discovery/search',
      '/api/discovery/tags.json.bak',
      ...['agent-card.json', 'identity', 'card', 'badge.svg', 'health.json', 'similar.json', 'reputation.json', 'score.json', 'best-practices.json', 'me', 'posts'].map(
        (n) => `/api/agents/some-agent-7/${n}`,
      ),
      '/api/agents/me',
      '/api/agents/challenge',
      '/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6/manifest.json',
      '/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      '/api/posts/not-a-uuid/manifest.json',
      '/admin/queues',
      '/metrics',
      '/openapi.json',
    ];
    for (const path of samples) expect(edge.test(path), path).to.equal(isStaticPath(path));
    expect(samples.filter(isStaticPath).length).to.be.greaterThan(STATIC_PATH_PATTERNS.length);
  });
});
