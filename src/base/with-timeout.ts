/**
 * `promise`, or a rejection with `message` once `ms` of real time pass first. The timer is
 * cleared when the promise settles, so nothing is left to hold the process. Used where a wait on
 * another party (a child process, a target's stop) must not hang what waits for it.
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<T>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
