/**
 * User-facing errors. Every error a user can cause carries a stable `code` (for tests and
 * scripts) and the process exit code the CLI uses for it. The CLI prints `message` (and `hint`)
 * without a stack trace; anything that is not a FleetbenchError is an internal bug.
 */

/** Process exit codes. 99 follows k6's "thresholds have failed"; 104 k6's "invalid config". */
export const ExitCode = {
  ok: 0,
  internal: 1,
  badInput: 2,
  /** The run did not complete: its target failed or was lost, or its clock stopped advancing. */
  runFailed: 3,
  /** `compare`: too few runs a side to show any judged change at this α (docs/matrix.md#fleetbench-compare). */
  inconclusive: 4,
  budgetBreached: 99,
  budgetMisconfigured: 104,
  interrupted: 130,
} as const;

export type ErrorCode =
  | 'E_USAGE'
  | 'E_FILE'
  /** An output path that cannot be written (a link, a directory, a full disk): base/safe-write.ts. */
  | 'E_OUTPUT'
  | 'E_TRACE'
  | 'E_IMPORT'
  | 'E_SCENARIO'
  | 'E_FIXTURES'
  | 'E_PROFILE'
  | 'E_MODEL'
  | 'E_PROVIDER'
  | 'E_BUDGET_CONFIG'
  | 'E_TARGET'
  | 'E_RESULTS'
  | 'E_STALLED';

export class FleetbenchError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: number;
  readonly hint?: string;

  constructor(
    code: ErrorCode,
    message: string,
    options: { exitCode?: number; hint?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FleetbenchError';
    this.code = code;
    this.exitCode = options.exitCode ?? ExitCode.badInput;
    this.hint = options.hint;
  }
}

/** A problem at a position in an input file: the message reads `file:line: reason`. */
export class InputFileError extends FleetbenchError {
  readonly file: string;
  readonly line?: number;
  readonly reason: string;

  constructor(
    code: ErrorCode,
    file: string,
    line: number | undefined,
    reason: string,
    options: { hint?: string; exitCode?: number } = {},
  ) {
    super(code, line === undefined ? `${file}: ${reason}` : `${file}:${line}: ${reason}`, options);
    this.name = 'InputFileError';
    this.file = file;
    this.line = line;
    this.reason = reason;
  }
}

export function isFleetbenchError(error: unknown): error is FleetbenchError {
  return error instanceof FleetbenchError;
}
