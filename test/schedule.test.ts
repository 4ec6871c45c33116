import { describe, expect, it } from 'vitest';
import type { Clock, TimerId } from '../src/clock/clock.ts';
import { RealClock } from '../src/clock/real.ts';
import { VirtualClock } from '../src/clock/virtual.ts';
import { paceOpen, TIMER_SLACK_MS } from '../src/workload/schedule.ts';

/**
 * The real-clock pacer driven by discrete time, so wake-ups and lags are exact: a clock that
 * says it is real (paceOpen picks the timer pacer by `kind`) and keeps its time and timers on a
 * VirtualClock, counting the timers the pacer sets (one per wake-up it asks for).
 */
class SteppedRealClock implements Clock {
  readonly kind = 'real' as const;
  readonly epochMs = 0;
  readonly inner = new VirtualClock();
  timersSet = 0;
  /** `earlyWallMs`: timers fire this much wall time before they are due, as Node's may (≤ 1 ms). */
  constructor(
    readonly timeScale = 1,
    private readonly earlyWallMs = 0,
  ) {}
  now = () => this.inner.now();
  toWallMs = (t: number) => t / this.timeScale;
  setTimeout(fn: () => void, delayMs: number): TimerId {
    this.timersSet++;
    // Early only when there is that much to wait, as a Node timer (a short re-armed wait fires on time).
    const early = this.earlyWallMs * this.timeScale;
    return this.inner.setTimeout(fn, delayMs > early ? delayMs - early : delayMs);
  }
  clearTimeout = (id: TimerId) => this.inner.clearTimeout(id);
  sleep = (ms: number, signal?: AbortSignal) => this.inner.sleep(ms, signal);
}

async function pace(
  offsets: Iterable<number>,
  options: { timerSlackMs?: number; timeScale?: number; earlyWallMs?: number; signal?: AbortSignal } = {},
) {
  const clock = new SteppedRealClock(options.timeScale, options.earlyWallMs);
  const lags: number[] = [];
  const intendeds: number[] = [];
  const paced = paceOpen(
    offsets,
    {
      clock,
      signal: options.signal ?? new AbortController().signal,
      start: 0,
      ...(options.timerSlackMs === undefined ? {} : { timerSlackMs: options.timerSlackMs }),
    },
    (intended) => {
      intendeds.push(intended);
      lags.push(clock.now() - intended);
    },
  );
  // Settled as soon as it settles, so a rejection is never unhandled while the clock runs.
  const settled = paced.then(
    () => 'resolved',
    (error: Error) => `rejected: ${error.message}`,
  );
  // Bounded: a pacer that re-arms at one instant forever stops the clock instead of hanging.
  const run = await clock.inner.run({ maxEventsAtOneInstant: 10_000 });
  expect(run.reason).toBe('idle');
  const outcome = await settled;
  return { intendeds, lags, timers: clock.timersSet, outcome, clock };
}

