import type { Request, Response, RequestHandler } from 'express';
import type { z } from 'zod';
import { AppError, ValidationError, type InvalidParam } from '../../platform/errors.js';
import { findUnstorable } from '../../platform/text.js';
import type { RateLimitBucket } from '../../platform/rate-limit-policy.js';
import type { PaywallOutcome } from '../../domain/payments/paywall/paywall.js';
import { HEADER_V1, HEADER_V2 } from './x402-headers.js';
import { sendPaywallOutcome } from './x402.js';

type HttpMethod = 'get' | 'post' | 'patch' | 'put' | 'delete';
type AnyObject = z.ZodObject<z.ZodRawShape>;

export interface ResponseSpec {
  description: string;
  /** JSON body schema; omit for non-JSON bodies and give `contentType`. */
  schema?: z.ZodType;
  contentType?: string;
  headers?: Record<string, string>;
}

/**
 * The price of a paid operation in USD, as x402 crawlers read it from OpenAPI `x-payment-info`:
 * one fixed amount, or the range a dynamic price falls in.
 */
export type PaymentPrice = { mode: 'fixed'; amount: string } | { mode: 'dynamic'; min: string; max: string };

export interface RouteContext<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  req: Request;
  res: Response;
}

/**
 * One HTTP route: its contract (validated input, documented output) and its handler. The same
 * object mounts the route and generates its OpenAPI entry, so the two cannot drift apart.
 */
export interface RouteSpec<
  P extends AnyObject = AnyObject,
  Q extends AnyObject = AnyObject,
  B extends z.ZodType = z.ZodType,
> {
  method: HttpMethod;
  /** Express path syntax (`/api/agents/:handle/health.json`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  params?: P;
  query?: Q;
  body?: B;
  security?: Array<'bearerJwt' | 'x402' | 'adminToken'>;
  responses: Record<number, ResponseSpec>;
  /** Per-client limit this route counts against (429 with Retry-After beyond it); see docs/operations.md. */
  rateLimit?: RateLimitBucket;
  /** Served from the bucket at this path when published (a static document); documented as such. */
  staticDocument?: boolean;
  /** What a paid route costs; documented as `x-payment-info` (x402scan discovery). */
  price?: PaymentPrice;
  /**
   * The 402 of a paid route for a request whose query or body fails validation and that carries
   * no payment and no sign-in-with-x header: crawlers probe paid routes with empty bodies and
   * expect the payment requirements, not a 400. Called with the validated path parameters (a
   * request whose path is invalid, or whose input holds what cannot be stored, keeps its 400).
   * `undefined` keeps the validation error; a thrown error (404 for a resource that does not
   * exist) is answered as usual.
   */
  paidProbe?: (req: Request, params: z.infer<P>) => Promise<PaywallOutcome | undefined>;
  handler: (ctx: RouteContext<z.infer<P>, z.infer<Q>, z.infer<B>>) => Promise<void> | void;
}

/** Identity function that keeps the generic types of a route literal. */
export function defineRoute<P extends AnyObject, Q extends AnyObject, B extends z.ZodType>(
  spec: RouteSpec<P, Q, B>,
): RouteSpec<P, Q, B> {
  return spec;
}

/**
 * A route of any schemas, for lists of routes. Its handler takes the parsed input of its own schemas,
 * which no single type names, so the parameters are `any` here and checked by `defineRoute` instead.
 */
// biome-ignore lint/suspicious/noExplicitAny: an existential type; each route is checked where it is defined
export type AnyRoute = RouteSpec<any, any, any>;

function parseOrCollect(
  schema: z.ZodType | undefined,
  value: unknown,
  where: InvalidParam['in'],
  problems: InvalidParam[],
) {
  if (!schema) return value;
  // Checked before the schema: a string the schema accepts may still be one PostgreSQL refuses.
  const unstorable = findUnstorable(value);
  if (unstorable) {
    problems.push({ name: unstorable.path || where, in: where, reason: unstorable.reason });
    return undefined;
  }
  let parsed: ReturnType<z.ZodType['safeParse']>;
  try {
    parsed = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  } catch (err) {
    // A validator that throws is our bug, but the input is what made it throw: still a 400.
    problems.push({ name: where, in: where, reason: `could not be validated: ${(err as Error).message}` });
    return undefined;
  }
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues) {
    problems.push({ name: issue.path.join('.') || where, in: where, reason: issue.message });
  }
  return undefined;
}

/** A request that carries a body (RFC 9112: a length above zero, or a transfer coding). */
function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

export class UnsupportedMediaTypeError extends AppError {
  constructor(got: string | undefined) {
    super(415, 'unsupported_media_type', `The request body must be application/json${got ? `, not ${got}` : ''}`);
  }
}

/** The client header of the sign-in-with-x extension (a wallet proving it already paid). */
const SIWX_HEADER = 'SIGN-IN-WITH-X';

/** A request that tries to pay or to prove a payment: its input errors are its own to hear. */
const attemptsPayment = (req: Request) => [HEADER_V1, HEADER_V2, SIWX_HEADER].some((h) => (req.get(h) ?? '') !== '');

/** Answers an unpaid probe of a paid route with its 402 instead of its input error; says whether it did. */
async function answeredByProbe(route: AnyRoute, req: Request, res: Response, params: unknown): Promise<boolean> {
  if (!route.paidProbe || attemptsPayment(req) || params === undefined) return false;
  if ([req.query, req.body].some((v) => findUnstorable(v))) return false;
  const outcome = await route.paidProbe(req, params);
  if (!outcome) return false;
  sendPaywallOutcome(res, outcome);
  return true;
}

/** Validates params, query and body before the handler runs; every problem is reported at once. */
export function toHandler(route: AnyRoute): RequestHandler {
  return async (req, res, next) => {
    try {
      const problems: InvalidParam[] = [];
      const params = parseOrCollect(route.params, req.params, 'path', problems);
      if (route.body && hasBody(req) && !req.is(['application/json', 'application/*+json'])) {
        const probed = !problems.length && (await answeredByProbe(route, req, res, params));
        if (!probed) next(new UnsupportedMediaTypeError(req.get('content-type')));
        return;
      }
      const query = parseOrCollect(route.query, req.query, 'query', problems);
      const body = route.body ? parseOrCollect(route.body, req.body, 'body', problems) : undefined;
      if (problems.length) {
        if (!problems.some((p) => p.in === 'path') && (await answeredByProbe(route, req, res, params))) return;
        const where = [...new Set(problems.map((p) => p.in))].join(' and ');
        next(new ValidationError(`Invalid ${where} parameters`, problems));
        return;
      }
      await route.handler({ params, query, body, req, res });
    } catch (err) {
      next(err);
    }
  };
}

/** Express `:name` path → OpenAPI `{name}` path. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
