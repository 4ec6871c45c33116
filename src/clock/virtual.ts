/**
 * Discrete-event virtual clock. Timers sit in a binary heap ordered by (time, insertion order),
 * and `run()` fires them one at a time, letting every promise chain settle in between (one
 * macrotask turn), so async code written against the Clock interface runs unchanged, with no real
 * waiting and in a deterministic order.
 *
 * Rule for code running under it: never await real I/O (network, async fs) inside the simulated
 * system; the clock would not wait for it and order would depend on the machine. Trace writes
 * are synchronous for that reason.
 */
import { MinHeap } from '../base/min-heap.ts';
import { type Clock, sleepOn, type TimerId, VIRTUAL_EPOCH_MS } from './clock.ts';

interface Timer {
  at: number;
  id: TimerId;
  fn: () => void;
}

export interface VirtualRunOptions {
  /** Stop when the next timer is later than this run time (the clock is left at `until`). */
  until?: number;
  /** Stop early (Ctrl-C). */
  signal?: AbortSignal;
  /** Stop with reason `stalled` after this many events at one instant (the clock does not advance). */
  maxEventsAtOneInstant?: number;
}

export interface VirtualRunResult {
  events: number;
  endedAt: number;
  reason: 'idle' | 'until' | 'aborted' | 'stalled';
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

export class VirtualClock implements Clock {
  readonly kind = 'virtual' as const;
  readonly epochMs: number;
  readonly timeScale = 1;
  private current = 0;
  private readonly heap = new MinHeap<Timer>();
  private cancelled = new Set<TimerId>();
  /** Ids still in the heap, so clearTimeout is O(1). */
  private live = new Set<TimerId>();
  private nextId = 1;
  private eventsFired = 0;

  constructor(options: { epochMs?: number } = {}) {
    this.epochMs = options.epochMs ?? VIRTUAL_EPOCH_MS;
  }

  now(): number {
    return this.current;
  }

  toWallMs(t: number): number {
    return this.epochMs + t;
  }

  get pending(): number {
    return this.live.size - this.cancelled.size;
  }

  get events(): number {
    return this.eventsFired;
  }

  setTimeout(fn: () => void, delayMs: number): TimerId {
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    const timer: Timer = { at: this.current + delay, id: this.nextId++, fn };
    this.push(timer);
    return timer.id;
  }

  clearTimeout(id: TimerId): void {
    if (this.live.has(id)) this.cancelled.add(id);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Fire timers in order until none are left, `until` is reached, or the signal aborts. */
  async run(options: VirtualRunOptions = {}): Promise<VirtualRunResult> {
    const { until, signal } = options;
    const maxAtOnce = options.maxEventsAtOneInstant ?? Number.POSITIVE_INFINITY;
    let events = 0;
    let atOnce = 0;
    await settle();
    for (;;) {
      if (signal?.aborted) return { events, endedAt: this.current, reason: 'aborted' };
      const next = this.peek();
      if (next === undefined) return { events, endedAt: this.current, reason: 'idle' };
      if (until !== undefined && next.at > until) {
        this.current = Math.max(this.current, until);
        return { events, endedAt: this.current, reason: 'until' };
      }
      atOnce = next.at === this.current ? atOnce + 1 : 0;
      if (atOnce >= maxAtOnce) return { events, endedAt: this.current, reason: 'stalled' };
      this.pop();
      this.current = next.at;
      events++;
      this.eventsFired++;
      next.fn();
      await settle();
    }
  }

  private peek(): Timer | undefined {
    for (let top = this.heap.peek(); top !== undefined; top = this.heap.peek()) {
      if (!this.cancelled.has(top.id)) return top;
      this.cancelled.delete(top.id);
      this.pop();
    }
    return undefined;
  }

  private push(timer: Timer): void {
    this.live.add(timer.id);
    this.heap.push(timer.at, timer);
  }

  private pop(): Timer | undefined {
    const top = this.heap.pop();
    if (top !== undefined) this.live.delete(top.id);
    return top;
  }
}
