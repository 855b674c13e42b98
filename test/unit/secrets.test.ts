import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { privateKeyToAccount } from 'viem/accounts';
import { ConfigError, loadConfig, type Config } from '../../src/platform/config.js';
import { createLogger } from '../../src/platform/logger.js';
import { DEV_KEYS_DIR, resolveSecrets } from '../../src/bootstrap/secrets.js';
import { eventually } from '../support/service.js';

const log = createLogger('silent');
const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const RECEIPT_KEY = `0x${'4'.repeat(64)}` as const;

describe('development keys kept in DATA_DIR', () => {
  let dataDir: string;
  let config: Config;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'market-keys-'));
    config = loadConfig({ NODE_ENV: 'development', DATA_DIR: dataDir });
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));
  const keys = () => join(dataDir, DEV_KEYS_DIR);

  it('when no key is configured, then the first start generates them, mode 0600, and every later start reads the same', () => {
    const first = resolveSecrets(config, log);
    expect(privateKeyToAccount(first.receiptPrivateKey).address).to.match(/^0x[0-9a-fA-F]{40}$/);
    expect(first.jwtPrivateKeyPem).to.match(/^-----BEGIN PRIVATE KEY-----/);
    expect(first.adminToken).to.have.length.of.at.least(16);
    expect(createPrivateKey(first.cardSigningKeyPem).asymmetricKeyType).to.equal('ed25519');
    expect(statSync(keys()).mode & 0o777).to.equal(0o700);
    for (const file of ['receipt-private-key', 'jwt-private-key.pem', 'card-signing-key.pem', 'admin-token'])
      expect(statSync(join(keys(), file)).mode & 0o777, file).to.equal(0o600);
    expect(resolveSecrets(config, log)).to.deep.equal(first);
  });

  it('a configured key is used and no file is written for it', () => {
    const secrets = resolveSecrets(
      { ...config, receiptPrivateKey: RECEIPT_KEY, adminToken: 'a-configured-admin-token' },
      log,
    );
    expect(secrets.receiptPrivateKey).to.equal(RECEIPT_KEY);
    expect(secrets.adminToken).to.equal('a-configured-admin-token');
    expect(existsSync(join(keys(), 'receipt-private-key'))).to.equal(false);
    expect(existsSync(join(keys(), 'admin-token'))).to.equal(false);
    expect(existsSync(join(keys(), 'jwt-private-key.pem'))).to.equal(true);
  });

  it('in production, keys come from configuration only: none is generated, nothing is written', () => {
    const production = {
      ...config,
      production: true,
      receiptPrivateKey: RECEIPT_KEY,
      jwtPrivateKey: resolveSecrets(config, log).jwtPrivateKeyPem,
      cardSigningKey: resolveSecrets(config, log).cardSigningKeyPem,
      adminToken: 'a-configured-admin-token',
    };
    rmSync(keys(), { recursive: true, force: true });
    expect(resolveSecrets(production, log)).to.deep.equal({
      receiptPrivateKey: RECEIPT_KEY,
      jwtPrivateKeyPem: production.jwtPrivateKey,
      cardSigningKeyPem: production.cardSigningKey,
      adminToken: 'a-configured-admin-token',
    });
    expect(() => resolveSecrets({ ...production, cardSigningKey: undefined }, log)).to.throw(
      ConfigError,
      /CARD_SIGNING_KEY is required in production/,
    );
    expect(() => resolveSecrets({ ...production, cardSigningKey: production.jwtPrivateKey }, log)).to.throw(
      ConfigError,
      /CARD_SIGNING_KEY is not an Ed25519 private key/,
    );
    expect(() => resolveSecrets({ ...production, receiptPrivateKey: undefined }, log)).to.throw(
      ConfigError,
      /RECEIPT_PRIVATE_KEY is required in production/,
    );
    expect(existsSync(keys())).to.equal(false);
  });

  it('a key file others may read is made private again; one that holds no key is refused, never replaced', () => {
    const { receiptPrivateKey } = resolveSecrets(config, log);
    const file = join(keys(), 'receipt-private-key');
    chmodSync(file, 0o644);
    expect(resolveSecrets(config, log).receiptPrivateKey).to.equal(receiptPrivateKey);
    expect(statSync(file).mode & 0o777).to.equal(0o600);

    writeFileSync(file, 'not a key\n');
    expect(() => resolveSecrets(config, log)).to.throw(
      ConfigError,
      /receipt-private-key is not a secp256k1 private key/,
    );
    expect(readFileSync(file, 'utf8')).to.equal('not a key\n');
  });

  it('processes starting together on one data directory agree on one key, which one of them generated', async function () {
    this.timeout(60_000);
    const dir = join(dataDir, 'race');
    const go = join(dataDir, 'go');
    const script = `
      import { existsSync, writeFileSync } from 'node:fs';
      import { keepDevSecret } from ${JSON.stringify(pathToFileURL(join(ROOT, 'src/platform/dev-secrets.ts')).href)};
      writeFileSync(${JSON.stringify(dataDir)} + '/ready-' + process.pid, '');
      while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 2));
      const s = keepDevSecret(${JSON.stringify(dir)}, 'secret', () => 'value-' + process.pid, () => undefined);
      console.log(JSON.stringify(s));`;
    const runs = Array.from({ length: 6 }, () =>
      run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT }),
    );
    // Every process waits at the line, then all are let go at once.
    await eventually(async () => readdirSync(dataDir).filter((f) => f.startsWith('ready-')).length === 6, 50_000, 20);
    writeFileSync(go, '');
    const kept = (await Promise.all(runs)).map((r) => JSON.parse(r.stdout) as { value: string; created: boolean });
    expect(new Set(kept.map((k) => k.value)).size, 'one value').to.equal(1);
    expect(kept.filter((k) => k.created)).to.have.length(1);
    expect(readFileSync(join(dir, 'secret'), 'utf8')).to.equal(`${kept[0]!.value}\n`);
    expect(readdirSync(dir), 'no temporary file left').to.deep.equal(['secret']);
  });
});
