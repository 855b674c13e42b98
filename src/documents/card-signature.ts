import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import { AppError } from '../platform/errors.js';
import { A2A_V03_ONLY_MEMBERS, a2aV1Members } from './a2a-agent-card.schema.js';

// The package is CommonJS whose module.exports is the function; its declaration calls it `default`.
const canonicalize = canonicalizeModule as unknown as (input: unknown) => string | undefined;

/** What signs a card: the key id, where its JWKS is, and a signature over a JWS signing input. */
export interface CardSigner {
  alg: string;
  kid: string;
  jku: string;
  sign(signingInput: string): string;
  /** The public keys a verifier may meet at `now` (the current one and those not yet retired). */
  jwks(now: Date): { keys: object[] };
}

/** A2A AgentCardSignature: a JWS in the flattened JSON serialization, without its payload. */
export interface AgentCardSignature {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/**
 * Which canonical form a signature covers, named in its unprotected header (`header.canonical`):
 * - `a2a-v1.0`: the card's A2A v1.0 members, which is what v1.0 readers rebuild before they
 *   verify (the official SDKs drop members outside the v1.0 AgentCard);
 * - `card`: every member of the card as served, which is what v0.3 readers verify.
 * Both exclude `signatures` and are RFC 8785 (JCS) text.
 */
export const CANONICAL_FORMS = ['a2a-v1.0', 'card'] as const;
export type CanonicalForm = (typeof CANONICAL_FORMS)[number];

/** A card that would be published without a signature: never retried, never published. */
export class CardUnsignedError extends AppError {
  constructor(reason: string) {
    super(500, 'card_unsigned', `an AgentCard cannot be published unsigned: ${reason}`);
  }

  override get retryable(): boolean {
    return false;
  }
}

/** The RFC 8785 text a signature of `form` covers. */
export function canonicalCard(card: Record<string, unknown>, form: CanonicalForm): string {
  const { signatures: _signatures, ...rest } = card;
  const text = canonicalize(form === 'a2a-v1.0' ? a2aV1Members(rest) : rest);
  if (text === undefined) throw new CardUnsignedError('the card has no JSON form');
  return text;
}

/**
 * `params` without the values a v1.0 reader drops when it rebuilds the card before verifying:
 * null, and empty strings, arrays and objects (the official SDKs read `params` as a
 * protobuf Struct and omit them). They say nothing, so the card leaves them out and the two
 * forms agree.
 */
export function withoutEmptyValues<T>(value: T): T {
  if (Array.isArray(value)) return value.map(withoutEmptyValues) as T;
  if (value === null || typeof value !== 'object') return value;
  const kept = Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => [k, withoutEmptyValues(v)] as const)
    .filter(([, v]) => {
      if (v === null || v === undefined || v === '') return false;
      if (Array.isArray(v)) return v.length > 0;
      return typeof v !== 'object' || Object.keys(v as object).length > 0;
    });
  return Object.fromEntries(kept) as T;
}

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

/** What `signCard` puts in every signature's protected header. */
const protectedHeaderOf = (signer: CardSigner) =>
  b64(JSON.stringify({ alg: signer.alg, typ: 'JOSE', kid: signer.kid, jku: signer.jku }));

/**
 * What the bytes of `signCard(card, signer)` are made of, without signing: the card, the protected
 * header and the canonical forms. Card signatures are Ed25519 (deterministic), so the same card
 * signed by the same key has the same bytes, and a recompute compares this instead of signing
 * every card it renders. It covers the members the `a2a-v1.0` form leaves out
 * (`A2A_V03_ONLY_MEMBERS`); `card-v1` names the rest of how a card is signed (RFC 8785 text, the
 * signing input), and changing that must change it, so every card is signed again.
 */
export function signedCardHash(card: Record<string, unknown>, signer: CardSigner | undefined): string {
  const { signatures: _signatures, ...rest } = card;
  return createHash('sha256')
    .update(
      JSON.stringify([
        'card-v1',
        signer ? protectedHeaderOf(signer) : null,
        CANONICAL_FORMS,
        A2A_V03_ONLY_MEMBERS,
        rest,
      ]),
    )
    .digest('hex');
}

/**
 * The card with `signatures[]`: one JWS per canonical form, each with the protected header
 * `{alg, typ: "JOSE", kid, jku}` (A2A §8.4.2). Throws CardUnsignedError rather than return a
 * card nobody can verify.
 */
export function signCard<C extends Record<string, unknown>>(
  card: C,
  signer: CardSigner | undefined,
): C & { signatures: AgentCardSignature[] } {
  if (!signer) throw new CardUnsignedError('no card signing key is configured');
  const protectedHeader = protectedHeaderOf(signer);
  const signatures = CANONICAL_FORMS.map((form) => {
    let signature: string;
    try {
      signature = signer.sign(`${protectedHeader}.${b64(canonicalCard(card, form))}`);
    } catch (err) {
      if (err instanceof CardUnsignedError) throw err;
      throw new CardUnsignedError(err instanceof Error ? err.message : String(err));
    }
    if (!signature) throw new CardUnsignedError('the signer returned no signature');
    return { protected: protectedHeader, signature, header: { canonical: form } };
  });
  return { ...card, signatures };
}
