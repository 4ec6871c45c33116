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
import { type Clock, sleepOn, type TimerId, VIRTUAL_EPOCH_MS } from './clock.ts';

interface Timer {
  at: number;
  seq: number;
  id: TimerId;
  fn: () => void;
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
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
  private heap: Timer[] = [];
  private cancelled = new Set<TimerId>();
  /** Ids still in the heap, so clearTimeout is O(1). */
  private live = new Set<TimerId>();
  private nextId = 1;
  private nextSeq = 0;
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
    const timer: Timer = { at: this.current + delay, seq: this.nextSeq++, id: this.nextId++, fn };
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
    while (this.heap.length > 0) {
      const top = this.heap[0]!;
      if (!this.cancelled.has(top.id)) return top;
      this.cancelled.delete(top.id);
      this.pop();
    }
    return undefined;
  }

  private push(timer: Timer): void {
    const heap = this.heap;
    this.live.add(timer.id);
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  private pop(): Timer | undefined {
    const heap = this.heap;
    const top = heap[0];
    if (top !== undefined) this.live.delete(top.id);
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let smallest = i;
        if (l < heap.length && before(heap[l]!, heap[smallest]!)) smallest = l;
        if (r < heap.length && before(heap[r]!, heap[smallest]!)) smallest = r;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
        i = smallest;
      }
    }
    return top;
  }
}
