import { timingSafeEqual } from 'node:crypto';

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Whether an `Authorization` header carries the admin token, as `Bearer <token>` (scripts,
 * Prometheus) or as the password of HTTP Basic auth (a browser prompts for it; the user name is
 * ignored). Compared in constant time.
 */
export function presentsAdminToken(authorization: string | undefined, token: string): boolean {
  const [scheme = '', value = ''] = (authorization ?? '').split(' ', 2);
  let presented = '';
  if (/^bearer$/i.test(scheme)) presented = value;
  else if (/^basic$/i.test(scheme)) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    presented = decoded.slice(decoded.indexOf(':') + 1);
  }
  return presented !== '' && same(presented, token);
}
