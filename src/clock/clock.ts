/**
 * One clock interface for everything time-dependent (emulator windows, poll loops, executors,
 * faults). Times are milliseconds since the run epoch, like trace times.
 */
export type TimerId = number;

export interface Clock {
  readonly kind: 'virtual' | 'real';
  /** Wall-clock Unix ms at run time 0. */
  readonly epochMs: number;
  /** Virtual ms per real ms (1 for an unscaled clock). */
  readonly timeScale: number;
  /** Run time in ms. */
  now(): number;
  /** Unix ms on the wall at which run time `t` happens, for headers such as x-ratelimit-reset. */
  toWallMs(t: number): number;
  setTimeout(fn: () => void, delayMs: number): TimerId;
  clearTimeout(id: TimerId): void;
  /** Resolves after `ms` of run time; rejects with the signal's reason if aborted first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** A fixed wall-clock epoch for virtual runs, so rate-limit reset headers are deterministic. */
export const VIRTUAL_EPOCH_MS = Date.UTC(2026, 0, 1, 0, 0, 0);

export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(id);
      reject(signal?.reason);
    };
    const id = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
