/**
 * A refusal of the installer: a stable snake_case `code` (what a script matches on) and a message
 * for a person. The command prints both and exits with status 1; nothing has been written.
 */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * A request that reached no service: names the URL, the cause (connection refused, name not
 * found, ...) and how to point the client elsewhere.
 */
export function unreachable(url: string, base: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const why = cause?.code ?? cause?.message ?? (err as Error)?.message ?? String(err);
  return new CliError(
    'market_unreachable',
    `cannot reach ${url} (${why}): is the service running at ${base}? set --url or SKILL_MARKET_URL`,
  );
}
