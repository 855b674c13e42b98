import type { Request } from 'express';

/**
 * Whether a browser form post comes from a page of this site: browsers say where a request comes
 * from in Sec-Fetch-Site, or else in Origin. A post with neither is refused (a page with a form
 * always sends one). `publicOrigin`: the public site's origin too, for a page reached through a
 * CDN whose Host differs from ours.
 */
export function postedFromThisSite(req: Request, publicOrigin?: string): boolean {
  const site = req.get('sec-fetch-site');
  if (site) return site === 'same-origin';
  const origin = req.get('origin');
  return origin !== undefined && (origin === `${req.protocol}://${req.get('host')}` || origin === publicOrigin);
}
