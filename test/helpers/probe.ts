import { readFileSync } from 'node:fs';

/**
 * Nanoseconds a thread has spent runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat,
 * second field), or 0 where the kernel does not say (not Linux, the process gone).
 */
function runQueueWaitNs(path: string): number {
  try {
    return Number(readFileSync(path, 'utf8').split(' ')[1]) || 0;
  } catch {
    return 0;
  }
}

/**
 * A reader of the nanoseconds this test's thread and, when given, the server's main thread have
 * waited for a CPU so far (summed: the two waits may overlap, so this forgives at most twice the
 * real delay, never a freeze).
 */
function cpuWaitOf(serverPid: number | undefined): () => number {
  const paths = ['/proc/thread-self/schedstat'];
  if (serverPid !== undefined) paths.push(`/proc/${serverPid}/task/${serverPid}/schedstat`);
  return () => paths.reduce((sum, path) => sum + runQueueWaitNs(path), 0);
}

/**
 * Another client's view of a server while `work` runs: a GET of `url` every `intervalMs` (100),
 * on the connection it keeps, the slowest answer's time (ms). The probe's last request is awaited
 * when the work ends, so one still unanswered then counts with the whole time it waited. The
 * freeze tests assert this stays within docs/limits.md's bound while a hostile request is handled.
 *
 * Each answer's wall time is counted less the time, during it, that the server's main thread
 * (`serverPid`, when the server is another process) and this test's thread spent runnable but
 * waiting for a CPU (the kernel's schedstat). On a quiet machine that is ~0 and the figure is the
 * wall time; on a busy one (the whole suite twice over on two cores) a probe waited 11-20 s of
 * wall time for a CPU, which says nothing about the server. A server that freezes is running, not
 * waiting, so its freeze is counted whole (docs/limits.md, "What the freeze tests measure").
 */
export async function slowestAnswerDuring(
  url: string,
  work: () => Promise<void>,
  init: RequestInit = {},
  { intervalMs = 100, serverPid }: { intervalMs?: number; serverPid?: number } = {},
): Promise<number> {
  const waitedNs = cpuWaitOf(serverPid);
  let done = false;
  let slowest = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      const waitedBefore = waitedNs();
      await (await fetch(url, init)).text();
      const waitedMs = (waitedNs() - waitedBefore) / 1e6;
      slowest = Math.max(slowest, performance.now() - started - waitedMs);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  try {
    await work();
  } finally {
    done = true;
    await probe;
  }
  return slowest;
}

/**
 * Another client arriving while `work` runs: a GET of `url` on a NEW connection every
 * `intervalMs` from the start (the next one does not wait for the last), each timed from its
 * connect to the end of its answer. Returns every probe's wait in ms, in the order they started;
 * one not answered within `timeoutMs` counts as that long. What a probe on a kept-open connection
 * cannot see: a server that is slow to accept connections (a new client waits in the kernel's
 * accept queue behind everyone who connected before it). Each wait is counted as
 * `slowestAnswerDuring` counts it, less the time the server and this test waited for a CPU.
 */
export async function newConnectionWaitsDuring(
  url: string,
  work: () => Promise<void>,
  {
    intervalMs = 250,
    timeoutMs = 30_000,
    headers = {} as Record<string, string>,
    serverPid,
  }: { intervalMs?: number; timeoutMs?: number; headers?: Record<string, string>; serverPid?: number } = {},
): Promise<number[]> {
  const { request } = await import('node:http');
  const waitedNs = cpuWaitOf(serverPid);
  const once = () =>
    new Promise<number>((resolve) => {
      const started = performance.now();
      const waitedBefore = waitedNs();
      const req = request(url, { agent: false, headers, timeout: timeoutMs }, (res) => {
        res.resume();
        res.once('end', () =>
          resolve(Math.max(0, performance.now() - started - (waitedNs() - waitedBefore) / 1e6)),
        );
        res.once('error', () => resolve(timeoutMs));
      });
      req.once('timeout', () => req.destroy());
      req.once('error', () => resolve(timeoutMs));
      req.end();
    });
  let done = false;
  const waits: Array<Promise<number>> = [];
  const probing = (async () => {
    while (!done) {
      waits.push(once());
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  try {
    await work();
  } finally {
    done = true;
    await probing;
  }
  return Promise.all(waits);
}

/** The probes of `newConnectionWaitsDuring` (every 250 ms) that waited `bound` ms or more, said for a failure message. */
export function probesOver(waits: readonly number[], bound: number, intervalMs = 250): string[] {
  return waits.flatMap((ms, i) =>
    ms < bound ? [] : [`probe ${i} (about ${i * intervalMs} ms in): ${Math.round(ms)} ms`],
  );
}
