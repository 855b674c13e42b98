import { pino, type Logger } from 'pino';

export type { Logger };

/** Structured JSON logs (one line per request, job and publish). */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { service: 'skill-market', ...base },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers["x-payment"]', 'req.headers["payment-signature"]'],
      remove: true,
    },
  });
}
