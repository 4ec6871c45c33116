/**
 * Open-model pacing (k6's arrival-rate executors, Gatling's open injection): operations start at
 * the times the schedule says, whatever the system under test is doing. A start is never
 * delayed by the previous operation; if the generator itself falls behind (a busy event loop), the
 * operation starts late and the lag (actual − intended) is recorded, never hidden. Under the
 * virtual clock the lag is 0 by construction; under the real clock it measures the generator.
 */
import type { Clock } from '../clock/clock.ts';

/**
 * Intended start offsets (ms from the executor's start) for a rate that moves linearly across
 * stages (operations per minute at the end of each stage), as the integral of the rate crosses
 * each whole number. Integrated in 100 ms slices: exact for constant stages, within a slice for
 * ramps.
 */
export function* arrivalTimes(
  startRatePerMinute: number,
  stages: ReadonlyArray<{ durationMs: number; rate: number }>,
): Generator<number> {
  let t = 0;
  let rate = startRatePerMinute / 60_000;
  let owed = 0;
  const step = 100;
  for (const stage of stages) {
    const from = rate;
    const to = stage.rate / 60_000;
    for (let elapsed = 0; elapsed < stage.durationMs; elapsed += step) {
      const slice = Math.min(step, stage.durationMs - elapsed);
      const r0 = from + ((to - from) * elapsed) / stage.durationMs;
      const r1 = from + ((to - from) * (elapsed + slice)) / stage.durationMs;
      const added = ((r0 + r1) / 2) * slice;
      // Place each start where the integral crosses a whole number inside the slice (linear
      // within it), so a rate of 1,000/s gives starts 1 ms apart, not bunched every 100 ms.
      let before = owed;
      owed += added;
      // The epsilon keeps float error in the sum from losing the start that ends a stage.
      while (owed >= 1 - 1e-9) {
        const need = 1 - before;
        const at = added > 0 ? Math.min(slice, (need / added) * slice) : slice;
        yield t + at;
        owed -= 1;
        before -= 1;
      }
      t += slice;
    }
    rate = to;
  }
}

export interface PaceOptions {
  clock: Clock;
  signal: AbortSignal;
  /** Run time the offsets count from (default: now). */
  start?: number;
}

/**
 * Calls `fire(intended)` at each intended time (`start + offset`). Offsets must not decrease.
 * Starts that are already due fire at once, one after the other, without yielding to a timer:
 * a generator that fell behind catches up instead of drifting further. Resolves when the
 * offsets run out or the signal aborts (then the remaining starts are not fired).
 */
export async function paceOpen(
  offsets: Iterable<number>,
  options: PaceOptions,
  fire: (intended: number) => void,
): Promise<void> {
  const { clock, signal } = options;
  const start = options.start ?? clock.now();
  for (const offset of offsets) {
    const intended = start + offset;
    // Node's timers run on a millisecond loop clock and may fire up to ~1 ms before the
    // performance clock reaches the due time: sleep again while a whole millisecond remains
    // (under the virtual clock a timer is exactly on time). A start less than 1 ms early fires;
    // lag is recorded as max(0, actual − intended).
    let wait = intended - clock.now();
    while (wait > 0 && !signal.aborted) {
      await clock.sleep(wait, signal).catch(() => undefined);
      wait = intended - clock.now();
      if (clock.kind === 'real' && wait < 1) break;
    }
    if (signal.aborted) return;
    fire(intended);
  }
}
