/**
 * Open-model pacing (k6's arrival-rate executors, Gatling's open injection): operations start at
 * the times the schedule says, whatever the system under test is doing. A start is never
 * delayed by the previous operation; if the generator itself falls behind (a busy event loop), the
 * operation starts late and the lag (actual − intended) is recorded, never hidden. Under the
 * virtual clock the lag is 0 by construction; under the real clock it measures the generator.
 */
import type { Clock, TimerId } from '../clock/clock.ts';

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

/**
 * Timer slack of the real-clock pacer, in wall milliseconds: starts due at most this far apart
 * share one timer wake-up, taken at the last of them, so the earlier ones start up to this late
 * (recorded as lag, as any lateness is). At 1,000 starts/s a timer wake-up per start cost about
 * a third of the generator's CPU on a VM (docs/performance.md); at 4 ms there is one per five
 * starts. Gatling's injection ticks every 10 ms; a run's schedule counts as kept up to 50 ms of
 * lag p99 (docs/analysis.md). Starts further apart keep a timer each: slower schedules gain no lag.
 */
export const TIMER_SLACK_MS = 4;

/** Starts read ahead at most, whatever the slack (a batch of equal offsets may be thousands). */
const MAX_AHEAD = 1024;

export interface PaceOptions {
  clock: Clock;
  signal: AbortSignal;
  /** Run time the offsets count from (default: now). */
  start?: number;
  /** Real clock only: the timer slack in wall ms (default TIMER_SLACK_MS; 0: a timer per start). */
  timerSlackMs?: number;
}

/**
 * Calls `fire(intended, now)` at each intended time (`start + offset`), `now` being the clock
 * reading the pacer made to decide the start was due: a caller that records when it started
 * (lag, a span's start) reads the clock once per start, not twice. Offsets must not decrease.
 * Under the real clock they are read up to the timer slack ahead of the start fired, so an
 * iterator must not hand `fire` anything through state it sets while yielding.
 * Starts that are already due fire at once, one after the other, without yielding to a timer:
 * a generator that fell behind catches up instead of drifting further. Resolves when the
 * offsets run out or the signal aborts (then the remaining starts are not fired).
 */
export function paceOpen(
  offsets: Iterable<number>,
  options: PaceOptions,
  fire: (intended: number, now: number) => void,
): Promise<void> {
  const pacer = options.clock.kind === 'real' ? paceOnTimers : paceBySleeping;
  return pacer(
    offsets,
    {
      ...options,
      start: options.start ?? options.clock.now(),
      timerSlackMs: options.timerSlackMs ?? TIMER_SLACK_MS,
    },
    fire,
  );
}

/** One way of pacing: the same arguments as `paceOpen`, with the start resolved. */
type Pacer = (
  offsets: Iterable<number>,
  options: Required<PaceOptions>,
  fire: (intended: number, now: number) => void,
) => Promise<void>;

/**
 * Virtual time: one `clock.sleep` per start, so starts interleave with the rest of the run
 * exactly as they always have (same seed + scenario = byte-identical traces).
 */
const paceBySleeping: Pacer = async (offsets, { clock, signal, start }, fire) => {
  for (const offset of offsets) {
    const intended = start + offset;
    let now = clock.now();
    while (intended > now && !signal.aborted) {
      await clock.sleep(intended - now, signal).catch(() => undefined);
      now = clock.now();
    }
    if (signal.aborted) return;
    fire(intended, now);
  }
};

/**
 * Real time, the live generator's hot path: the next start's timer calls `fire` directly, with
 * one abort listener for the whole schedule. A promise, a closure and an abort listener per start
 * (what `clock.sleep` costs) were a third of the generator's CPU per request at 1,000/s.
 */
const paceOnTimers: Pacer = (offsets, { clock, signal, start, timerSlackMs }, fire) => {
  const iterator = offsets[Symbol.iterator]();
  // The slack in run time: the clock may run faster than the wall (timeScale).
  const slack = timerSlackMs * clock.timeScale;
  // Starts read ahead of the one due next (to find where a group ends), oldest first; at most
  // MAX_AHEAD (a group of equal offsets may be a whole batch). An error the iterator threw while
  // read ahead is kept and thrown when the starts read before it have fired, as it would have
  // been without the read-ahead.
  const ahead: number[] = [];
  let aheadAt = 0;
  let thrown: { error: unknown } | undefined;
  const take = (): number | undefined => {
    if (aheadAt < ahead.length) {
      const value = ahead[aheadAt++]!;
      if (aheadAt === ahead.length) {
        ahead.length = 0;
        aheadAt = 0;
      }
      return value;
    }
    if (thrown !== undefined) throw thrown.error;
    const n = iterator.next();
    return n.done === true ? undefined : n.value;
  };
  /** The last start of the group that begins at `first`: every start within the slack after it. */
  const groupEnd = (first: number): number => {
    let last = first;
    for (let i = aheadAt; i - aheadAt < MAX_AHEAD; i++) {
      if (i === ahead.length) {
        if (thrown !== undefined) return last;
        let n: IteratorResult<number>;
        try {
          n = iterator.next();
        } catch (error) {
          thrown = { error };
          return last;
        }
        if (n.done === true) return last;
        ahead.push(n.value);
      }
      const offset = ahead[i]!;
      if (offset - first > slack) return last;
      last = offset;
    }
    return last;
  };
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    let timer: TimerId | undefined;
    let next = take();
    // The last intended time the pending timer was set for: once woken, the starts up to it fire.
    let wokeFor = Number.NEGATIVE_INFINITY;
    const done = () => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = undefined;
      resolve();
    };
    const step = () => {
      timer = undefined;
      while (next !== undefined) {
        if (signal.aborted) return;
        const intended = start + next;
        const now = clock.now();
        const wait = intended - now;
        // Node's timers run on a millisecond loop clock and may fire up to ~1 ms before the
        // performance clock reaches the due time: once woken for a start, it fires when less
        // than a whole wall millisecond (timeScale run ms) remains (lag is recorded as
        // max(0, actual − intended)).
        if (wait > 0 && !(intended <= wokeFor && wait < clock.timeScale)) {
          wokeFor = slack > 0 ? start + groupEnd(next) : intended;
          timer = clock.setTimeout(step, wokeFor - now);
          return;
        }
        try {
          fire(intended, now);
          next = take();
        } catch (error) {
          // As the awaited loop would: the schedule stops and its promise rejects.
          signal.removeEventListener('abort', onAbort);
          reject(error);
          return;
        }
      }
      done();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    step();
  });
};
