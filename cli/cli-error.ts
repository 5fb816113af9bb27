/**
 * The error a command throws to end the CLI with a message and an exit code of its choosing
 * (cli/exit-codes.ts). main.ts prints `message` (and `hint` on a line of its own) on stderr.
 */
import type { ExitCodeValue } from './exit-codes.js';

/** A failure the user is told about in a sentence, with the exit code it ends with. */
export class CliError extends Error {
  override readonly name = 'CliError';

  constructor(
    message: string,
    /** The code the CLI exits with. */
    readonly exitCode: ExitCodeValue,
    /** What to do about it, when there is something to say. */
    readonly hint?: string,
    /**
     * Its kind, printed on the error's last line (docs/cli.md, "Errors"): one of the library's or
     * the daemon's when it is one of theirs (`unknown_agent`, `invalid_options`), else the
     * CLI's own for its exit code (cli/report-error.ts, `cliKind`).
     */
    readonly kind?: string,
  ) {
    super(message);
  }
}
