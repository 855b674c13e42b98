import { getAddress, isAddress, isAddressEqual, type Address, type PublicClient } from 'viem';
import { REGISTRATION_TYPE } from '@skill-market/skill-protocol/identity-registry-abi';
import {
  CONFORMANCE_FINDINGS,
  fileFindings,
  shapeFindings,
  type FindingCode,
} from '../../documents/agent/registration-findings.js';
import { identityRegistryAbi } from '../../platform/chain/identity-registry.js';
import type { IdentityFacts } from '../scoring/facts.js';
import {
  fetchLimited,
  OutboundFetchError,
  type OutboundFailure,
  type OutboundLimits,
} from '../../platform/outbound-fetch.js';

export { REGISTRATION_TYPE };

/**
 * How a registration file is read: the token's owner chooses its URL, so only https: on public
 * addresses, 64 KiB and 3 s at most (a `data:` URI is decoded, within the same size).
 */
export const REGISTRATION_FETCH: OutboundLimits = {
  maxBytes: 64 * 1024,
  timeoutMs: 3000,
  protocols: ['https:'],
  allowPrivateAddresses: false,
};

/** Why a registration file is unusable before its content is even checked, besides a failed fetch. */
export type UnreadableRule = 'data_uri_invalid' | 'not_json' | 'not_json_object';

/** A registration file that is not a JSON object (or a `data:` URI that does not decode). */
export class UnreadableRegistrationError extends Error {
  override readonly name = 'UnreadableRegistrationError';
  constructor(
    readonly rule: UnreadableRule,
    message: string,
  ) {
    super(message);
  }
}

/**
 * What keeps a token's registration from conforming. The `basic` ones (no token, no file, or a
 * file without type, name, description or services) make it invalid; the others only
 * non-conformant. Each carries 8004scan's code beside ours (registration-findings.ts).
 */
export type RegistrationProblemCode = FindingCode;

export interface RegistrationProblem {
  code: RegistrationProblemCode;
  /** 8004scan's code for the same problem, or null where it has none we could establish. */
  scanCode: string | null;
  message: string;
}

const BASIC_PROBLEMS: ReadonlySet<RegistrationProblemCode> = new Set([
  'token_missing',
  'token_uri_missing',
  'file_unreadable',
  'type_wrong',
  'name_missing',
  'description_missing',
  'services_missing',
]);

export interface Resolution {
  tokenId: string;
  registry: string;
  owner: Address | null;
  agentWallet: Address | null;
  tokenUri: string | null;
  registration: Record<string, unknown> | null;
  registrationErrors: string[];
  resolvedAt: string;
}

/** Reads a token's owner, agentWallet and tokenURI, then its registration file. Never throws for a bad token. */
export async function resolveIdentity(
  client: PublicClient,
  registry: Address,
  chainId: number,
  tokenId: string,
  fetchPolicy: OutboundLimits = REGISTRATION_FETCH,
): Promise<Resolution> {
  const id = BigInt(tokenId);
  // A token that does not exist reverts; any failure to read leaves the field unknown.
  const read = (functionName: 'ownerOf' | 'getAgentWallet' | 'tokenURI'): Promise<unknown> =>
    client.readContract({ address: registry, abi: identityRegistryAbi, functionName, args: [id] }).catch(() => null);
  const [ownerRead, walletRead, uriRead] = await Promise.all([
    read('ownerOf'),
    read('getAgentWallet'),
    read('tokenURI'),
  ]);
  const owner = typeof ownerRead === 'string' && isAddress(ownerRead) ? ownerRead : null;
  const wallet = typeof walletRead === 'string' && isAddress(walletRead) ? walletRead : null;
  const uri = typeof uriRead === 'string' ? uriRead : null;
  const problems: RegistrationProblem[] = [];
  let registration: Record<string, unknown> | null = null;
  if (!owner)
    problems.push({
      code: 'token_missing',
      scanCode: null,
      message: `token ${tokenId} does not exist in the registry`,
    });
  else if (!uri) problems.push({ code: 'token_uri_missing', scanCode: 'EA001', message: 'the token has no tokenURI' });
  else {
    try {
      registration = await fetchRegistration(uri, fetchPolicy);
      problems.push(...registrationFileProblems(registration, registry, chainId, tokenId));
    } catch (err) {
      problems.push({ code: 'file_unreadable', scanCode: null, message: unreadableProblem(err, fetchPolicy) });
    }
  }
  return {
    tokenId,
    registry: `eip155:${chainId}:${registry}`,
    owner: owner ? getAddress(owner) : null,
    agentWallet:
      wallet && !isAddressEqual(wallet, '0x0000000000000000000000000000000000000000') ? getAddress(wallet) : null,
    tokenUri: uri,
    registration,
    registrationErrors: problems.map((p) => p.message),
    resolvedAt: new Date().toISOString(),
  };
}

