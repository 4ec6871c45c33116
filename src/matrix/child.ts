/**
 * One matrix child: runs what the parent sends, one run at a time, exactly as `fleetbench run`
 * does (resolve, run in virtual time, write summary.json from the trace), and answers with the
 * run summary. Ctrl-C reaches the whole process group: the child ignores it and lets the parent
 * decide (an `abort` message stops the current run, which still writes its partial summary).
 */
import { isFleetbenchError } from '../errors.ts';
import { runScenario } from '../run/engine.ts';
import { writeRunSummary } from '../run/summary.ts';
import { resolveScenarioRef } from '../workload/builtins.ts';
import type { ChildMessage, ParentMessage, RunJob } from './protocol.ts';

let current: AbortController | undefined;

function send(message: ChildMessage): void {
  process.send?.(message);
}

async function run(job: RunJob): Promise<void> {
  const abort = new AbortController();
  current = abort;
  try {
    const started = performance.now();
    const { scenario, cell } = resolveScenarioRef(job.ref, job.overrides);
    const outcome = await runScenario(scenario, { outDir: job.outDir, cell, signal: abort.signal });
    const summary = await writeRunSummary(outcome, {
      outDir: job.outDir,
      cell,
      wallMs: performance.now() - started,
    });
    send({
      type: 'done',
      key: job.key,
      summary,
      wallMs: performance.now() - started,
      events: outcome.events ?? null,
    });
  } catch (error) {
    send({
      type: 'failed',
      key: job.key,
      message: (error as Error)?.message ?? String(error),
      ...(isFleetbenchError(error)
        ? { code: error.code, exitCode: error.exitCode }
        : { stack: (error as Error)?.stack }),
    });
  } finally {
    current = undefined;
  }
}

process.on('SIGINT', () => undefined);
process.on('disconnect', () => process.exit(0));
process.on('message', (message: ParentMessage) => {
  if (message.type === 'abort') current?.abort();
  else if (message.type === 'run') void run(message.job);
});
send({ type: 'ready' });
