/**
 * Ctrl-C (SIGINT) and SIGTERM for commands that stop gracefully: the first signal says what
 * happens (`doing`, on the command's stderr) and aborts, so the command writes what it has (a partial summary, a partial
 * baseline) and exits 130; a second leaves at once.
 */
import { ExitCode } from '../base/errors.ts';
import type { CliIo } from './output.ts';

export interface Interrupt {
  signal: AbortSignal;
  /** Stop listening (call in `finally`). */
  dispose(): void;
}

export function onInterrupt(doing: string, io: Pick<CliIo, 'stderr'>): Interrupt {
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 1) process.exit(ExitCode.interrupted);
    io.stderr.write(`\nfleetbench: ${signal}: ${doing} (again to quit at once)\n`);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: abort.signal,
    dispose() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** What ends a serving command (`github serve`, `provider serve`, `reference serve`). */
export interface ServeUntil {
  /** Resolves at the first SIGINT or SIGTERM (undefined) or at a failure (the error). */
  stopped(): Promise<Error | undefined>;
  /** Stops serving for a failure the command cannot go on with (its trace cannot be written). */
  fail(error: Error): void;
}

/**
 * A server's life: it serves until a signal or a failure. The signals are listened for only
 * while `stopped()` is awaited, and no longer once it settled (a second signal then leaves at
 * once); a failure told before then ends the wait at once.
 */
export function serveUntil(): ServeUntil {
  let settle!: (reason: Error | undefined) => void;
  const reason = new Promise<Error | undefined>((resolve) => {
    settle = resolve;
  });
  return {
    stopped() {
      const onSignal = () => settle(undefined);
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      return reason.finally(() => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      });
    },
    fail: (error) => settle(error),
  };
}

/**
 * A served trace closed as serving ended: its footer says `completed`, or `failed` with the
 * failure thrown (a trace that could not be written fails its own close: the failure is said).
 */
export function endServedTrace(
  trace: { close(reason: 'completed' | 'failed', t: number): void } | undefined,
  failure: Error | undefined,
  t: number,
): void {
  try {
    trace?.close(failure ? 'failed' : 'completed', t);
  } catch (error) {
    throw failure ?? error;
  }
  if (failure) throw failure;
}
