import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Express } from 'express';
import type { Logger } from '../platform/logger.js';

/** A problem+json answer written by hand, for requests that never reach Express. */
function rawProblem(status: number, title: string, code: string, detail: string): string {
  const body = JSON.stringify({ type: `/problems/${code}`, title, status, detail, code });
  return [
    `HTTP/1.1 ${status} ${title}`,
    'Content-Type: application/problem+json',
    'Access-Control-Allow-Origin: *',
    'Cache-Control: no-store',
    'Connection: close',
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (headers too large, a malformed
 * request line or header) get a problem body and the CORS header like every other error, instead
 * of Node's bare 400. A socket already gone gets nothing.
 */
function onClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A keep-alive socket may already carry a response under way; writing another would corrupt it.
  const responding = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || responding) {
    socket.destroy();
    return;
  }
  const answer =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? rawProblem(
          431,
          'Request Header Fields Too Large',
          'headers_too_large',
          'The request headers are larger than this server accepts',
        )
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? rawProblem(408, 'Request Timeout', 'request_timeout', 'The request was not received in time')
        : rawProblem(400, 'Bad Request', 'malformed_http_request', 'The request is not valid HTTP/1.1');
  socket.end(answer);
}

/** `Expect` other than 100-continue: 417 with a problem body rather than Node's bare answer. */
function onCheckExpectation(req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({
    type: '/problems/expectation_failed',
    title: 'Expectation Failed',
    status: 417,
    detail: `This server does not support Expect: ${String(req.headers.expect).slice(0, 100)}`,
    code: 'expectation_failed',
  });
  res.writeHead(417, {
    'Content-Type': 'application/problem+json',
    'Access-Control-Allow-Origin': '*',
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

export interface RunningServer {
  server: Server;
  port: number;
  /** Stops accepting, lets in-flight requests finish, then cuts what is left at the deadline. */
  close(deadlineMs: number): Promise<void>;
}

export function listen(app: Express, port: number, host: string, log: Logger): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    server.once('error', reject);
    server.on('clientError', onClientError);
    server.on('checkExpectation', onCheckExpectation);
    server.once('listening', () => {
      const address = server.address();
      const actual = typeof address === 'object' && address ? address.port : port;
      // Behind a load balancer idle keep-alive sockets must outlive the balancer's own timeout.
      server.keepAliveTimeout = 65_000;
      server.headersTimeout = 66_000;
      log.info({ url: `http://${host}:${actual}` }, 'API listening');
      resolve({
        server,
        port: actual,
        close(deadlineMs) {
          return new Promise<void>((done) => {
            const timer = setTimeout(() => {
              log.warn('shutdown deadline reached: closing remaining connections');
              server.closeAllConnections();
            }, deadlineMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          });
        },
      });
    });
  });
}
