/**
 * Another client's view of a server while `work` runs: a GET of `url` every 100 ms, the slowest
 * answer's wall time (ms). The probe's last request is awaited when the work ends, so one still
 * unanswered then counts with the whole time it waited. The freeze tests assert this stays
 * within docs/limits.md's bound while a hostile request is being handled.
 */
export async function slowestAnswerDuring(
  url: string,
  work: () => Promise<void>,
  init: RequestInit = {},
): Promise<number> {
  let done = false;
  let slowest = 0;
  const probe = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(url, init)).text();
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
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
