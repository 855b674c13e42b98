import { lookup } from 'node:dns/promises';
import { BlockList, isIP, isIPv6 } from 'node:net';
import { isPublicAddress } from '../../platform/outbound-fetch.js';
import { withTimeout } from '../../platform/timeout.js';
import { webhookProblem } from './webhook-problems.js';

/**
 * Where deliveries may go. Endpoint URLs are chosen by agents, so they pass the filter that
 * registration files pass (src/platform/outbound-fetch.ts): public addresses only. Loopback over
 * plain http is allowed only where WEBHOOK_ALLOW_LOOPBACK is on (development and test; production
 * refuses to start with it), for a receiver on the developer's own machine.
 */
export interface WebhookNetworkPolicy {
  allowLoopback: boolean;
  /** Host names that are this service (its public origin's): refused on any port. */
  ownHostnames: readonly string[];
  /** `host:port` pairs this service listens on: refused. */
  ownHostPorts: readonly string[];
  /** The whole exchange of one attempt (connect, send, answer) is cut off after this. */
  timeoutMs: number;
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** Whether an address is a loopback one (127.0.0.0/8, ::1). */
export function isLoopbackAddress(address: string): boolean {
  return isIPv6(address) ? LOOPBACK.check(address, 'ipv6') : LOOPBACK.check(address, 'ipv4');
}

const RESOLVE_TIMEOUT_MS = 2_000;

/** The longest endpoint URL kept (the column's limit), counted once normalised. */
export const MAX_URL_LENGTH = 2048;

/** The port a URL connects to (its default when unset). */
const portOf = (u: URL) => u.port || (u.protocol === 'https:' ? '443' : '80');

/**
 * Checks an endpoint URL before it is stored and again before each attempt (a name may resolve
 * elsewhere since): absolute https (http only to loopback where allowed), no credentials, not
 * this service, and every address its host resolves to public (or loopback where allowed). The
 * connection itself is checked again at connect (request-filtering-agent), so a name that
 * rebinds between this lookup and the connection is refused too. Throws a webhook problem.
 */
export async function checkEndpointUrl(text: string, policy: WebhookNetworkPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw webhookProblem('webhook_url_invalid');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password)
    throw webhookProblem('webhook_url_invalid');
  // What is stored is the normalised URL (percent-encoded), so its length is what counts.
  if (url.href.length > MAX_URL_LENGTH) throw webhookProblem('webhook_url_too_long');
  // `host.` names the same host as `host`.
  const bare = (name: string) =>
    name
      .replace(/^\[(.*)\]$/, '$1')
      .toLowerCase()
      .replace(/\.$/, '');
  const host = bare(url.hostname);
  if (
    policy.ownHostnames.some((h) => bare(h) === host) ||
    policy.ownHostPorts.some((hp) => bare(hp.replace(/:\d+$/, '')) === host && hp.endsWith(`:${portOf(url)}`))
  )
    throw webhookProblem('webhook_url_own_host');
  const addresses = isIP(host) ? [host] : await resolve(host);
  const loopback = addresses.every(isLoopbackAddress);
  if (!addresses.every((a) => isPublicAddress(a) || (policy.allowLoopback && isLoopbackAddress(a))))
    throw webhookProblem('webhook_url_private');
  if (url.protocol === 'http:' && !(policy.allowLoopback && loopback)) throw webhookProblem('webhook_url_scheme');
  return url;
}

async function resolve(host: string): Promise<string[]> {
  try {
    const found = await withTimeout(lookup(host, { all: true }), RESOLVE_TIMEOUT_MS, 'resolving a webhook host');
    if (!found.length) throw new Error('no address');
    return found.map((a) => a.address);
  } catch {
    throw webhookProblem('webhook_url_unresolvable');
  }
}
