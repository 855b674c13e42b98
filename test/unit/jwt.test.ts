import { expect } from 'chai';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { JwtKeys } from '../../src/domain/identity/jwt.js';
import { UnauthorizedError } from '../../src/platform/errors.js';

const pem = () =>
  generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const opts = { issuer: 'https://market.example', audience: 'https://market.example', ttlSeconds: 3600 };
const claims = { sub: 'agent-1', handle: 'alice', wallet: '0x1111111111111111111111111111111111111111' };

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(UnauthorizedError);
    return (err as UnauthorizedError).code;
  }
  throw new Error('expected a 401');
}

describe('agent JWTs (ES256, kid, JWKS)', () => {
  const privateKeyPem = pem();
  const keys = new JwtKeys({ ...opts, privateKeyPem });

  it('signs ES256 tokens with issuer, audience, subject, expiry and a kid that the JWKS publishes', () => {
    const { token, expiresAt } = keys.sign(claims);
    const decoded = jwt.decode(token, { complete: true })!;
    expect(decoded.header).to.include({ alg: 'ES256' });
    expect(decoded.payload).to.include({ iss: opts.issuer, aud: opts.audience, sub: 'agent-1', handle: 'alice' });
    expect(new Date(expiresAt).getTime()).to.be.closeTo(Date.now() + 3600_000, 5000);
    expect(keys.jwks().keys.map((k) => k.kid)).to.include(decoded.header.kid);
    expect(keys.verify(token)).to.deep.equal(claims);
  });

  it('a scoped token (a dashboard session) is valid for its scope only, and ends when it was told to at the latest', () => {
    const expiresAt = new Date(Date.now() + 600_000);
    const { token } = keys.sign(claims, { name: 'dashboard', expiresAt });
    expect(keys.verify(token, 'dashboard')).to.deep.equal(claims);
    expect(codeOf(() => keys.verify(token))).to.equal('token_invalid');
    expect(codeOf(() => keys.verify(keys.sign(claims).token, 'dashboard'))).to.equal('token_invalid');
    expect(keys.expiryOf(token).getTime()).to.be.at.most(expiresAt.getTime());
    expect(keys.expiryOf(token).getTime()).to.be.closeTo(expiresAt.getTime(), 2000);
  });

  it('refuses an expired token with token_expired', () => {
    const expired = jwt.sign({ handle: 'alice', wallet: claims.wallet }, privateKeyPem, {
      algorithm: 'ES256',
      keyid: keys.jwks().keys[0]!.kid,
      issuer: opts.issuer,
      audience: opts.audience,
      subject: 'agent-1',
      expiresIn: -10,
    });
    expect(codeOf(() => keys.verify(expired))).to.equal('token_expired');
  });

  it('refuses a tampered body, alg none, an HMAC token keyed with our public key, and another key', () => {
    const { token } = keys.sign(claims);
    const [h, p, s] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), handle: 'mallory' }),
    ).toString('base64url');
    expect(codeOf(() => keys.verify(`${h}.${forged}.${s}`))).to.equal('token_invalid');

    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT', kid: keys.jwks().keys[0]!.kid })).toString('base64url')}.${p}.`;
    expect(codeOf(() => keys.verify(none))).to.equal('token_invalid');

    const publicPem = createPublicKey(privateKeyPem).export({ format: 'pem', type: 'spki' }).toString();
    const hmac = jwt.sign({ handle: 'alice', wallet: claims.wallet }, publicPem, {
      algorithm: 'HS256',
      keyid: keys.jwks().keys[0]!.kid,
      subject: 'agent-1',
      issuer: opts.issuer,
      audience: opts.audience,
    });
    expect(codeOf(() => keys.verify(hmac))).to.equal('token_invalid');

    const stranger = new JwtKeys({ ...opts, privateKeyPem: pem() }).sign(claims).token;
    expect(codeOf(() => keys.verify(stranger))).to.equal('token_invalid');
    expect(codeOf(() => keys.verify('not.a.jwt'))).to.equal('token_invalid');
  });

  it('refuses a token for another audience or issuer', () => {
    const other = new JwtKeys({ ...opts, audience: 'https://elsewhere.example', privateKeyPem });
    expect(codeOf(() => keys.verify(other.sign(claims).token))).to.equal('token_invalid');
  });

  it('after a key rotation, tokens signed with the previous key stay valid while they live', () => {
    const oldPem = pem();
    const oldToken = new JwtKeys({ ...opts, privateKeyPem: oldPem }).sign(claims).token;
    const rotated = new JwtKeys({
      ...opts,
      privateKeyPem: pem(),
      previousPublicKeysPem: [createPublicKey(oldPem).export({ format: 'pem', type: 'spki' }).toString()],
    });
    expect(rotated.verify(oldToken)).to.deep.equal(claims);
    expect(rotated.jwks().keys).to.have.length(2);
  });

  it('refuses a signing key that is not P-256', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
      .privateKey.export({ format: 'pem', type: 'pkcs8' })
      .toString();
    expect(() => new JwtKeys({ ...opts, privateKeyPem: rsa })).to.throw(/P-256/);
  });
});