/**
 * A registration file from `data:` (JSON, plain or base64) or from a URL within `policy`
 * (src/platform/outbound-fetch.ts). Other schemes (ipfs:, http:) are not fetched: they are
 * reported as unreadable.
 */
async function fetchRegistration(uri: string, policy: OutboundLimits): Promise<Record<string, unknown>> {
  let text: string;
  if (uri.startsWith('data:')) {
    const comma = uri.indexOf(',');
    const meta = uri.slice(5, comma);
    const payload = uri.slice(comma + 1);
    let bytes: Buffer;
    try {
      bytes = meta.endsWith(';base64') ? Buffer.from(payload, 'base64') : Buffer.from(decodeURIComponent(payload));
    } catch {
      throw new UnreadableRegistrationError('data_uri_invalid', 'the data: URI does not decode');
    }
    if (bytes.length > policy.maxBytes)
      throw new OutboundFetchError(
        'outbound_too_large',
        `the data: URI holds ${bytes.length} bytes, more than ${policy.maxBytes}`,
      );
    text = bytes.toString('utf8');
  } else if (policy.protocols.some((p) => uri.startsWith(`${p}//`))) {
    text = (await fetchLimited(uri, policy)).toString('utf8');
  } else {
    throw new OutboundFetchError('outbound_scheme_not_allowed', 'the URI scheme is not fetched');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UnreadableRegistrationError('not_json', 'not JSON');
  }
  if (!isJsonObject(parsed)) throw new UnreadableRegistrationError('not_json_object', 'not a JSON object');
  return parsed;
}

/**
 * The problem an unreadable registration file is listed as in the public identity document: the
 * rule it broke, by its stable code, and what that rule says. Never the error's own text: it
 * could name the address a host resolved to (a map of the network behind us) or echo a URI with
 * its credentials. The tokenURI itself is published beside it, as the chain holds it.
 */
function unreadableProblem(err: unknown, policy: OutboundLimits): string {
  const said = (what: string, rule: string) => `registration file unreadable: ${what} (${rule})`;
  if (err instanceof UnreadableRegistrationError) return said(err.message, err.rule);
  if (!(err instanceof OutboundFetchError)) return said('it could not be read', 'file_unreadable');
  const status = err.upstreamStatus;
  const what: Record<OutboundFailure, string> = {
    outbound_invalid_url: 'the tokenURI is not a valid URL',
    outbound_scheme_not_allowed: `its scheme is not fetched (use data: or ${policy.protocols.join(' or ')})`,
    outbound_address_not_allowed: 'its host is a private or reserved address, which is not fetched',
    outbound_timeout: `it took longer than ${policy.timeoutMs} ms`,
    outbound_too_large: `it is larger than ${policy.maxBytes} bytes`,
    outbound_bad_status: `its server answered ${status ?? 'an error'}${status && status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
    outbound_failed: 'the connection to its server failed',
  };
  return said(what[err.code as OutboundFailure] ?? 'it could not be read', err.code);
}

const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  Boolean(v) && typeof v === 'object' && !Array.isArray(v);

/** What keeps a registration file from the ERC-8004 registration-v1 shape and from naming this token. */
export function registrationProblems(
  r: Record<string, unknown>,
  registry: Address,
  chainId: number,
  tokenId: string,
): string[] {
  return registrationFileProblems(r, registry, chainId, tokenId).map((p) => p.message);
}

/** The problems that make a readable file non-conformant here, each with its 8004scan code. */
function registrationFileProblems(
  r: Record<string, unknown>,
  registry: Address,
  chainId: number,
  tokenId: string,
): RegistrationProblem[] {
  return fileFindings(r, tokenId, `eip155:${chainId}:${registry}`)
    .filter((f) => CONFORMANCE_FINDINGS.has(f.code))
    .map(({ code, scanCode, message }) => ({ code, scanCode, message }));
}

/**
 * The facts score and best practices read from a resolution. Validity is decided from the
 * registration file itself (a cached resolution keeps the file and the problems' text only): a
 * resolution without a file has a basic problem (no token, no tokenURI, unreadable).
 */
export function identityFacts(r: Resolution, wallet: string): IdentityFacts {
  const basicsValid = r.registration !== null && !shapeFindings(r.registration).some((p) => BASIC_PROBLEMS.has(p.code));
  const own = isAddress(wallet) ? wallet : null;
  return {
    tokenId: r.tokenId,
    ownerMatches: Boolean(r.owner && own && isAddressEqual(r.owner, own)),
    payoutMatches: Boolean(r.agentWallet && own && isAddressEqual(r.agentWallet, own)),
    registrationValid: basicsValid,
    registrationConformant: Boolean(r.registration) && r.registrationErrors.length === 0,
  };
}
