import { createHash, createPrivateKey, createPublicKey, sign, type JsonWebKey, type KeyObject } from 'node:crypto';

/** The JWS algorithm of card signatures: Ed25519 (RFC 8037), deterministic, so an unchanged card keeps its bytes. */
export const CARD_SIGNATURE_ALG = 'EdDSA';

/** An Ed25519 public key as a JWKS lists it. */
export interface CardPublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: typeof CARD_SIGNATURE_ALG;
}

/** A card key of before a rotation: still listed, so cards it signed still verify, until `retireAfter`. */
export interface PreviousCardKey {
  jwk: CardPublicJwk;
  retireAfter: Date;
}

/** RFC 7638 thumbprint of an Ed25519 public key (its required members in lexicographic order): the key id. */
export function cardKeyId(x: string): string {
  return createHash('sha256')
    .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
    .digest('base64url');
}

function publicJwk(key: KeyObject): CardPublicJwk {
  const { x } = key.export({ format: 'jwk' }) as JsonWebKey;
  if (typeof x !== 'string') throw new Error('not an Ed25519 key');
  return { kty: 'OKP', crv: 'Ed25519', x, kid: cardKeyId(x), use: 'sig', alg: CARD_SIGNATURE_ALG };
}

/**
 * CARD_PREVIOUS_KEYS: a JSON array of `{jwk, retireAfter}`, each `jwk` an Ed25519 public key as the
 * JWKS listed it (its `kid` must be the key's RFC 7638 thumbprint), `retireAfter` an ISO time.
 */
export function parsePreviousCardKeys(text: string | undefined): PreviousCardKey[] {
  if (text === undefined || text.trim() === '') return [];
  const list: unknown = JSON.parse(text);
  if (!Array.isArray(list)) throw new Error('must be a JSON array of {jwk, retireAfter}');
  return list.map((entry, i) => {
    const { jwk, retireAfter } = (entry ?? {}) as { jwk?: Partial<CardPublicJwk>; retireAfter?: unknown };
    if (jwk?.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(jwk.x))
      throw new Error(`entry ${i}: jwk is not an Ed25519 public key ({"kty":"OKP","crv":"Ed25519","x":...})`);
    if (jwk.kid !== undefined && jwk.kid !== cardKeyId(jwk.x))
      throw new Error(`entry ${i}: kid is not the key's RFC 7638 thumbprint (${cardKeyId(jwk.x)})`);
    const at = typeof retireAfter === 'string' ? new Date(retireAfter) : new Date(Number.NaN);
    if (Number.isNaN(at.getTime())) throw new Error(`entry ${i}: retireAfter is not an ISO time`);
    return {
      jwk: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, kid: cardKeyId(jwk.x), use: 'sig', alg: CARD_SIGNATURE_ALG },
      retireAfter: at,
    };
  });
}

/** Whether a PEM holds an Ed25519 private key (what CARD_SIGNING_KEY must be). */
export function isEd25519PrivatePem(pem: string): boolean {
  try {
    return createPrivateKey(pem).asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}

/**
 * The marketplace's AgentCard key: signs JWS signing inputs with the current Ed25519 key and lists
 * the public keys a verifier may meet (the current one and every previous one until it retires).
 * Signing is synchronous and deterministic, so renderers stay pure functions of their input.
 */
export class CardKeys {
  private readonly key: KeyObject;
  /** The current public key as the JWKS lists it. */
  readonly current: CardPublicJwk;

  constructor(
    privateKeyPem: string,
    /** Where the JWKS is published (the signatures' `jku`). */
    readonly jku: string,
    private readonly previous: readonly PreviousCardKey[] = [],
  ) {
    this.key = createPrivateKey(privateKeyPem);
    if (this.key.asymmetricKeyType !== 'ed25519')
      throw new Error('CARD_SIGNING_KEY must be an Ed25519 private key (PEM)');
    this.current = publicJwk(createPublicKey(this.key));
  }

  get kid(): string {
    return this.current.kid;
  }

  readonly alg = CARD_SIGNATURE_ALG;

  /** The base64url Ed25519 signature of a JWS signing input (`<protected>.<payload>`). */
  sign(signingInput: string): string {
    return sign(null, Buffer.from(signingInput, 'ascii'), this.key).toString('base64url');
  }

  /** The card keys of the JWKS at `now`: the current one, then each previous one not yet retired. */
  jwks(now: Date): { keys: CardPublicJwk[] } {
    const kept = this.previous.filter((p) => p.retireAfter > now && p.jwk.kid !== this.current.kid);
    return { keys: [this.current, ...kept.map((p) => p.jwk)] };
  }
}

/** Where the JWKS with the card keys (and the agent-token keys) is published. */
export const JWKS_PATH = '/.well-known/jwks.json';
