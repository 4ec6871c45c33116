/** The ratelimit.snapshot events the /rate_limit bracket is built from: first, last, before, after. */
import type { EventRecord } from '../../trace/schema.ts';
import type { Snapshot, Snapshots as SnapshotsState } from '../bracket.ts';
import type { Accumulator } from './accumulator.ts';

export const RATELIMIT_SNAPSHOT_EVENT = 'ratelimit.snapshot';

export class Snapshots implements Accumulator<SnapshotsState> {
  taken: SnapshotsState = {};

  addEvent(r: EventRecord): void {
    if (r.name !== RATELIMIT_SNAPSHOT_EVENT || r.data === undefined) return;
    const snapshot: Snapshot = { t: r.t, data: r.data };
    const s = this.taken;
    if (s.first === undefined || r.t < s.first.t) s.first = snapshot;
    if (s.last === undefined || r.t >= s.last.t) s.last = snapshot;
    // The emulator labels its snapshots (label: before|after); other producers may say phase.
    const phase = r.data.phase ?? r.labels?.phase ?? r.labels?.label;
    if (phase === 'before' && (s.before === undefined || r.t < s.before.t)) s.before = snapshot;
    if (phase === 'after' && (s.after === undefined || r.t >= s.after.t)) s.after = snapshot;
  }

  merge(other: Snapshots): void {
    const s = this.taken;
    const o = other.taken;
    if (o.first && (s.first === undefined || o.first.t < s.first.t)) s.first = o.first;
    if (o.last && (s.last === undefined || o.last.t >= s.last.t)) s.last = o.last;
    if (o.before && (s.before === undefined || o.before.t < s.before.t)) s.before = o.before;
    if (o.after && (s.after === undefined || o.after.t >= s.after.t)) s.after = o.after;
  }

  toState(): SnapshotsState {
    return this.taken;
  }

  static fromState(state: SnapshotsState): Snapshots {
    const out = new Snapshots();
    out.taken = state;
    return out;
  }
}
