/** Gauges by (name, labels): count, last, min, max, and samples over time for the first few. */
import type { GaugeRecord } from '../../trace/schema.ts';
import { cmp } from '../figures.ts';
import {
  type GaugeTrack,
  MAX_GAUGE_TRACKS,
  newTrack,
  trackAdd,
  trackMerge,
  trackPoints,
} from '../gauge-track.ts';
import type { Analysis } from '../schema.ts';
import { type Accumulator, type LabelMap, labelKey, sortedLabels } from './accumulator.ts';

/** Longest chart series: 2 h of 1 s bins. */
export const MAX_SERIES_POINTS = 7200;

export interface GaugeAcc {
  name: string;
  labels: LabelMap;
  /** Samples over time for charts; null when the gauge came after MAX_GAUGE_TRACKS others. */
  track: GaugeTrack | null;
  count: number;
  last: number;
  lastT: number;
  min: number;
  max: number;
}

export class Gauges implements Accumulator<Map<string, GaugeAcc>> {
  /** Keyed `name \0 labelKey(labels)` (just the name without labels). */
  byKey = new Map<string, GaugeAcc>();

  addGauge(r: GaugeRecord): void {
    const key = r.labels === undefined ? r.name : `${r.name}\u0000${labelKey(r.labels)}`;
    const acc = this.byKey.get(key);
    if (acc === undefined) {
      const track = this.byKey.size < MAX_GAUGE_TRACKS ? newTrack() : null;
      if (track) trackAdd(track, r.t, r.value);
      this.byKey.set(key, {
        name: r.name,
        labels: sortedLabels(r.labels),
        track,
        count: 1,
        last: r.value,
        lastT: r.t,
        min: r.value,
        max: r.value,
      });
      return;
    }
    acc.count++;
    if (acc.track) trackAdd(acc.track, r.t, r.value);
    if (r.t >= acc.lastT) {
      acc.last = r.value;
      acc.lastT = r.t;
    }
    if (r.value < acc.min) acc.min = r.value;
    if (r.value > acc.max) acc.max = r.value;
  }

  count(): number {
    let n = 0;
    for (const g of this.byKey.values()) n += g.count;
    return n;
  }

  private sorted(): GaugeAcc[] {
    return [...this.byKey.entries()].sort(([a], [b]) => cmp(a, b)).map(([, g]) => g);
  }

  result(): Analysis['gauges'] {
    return this.sorted().map((g) => ({
      name: g.name,
      labels: g.labels,
      count: g.count,
      last: g.last,
      lastAtMs: g.lastT,
      min: g.min,
      max: g.max,
    }));
  }

  /** Each tracked gauge over time: the last sample per bin (1 s bins up to 2 h, wider beyond). */
  series(endMs: number): NonNullable<Analysis['series']['gauges']> {
    const binMs =
      [1000, 10_000, 60_000, 300_000, 3_600_000].find((w) => Math.ceil(endMs / w) <= MAX_SERIES_POINTS) ??
      3_600_000;
    return this.sorted().flatMap((g) =>
      g.track ? [{ name: g.name, labels: g.labels, binMs, ...trackPoints(g.track, binMs) }] : [],
    );
  }

  merge(other: Gauges): void {
    for (const [key, g] of other.byKey) {
      const mine = this.byKey.get(key);
      if (mine === undefined) {
        // Tracked only if this analyzer still had room for it, as one pass would have.
        this.byKey.set(key, { ...g, track: this.byKey.size < MAX_GAUGE_TRACKS ? g.track : null });
      } else {
        if (mine.track && g.track) trackMerge(mine.track, g.track);
        else mine.track = null;
        mine.count += g.count;
        if (g.lastT >= mine.lastT) {
          mine.last = g.last;
          mine.lastT = g.lastT;
        }
        mine.min = Math.min(mine.min, g.min);
        mine.max = Math.max(mine.max, g.max);
      }
    }
  }

  toState(): Map<string, GaugeAcc> {
    return this.byKey;
  }

  static fromState(state: Map<string, GaugeAcc>): Gauges {
    const out = new Gauges();
    out.byKey = state;
    return out;
  }
}
