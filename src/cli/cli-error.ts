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
