/**
 * Which browser origins may call the MCP endpoint. The MCP specification (Streamable HTTP) requires
 * servers to validate `Origin`: without it, a page on any site, or a name rebound to this host
 * (DNS rebinding), could drive the endpoint from a visitor's browser, from the visitor's network.
 */
export interface OriginPolicy {
  /** Origins allowed besides loopback: MCP_ALLOWED_ORIGINS and the service's own public origin. */
  allowed: ReadonlySet<string>;
  /** Whether `http://localhost:*`, `http://127.0.0.1:*` and `http://[::1]:*` are allowed (development and test only). */
  loopback: boolean;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The policy of a deployment: the configured origins, its own public origin, and loopback outside production. */
export function originPolicy(opts: {
  env: 'development' | 'test' | 'production';
  allowedOrigins: readonly string[];
  publicBaseUrl: string;
}): OriginPolicy {
  return {
    allowed: new Set([...opts.allowedOrigins, new URL(opts.publicBaseUrl).origin]),
    loopback: opts.env === 'development' || opts.env === 'test',
  };
}

/**
 * Whether a request with this `Origin` header may go on. No header is a client that is not a
 * browser (agents, the SDK's clients): allowed. A header must be an origin exactly as browsers send
 * it (`scheme://host[:port]`, lower case, no path); `null` (sandboxed frames, files) never is.
 */
export function originAllowed(origin: string | undefined, policy: OriginPolicy): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.origin !== origin) return false;
  if (policy.allowed.has(url.origin)) return true;
  return policy.loopback && url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/**
 * A comma-separated list of origins (`https://app.example,https://tools.example:8443`), each as
 * browsers send it (a trailing slash and upper case are tolerated), as the origins they stand for.
 * Throws naming the first entry that is not an origin.
 */
export function parseOrigins(text: string | undefined): string[] {
  const origins: string[] = [];
  for (const entry of (text ?? '')
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (!url || url.origin === 'null' || url.origin !== entry.replace(/\/$/, '').toLowerCase())
      throw new Error(`"${entry}" is not an origin (scheme://host[:port], without a path)`);
    origins.push(url.origin);
  }
  return origins;
}
