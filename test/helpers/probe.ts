/**
 * Another client's view of a server while `work` runs: a GET of `url` every `intervalMs` (100),
 * on the connection it keeps, the slowest answer's wall time (ms). The probe's last request is awaited when the work ends, so one still
 * unanswered then counts with the whole time it waited. The freeze tests assert this stays
 * within docs/limits.md's bound while a hostile request is being handled.
 */
export async function slowestAnswerDuring(
  url: string,
  work: () => Promise<void>,
  init: RequestInit = {},
  intervalMs = 100,
): Promise<number> {
  let done = false;
  let slowest = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(url, init)).text();
      slowest = Math.max(slowest, performance.now() - started);
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
 * accept queue behind everyone who connected before it).
 */
export async function newConnectionWaitsDuring(
  url: string,
  work: () => Promise<void>,
  { intervalMs = 250, timeoutMs = 30_000, headers = {} as Record<string, string> } = {},
): Promise<number[]> {
  const { request } = await import('node:http');
  const once = () =>
    new Promise<number>((resolve) => {
      const started = performance.now();
      const req = request(url, { agent: false, headers, timeout: timeoutMs }, (res) => {
        res.resume();
        res.once('end', () => resolve(performance.now() - started));
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
