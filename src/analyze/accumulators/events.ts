/** Events counted by name. */
import type { EventRecord } from '../../trace/schema.ts';
import { cmp } from '../figures.ts';
import { type Accumulator, addTo } from './accumulator.ts';

export class Events implements Accumulator<Map<string, number>> {
  byName = new Map<string, number>();

  addEvent(r: EventRecord): void {
    addTo(this.byName, r.name, 1);
  }

  count(): number {
    let n = 0;
    for (const c of this.byName.values()) n += c;
    return n;
  }

  sorted(): Record<string, number> {
    return Object.fromEntries([...this.byName].sort(([a], [b]) => cmp(a, b)));
  }

  merge(other: Events): void {
    for (const [key, value] of other.byName) addTo(this.byName, key, value);
  }

  toState(): Map<string, number> {
    return this.byName;
  }

  static fromState(state: Map<string, number>): Events {
    const out = new Events();
    out.byName = state;
    return out;
  }
}
