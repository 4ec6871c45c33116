/**
 * Phase markers (`steady.start`, `turnover.fill.done`, ...): a trace event each, and a way for
 * faults and executors to start "after a marker" instead of at a fixed time.
 */
import type { Clock } from '../clock/clock.ts';
import type { Labels } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { Trigger } from './scenario.ts';

export class MarkerBus {
  private readonly listeners = new Map<string, Array<() => void>>();
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly trace: TraceSink,
  ) {}

  emit(name: string, labels?: Labels): void {
    if (!this.seen.has(name)) this.seen.set(name, this.clock.now());
    this.trace.write({ kind: 'event', name, t: this.clock.now(), ...(labels ? { labels } : {}) });
    const waiting = this.listeners.get(name) ?? [];
    this.listeners.delete(name);
    for (const fn of waiting) fn();
  }

  /** Runs `fn` when the marker is emitted (at once if it already was). */
  once(name: string, fn: () => void): void {
    if (this.seen.has(name)) {
      fn();
      return;
    }
    const list = this.listeners.get(name) ?? [];
    list.push(fn);
    this.listeners.set(name, list);
  }

  /** When it was first emitted, if it was. */
  timeOf(name: string): number | undefined {
    return this.seen.get(name);
  }

  /** Runs `fn` when the trigger fires: at a run time, or `delay` after a marker. */
  schedule(trigger: Trigger, fn: () => void): void {
    if (trigger.afterMarker !== undefined) {
      this.once(trigger.afterMarker, () => this.clock.setTimeout(fn, trigger.delayMs));
      return;
    }
    const at = (trigger.atMs ?? 0) + (trigger.atMs === undefined ? trigger.delayMs : 0);
    this.clock.setTimeout(fn, Math.max(0, at - this.clock.now()));
  }
}
