import type { RequestHandler } from 'express';
import { match } from 'path-to-regexp';
import { sendProblem } from './problem.js';

interface Served {
  method: string;
  path: string;
}

/**
 * Answers a request whose path is served but not with its method: 405 with `Allow` naming the
 * methods that are (RFC 9110 §15.5.6), instead of a 404 that says the resource does not exist.
 * Mounted after every route, so it only sees requests no route took.
 */
export function methodNotAllowed(served: Served[]): RequestHandler {
  const byPath = new Map<string, Set<string>>();
  for (const { method, path } of served) {
    const methods = byPath.get(path) ?? new Set<string>();
    methods.add(method.toUpperCase());
    if (method.toLowerCase() === 'get') methods.add('HEAD');
    methods.add('OPTIONS');
    byPath.set(path, methods);
  }
  const matchers = [...byPath].map(([path, methods]) => ({
    matches: match(path, { decode: false }),
    allow: [...methods].sort().join(', '),
  }));
  return (req, res, next) => {
    const found = matchers.find((m) => m.matches(req.path));
    if (!found) return next();
    res.set('Allow', found.allow);
    sendProblem(res, 405, 'method_not_allowed', `${req.method} is not allowed on ${req.path}; allowed: ${found.allow}`);
  };
}
