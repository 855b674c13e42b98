/**
 * What an ERC-8004 explorer says about an agent's registration file, by our stable code and by
 * 8004scan's (its error codes reference, best-practices.8004scan.io/docs/implementation/error-codes.html:
 * E/W/I for error, warning and info, A for agent metadata). A seller reads in its identity
 * document why an explorer marks its agent, under the code that explorer shows.
 *
 * Pure, and below the domain: the identity resolver (src/domain/identity/erc8004.ts) decides
 * conformance from these findings, and the identity document lists them from the cached
 * resolution, so both say the same thing.
 */

/** The `type` of an ERC-8004 registration file (registration-v1). */
export const REGISTRATION_V1 = 'https://eips.ethereum.org/EIPS/eip-8004#registration-v1';

export type FindingCode =
  | 'token_missing'
  | 'token_uri_missing'
  | 'file_unreadable'
  | 'type_wrong'
  | 'name_missing'
  | 'description_missing'
  | 'services_missing'
  | 'endpoints_deprecated'
  | 'inactive'
  | 'token_not_listed'
  | 'x402_support_not_boolean'
  | 'agent_wallet_off_chain'
  | 'mcp_version_missing'
  | 'a2a_version_missing';

export type FindingSeverity = 'error' | 'warning' | 'info';

export interface RegistrationFinding {
  /** Ours: stable snake_case. */
  code: FindingCode;
  /** 8004scan's code for the same finding, or null where it has none we could establish. */
  scanCode: string | null;
  severity: FindingSeverity;
  message: string;
}

/**
 * The findings that make a file non-conformant here (the identity score's `specConformance`);
 * the others are advice an explorer also gives.
 */
export const CONFORMANCE_FINDINGS: ReadonlySet<FindingCode> = new Set([
  'token_missing',
  'token_uri_missing',
  'file_unreadable',
  'type_wrong',
  'name_missing',
  'description_missing',
  'services_missing',
  'endpoints_deprecated',
  'inactive',
  'token_not_listed',
]);

const isObject = (v: unknown): v is Record<string, unknown> => Boolean(v) && typeof v === 'object' && !Array.isArray(v);

const finding = (
  code: FindingCode,
  scanCode: string | null,
  severity: FindingSeverity,
  message: string,
): RegistrationFinding => ({ code, scanCode, severity, message });

/** The findings of a file's own fields (type, name, description, services), whoever it names. */
export function shapeFindings(r: Record<string, unknown>): RegistrationFinding[] {
  const out: RegistrationFinding[] = [];
  if (r.type !== REGISTRATION_V1)
    out.push(
      finding('type_wrong', r.type === undefined ? 'WA001' : 'WA002', 'error', `type must be "${REGISTRATION_V1}"`),
    );
  if (typeof r.name !== 'string' || !r.name) out.push(finding('name_missing', 'WA003', 'error', 'name is required'));
  if (typeof r.description !== 'string' || !r.description)
    out.push(finding('description_missing', 'WA004', 'error', 'description is required'));
  if (!Array.isArray(r.services)) {
    if (Array.isArray(r.endpoints))
      out.push(
        finding('endpoints_deprecated', 'WA031', 'warning', 'uses the deprecated "endpoints"; rename it to "services"'),
      );
    else
      out.push(
        finding('services_missing', r.services === undefined ? 'IA002' : 'WA006', 'error', 'services[] is required'),
      );
  }
  return out;
}

/**
 * Every finding on a readable file that names token `tokenId` of `agentRegistry`
 * (`eip155:<chainId>:<address>`): its shape, whether it is active and lists this token, and the
 * advice an explorer adds (booleans, an off-chain agentWallet, protocol versions).
 */
export function fileFindings(
  r: Record<string, unknown>,
  tokenId: string,
  agentRegistry: string,
): RegistrationFinding[] {
  const out = shapeFindings(r);
  if (r.active !== true)
    out.push(finding('inactive', typeof r.active === 'boolean' ? null : 'WA015', 'warning', 'active must be true'));
  const listed = Array.isArray(r.registrations) ? r.registrations.filter(isObject) : [];
  const ours = agentRegistry.toLowerCase();
  if (!listed.some((x) => String(x.agentId) === tokenId && String(x.agentRegistry).toLowerCase() === ours)) {
    const scan =
      r.registrations === undefined
        ? 'IA004'
        : !Array.isArray(r.registrations)
          ? 'WA010'
          : r.registrations.length === 0
            ? 'IA005'
            : 'WA080';
    out.push(
      finding(
        'token_not_listed',
        scan,
        'warning',
        `registrations[] must include {agentId: ${tokenId}, agentRegistry: "${agentRegistry}"}`,
      ),
    );
  }
  if (r.x402Support !== undefined && typeof r.x402Support !== 'boolean')
    out.push(finding('x402_support_not_boolean', 'WA016', 'warning', 'x402Support must be true or false'));
  // The entries as listed, under `services` or the older `endpoints`.
  const listedServices = Array.isArray(r.services) ? r.services : Array.isArray(r.endpoints) ? r.endpoints : [];
  const services = listedServices.filter(isObject);
  if (r.agentWallet !== undefined || services.some((s) => s.name === 'agentWallet'))
    out.push(
      finding(
        'agent_wallet_off_chain',
        'WA083',
        'warning',
        'agentWallet belongs on chain (setAgentWallet), not in the registration file; explorers ignore it there',
      ),
    );
  const unversioned = (name: string) => services.some((s) => s.name === name && typeof s.version !== 'string');
  if (unversioned('MCP'))
    out.push(finding('mcp_version_missing', 'IA020', 'info', 'the MCP service should name its protocol version'));
  if (unversioned('A2A'))
    out.push(finding('a2a_version_missing', 'IA022', 'info', 'the A2A service should name its protocol version'));
  return out;
}

/** A resolution as the identity cache keeps it: the chain's facts, the file, the problems' text. */
export interface ResolvedRegistration {
  tokenId: string;
  registry: string;
  owner: string | null;
  tokenUri: string | null;
  registration: Record<string, unknown> | null;
  registrationErrors: string[];
}

/**
 * The findings of a resolution. Without a file, what kept it from being read: no token, no
 * tokenURI (8004scan's EA001), or an unreadable file, whose reason is the problem's own text.
 */
export function resolutionFindings(r: ResolvedRegistration): RegistrationFinding[] {
  if (r.registration) return fileFindings(r.registration, r.tokenId, r.registry);
  if (!r.owner) return [finding('token_missing', null, 'error', `token ${r.tokenId} does not exist in the registry`)];
  if (!r.tokenUri) return [finding('token_uri_missing', 'EA001', 'error', 'the token has no tokenURI')];
  return [finding('file_unreadable', null, 'error', r.registrationErrors[0] ?? 'registration file unreadable')];
}