describe('real-clock pacing and its timer slack', () => {
  // 120 starts 1 ms apart (1,000/s), the first at 10 ms.
  const dense = Array.from({ length: 120 }, (_, i) => 10 + i);
  const group = TIMER_SLACK_MS + 1;

  it('groups starts closer than the slack into one wake-up, taken at the last of them', async () => {
    const { intendeds, lags, timers } = await pace(dense);
    expect(intendeds).toEqual(dense);
    expect(timers).toBe(dense.length / group);
    // In each group the first start waits the whole slack, the last none.
    expect(lags.slice(0, group)).toEqual(Array.from({ length: group }, (_, i) => TIMER_SLACK_MS - i));
    expect(Math.max(...lags)).toBe(TIMER_SLACK_MS);
  });

  it('with slack 0 sets a timer per start and adds no lag', async () => {
    const { intendeds, lags, timers } = await pace(dense, { timerSlackMs: 0 });
    expect(intendeds).toEqual(dense);
    expect(timers).toBe(dense.length);
    expect(new Set(lags)).toEqual(new Set([0]));
  });

  it('leaves starts further apart than the slack on a timer each: slower schedules gain no lag', async () => {
    const sparse = Array.from({ length: 12 }, (_, i) => 5 + i * (TIMER_SLACK_MS + 1));
    const { lags, timers } = await pace(sparse);
    expect(timers).toBe(sparse.length);
    expect(new Set(lags)).toEqual(new Set([0]));
  });

  it('ends a group at the last start within the slack of its first', async () => {
    const { lags, timers } = await pace([20, 21, 20 + TIMER_SLACK_MS, 21 + TIMER_SLACK_MS, 40]);
    // 20..20+slack share a wake-up; 21+slack starts the next group, alone; 40 its own.
    expect(timers).toBe(3);
    expect(lags).toEqual([TIMER_SLACK_MS, TIMER_SLACK_MS - 1, 0, 0, 0]);
  });

  it('counts the slack in wall time on a scaled clock', async () => {
    // time-scale 10: the slack is 10× longer in run time, so starts 10 run-ms apart group as 1 ms apart do unscaled.
    const scaled = dense.map((t) => t * 10);
    const { lags, timers } = await pace(scaled, { timeScale: 10 });
    expect(timers).toBe(scaled.length / group);
    expect(Math.max(...lags)).toBe(TIMER_SLACK_MS * 10);
  });

  it("a timer that fires early (Node's, by up to a wall ms) still starts its whole group, scaled or not", async () => {
    for (const timeScale of [1, 10]) {
      const scaled = dense.map((t) => t * timeScale);
      const { intendeds, lags, timers } = await pace(scaled, { timeScale, earlyWallMs: 0.5 });
      expect(intendeds).toEqual(scaled);
      expect(timers, `time-scale ${timeScale}`).toBe(scaled.length / group);
      // Half a wall ms early at most, never more than the slack late.
      expect(Math.min(...lags)).toBeGreaterThanOrEqual(-0.5 * timeScale);
      expect(Math.max(...lags)).toBeLessThanOrEqual(TIMER_SLACK_MS * timeScale);
    }
  });

  it('an iterator that throws while read ahead: the starts before it fire, then the schedule rejects', async () => {
    function* failing() {
      yield 5;
      yield 20;
      yield 21;
      throw new Error('offsets failed');
    }
    const { intendeds, outcome } = await pace(failing());
    expect(intendeds).toEqual([5, 20, 21]);
    expect(outcome).toBe('rejected: offsets failed');
  });

  it('reads at most 1,024 starts ahead: a batch of equal offsets fires whole from one wake-up', async () => {
    let read = 0;
    function* batch() {
      for (let i = 0; i < 3000; i++) {
        read++;
        yield 10;
      }
    }
    const { intendeds, timers, outcome } = await pace(batch());
    expect(outcome).toBe('resolved');
    expect(read).toBe(3000);
    expect(intendeds).toHaveLength(3000);
    expect(timers).toBe(1);
  });

  it('an abort stops the schedule: the starts after it never fire, and it resolves', async () => {
    const controller = new AbortController();
    const clock = new SteppedRealClock();
    const fired: number[] = [];
    const paced = paceOpen(dense, { clock, signal: controller.signal, start: 0 }, (t) => {
      fired.push(t);
      if (t === 40) controller.abort();
    });
    await clock.inner.run();
    await expect(paced).resolves.toBeUndefined();
    expect(fired.at(-1)).toBeLessThanOrEqual(40 + TIMER_SLACK_MS);
    expect(fired.length).toBeLessThan(dense.length);
  });

  it('hands fire the clock reading that found the start due: one reading per start or wake-up', async () => {
    const clock = new SteppedRealClock();
    let readings = 0;
    const read = clock.now;
    clock.now = () => {
      readings++;
      return read();
    };
    const given: Array<{ now: number; actual: number }> = [];
    await Promise.all([
      paceOpen(dense, { clock, signal: new AbortController().signal, start: 0 }, (_intended, now) =>
        given.push({ now, actual: read() }),
      ),
      clock.inner.run(),
    ]);
    expect(given).toHaveLength(dense.length);
    for (const g of given) expect(g.now).toBe(g.actual);
    // Each pass of the pacer reads the clock once: it either fires a start or arms a timer.
    expect(readings).toBe(dense.length + clock.timersSet);
    // Under the virtual clock the start's reading is its intended time.
    const virtual = new VirtualClock();
    const pairs: Array<[number, number]> = [];
    await Promise.all([
      paceOpen(
        [5, 7, 7, 30],
        { clock: virtual, signal: new AbortController().signal, start: 0 },
        (intended, now) => pairs.push([intended, now]),
      ),
      virtual.run(),
    ]);
    expect(pairs).toEqual([
      [5, 5],
      [7, 7],
      [7, 7],
      [30, 30],
    ]);
  });

  it('on the real clock fires every start once, in order, none before it is due (Node timers: within 1 ms)', async () => {
    const clock = new RealClock();
    const fired: Array<{ intended: number; at: number }> = [];
    const start = clock.now();
    await paceOpen(dense, { clock, signal: new AbortController().signal, start }, (intended) =>
      fired.push({ intended: intended - start, at: clock.now() - start }),
    );
    expect(fired.map((f) => f.intended)).toEqual(dense);
    for (const f of fired) expect(f.at).toBeGreaterThan(f.intended - 1);
  });
});
