/**
 * Classifies network destinations. A destination is suspicious when it hides who runs it (raw IP,
 * URL shortener), serves anonymous uploads (paste sites) or exists to collect requests (request
 * catchers and tunnels). Everything else is listed for the reader as information.
 */

const DOCS_HOSTS = new Set([
  'github.com',
  'docs.github.com',
  'developer.mozilla.org',
  'docs.python.org',
  'nodejs.org',
  'www.npmjs.com',
  'pypi.org',
  'en.wikipedia.org',
  'agentskills.io',
  'docs.anthropic.com',
  'www.rfc-editor.org',
  'datatracker.ietf.org',
  'www.w3.org',
  'json-schema.org',
  'semver.org',
  'example.com',
  'example.org',
  'www.example.com',
  'localhost',
]);

const PASTE_SITES = [
  'pastebin.com',
  'paste.ee',
  'hastebin.com',
  'ghostbin.com',
  'rentry.co',
  'dpaste.org',
  'dpaste.com',
  'termbin.com',
  'transfer.sh',
  '0x0.st',
  'ix.io',
  'sprunge.us',
  'paste.rs',
  'gist.githubusercontent.com',
  'pastes.dev',
  'controlc.com',
];

const SHORTENERS = [
  'bit.ly',
  'tinyurl.com',
  't.co',
  'goo.gl',
  'is.gd',
  'ow.ly',
  'cutt.ly',
  'rebrand.ly',
  'shorturl.at',
  'tiny.cc',
  'rb.gy',
  'buff.ly',
  't.ly',
  'v.gd',
];

const REQUEST_CATCHERS = [
  'webhook.site',
  'requestbin.com',
  'requestbin.net',
  'pipedream.net',
  'ngrok.io',
  'ngrok.app',
  'ngrok-free.app',
  'ngrok.dev',
  'beeceptor.com',
  'hookbin.com',
  'interact.sh',
  'oast.fun',
  'oast.live',
  'oast.me',
  'oast.pro',
  'oast.site',
  'oast.online',
  'burpcollaborator.net',
  'trycloudflare.com',
  'loca.lt',
  'localtunnel.me',
  'serveo.net',
  'canarytokens.com',
  'requestcatcher.com',
  'mockbin.org',
];

const endsWithDomain = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

export type HostClass = { kind: 'docs' | 'ordinary' } | { kind: 'suspicious'; why: string };

const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

function isLoopback(host: string): boolean {
  return host === 'localhost' || host.startsWith('127.') || host === '[::1]' || host === '::1' || host === '0.0.0.0';
}

/** Classifies a lower-case host name; `path` lets Discord-style webhook URLs be recognised. */
export function classifyHost(host: string, path = ''): HostClass {
  if (isLoopback(host)) return { kind: 'docs' };
  if (IPV4.test(host) || host.startsWith('[')) return { kind: 'suspicious', why: 'a raw IP address' };
  if (PASTE_SITES.some((d) => endsWithDomain(host, d))) return { kind: 'suspicious', why: 'a paste site' };
  if (SHORTENERS.some((d) => endsWithDomain(host, d))) return { kind: 'suspicious', why: 'a URL shortener' };
  if (REQUEST_CATCHERS.some((d) => endsWithDomain(host, d)))
    return { kind: 'suspicious', why: 'a request catcher or tunnel' };
  if (/(^|\.)discord(app)?\.com$/.test(host) && path.startsWith('/api/webhooks'))
    return { kind: 'suspicious', why: 'a Discord webhook' };
  if (DOCS_HOSTS.has(host)) return { kind: 'docs' };
  return { kind: 'ordinary' };
}

export interface FoundUrl {
  url: string;
  host: string;
  path: string;
  index: number;
}

// Bounded character classes only: the scan stays linear on megabyte-long lines.
const URL_PATTERN =
  /\b(?:https?|wss?|ftp):\/\/([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?([^\s"'`<>()[\]{}\\]{0,2000})/g;

/** Every http(s), ws(s) or ftp URL in a text, with its host in lower case. */
export function findUrls(text: string): FoundUrl[] {
  const urls: FoundUrl[] = [];
  for (const m of text.matchAll(URL_PATTERN)) {
    const host = (m[1] ?? '').toLowerCase().replace(/\.$/, '');
    if (!host.includes('.') && !host.startsWith('[') && host !== 'localhost') continue;
    urls.push({ url: m[0], host, path: m[2] ?? '', index: m.index ?? 0 });
  }
  return urls;
}

/** The host of a URL-ish string (a URL, or "host:port" / "user@host" of nc, ssh and scp). */
export function hostOf(value: string): string | undefined {
  const url = findUrls(value)[0];
  if (url && value.trim().startsWith(url.url.slice(0, 4))) return url.host;
  const bare = /^(?:[\w.-]+@)?([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+|\[[0-9A-Fa-f:.]+\])(?::[\w/~.-]*)?$/.exec(
    value.trim(),
  );
  return bare?.[1]?.toLowerCase();
}
