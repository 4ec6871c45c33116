/**
 * A run's provider process as the control plane sees it: alive or killed, attached or detached
 * (a hot restart holds its output), draining to an item boundary (a graceful restart), idle.
 */
import type { Clock } from '../../clock/clock.ts';

/** The provider process of one run, as the control plane sees it. */
export class Runner {
  alive = true;
  attached = true;
  draining = false;
  /** Waiting for input (a new input restarts the pump). */
  idle = false;
  /** Paused at an item boundary by a drain. */
  paused = false;
  readonly abort = new AbortController();
  private attachWaiters: Array<() => void> = [];
  private boundaryWaiters: Array<() => void> = [];

  constructor(private readonly clock: Clock) {}

  sleep(ms: number): Promise<void> {
    return this.clock.sleep(Math.max(0, ms), this.abort.signal);
  }

  kill(): void {
    if (!this.alive) return;
    this.alive = false;
    this.abort.abort();
    this.releaseAll();
  }

  detach(): void {
    this.attached = false;
  }

  attach(): void {
    this.attached = true;
    const waiters = this.attachWaiters.splice(0);
    for (const resolve of waiters) resolve();
  }

  /** Output waits while detached; a dead runner stops here. */
  async gate(): Promise<void> {
    while (this.alive && !this.attached)
      await new Promise<void>((resolve) => this.attachWaiters.push(resolve));
    if (!this.alive) throw new RunnerGone();
  }

  /** Between items: a draining runner stops here until it is killed. */
  async boundary(): Promise<void> {
    if (!this.draining) return;
    this.paused = true;
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
    await new Promise<void>((resolve) => this.attachWaiters.push(resolve));
    throw new RunnerGone();
  }

  /** Resolves when the runner is paused at a boundary, idle, or dead. */
  settled(): Promise<void> {
    if (!this.alive || this.paused || this.idle) return Promise.resolve();
    return new Promise<void>((resolve) => this.boundaryWaiters.push(resolve));
  }

  markIdle(): void {
    this.idle = true;
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
  }

  private releaseAll(): void {
    for (const resolve of this.attachWaiters.splice(0)) resolve();
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
  }
}

export class RunnerGone extends Error {
  constructor() {
    super('runner gone');
  }
}

/** Runs a runner's work; a killed runner's work ends in an abort, anything else is a bug. */
export function guard(runner: Runner, work: Promise<void>): void {
  work.catch((error: unknown) => {
    // A killed runner's work ends in an abort: expected. Anything else is a bug.
    if (runner.alive || !(error instanceof RunnerGone || (error as Error)?.name === 'AbortError'))
      throw error;
  });
}
