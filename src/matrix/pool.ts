/**
 * A pool of child processes that run matrix jobs in parallel (virtual time: each run is pure
 * CPU, so one process per core). Child processes rather than worker threads: each run gets its
 * own heap and garbage collector, a crash takes down one child and not the matrix, and the tsx
 * loader works as in the CLI. Children are started once and reused, so a 54-cell matrix pays the
 * process start (Node + tsx + modules, ~0.5 s) once per job slot, not once per cell.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { FleetbenchError } from '../base/errors.ts';
import type { RunSummary } from '../results/run-summary.ts';
import type { ChildMessage, ParentMessage, RunJob } from './protocol.ts';

const CHILD = fileURLToPath(new URL('../../bin/matrix-child.js', import.meta.url));

export interface JobResult {
  job: RunJob;
  summary: RunSummary;
  /** Wall time of the run in its child (engine + analysis), ms. */
  wallMs: number;
  /** Timer events the virtual clock processed. */
  events: number | null;
}

export interface PoolEvents {
  onStart?: (job: RunJob, running: number) => void;
  onDone?: (result: JobResult, running: number) => void;
}

export interface PoolOptions extends PoolEvents {
  /** Child processes (job slots). */
  jobs: number;
  /** Stops handing out jobs; running ones are asked to stop and still report (partial). */
  signal?: AbortSignal;
}

export interface PoolOutcome {
  results: JobResult[];
  /** Jobs never started because the signal fired. */
  skipped: RunJob[];
}

/** Runs every job on `jobs` child processes; results come back in the order of `jobs`. */
export async function runPool(jobs: RunJob[], options: PoolOptions): Promise<PoolOutcome> {
  const slots = Math.max(1, Math.min(options.jobs, jobs.length));
  const queue = [...jobs];
  const results = new Map<string, JobResult>();
  const children: ChildProcess[] = [];
  let running = 0;
  let failure: Error | undefined;

  const onAbort = () => {
    for (const child of children) send(child, { type: 'abort' });
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const worker = (child: ChildProcess) =>
    new Promise<void>((resolve) => {
      let current: RunJob | undefined;
      const next = () => {
        current = failure || options.signal?.aborted ? undefined : queue.shift();
        if (current === undefined) {
          resolve();
          return;
        }
        running++;
        options.onStart?.(current, running);
        send(child, { type: 'run', job: current });
      };
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') {
          next();
          return;
        }
        if (current === undefined || message.key !== current.key) return;
        running--;
        if (message.type === 'done') {
          const result: JobResult = {
            job: current,
            summary: message.summary,
            wallMs: message.wallMs,
            events: message.events,
          };
          results.set(current.key, result);
          // The slot is refilled first, so progress counts the run that takes its place.
          next();
          options.onDone?.(result, running);
          return;
        } else {
          failure ??=
            message.code !== undefined
              ? new FleetbenchError(
                  message.code as ConstructorParameters<typeof FleetbenchError>[0],
                  `${current.unitId}: ${message.message}`,
                  { exitCode: message.exitCode },
                )
              : new Error(
                  `${current.unitId} failed in its child process: ${message.stack ?? message.message}`,
                );
        }
        next();
      });
      child.on('exit', (code, signal) => {
        if (current !== undefined) {
          running--;
          failure ??= new Error(
            `${current.unitId}: the child process running it exited (${signal ?? `code ${code}`})`,
          );
          current = undefined;
        }
        resolve();
      });
    });

  const done: Array<Promise<void>> = [];
  try {
    for (let i = 0; i < slots; i++) {
      const child = fork(CHILD, [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        // Not the parent's flags: the child starts its own way (bin/matrix-child.js).
        execArgv: [],
        serialization: 'advanced',
      });
      children.push(child);
      done.push(worker(child));
    }
    await Promise.all(done);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    await Promise.all(children.map(stop));
  }
  if (failure) throw failure;
  const ordered = jobs.flatMap((job) => {
    const result = results.get(job.key);
    return result ? [result] : [];
  });
  return { results: ordered, skipped: jobs.filter((job) => !results.has(job.key)) };
}

function send(child: ChildProcess, message: ParentMessage): void {
  if (child.connected) child.send(message);
}

/** Closes the IPC channel (the child exits on disconnect) and waits; kills it if it hangs. */
function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    if (child.connected) child.disconnect();
    else child.kill('SIGTERM');
  });
}
