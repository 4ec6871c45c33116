/**
 * The real clock, optionally scaled: with timeScale 60 one real second is one run minute, so an
 * hourly rate-limit window lasts a real minute. Run time is measured from construction.
 */
import { performance } from 'node:perf_hooks';
import { type Clock, sleepOn, type TimerId } from './clock.ts';

export class RealClock implements Clock {
  readonly kind = 'real' as const;
  private epoch: number;
  readonly timeScale: number;
  private startPerf: number;
  private readonly timers = new Map<TimerId, NodeJS.Timeout>();
  private nextId = 1;
  private disposed = false;

  /**
   * `epochMs` puts run time 0 at that wall-clock instant instead of now, so two processes (the
   * load generator and a served control plane) read the same run time on one host.
   */
  constructor(options: { timeScale?: number; epochMs?: number } = {}) {
    this.timeScale = options.timeScale ?? 1;
    if (!(this.timeScale > 0)) throw new RangeError('timeScale must be positive');
    const perfNow = performance.now();
    const wallNow = Date.now();
    this.epoch = options.epochMs ?? wallNow;
    this.startPerf = perfNow - (wallNow - this.epoch);
  }

  get epochMs(): number {
    return this.epoch;
  }

  /**
   * Run time starts over at 0 now: what happened so far (a target's boot, before the run) is not
   * the run's. Only before anything was scheduled on this clock.
   */
  restartNow(): void {
    if (this.timers.size > 0) throw new Error('RealClock.restartNow: timers are already scheduled');
    this.startPerf = performance.now();
    this.epoch = Date.now();
  }

  now(): number {
    return (performance.now() - this.startPerf) * this.timeScale;
  }

  /** Run time t happens at real time epoch + t / scale. */
  toWallMs(t: number): number {
    return this.epochMs + t / this.timeScale;
  }

  /**
   * Cancels every pending timer and ignores new ones: a run that ended (or was interrupted)
   * must not have faults, polls or samplers fire into its closed trace while the process goes
   * on to write its summary.
   */
  dispose(): void {
    this.disposed = true;
    for (const handle of this.timers.values()) clearTimeout(handle);
    this.timers.clear();
  }

  setTimeout(fn: () => void, delayMs: number): TimerId {
    const id = this.nextId++;
    if (this.disposed) return id;
    const handle = setTimeout(
      () => {
        this.timers.delete(id);
        fn();
      },
      Math.max(0, delayMs / this.timeScale),
    );
    this.timers.set(id, handle);
    return id;
  }

  clearTimeout(id: TimerId): void {
    const handle = this.timers.get(id);
    if (handle) clearTimeout(handle);
    this.timers.delete(id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}
