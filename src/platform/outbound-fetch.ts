import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, isIPv6, type LookupFunction } from 'node:net';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import { AppError } from './errors.js';

/**
 * What a fetch of a URL someone else chose (an agent's registration file) may cost us. Without
 * these, one tokenURI could point the service at its own network (cloud metadata, Redis, the
 * database's port), or hold a worker for minutes with a slow or endless body.
 */
export interface OutboundLimits {
  /** The body is cut off beyond this many bytes. */
  maxBytes: number;
  /** The whole exchange (resolving, connecting, headers and body) is cut off after this. */
  timeoutMs: number;
  /** URL schemes fetched, e.g. ['https:']. */
  protocols: readonly string[];
  /**
   * Loopback, private and reserved addresses too. Only for a server of one's own on this machine
   * (a test's); never for URLs agents choose in a deployment.
   */
  allowPrivateAddresses?: boolean;
}

export type OutboundFailure =
  | 'outbound_invalid_url'
  | 'outbound_scheme_not_allowed'
  | 'outbound_address_not_allowed'
  | 'outbound_timeout'
  | 'outbound_too_large'
  | 'outbound_bad_status'
  | 'outbound_failed';

/**
 * A refused or failed outbound fetch; `code` says which, for callers and for the problems they
 * record. Its message names the host and path at most: never an address a name resolved to, nor
 * the URL's credentials or query.
 */
export class OutboundFetchError extends AppError {
  /** The status the server answered, for `outbound_bad_status`. */
  readonly upstreamStatus: number | undefined;

  constructor(code: OutboundFailure, message: string, options?: { cause?: unknown; upstreamStatus?: number }) {
    // A URL we refuse to fetch is the URL's fault; a server that failed us is a bad gateway.
    const refused =
      code === 'outbound_invalid_url' ||
      code === 'outbound_scheme_not_allowed' ||
      code === 'outbound_address_not_allowed';
    super(refused ? 422 : 502, code, message, undefined, options);
    this.upstreamStatus = options?.upstreamStatus;
  }
}

/**
 * Addresses no URL from outside may reach: the IANA special-purpose ranges (loopback, private,
 * link-local with the cloud metadata endpoint, carrier-grade NAT, documentation, benchmarking,
 * multicast, reserved) and the IPv6 forms that embed or tunnel an IPv4 address. Checked on every
 * address a name resolves to, and the connection goes to the address checked (no second lookup
 * a rebinding name could answer differently); request-filtering-agent checks again at connect.
 */
const NOT_PUBLIC_V4 = new BlockList();
// A list of its own: BlockList matches IPv4 addresses against IPv4-mapped IPv6 rules too, so the
// ::ffff:0:0/96 rule below would take every IPv4 address with it.
const NOT_PUBLIC_V6 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  NOT_PUBLIC_V4.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  // ::/96 (IPv4-compatible, deprecated) and ::ffff:0:0:0/96 (IPv4-translated) embed IPv4 addresses too.
  ['::', 96],
  ['::1', 128],
  ['::ffff:0:0', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC_V6.addSubnet(net, prefix, 'ipv6');

/** Whether an IP address is on the public internet (not loopback, private, link-local or reserved). */
export function isPublicAddress(address: string): boolean {
  return isIPv6(address) ? !NOT_PUBLIC_V6.check(address, 'ipv6') : !NOT_PUBLIC_V4.check(address, 'ipv4');
}

// The address a name resolved to stays out of the message: it would map the network behind us.
const refusedAddress = (host: string, address: string) =>
  new OutboundFetchError(
    'outbound_address_not_allowed',
    `${address === host ? `${host} is` : `${host} resolves to`} a private or reserved address; it is not fetched`,
  );

/** A network failure by its error code only: a system error's text names the address it connected to. */
const failed = (label: string, err: NodeJS.ErrnoException) =>
  new OutboundFetchError('outbound_failed', `${label} failed (${err.code ?? 'network error'})`, { cause: err });

/** dns.lookup that refuses a name if any of its addresses is not public, and hands on only checked addresses. */
function publicOnlyLookup(): LookupFunction {
  return (
    hostname: string,
    options: LookupOptions,
    callback: (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const bad = addresses.find((a) => !isPublicAddress(a.address));
      if (bad) return callback(refusedAddress(hostname, bad.address), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * GETs a URL someone else chose, within `limits`: the scheme must be allowed, every address the
 * host resolves to must be public, redirects are not followed, a non-2xx status is refused, and
 * the body is cut off at `maxBytes` and the exchange at `timeoutMs`. Nothing is retried.
 */
export async function fetchLimited(
  url: string,
  limits: OutboundLimits,
  headers: Record<string, string> = {},
): Promise<Buffer> {
  let target: URL;
  try {
    target = new URL(url);
  } catch (err) {
    // Not echoed: a string that is not a URL may still hold credentials.
    throw new OutboundFetchError('outbound_invalid_url', 'the URL is not a valid URL', { cause: err });
  }
  if (!limits.protocols.includes(target.protocol) || (target.protocol !== 'https:' && target.protocol !== 'http:')) {
    throw new OutboundFetchError(
      'outbound_scheme_not_allowed',
      `${target.protocol} URLs are not fetched (allowed: ${limits.protocols.join(', ')})`,
    );
  }
  const allowPrivate = limits.allowPrivateAddresses === true;
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivate && isIP(host) && !isPublicAddress(host)) throw refusedAddress(host, host);

  const secure = target.protocol === 'https:';
  const agentOptions = { allowPrivateIPAddress: allowPrivate, allowMetaIPAddress: false, keepAlive: false };
  const agent = secure ? new RequestFilteringHttpsAgent(agentOptions) : new RequestFilteringHttpAgent(agentOptions);
  const label = `GET ${target.origin}${target.pathname}`;
  return new Promise<Buffer>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, body: Buffer = Buffer.alloc(0)) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      agent.destroy();
      if (err) reject(err);
      else resolve(body);
    };
    const timer = setTimeout(
      () => finish(new OutboundFetchError('outbound_timeout', `${label} took longer than ${limits.timeoutMs} ms`)),
      limits.timeoutMs,
    );
    const req = (secure ? httpsRequest : httpRequest)(
      target,
      {
        method: 'GET',
        agent,
        ...(allowPrivate ? {} : { lookup: publicOnlyLookup() }),
        headers: { accept: 'application/json', 'accept-encoding': 'identity', ...headers },
      },
      (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          res.resume();
          return finish(
            new OutboundFetchError(
              'outbound_bad_status',
              `${label} answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
              { upstreamStatus: status },
            ),
          );
        }
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > limits.maxBytes) {
          return finish(
            new OutboundFetchError('outbound_too_large', `${label} is ${declared} bytes, more than ${limits.maxBytes}`),
          );
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limits.maxBytes)
            return finish(
              new OutboundFetchError('outbound_too_large', `${label} is more than ${limits.maxBytes} bytes`),
            );
          chunks.push(chunk);
        });
        res.on('end', () => finish(null, Buffer.concat(chunks)));
        res.on('error', (err) => finish(failed(label, err)));
        res.on(
          'close',
          () => res.complete || finish(new OutboundFetchError('outbound_failed', `${label} was cut off by the server`)),
        );
      },
    );
    req.on('error', (err) => finish(err instanceof OutboundFetchError ? err : failed(label, err)));
    req.end();
  });
}
