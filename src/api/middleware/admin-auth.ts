import { timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { sendProblem } from '../http/problem.js';

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Guards operator pages with the admin token, given as `Authorization: Bearer <token>` (scripts)
 * or as the password of HTTP Basic auth (a browser prompts for it; the user name is ignored).
 */
export function adminAuth(token: string): RequestHandler {
  return (req, res, next) => {
    const header = req.get('authorization') ?? '';
    const [scheme, value = ''] = header.split(' ', 2);
    let presented = '';
    if (/^bearer$/i.test(scheme)) presented = value;
    else if (/^basic$/i.test(scheme)) {
      const decoded = Buffer.from(value, 'base64').toString('utf8');
      presented = decoded.slice(decoded.indexOf(':') + 1);
    }
    if (presented && same(presented, token)) return next();
    res.set('WWW-Authenticate', 'Basic realm="skill-market operators", charset="UTF-8"');
    sendProblem(res, 401, 'admin_token_required', 'This page needs the admin token (Bearer, or Basic password)');
  };
}
