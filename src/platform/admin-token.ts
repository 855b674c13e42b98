import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Whether two secrets are equal, compared in constant time as digests of equal length, so the
 * time taken says nothing of either's length or content.
 */
export function sameSecret(a: string, b: string): boolean {
  const digest = (s: string) => createHmac('sha256', 'skill-market-secret-compare').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}

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
  return presented !== '' && sameSecret(presented, token);
}
