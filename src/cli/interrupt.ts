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
