/**
 * One matrix child: runs what the parent sends, one run at a time, exactly as `fleetbench run`
 * does (the one run pipeline, without the HTML report: the matrix writes one for all), and answers with the
 * run summary. Ctrl-C reaches the whole process group: the child ignores it and lets the parent
 * decide (an `abort` message stops the current run, which still writes its partial summary).
 */
import { isFleetbenchError } from '../base/errors.ts';
import { executeRun } from '../run/pipeline.ts';
import { planRun } from '../run/plan.ts';
import type { ChildMessage, ParentMessage, RunJob } from './protocol.ts';

let current: AbortController | undefined;

function send(message: ChildMessage): void {
  process.send?.(message);
}

async function run(job: RunJob): Promise<void> {
  const abort = new AbortController();
  current = abort;
  try {
    const { outcome, summary, wallMs } = await executeRun(planRun(job.ref, job.overrides, job.outDir), {
      signal: abort.signal,
    });
    send({ type: 'done', key: job.key, summary, wallMs, events: outcome.events ?? null });
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
