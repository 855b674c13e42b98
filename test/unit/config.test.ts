import { expect } from 'chai';
import {
  ConfigError,
  configVariableDocs,
  DEFAULT_METRICS_PORTS,
  EnvSchema,
  loadConfig,
  metricsPortOf,
} from '../../src/platform/config.js';

describe('config', () => {
  it('runs on embedded defaults with no environment at all', () => {
    const c = loadConfig({});
    expect(c.production).to.equal(false);
    expect(c.port).to.equal(3000);
    expect(c.database.url).to.equal(undefined);
    expect(c.serveBucket).to.equal(true);
    expect(c.faucetEnabled).to.equal(true);
    expect(c.chain.facilitatorUrls).to.deep.equal([]);
  });

  it('a worker and the scheduler serve /metrics on a port of their own, unless METRICS_PORT says where (0: any free one)', () => {
    const defaults = loadConfig({});
    expect(metricsPortOf(defaults, 'worker')).to.equal(DEFAULT_METRICS_PORTS.worker);
    expect(metricsPortOf(defaults, 'scheduler')).to.equal(DEFAULT_METRICS_PORTS.scheduler);
    expect(DEFAULT_METRICS_PORTS.worker).to.not.equal(DEFAULT_METRICS_PORTS.scheduler);
    expect(DEFAULT_METRICS_PORTS.worker).to.not.equal(defaults.port);
    expect(metricsPortOf(loadConfig({ METRICS_PORT: '9100' }), 'scheduler')).to.equal(9100);
    expect(metricsPortOf(loadConfig({ METRICS_PORT: '0' }), 'worker')).to.equal(0);
    expect(() => loadConfig({ METRICS_PORT: '70000' })).to.throw(ConfigError, /METRICS_PORT/);
  });

  it('when a value is malformed, then it names the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(ConfigError, /PORT/);
    expect(() => loadConfig({ USDC_ADDRESS: '0x123' })).to.throw(ConfigError, /USDC_ADDRESS/);
  });

  it('when production still points at embedded parts, then it refuses to start and lists each one', () => {
    try {
      loadConfig({ NODE_ENV: 'production' });
      expect.fail('production started on embedded defaults');
    } catch (err) {
      expect(err).to.be.instanceOf(ConfigError);
      const text = (err as ConfigError).problems.join('\n');
      for (const name of [
        'DATABASE_URL',
        'REDIS_URL',
        'RPC_URL',
        'JWT_PRIVATE_KEY',
        'RECEIPT_PRIVATE_KEY',
        'CARD_SIGNING_KEY',
        'ADMIN_TOKEN',
        'PUBLIC_BASE_URL',
      ]) {
        expect(text).to.contain(name);
      }
    }
  });

  it('refuses the dev faucet in production even when asked for it', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', ENABLE_FAUCET: 'true' })).to.throw(
      ConfigError,
      /ENABLE_FAUCET must not be true/,
    );
  });

  it('accepts a complete production configuration and turns the dev faucet and bucket serving off', () => {
    const c = loadConfig({
      NODE_ENV: 'production',
      PUBLIC_BASE_URL: 'https://market.example/',
      DATABASE_URL: 'postgres://db/market',
      REDIS_URL: 'redis://cache:6379',
      S3_ENDPOINT: 'https://s3.example',
      S3_ACCESS_KEY_ID: 'id',
      S3_SECRET_ACCESS_KEY: 'secret',
      RPC_URL: 'https://rpc.example',
      CHAIN_ID: '8453',
      USDC_ADDRESS: `0x${'1'.repeat(40)}`,
      IDENTITY_REGISTRY_ADDRESS: `0x${'2'.repeat(40)}`,
      TREASURY_ADDRESS: `0x${'3'.repeat(40)}`,
      FACILITATOR_URLS: 'https://f1.example, https://f2.example',
      JWT_PRIVATE_KEY: 'pem',
      RECEIPT_PRIVATE_KEY: `0x${'4'.repeat(64)}`,
      CARD_SIGNING_KEY: 'pem',
      ADMIN_TOKEN: 'a-long-operator-token',
    });
    expect(c.publicBaseUrl).to.equal('https://market.example');
    expect(c.faucetEnabled).to.equal(false);
    expect(c.serveBucket).to.equal(false);
    expect(c.chain.facilitatorUrls).to.deep.equal(['https://f1.example', 'https://f2.example']);
  });

  it('refuses a production chain other than Base or Base Sepolia', () => {
    expect(() =>
      loadConfig({
        NODE_ENV: 'production',
        PUBLIC_BASE_URL: 'https://m.example',
        DATABASE_URL: 'postgres://x',
        REDIS_URL: 'redis://x',
        S3_ENDPOINT: 'https://s3',
        S3_ACCESS_KEY_ID: 'a',
        S3_SECRET_ACCESS_KEY: 'b',
        RPC_URL: 'https://rpc',
        CHAIN_ID: '1',
        USDC_ADDRESS: `0x${'1'.repeat(40)}`,
        IDENTITY_REGISTRY_ADDRESS: `0x${'2'.repeat(40)}`,
        TREASURY_ADDRESS: `0x${'3'.repeat(40)}`,
        FACILITATOR_URLS: 'https://f',
        JWT_PRIVATE_KEY: 'k',
        ADMIN_TOKEN: 'a-long-operator-token',
      }),
    ).to.throw(ConfigError, /CHAIN_ID 1 is not supported/);
  });

  it('every variable is declared once, with a group and a line of docs', () => {
    const docs = configVariableDocs();
    expect(docs.map((v) => v.env)).to.deep.equal(Object.keys(EnvSchema.shape));
    expect(new Set(docs.map((v) => v.env)).size).to.equal(docs.length);
    for (const v of docs) {
      expect(v.doc, v.env).to.match(/\S/);
      expect(v.doc, `${v.env}: one line`).to.not.contain('\n');
      expect(v.default, v.env).to.match(/\S/);
    }
  });

  it('when a variable is unset, then the service uses the default the docs show', () => {
    const shown = (value: unknown) =>
      Array.isArray(value) && value.length === 0
        ? 'none'
        : typeof value === 'object' && value !== null
          ? `\`${Object.entries(value)
              .map(([k, n]) => `${k}=${n}`)
              .join(',')}\``
          : `\`${String(value)}\``;
    for (const v of configVariableDocs()) {
      const value = EnvSchema.shape[v.env]!.parse(undefined);
      // Unset and undefined: the docs say what stands in (an embedded part, a generated key).
      if (value === undefined) continue;
      expect(v.default, v.env).to.satisfy((text: string) => text.startsWith(shown(value)));
    }
  });

  it('when production lacks a variable the docs call required, then it refuses to start naming it', () => {
    // Variables required together with others (`required: A or B`) are named by their rule's own message.
    const required = configVariableDocs()
      .filter((v) => v.production.startsWith('required') && !v.production.startsWith('required:'))
      .map((v) => v.env);
    expect(required).to.include.members(['DATABASE_URL', 'ADMIN_TOKEN', 'CHAIN_ID']);
    const problems = (() => {
      try {
        loadConfig({ NODE_ENV: 'production', FACILITATOR_BUILTIN: 'false' });
      } catch (err) {
        return (err as ConfigError).problems.join('\n');
      }
      return expect.fail('production started on embedded defaults');
    })();
    for (const name of required) expect(problems, name).to.contain(name);
  });
});
