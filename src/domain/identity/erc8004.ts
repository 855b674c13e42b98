import { getAddress, isAddressEqual, type Address, type PublicClient } from 'viem';
import { identityRegistryAbi } from '../../platform/chain/identity-registry.js';
import type { IdentityFacts } from '../scoring/facts.js';
import { fetchLimited, OutboundFetchError, type OutboundLimits } from '../../platform/outbound-fetch.js';

export const REGISTRATION_TYPE = 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1';

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
  const read = <T>(functionName: 'ownerOf' | 'getAgentWallet' | 'tokenURI') =>
    (
      client.readContract({ address: registry, abi: identityRegistryAbi, functionName, args: [id] }) as Promise<T>
    ).catch(() => null);
  const [owner, wallet, uri] = await Promise.all([
    read<Address>('ownerOf'),
    read<Address>('getAgentWallet'),
    read<string>('tokenURI'),
  ]);
  const errors: string[] = [];
  let registration: Record<string, unknown> | null = null;
  if (!owner) errors.push(`token ${tokenId} does not exist in the registry`);
  else if (!uri) errors.push('the token has no tokenURI');
  else {
    try {
      registration = await fetchRegistration(uri, fetchPolicy);
      errors.push(...registrationProblems(registration, registry, chainId, tokenId));
    } catch (err) {
      // The code goes into the problem, so readers of the identity document can tell a refusal from an outage.
      errors.push(
        `registration file unreadable: ${(err as Error).message}${err instanceof OutboundFetchError ? ` (${err.code})` : ''}`,
      );
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
    registrationErrors: errors,
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
    const bytes = meta.endsWith(';base64') ? Buffer.from(payload, 'base64') : Buffer.from(decodeURIComponent(payload));
    if (bytes.length > policy.maxBytes)
      throw new OutboundFetchError(
        'outbound_too_large',
        `the data: URI holds ${bytes.length} bytes, more than ${policy.maxBytes}`,
      );
    text = bytes.toString('utf8');
  } else if (policy.protocols.some((p) => uri.startsWith(`${p}//`))) {
    text = (await fetchLimited(uri, policy)).toString('utf8');
  } else {
    throw new Error(`scheme of ${uri.slice(0, 16)}… is not fetched (use data: or ${policy.protocols.join(' or ')})`);
  }
  const parsed = JSON.parse(text);
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not a JSON object');
  return parsed as Record<string, unknown>;
}

/** What keeps a registration file from the ERC-8004 registration-v1 shape and from naming this token. */
export function registrationProblems(
  r: Record<string, unknown>,
  registry: Address,
  chainId: number,
  tokenId: string,
): string[] {
  const problems: string[] = [];
  if (r.type !== REGISTRATION_TYPE) problems.push(`type must be "${REGISTRATION_TYPE}"`);
  for (const k of ['name', 'description'] as const)
    if (typeof r[k] !== 'string' || !r[k]) problems.push(`${k} is required`);
  if (!Array.isArray(r.services))
    problems.push(
      Array.isArray(r.endpoints)
        ? 'uses the deprecated "endpoints"; rename it to "services"'
        : 'services[] is required',
    );
  if (r.active !== true) problems.push('active must be true');
  const regs = Array.isArray(r.registrations) ? (r.registrations as Array<Record<string, unknown>>) : [];
  const ours = `eip155:${chainId}:${registry}`.toLowerCase();
  if (!regs.some((x) => String(x.agentId) === tokenId && String(x.agentRegistry).toLowerCase() === ours)) {
    problems.push(`registrations[] must include {agentId: ${tokenId}, agentRegistry: "eip155:${chainId}:${registry}"}`);
  }
  return problems;
}

/** The facts score and best practices read from a resolution. */
export function identityFacts(r: Resolution, wallet: string): IdentityFacts {
  const basicsValid =
    Boolean(r.registration) &&
    !r.registrationErrors.some((e) => /type must|is required|unreadable|does not exist|no tokenURI/.test(e));
  return {
    tokenId: r.tokenId,
    ownerMatches: Boolean(r.owner && isAddressEqual(r.owner, wallet as Address)),
    payoutMatches: Boolean(r.agentWallet && isAddressEqual(r.agentWallet, wallet as Address)),
    registrationValid: basicsValid,
    registrationConformant: Boolean(r.registration) && r.registrationErrors.length === 0,
  };
}
