import { CliError } from './cli-error.js';

/** The market of a run unless --url or SKILL_MARKET_URL names another: a development service. */
export const DEFAULT_URL = 'http://localhost:3000';

/** localhost, 127.0.0.0/8 and ::1, as the WHATWG URL parser writes a hostname (`127.1` is `127.0.0.1`). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * The market a run talks to: `given` (--url, or its alias --market), else SKILL_MARKET_URL, else
 * the default; without trailing slashes. Refused unless it is https, or plain http to a loopback
 * host: over plain http anyone on the way reads the agent's token and can rewrite a price, the
 * wallet a payment goes to and the skills installed.
 */
export function marketUrl(env: Readonly<Record<string, string | undefined>>, given?: string): string {
  const [value, source] =
    given !== undefined
      ? [given, '--url']
      : env.SKILL_MARKET_URL !== undefined
        ? [env.SKILL_MARKET_URL, 'SKILL_MARKET_URL']
        : [DEFAULT_URL, 'the default'];
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError('invalid_option', `the market URL ${JSON.stringify(value)} (${source}) is not a URL`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname)))
    throw new CliError(
      'market_not_https',
      `refused: the market URL ${value} (${source}) is not https; over ${url.protocol.replace(/:$/, '')} anyone on the way ` +
        'could read the agent token and change prices, payees and skills. Use https:// ' +
        '(plain http only to localhost, 127.0.0.0/8 or [::1])',
    );
  return value.replace(/\/+$/, '');
}
