/** Spans by name and by (name, labels): outcomes and latency. */
import type { SpanRecord } from '../../trace/schema.ts';
import { cmp } from '../figures.ts';
import { LatencyHistogram, type LatencyHistogramState } from '../histogram.ts';
import type { Analysis } from '../schema.ts';
import { type Accumulator, type LabelMap, labelKey, sortedLabels } from './accumulator.ts';

export interface SpanAcc {
  name: string;
  labels: LabelMap;
  ok: number;
  error: number;
  cancelled: number;
  latency: LatencyHistogram;
}
type SpanAccState = Omit<SpanAcc, 'latency'> & { latency: LatencyHistogramState };

export interface SpansState {
  byLabels: Map<string, SpanAccState>;
  byName: Map<string, SpanAccState>;
}

function newSpanAcc(name: string, labels: LabelMap): SpanAcc {
  return { name, labels, ok: 0, error: 0, cancelled: 0, latency: new LatencyHistogram() };
}

function countSpan(acc: SpanAcc, outcome: 'ok' | 'error' | 'cancelled', dur: number): void {
  acc[outcome]++;
  acc.latency.record(dur);
}

function spanOut(acc: SpanAcc): Analysis['spans']['byName'][number] {
  return {
    name: acc.name,
    count: acc.ok + acc.error + acc.cancelled,
    outcomes: { ok: acc.ok, error: acc.error, cancelled: acc.cancelled },
    latency: acc.latency.percentiles(),
  };
}

const accState = (map: Map<string, SpanAcc>) =>
  new Map([...map].map(([key, acc]) => [key, { ...acc, latency: acc.latency.toState() }]));
const accFromState = (map: Map<string, SpanAccState>) =>
  new Map([...map].map(([key, acc]) => [key, { ...acc, latency: LatencyHistogram.fromState(acc.latency) }]));

export class Spans implements Accumulator<SpansState> {
  /** Keyed `name \0 labelKey(labels)` (just the name without labels). */
  byLabels = new Map<string, SpanAcc>();
  byName = new Map<string, SpanAcc>();

  addSpan(r: SpanRecord): void {
    const key = r.labels === undefined ? r.name : `${r.name}\u0000${labelKey(r.labels)}`;
    let acc = this.byLabels.get(key);
    if (acc === undefined) {
      acc = newSpanAcc(r.name, sortedLabels(r.labels));
      this.byLabels.set(key, acc);
    }
    countSpan(acc, r.outcome, r.dur);
    let byName = this.byName.get(r.name);
    if (byName === undefined) {
      byName = newSpanAcc(r.name, {});
      this.byName.set(r.name, byName);
    }
    countSpan(byName, r.outcome, r.dur);
  }

  count(): number {
    let n = 0;
    for (const acc of this.byName.values()) n += acc.ok + acc.error + acc.cancelled;
    return n;
  }

  result(): Analysis['spans'] {
    return {
      byName: [...this.byName.values()].sort((a, b) => cmp(a.name, b.name)).map(spanOut),
      byLabels: [...this.byLabels.entries()]
        .sort(([a], [b]) => cmp(a, b))
        .map(([, acc]) => ({ ...spanOut(acc), labels: acc.labels })),
    };
  }

  merge(other: Spans): void {
    for (const [target, source] of [
      [this.byLabels, other.byLabels],
      [this.byName, other.byName],
    ] as const) {
      for (const [key, acc] of source) {
        let mine = target.get(key);
        if (mine === undefined) {
          mine = newSpanAcc(acc.name, acc.labels);
          target.set(key, mine);
        }
        mine.ok += acc.ok;
        mine.error += acc.error;
        mine.cancelled += acc.cancelled;
        mine.latency.merge(acc.latency);
      }
    }
  }

  toState(): SpansState {
    return { byLabels: accState(this.byLabels), byName: accState(this.byName) };
  }

  static fromState(state: SpansState): Spans {
    const out = new Spans();
    out.byLabels = accFromState(state.byLabels);
    out.byName = accFromState(state.byName);
    return out;
  }
}
