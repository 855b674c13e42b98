import {
  parseSIWxHeader,
  validateSIWxMessage,
  verifySIWxSignature,
  type EVMMessageVerifier,
  type SIWxPayload,
} from '@x402/extensions/sign-in-with-x';
import { getAddress, type Address } from 'viem';
import type { Db } from '../../data/db.js';
import { isSiwxNonceUsed, purgeSiwxNonces, recordSiwxNonce } from '../../data/siwx-nonces.repository.js';
import { AppError } from '../../platform/errors.js';
import { findUnstorable } from '../../platform/text.js';
import { SIWX_TTL_SECONDS } from './extensions.js';

/** The request header a Sign-In-With-X proof arrives in (base64 JSON). */
export const SIWX_HEADER = 'sign-in-with-x';
/** The largest SIGN-IN-WITH-X header read; a proof is well under 2 KiB. */
export const SIWX_MAX_HEADER_BYTES = 8 * 1024;
/** The oldest `issuedAt` accepted, and how long a used nonce is kept: a challenge's lifetime. */
export const SIWX_MAX_AGE_MS = SIWX_TTL_SECONDS * 1000;

/** What a Sign-In-With-X proof is checked with. */
export interface SiwxDeps {
  db: Db;
  chainId: number;
  /** Verifies EOA and smart-wallet (EIP-1271, EIP-6492) signatures: the chain client's verifyMessage. */
  verifyMessage: EVMMessageVerifier;
}

/** A SIGN-IN-WITH-X header that cannot be read: 400, it proves nothing. */
export class MalformedSiwxError extends AppError {
  constructor(code: 'invalid_siwx_header' | 'siwx_header_too_large', detail: string) {
    super(400, code, detail);
  }
}

/**
 * The outcome of a proof: the wallet it proves (not yet spent: `consumeSiwx` spends it once
 * access is granted), a refusal with the extension's reason code (answered with 402 and the
 * challenge), or a header that cannot be read (400).
 */
export type SiwxCheck =
  | { kind: 'proved'; address: Address; nonce: string; resource: string }
  | { kind: 'refused'; code: string; detail: string }
  | { kind: 'malformed'; error: MalformedSiwxError };

/**
 * Checks a SIGN-IN-WITH-X proof for one resource: bound to our host and to exactly this
 * resource URL, on our chain, issued within the last five minutes and not expired, its nonce
 * never used, and signed by the address it names. Writes nothing.
 */
export async function checkSiwx(deps: SiwxDeps, header: string, resourceUrl: string): Promise<SiwxCheck> {
  if (Buffer.byteLength(header) > SIWX_MAX_HEADER_BYTES) {
    const error = new MalformedSiwxError(
      'siwx_header_too_large',
      `SIGN-IN-WITH-X is larger than ${SIWX_MAX_HEADER_BYTES} bytes`,
    );
    return { kind: 'malformed', error };
  }
  let payload: SIWxPayload;
  try {
    payload = parseSIWxHeader(header);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    return { kind: 'malformed', error: new MalformedSiwxError('invalid_siwx_header', reason.slice(0, 300)) };
  }
  const unstorable = findUnstorable(payload);
  if (unstorable) {
    const detail = `SIGN-IN-WITH-X field ${unstorable.path || '(root)'} ${unstorable.reason}`;
    return { kind: 'malformed', error: new MalformedSiwxError('invalid_siwx_header', detail) };
  }
  const resource = new URL(resourceUrl);
  const valid = await validateSIWxMessage(payload, resource, {
    maxAge: SIWX_MAX_AGE_MS,
    checkNonce: async (nonce) => !(await isSiwxNonceUsed(deps.db, nonce)),
  });
  if (!valid.isValid) return { kind: 'refused', code: valid.invalidReason, detail: valid.invalidMessage };
  if (payload.uri !== resourceUrl) {
    return {
      kind: 'refused',
      code: 'invalid_siwx_uri_mismatch',
      detail: `The message signs in to ${payload.uri}, not to ${resourceUrl}`,
    };
  }
  if (payload.chainId !== `eip155:${deps.chainId}`) {
    return {
      kind: 'refused',
      code: 'invalid_siwx_chain_id',
      detail: `Sign in on eip155:${deps.chainId}, not ${payload.chainId}`,
    };
  }
  const verified = await verifySIWxSignature(payload, { evmVerifier: deps.verifyMessage });
  if (!verified.isValid) return { kind: 'refused', code: verified.invalidReason, detail: verified.invalidMessage };
  return { kind: 'proved', address: getAddress(verified.payer), nonce: payload.nonce, resource: resourceUrl };
}

/**
 * Spends a proved proof's nonce, once access is granted. Returns a refusal when another request
 * spent it first (two copies of one header at once: the first one in wins).
 */
export async function consumeSiwx(
  db: Db,
  proof: Extract<SiwxCheck, { kind: 'proved' }>,
): Promise<Extract<SiwxCheck, { kind: 'refused' }> | undefined> {
  const recorded = await recordSiwxNonce(db, { nonce: proof.nonce, address: proof.address, resource: proof.resource });
  if (recorded) return undefined;
  return { kind: 'refused', code: 'invalid_siwx_nonce', detail: 'This Sign-In-With-X message was used already' };
}

/** Forgets used nonces older than a challenge's lifetime: their messages are refused by age anyway. */
export function purgeUsedSiwxNonces(db: Db): Promise<number> {
  return purgeSiwxNonces(db, SIWX_MAX_AGE_MS * 2);
}
