import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { z } from 'zod';
import { AppError, PayloadTooLargeError, ServiceUnavailableError } from '../../platform/errors.js';
import type { Logger } from '../../platform/logger.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const PROBLEM_TYPE_BASE = '/problems/';

/** RFC 9457 problem details, as every error of this API is answered. */
export const ProblemSchema = z
  .object({
    type: z.string().describe('URI reference naming the problem type: /problems/<code>'),
    title: z.string(),
    status: z.number().int(),
    detail: z.string().optional(),
    instance: z.string().optional(),
    code: z.string().describe('stable snake_case error code; branch on this, not on text'),
    invalidParams: z
      .array(z.object({ name: z.string(), in: z.enum(['query', 'path', 'body', 'header']), reason: z.string() }))
      .optional(),
  })
  .loose();

export type Problem = z.infer<typeof ProblemSchema>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Content Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export function sendProblem(
  res: Response,
  status: number,
  code: string,
  detail: string,
  extra: Record<string, unknown> = {},
) {
  const body: Problem = {
    type: PROBLEM_TYPE_BASE + code,
    title: TITLES[status] ?? 'Error',
    status,
    detail,
    code,
    instance: res.req?.originalUrl,
    ...extra,
  };
  res.status(status).type(PROBLEM_CONTENT_TYPE).set('Cache-Control', 'no-store').send(JSON.stringify(body));
}

/** Unknown paths: a 404 problem, never Express's HTML page. */
export const notFoundHandler: RequestHandler = (req, res) => {
  sendProblem(res, 404, 'route_not_found', `No resource at ${req.method} ${req.path}`);
};

/** The errors Express's router and body parser raise (http-errors): a status and, for the parser, a type. */
interface HttpLibraryError {
  type?: string;
  status?: number;
  expose?: boolean;
}

/**
 * A client's malformed request as the router or the body parser reports it, as [status, code,
 * detail]; undefined for anything else. Known classes get their own code; any other error these
 * libraries mark as the client's (4xx) is still a 400, never a 500.
 */
export function clientErrorOf(err: unknown, bodyLimit: string): [number, string, string] | undefined {
  const e = err as HttpLibraryError | undefined;
  if (!e || typeof e.status !== 'number' || e.status < 400 || e.status >= 500) return undefined;
  if (err instanceof AppError) return undefined;
  if (err instanceof URIError) return [400, 'malformed_uri', 'The path contains malformed percent-encoding'];
  switch (e.type) {
    case 'entity.parse.failed':
      return [400, 'malformed_json', 'The request body is not valid JSON'];
    case 'entity.too.large':
      return [413, 'payload_too_large', new PayloadTooLargeError(bodyLimit).message];
    case 'encoding.unsupported':
      return [
        415,
        'unsupported_content_encoding',
        'The Content-Encoding of the body is not supported (use gzip, deflate, br or none)',
      ];
    case 'charset.unsupported':
      return [415, 'unsupported_charset', 'The body must be UTF-8'];
    case 'request.size.invalid':
      return [400, 'malformed_request_body', 'The body is not as long as its Content-Length says'];
    default:
      // A body that fails to decompress (a broken gzip stream) and the like.
      return [400, 'malformed_request_body', 'The request body could not be read: its encoding or framing is broken'];
  }
}

/**
 * The one place errors become responses. Client mistakes keep their status; anything unknown is
 * a 500 logged with its stack and the request id, and answered without internals.
 */
export function errorHandler(log: Logger, bodyLimit: string): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    if ((err as HttpLibraryError)?.type === 'request.aborted') {
      // The client went away; nothing to answer and nothing wrong with us.
      return;
    }
    const client = clientErrorOf(err, bodyLimit);
    if (client) return sendProblem(res, ...client);
    if (err instanceof ServiceUnavailableError) {
      res.set('Retry-After', String(err.retryAfterSeconds));
    }
    if (err instanceof AppError) {
      // Unavailable is a state we chose (a facilitator down, searches shed under load): one line, no stack.
      if (err instanceof ServiceUnavailableError)
        log.warn({ code: err.code, requestId: res.locals.requestId }, err.message);
      else if (err.status >= 500) log.error({ err, code: err.code, requestId: res.locals.requestId }, 'request failed');
      return sendProblem(res, err.status, err.code, err.message, err.details ? { ...err.details } : {});
    }
    log.error({ err, requestId: res.locals.requestId, method: req.method, url: req.originalUrl }, 'unhandled error');
    return sendProblem(res, 500, 'internal_error', 'The server failed to handle this request', {
      requestId: res.locals.requestId,
    });
  };
}
