/**
 * One error family for the whole service. Each error has a stable snake_case `code`
 * (clients branch on it), an HTTP status and an optional cause. The API edge turns them into
 * RFC 9457 problem+json; workers use `retryable` to decide between retry and give-up.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }

  /** A client mistake (4xx) is never worth retrying; a server-side failure may be. */
  get retryable(): boolean {
    return this.status >= 500;
  }
}

export interface InvalidParam {
  name: string;
  in: 'query' | 'path' | 'body' | 'header';
  reason: string;
}

export class ValidationError extends AppError {
  constructor(
    message: string,
    readonly invalidParams: InvalidParam[],
  ) {
    super(400, 'invalid_request', message, { invalidParams });
  }
}

export class NotFoundError extends AppError {
  constructor(what: string, code = 'not_found') {
    super(404, code, `${what} was not found`);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'A valid bearer token is required', code = 'unauthorized') {
    super(401, code, message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, code = 'forbidden') {
    super(403, code, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, code = 'conflict') {
    super(409, code, message);
  }
}

/** A resource taken down for good (a moderation take-down): 410, with why and when. */
export class GoneError extends AppError {
  constructor(message: string, code: string, details?: Record<string, unknown>) {
    super(410, code, message, details);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(limit: string) {
    super(413, 'payload_too_large', `The request body is larger than the limit of ${limit}`);
  }
}

export class ServiceUnavailableError extends AppError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    code = 'service_unavailable',
    options?: { cause?: unknown },
  ) {
    super(503, code, message, undefined, options);
  }
}

/**
 * A backing service (the database) cannot be reached right now: its connection was lost, none
 * could be opened in time, or a statement ran past its timeout. Nothing the client sent was
 * wrong, so it is told to retry after a short pause rather than given a 500.
 */
export class DependencyUnavailableError extends ServiceUnavailableError {
  constructor(
    readonly dependency: string,
    retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(
      `The ${dependency} is unavailable right now; retry shortly`,
      retryAfterSeconds,
      'dependency_unavailable',
      options,
    );
  }
}
