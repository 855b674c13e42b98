import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { UnauthorizedError } from '../../platform/errors.js';

/** What an agent token says: who (sub = agent id), by which handle and wallet. */
export interface AgentClaims {
  sub: string;
  handle: string;
  wallet: string;
}

export interface IssuedToken {
  token: string;
  expiresAt: string;
}

const ALGORITHM = 'ES256';

/** RFC 7638 thumbprint of an EC public key: a stable key id for rotation. */
function thumbprint(jwk: { crv?: string; kty?: string; x?: string; y?: string }): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash('sha256').update(canonical).digest('base64url');
}

export interface JwtKeysOptions {
  /** PEM of the current EC P-256 signing key: JWT_PRIVATE_KEY, or the development key kept in DATA_DIR. */
  privateKeyPem: string;
  /** PEMs of previous public keys still accepted while their tokens live out (rotation). */
  previousPublicKeysPem?: string[];
  issuer: string;
  audience: string;
  ttlSeconds: number;
}

/**
 * Agent JWTs: ES256, with issuer, audience, subject, expiry and a `kid` header naming the key.
 * Verification accepts only ES256 and only keys this service published in its JWKS, so tokens
 * with `alg: none`, an HMAC algorithm, another key or a tampered body are refused.
 */
export class JwtKeys {
  private readonly signing: { key: KeyObject; kid: string };
  private readonly verifying = new Map<string, KeyObject>();

  constructor(private readonly opts: JwtKeysOptions) {
    const key = createPrivateKey(opts.privateKeyPem);
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error('JWT_PRIVATE_KEY must be an EC P-256 private key (PEM) for ES256');
    }
    const pub = createPublicKey(key);
    this.signing = { key, kid: thumbprint(pub.export({ format: 'jwk' })) };
    this.verifying.set(this.signing.kid, pub);
    for (const pem of opts.previousPublicKeysPem ?? []) {
      const prev = createPublicKey(pem);
      this.verifying.set(thumbprint(prev.export({ format: 'jwk' })), prev);
    }
  }

  /**
   * An agent token (the API's audience). With `scope`, a token for that scope only (audience
   * `<audience>#<scope>`, which the API's verify refuses), expiring `expiresAt` at the latest.
   */
  sign(claims: AgentClaims, scope?: { name: string; expiresAt: Date }): IssuedToken {
    const expiresIn = scope
      ? Math.max(1, Math.min(this.opts.ttlSeconds, Math.floor((scope.expiresAt.getTime() - Date.now()) / 1000)))
      : this.opts.ttlSeconds;
    const token = jwt.sign({ handle: claims.handle, wallet: claims.wallet }, this.signing.key, {
      algorithm: ALGORITHM,
      keyid: this.signing.kid,
      issuer: this.opts.issuer,
      audience: scope ? `${this.opts.audience}#${scope.name}` : this.opts.audience,
      subject: claims.sub,
      expiresIn,
    });
    // expiresIn makes the signer set exp; the token is read back for it rather than recomputing the clock.
    const exp = jwt.decode(token, { json: true })?.exp;
    if (typeof exp !== 'number') throw new Error('a signed token carries its expiry');
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /** The claims of a valid agent token; with `scope`, of a valid token of that scope only (see sign). */
  verify(token: string, scope?: string): AgentClaims {
    let decoded: jwt.Jwt | null;
    try {
      decoded = jwt.decode(token, { complete: true });
    } catch {
      // A header or payload segment that is not base64url JSON makes the decoder throw.
      decoded = null;
    }
    if (
      !decoded ||
      typeof decoded.header !== 'object' ||
      decoded.header === null ||
      typeof decoded.payload === 'string'
    )
      throw new UnauthorizedError('The bearer token is not a JWT', 'token_invalid');
    if (decoded.header.alg !== ALGORITHM)
      throw new UnauthorizedError(`Tokens must be signed with ${ALGORITHM}`, 'token_invalid');
    const key = decoded.header.kid ? this.verifying.get(decoded.header.kid) : undefined;
    if (!key)
      throw new UnauthorizedError('The token was signed with a key this service does not know', 'token_invalid');
    try {
      const payload = jwt.verify(token, key, {
        algorithms: [ALGORITHM],
        issuer: this.opts.issuer,
        audience: scope ? `${this.opts.audience}#${scope}` : this.opts.audience,
      });
      if (
        typeof payload === 'string' ||
        !payload.sub ||
        typeof payload.handle !== 'string' ||
        typeof payload.wallet !== 'string'
      ) {
        throw new UnauthorizedError('The token lacks agent claims', 'token_invalid');
      }
      return { sub: payload.sub, handle: payload.handle, wallet: payload.wallet };
    } catch (err) {
      if (err instanceof UnauthorizedError) throw err;
      if (err instanceof jwt.TokenExpiredError)
        throw new UnauthorizedError('The token has expired; sign in again', 'token_expired');
      const reason = err instanceof Error ? err.message : String(err);
      throw new UnauthorizedError(`The token is invalid: ${reason}`, 'token_invalid');
    }
  }

  /** When a token verified before expires (its `exp`). */
  expiryOf(token: string): Date {
    const exp = jwt.decode(token, { json: true })?.exp;
    if (typeof exp !== 'number') throw new UnauthorizedError('The token carries no expiry', 'token_invalid');
    return new Date(exp * 1000);
  }

  /** The public keys as a JWKS (RFC 7517), for clients and other services that verify our tokens. */
  jwks() {
    return {
      keys: [...this.verifying.entries()].map(([kid, key]) => ({
        ...key.export({ format: 'jwk' }),
        kid,
        use: 'sig',
        alg: ALGORITHM,
      })),
    };
  }
}
