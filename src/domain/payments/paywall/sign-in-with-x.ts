import {
  parseSIWxHeader,
  validateSIWxMessage,
  verifySIWxSignature,
  type EVMMessageVerifier,
  type SIWxPayload,
} from '@x402/extensions/sign-in-with-x';
import { getAddress, isAddressEqual, recoverMessageAddress, type Address } from 'viem';
import type { Db } from '../../../data/db.js';
import { isSiwxNonceUsed, purgeSiwxNonces, recordSiwxNonce } from '../../../data/payments.repository.js';
import { AppError } from '../../../platform/errors.js';
import { findUnstorable } from '../../../platform/text.js';
import { SIWX_TTL_SECONDS } from '../protocol/extensions/declare.js';

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
  /** Who may still have a signature checked on chain this window. */
  chainChecks: ChainCheckBudget;
}

/** A SIGN-IN-WITH-X header and the client that sent it (the address its requests are counted by). */
export interface SiwxProof {
  header: string;
  client: string;
}

/** How long a client waits between two proofs checked on chain. */
export const SIWX_CHAIN_CHECK_WINDOW_MS = 60_000;

/**
 * One signature check on chain (a smart wallet's EIP-1271 or EIP-6492 signature: one RPC call)
 * per client per window. A plain wallet's signature is checked here, without the chain, so only
 * a proof that no plain wallet signed spends it: a stream of forged proofs costs one call a
 * minute. Counted in this process, over at most `maxClients` clients (the oldest forgotten first).
 */
export class ChainCheckBudget {
  private readonly lastCall = new Map<string, number>();

  constructor(
    private readonly windowMs = SIWX_CHAIN_CHECK_WINDOW_MS,
    private readonly maxClients = 100_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether `client` may make a chain call now; if so, it is counted. */
  take(client: string): boolean {
    const at = this.now();
    const last = this.lastCall.get(client);
    if (last !== undefined && at - last < this.windowMs) return false;
    this.lastCall.delete(client);
    this.lastCall.set(client, at);
    if (this.lastCall.size > this.maxClients) {
      const oldest = this.lastCall.keys().next().value;
      if (oldest !== undefined) this.lastCall.delete(oldest);
    }
    return true;
  }
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
export async function checkSiwx(deps: SiwxDeps, proof: SiwxProof, resourceUrl: string): Promise<SiwxCheck> {
  const { header } = proof;
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
  let limited = false;
  const evmVerifier: EVMMessageVerifier = async (args) => {
    if (await signedByEoa(args)) return true;
    if (!deps.chainChecks.take(proof.client)) {
      limited = true;
      return false;
    }
    return deps.verifyMessage(args);
  };
  const verified = await verifySIWxSignature(payload, { evmVerifier });
  if (limited) {
    const seconds = Math.ceil(SIWX_CHAIN_CHECK_WINDOW_MS / 1000);
    return {
      kind: 'refused',
      code: 'siwx_chain_check_limited',
      detail: `No wallet key signed this proof, and a smart-wallet signature is checked on chain once per client every ${seconds} s: try again later`,
    };
  }
  if (!verified.isValid) return { kind: 'refused', code: verified.invalidReason, detail: verified.invalidMessage };
  return { kind: 'proved', address: getAddress(verified.payer), nonce: payload.nonce, resource: resourceUrl };
}

/** Whether the signature recovers to the address itself: a plain wallet's, checked without the chain. */
async function signedByEoa(args: Parameters<EVMMessageVerifier>[0]): Promise<boolean> {
  try {
    const signer = await recoverMessageAddress({ message: args.message, signature: args.signature });
    return isAddressEqual(signer, args.address);
  } catch {
    return false;
  }
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
