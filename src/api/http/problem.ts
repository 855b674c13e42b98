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

export function sendProblem(res: Response, status: number, code: string, detail: string, extra: Record<string, unknown> = {}) {
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

interface BodyParserError {
  type?: string;
  status?: number;
  limit?: number;
}

/**
 * The one place errors become responses. Client mistakes keep their status; anything unknown is
 * a 500 logged with its stack and answered without internals.
 */
export function errorHandler(log: Logger, bodyLimit: string): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const parserError = err as BodyParserError;
    if (parserError?.type === 'entity.parse.failed') {
      return sendProblem(res, 400, 'malformed_json', 'The request body is not valid JSON');
    }
    if (parserError?.type === 'entity.too.large') {
      const e = new PayloadTooLargeError(bodyLimit);
      return sendProblem(res, e.status, e.code, e.message);
    }
    if (parserError?.type === 'request.aborted') {
      // The client went away; nothing to answer and nothing wrong with us.
      return;
    }
    if (parserError?.type && typeof parserError.status === 'number' && parserError.status < 500) {
      return sendProblem(res, parserError.status, 'invalid_request_body', (err as Error).message);
    }
    if (err instanceof ServiceUnavailableError) {
      res.set('Retry-After', String(err.retryAfterSeconds));
    }
    if (err instanceof AppError) {
      // Unavailable is a state we chose (a facilitator down, searches shed under load): one line, no stack.
      if (err instanceof ServiceUnavailableError) log.warn({ code: err.code }, err.message);
      else if (err.status >= 500) log.error({ err, code: err.code }, 'request failed');
      return sendProblem(res, err.status, err.code, err.message, err.details ? { ...err.details } : {});
    }
    log.error({ err }, 'unhandled error');
    return sendProblem(res, 500, 'internal_error', 'The server failed to handle this request');
  };
}
