import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { a2aVersionSupported } from '../../src/api/http/a2a-version.js';
import { ConfigError, loadConfig } from '../../src/platform/config.js';
import { CardKeys, parsePreviousCardKeys } from '../../src/platform/card-keys.js';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

describe('card keys: CARD_SIGNING_KEY and CARD_PREVIOUS_KEYS', () => {
  const old = new CardKeys(pem(), 'https://market.example/.well-known/jwks.json');

  it('reads a previous key as the JWKS listed it, with its retire-after time', () => {
    const [entry] = parsePreviousCardKeys(JSON.stringify([{ jwk: old.current, retireAfter: '2027-01-01T00:00:00Z' }]));
    expect(entry?.jwk).to.deep.equal(old.current);
    expect(entry?.retireAfter.toISOString()).to.equal('2027-01-01T00:00:00.000Z');
    expect(parsePreviousCardKeys(undefined)).to.deep.equal([]);
    expect(parsePreviousCardKeys('')).to.deep.equal([]);
  });

  it('refuses a previous key that is not an Ed25519 public key, names another key, or has no retire-after time', () => {
    const wrong = [
      [{ jwk: { kty: 'EC', crv: 'P-256', x: old.current.x }, retireAfter: '2027-01-01T00:00:00Z' }],
      [{ jwk: { ...old.current, kid: 'someone-else' }, retireAfter: '2027-01-01T00:00:00Z' }],
      [{ jwk: old.current }],
      [{ jwk: old.current, retireAfter: 'next year' }],
      { jwk: old.current, retireAfter: '2027-01-01T00:00:00Z' },
    ];
    for (const value of wrong)
      expect(() => parsePreviousCardKeys(JSON.stringify(value)), JSON.stringify(value)).to.throw();
    expect(() => loadConfig({ CARD_PREVIOUS_KEYS: JSON.stringify(wrong[1]) })).to.throw(
      ConfigError,
      /CARD_PREVIOUS_KEYS/,
    );
  });

  it('refuses a signing key that is not Ed25519, and never lists a private part', () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    expect(() => new CardKeys(p256.toString(), 'x')).to.throw(/Ed25519/);
    for (const key of old.jwks(new Date()).keys) expect(key).to.not.have.property('d');
  });
});

describe('A2A-Version', () => {
  it('serves 1.0 and 0.3 (empty means 0.3, the patch number does not count) and nothing else', () => {
    for (const v of [undefined, '', ' ', '1.0', '0.3', '1.0.2', '0.3.0'])
      expect(a2aVersionSupported(v), v).to.equal(true);
    for (const v of ['2.0', '1.1', '0.2', '1', 'latest', '1.0-rc', '01.0x', 'v1.0'])
      expect(a2aVersionSupported(v), v).to.equal(false);
  });
});
