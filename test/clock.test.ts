import { describe, expect, it } from 'vitest';
import { RealClock, VirtualClock } from '../src/clock/index.ts';

describe('VirtualClock', () => {
  it('fires timers in time order, ties in insertion order, without real waiting', async () => {
    const clock = new VirtualClock();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 2_000);
    clock.setTimeout(() => fired.push(`a@${clock.now()}`), 1_000);
    clock.setTimeout(() => fired.push(`a2@${clock.now()}`), 1_000);
    const started = performance.now();
    const result = await clock.run();
    expect(fired).toEqual(['a@1000', 'a2@1000', 'b@2000']);
    expect(result).toMatchObject({ events: 3, endedAt: 2_000, reason: 'idle' });
    // Not the 2 s the timers span: nothing waited in real time (a wide bound: tests do not time).
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('lets async code written against the interface run: sleeps inside promise chains', async () => {
    const clock = new VirtualClock();
    const log: number[] = [];
    const worker = async (id: number) => {
      for (let i = 0; i < 3; i++) {
        await clock.sleep(100 * id);
        log.push(clock.now());
      }
    };
    void worker(1);
    void worker(2);
    await clock.run();
    expect(log).toEqual([100, 200, 200, 300, 400, 600]);
  });

  it('stops at `until` and can be resumed', async () => {
    const clock = new VirtualClock();
    const ticks: number[] = [];
    const tick = () => {
      ticks.push(clock.now());
      clock.setTimeout(tick, 30_000);
    };
    clock.setTimeout(tick, 0);
    const first = await clock.run({ until: 60_000 });
    expect(first.reason).toBe('until');
    expect(ticks).toEqual([0, 30_000, 60_000]);
    expect(clock.now()).toBe(60_000);
    await clock.run({ until: 120_000 });
    expect(ticks).toEqual([0, 30_000, 60_000, 90_000, 120_000]);
  });

  it('cancels timers and aborts sleeps', async () => {
    const clock = new VirtualClock();
    const fired: number[] = [];
    const id = clock.setTimeout(() => fired.push(1), 10);
    clock.setTimeout(() => fired.push(2), 20);
    clock.clearTimeout(id);
    const controller = new AbortController();
    const sleeping = clock.sleep(1_000, controller.signal).then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    clock.setTimeout(() => controller.abort(new Error('stop')), 500);
    await clock.run();
    expect(await sleeping).toBe('stop');
    expect(fired).toEqual([2]);
    expect(clock.pending).toBe(0);
  });

  it('maps run time to a fixed wall clock so reset headers are deterministic', () => {
    const a = new VirtualClock();
    const b = new VirtualClock();
    expect(a.toWallMs(3_600_000)).toBe(b.toWallMs(3_600_000));
    expect(a.toWallMs(0)).toBe(Date.UTC(2026, 0, 1));
  });
});

describe('RealClock', () => {
  it('scales time: run time is real time × 10, and a 2 run-s sleep ends at 2 run-s', async () => {
    // Bracketed by real time read before and after each step, so the check holds however
    // loaded the machine is (tests do not time; they compare clocks).
    const beforeStart = performance.now();
    const clock = new RealClock({ timeScale: 10 });
    const afterStart = performance.now();
    await clock.sleep(2_000);
    const beforeRead = performance.now();
    const run = clock.now();
    const afterRead = performance.now();
    expect(run).toBeGreaterThanOrEqual(1_950);
    expect(run).toBeGreaterThanOrEqual((beforeRead - afterStart) * 10 - 1);
    expect(run).toBeLessThanOrEqual((afterRead - beforeStart) * 10 + 1);
    expect(clock.toWallMs(600)).toBeCloseTo(clock.epochMs + 60, 5);
  });
});
