/**
 * The one convention every `hangar` command follows (hangar, code, notebook, login, list, init):
 * - an error is one line on stderr, `hangar: <what> (<how to fix>)`;
 * - exit 2 for usage errors (bad flag, missing argument, bad setting), 1 for runtime failures
 *   (nothing answers, a run failed), 0 otherwise;
 * - `--help` prints usage on stdout and exits 0.
 * As git and npm do, a usage error does not print the whole usage again: the line says where it is.
 */
/** Where a command writes its lines (tests pass their own). */
export interface CliIO {
  out: (line: string) => void;
  err: (line: string) => void;
}

/** A mistake in how the command was called: exit 2. */
export class UsageError extends Error {
  constructor(
    what: string,
    readonly how: string,
  ) {
    super(what);
    this.name = 'UsageError';
  }
}

/** The command could not do its work: exit 1. */
export class CommandError extends Error {
  constructor(
    what: string,
    readonly how?: string,
  ) {
    super(what);
    this.name = 'CommandError';
  }
}

export function errorLine(what: string, how?: string): string {
  return `hangar: ${what}${how ? ` (${how})` : ''}`;
}

/** Prints the error line for a failure and returns its exit code. */
export function report(io: Pick<CliIO, 'err'>, err: unknown, helpCommand = 'hangar --help'): number {
  if (err instanceof UsageError) {
    io.err(errorLine(err.message, err.how));
    return 2;
  }
  if (err instanceof CommandError) {
    io.err(errorLine(err.message, err.how));
    return 1;
  }
  // parseArgs's own errors (unknown option, missing value) are usage errors too.
  if (err instanceof TypeError && 'code' in err && String((err as { code: unknown }).code).startsWith('ERR_PARSE_ARGS')) {
    io.err(errorLine(err.message, `see ${helpCommand}`));
    return 2;
  }
  io.err(errorLine(err instanceof Error ? err.message : String(err)));
  return 1;
}
