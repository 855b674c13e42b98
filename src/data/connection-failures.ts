import type pg from 'pg';
import { DependencyUnavailableError } from '../platform/errors.js';

/** What a client is told to wait before retrying when the database is unavailable. */
export const DATABASE_RETRY_AFTER_SECONDS = 2;

/**
 * SQLSTATEs that say the session, not the statement, failed (besides class 08,
 * connection_exception): the server shut down or restarted, is starting, refuses more clients,
 * or ended the session for idling in a transaction.
 */
const LOST_SESSION_SQLSTATES = new Set([
  '57P01', // admin_shutdown: pg_terminate_backend, a failover, a pooler restart
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or in recovery
  '57P05', // idle_session_timeout
  '53300', // too_many_connections
  '25P03', // idle_in_transaction_session_timeout
]);

/** The statement ran past statement_timeout (or was cancelled): the session itself is fine. */
const QUERY_CANCELED = '57014';

/** Socket-level failures of Node's net/dns layer: the server is not reachable at all. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * pg reports a connection that ends under it ("Connection terminated unexpectedly") with an Error
 * that has no code; the one sure sign is that the client emitted it as an 'error' event. Those
 * errors, and the clients that emitted them, are remembered here by identity, never by message.
 */
const lostErrors = new WeakSet<object>();
const lostClients = new WeakSet<object>();

/**
 * Gives a pool client a permanent 'error' listener. pg emits 'error' on a client whose connection
 * fails; the pool listens only while the client is idle, so a failure while it was checked out
 * (a terminated backend, a reset socket) had no listener and crashed the process.
 */
export function watchConnection(client: pg.ClientBase, onLost: (err: unknown) => void): void {
  let reported = false;
  client.on('error', (err: unknown) => {
    lostClients.add(client);
    if (typeof err === 'object' && err !== null) lostErrors.add(err);
    // One line per connection: a terminated backend emits both its FATAL message and the end.
    if (!reported) onLost(err);
    reported = true;
  });
  client.once('end', () => lostClients.add(client));
}

/** True once the client's connection has failed or ended: it must not go back to the pool. */
export function connectionLost(client: object): boolean {
  return lostClients.has(client);
}

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * True when a statement prepared on this connection returns other columns than when it was
 * prepared (a migration added one to a table it selects `*` from): PostgreSQL refuses to run it
 * again on that connection.
 */
export function isStalePreparedStatement(err: unknown): boolean {
  return codeOf(err) === '0A000' && /cached plan must not change result type/.test(String((err as Error).message));
}

/**
 * True when `err` means the connection to the database failed (as opposed to the statement being
 * wrong): a lost session SQLSTATE, a socket error, or an error pg emitted as its connection ended.
 * Follows `cause`, as pg-pool wraps a socket error in its own on a connection timeout.
 */
export function isConnectionFailure(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (lostErrors.has(e)) return true;
    const code = codeOf(e);
    if (code === undefined) continue;
    if ((code.length === 5 && code.startsWith('08')) || LOST_SESSION_SQLSTATES.has(code) || SOCKET_CODES.has(code))
      return true;
  }
  return false;
}

/** True when the statement was cancelled by statement_timeout (or a cancel request). */
export function isStatementTimeout(err: unknown): boolean {
  return codeOf(err) === QUERY_CANCELED;
}

/**
 * The error to throw for a database failure: connection-class failures and statement timeouts
 * become `DependencyUnavailableError` (503 with Retry-After at the API, retried by workers);
 * anything else (a constraint, a syntax error) is returned unchanged. For call sites that use the
 * pool directly; statements through Kysely get this already.
 */
export function toDependencyError(err: unknown): unknown {
  if (err instanceof DependencyUnavailableError) return err;
  if (isConnectionFailure(err) || isStatementTimeout(err)) {
    return new DependencyUnavailableError('database', DATABASE_RETRY_AFTER_SECONDS, { cause: err });
  }
  return err;
}
