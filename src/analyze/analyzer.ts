/**
 * The one place metrics are computed, whatever produced the records (a trace file, an imported
 * trace, a live in-process run). Streaming and mergeable:
 *
 *   const analyzer = createAnalyzer({ header });
 *   for (const record of records) analyzer.add(record);   // or use it as a TraceSink
 *   const analysis = analyzer.finish();                   // pure: may be called again later
 *
 * `merge(other)` folds in an analyzer that saw the records *after* this one's (in file order);
 * the result equals one pass over all of them, which is what lets a file be split across worker
 * threads. `toState()` / `analyzerFromState()` carry an analyzer across a thread boundary
 * (structured-clone safe). Memory is bounded by the number of distinct keys (operations,
 * routes, sessions, (session, cycle) pairs, span label sets), never by the number of records.
 */
import type { ReadStats } from '../trace/parser.ts';
import type { BodyRecord, EndFooter, RunHeader, SpanInput } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import { VERSION } from '../version.ts';
import { SecondSeries, StartEndBins, type StartEndBinsState } from './bins.ts';
import { rateLimitBracket, type Snapshot, type Snapshots } from './bracket.ts';
import { burnWindows, type ResetWindowAcc } from './burn.ts';
import { CycleCounts, type CycleRowState } from './cycles.ts';
import { cmp, round } from './figures.ts';
import { FINISHERS, type FinisherContext, type RetainedRecord, retainedByAnyFinisher } from './finishers.ts';
import {
  type GaugeTrack,
  MAX_GAUGE_TRACKS,
  newTrack,
  trackAdd,
  trackMerge,
  trackPoints,
} from './gauge-track.ts';
import { LatencyHistogram, type LatencyHistogramState } from './histogram.ts';
import {
  CycleStarts,
  numberOf,
  POLL_CYCLE_SKIPPED_EVENT,
  POLL_CYCLE_SPAN,
  PollCycles,
  type PollCyclesState,
} from './poll-cycles.ts';
import { pollingFloor, SHARED } from './polling-floor.ts';
import { DEFAULT_LIMITS, sessionProjection } from './projection.ts';
import { scheduleSummary, scheduleWarning } from './schedule.ts';
import type { Analysis, KeyCount } from './schema.ts';
import { ANALYSIS_SCHEMA_VERSION } from './schema-version.ts';
import { trackBScorecard } from './scorecard.ts';

export interface AnalyzerOptions {
  /** The run header: run identity and the epoch that places x-ratelimit-reset in run time. */
  header?: RunHeader;
  /** Sessions for per-session figures; default: distinct sessions of the api records. */
  sessions?: number;
  /** Hourly limits per resource when no response carried x-ratelimit-limit. */
  defaultLimits?: Record<string, number>;
  /** The session count the Track B scorecard judges at. */
  scorecardSessions?: number;
}

export interface FinishContext {
  /** Where the records came from. */
  file?: string;
  /** The reader's statistics (header, footer, skipped lines). */
  stats?: ReadStats;
}

export const NONE = '(none)';
/** Longest chart series: 2 h of 1 s bins. */
export const MAX_SERIES_POINTS = 7200;
const WRITE_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);
const DIMENSIONS = [
  'byOperation',
  'byRoute',
  'byStatus',
  'bySource',
  'bySession',
  'byRepo',
  'byPhase',
  'byResource',
  'byMethod',
  'byProtocol',
] as const;
type Dimension = (typeof DIMENSIONS)[number];
type Counts = Map<string, KeyCount>;
type LabelMap = Record<string, string | number | boolean>;

interface HotResource {
  points: SecondSeries;
  rlLimit: number;
  lastReset: number;
  lastWindow: ResetWindowAcc | undefined;
}

interface SpanAcc {
  name: string;
  labels: LabelMap;
  ok: number;
  error: number;
  cancelled: number;
  latency: LatencyHistogram;
}

interface GaugeAcc {
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

interface Totals {
  calls: number;
  points: number;
  secondaryPoints: number;
  bytes: number;
  errors: number;
  failed: number;
  killed: number;
  writes: number;
  conditional: number;
  conditionalNotModified: number;
  notModified: number;
  opaque: number;
  status403: number;
  status429: number;
  retryAfter: number;
  limitedAnswers: number;
  limitedPrimary: number;
  limitedSecondary: number;
  cycleAttributed: number;
  beyondSeries: number;
}

function emptyTotals(): Totals {
  return {
    calls: 0,
    points: 0,
    secondaryPoints: 0,
    bytes: 0,
    errors: 0,
    failed: 0,
    killed: 0,
    writes: 0,
    conditional: 0,
    conditionalNotModified: 0,
    notModified: 0,
    opaque: 0,
    status403: 0,
    status429: 0,
    retryAfter: 0,
    limitedAnswers: 0,
    limitedPrimary: 0,
    limitedSecondary: 0,
    cycleAttributed: 0,
    beyondSeries: 0,
  };
}

/** Everything an analyzer holds, in structured-clone-safe form (for worker threads). */
export interface AnalyzerState {
  totals: Totals;
  counts: Record<Dimension, Counts>;
  opaqueByResource: Map<string, number>;
  sharedPoints: Map<string, number>;
  rlLimits: Map<string, number>;
  resetWindows: Map<string, ResetWindowAcc>;
  unwindowedCalls: Map<string, Float64Array>;
  unwindowedPoints: Map<string, Float64Array>;
  pointsPerSecond: Map<string, Float64Array>;
  writesPerSecond: Float64Array;
  bins: StartEndBinsState;
  latency: { rest: LatencyHistogramState; graphql: LatencyHistogramState };
  polling: Map<string, CycleRowState>;
  cycleStarts: Map<number, number>;
  steadyAt: number;
  pollCycles: PollCyclesState;
  minT: number;
  maxEnd: number;
  spans: Map<string, Omit<SpanAcc, 'latency'> & { latency: LatencyHistogramState }>;
  spansByName: Map<string, Omit<SpanAcc, 'latency'> & { latency: LatencyHistogramState }>;
  events: Map<string, number>;
  gauges: Map<string, GaugeAcc>;
  snapshots: Snapshots;
  retained: RetainedRecord[];
}

const STATUS_KEYS: string[] = [];
/** `String(status)` without a new string per record. */
function statusKey(status: number): string {
  if (status >= 0 && status < 1000) {
    const key = STATUS_KEYS[status];
    if (key !== undefined) return key;
    STATUS_KEYS[status] = String(status);
    return STATUS_KEYS[status]!;
  }
  return String(status);
}

function bump(map: Counts, key: string, points: number): void {
  const entry = map.get(key);
  if (entry === undefined) map.set(key, { calls: 1, points });
  else {
    entry.calls++;
    entry.points += points;
  }
}

function addTo(map: Map<string, number>, key: string, value: number): void {
  map.set(key, (map.get(key) ?? 0) + value);
}

function seriesOf(map: Map<string, SecondSeries>, key: string): SecondSeries {
  let series = map.get(key);
  if (series === undefined) {
    series = new SecondSeries();
    map.set(key, series);
  }
  return series;
}

/** Stable key of a label set: keys sorted. */
export function labelKey(labels: LabelMap | undefined): string {
  if (labels === undefined) return '';
  const keys = Object.keys(labels);
  if (keys.length === 0) return '';
  keys.sort();
  let out = '';
  for (const key of keys) out += `${JSON.stringify(key)}:${JSON.stringify(labels[key])},`;
  return out;
}

function sortedLabels(labels: LabelMap | undefined): LabelMap {
  const out: LabelMap = {};
  if (labels === undefined) return out;
  for (const key of Object.keys(labels).sort()) out[key] = labels[key]!;
  return out;
}

export class Analyzer implements TraceSink {
  readonly options: AnalyzerOptions;
  private totals = emptyTotals();
  private counts: Record<Dimension, Counts>;
  private opaqueByResource = new Map<string, number>();
  private sharedPoints = new Map<string, number>();
  private rlLimits = new Map<string, number>();
  private resetWindows = new Map<string, ResetWindowAcc>();
  private unwindowedCalls = new Map<string, SecondSeries>();
  private unwindowedPoints = new Map<string, SecondSeries>();
  private pointsPerSecond = new Map<string, SecondSeries>();
  private writesPerSecond = new SecondSeries();
  private bins = new StartEndBins();
  private latency = {
    rest: new LatencyHistogram(),
    graphql: new LatencyHistogram(),
  };
  private polling = new CycleCounts();
  private cycleStarts = new CycleStarts();
  /** Run time of the earliest steady.start marker. */
  private steadyAt = Number.POSITIVE_INFINITY;
  private pollCycles = new PollCycles();
  private minT = Number.POSITIVE_INFINITY;
  private maxEnd = Number.NEGATIVE_INFINITY;
  private spans = new Map<string, SpanAcc>();
  private spansByName = new Map<string, SpanAcc>();
  private events = new Map<string, number>();
  private gauges = new Map<string, GaugeAcc>();
  private snapshots: AnalyzerState['snapshots'] = {};
  /** Records the finishers join at the end (see finishers.ts), in arrival order. */
  private retained: RetainedRecord[] = [];
  /** Per-resource shortcuts for the hot path (not state: rebuilt on demand). */
  private hotName: string | undefined;
  private hot: HotResource | undefined;
  private readonly hotByName = new Map<string, HotResource>();

  constructor(options: AnalyzerOptions = {}) {
    this.options = options;
    this.counts = Object.fromEntries(DIMENSIONS.map((d) => [d, new Map()])) as Record<Dimension, Counts>;
  }

  /** TraceSink: lets a live run tee its records into an analyzer. */
  write(record: BodyRecord | (SpanInput & { kind: 'span' })): void {
    this.add(
      record.kind === 'span' && record.outcome === undefined
        ? { ...record, outcome: 'ok' }
        : (record as BodyRecord),
    );
  }

  /**
   * One record. An api record is never kept past this call: the trace scanner's fast path
   * (src/trace/scanner.ts) hands every api line over as the same reused object. Whoever
   * reshapes these accumulators must keep it so (or copy what they keep).
   */
  add(record: BodyRecord): void {
    const end = record.kind === 'api' || record.kind === 'span' ? record.t + record.dur : record.t;
    if (record.t < this.minT) this.minT = record.t;
    if (end > this.maxEnd) this.maxEnd = end;
    switch (record.kind) {
      case 'api':
        this.addApi(record);
        return;
      case 'span':
        this.addSpan(record);
        break;
      case 'event':
        this.addEvent(record);
        break;
      case 'gauge':
        this.addGauge(record);
        break;
    }
    // api records return above: only spans, events and gauges are ever joined.
    if (retainedByAnyFinisher(record.name)) this.retained.push(record);
  }

  private addApi(r: Extract<BodyRecord, { kind: 'api' }>): void {
    const totals = this.totals;
    const counts = this.counts;
    const points = r.cost;
    const status = r.status;
    totals.calls++;
    totals.points += points;
    totals.secondaryPoints += r.secondaryCost;
    if (r.bytes !== undefined) totals.bytes += r.bytes;
    bump(counts.byOperation, r.op ?? NONE, points);
    bump(counts.byRoute, r.route, points);
    bump(counts.byStatus, status === null ? 'opaque' : statusKey(status), points);
    bump(counts.bySource, r.source ?? NONE, points);
    bump(counts.bySession, r.session ?? NONE, points);
    bump(counts.byRepo, r.repo ?? NONE, points);
    bump(counts.byPhase, r.phase ?? NONE, points);
    bump(counts.byResource, r.resource, points);
    bump(counts.byMethod, r.method, points);
    bump(counts.byProtocol, r.protocol, points);

    if (r.conditional) {
      totals.conditional++;
      if (r.notModified) totals.conditionalNotModified++;
    }
    if (r.notModified) totals.notModified++;
    let limited = false;
    // A failed call: answered ≥ 400, or no answer and the client reported an error (a gh that
    // exited non-zero, or was killed by a signal: `error: "signal …"`), as the runbook counts.
    if ((status !== null && status >= 400) || (status === null && r.error !== undefined)) totals.failed++;
    if (r.error !== undefined && isKilledError(r.error)) totals.killed++;
    if (status === null) {
      totals.opaque++;
      addTo(this.opaqueByResource, r.resource, 1);
    } else {
      if (status >= 400) totals.errors++;
      if (status === 403) {
        totals.status403++;
        limited = true;
      } else if (status === 429) {
        totals.status429++;
        limited = true;
      }
    }
    if (r.retryAfter !== undefined) {
      totals.retryAfter++;
      limited = true;
    }
    if (limited) totals.limitedAnswers++;
    if (r.limited === 'primary') totals.limitedPrimary++;
    else if (r.limited === 'secondary') totals.limitedSecondary++;

    const t = r.t;
    if (r.protocol === 'rest' && WRITE_METHODS.has(r.method)) {
      totals.writes++;
      if (!this.writesPerSecond.add(t, 1)) totals.beyondSeries++;
    }
    (r.protocol === 'graphql' ? this.latency.graphql : this.latency.rest).record(r.dur);
    this.bins.add(t, t + r.dur);

    if (status !== null) {
      if (r.session === undefined) addTo(this.sharedPoints, r.resource, points);
      const hot = r.resource === this.hotName ? this.hot! : this.hotFor(r.resource);
      if (!hot.points.add(t, points)) totals.beyondSeries++;
      const rl = r.rl;
      if (rl !== undefined) {
        if (rl.limit > hot.rlLimit) {
          hot.rlLimit = rl.limit;
          this.rlLimits.set(r.resource, rl.limit);
        }
        const used = rl.used ?? rl.limit - rl.remaining;
        let window = hot.lastReset === rl.reset ? hot.lastWindow : undefined;
        if (window === undefined) {
          const key = `${r.resource}\u0000${rl.reset}`;
          window = this.resetWindows.get(key);
          if (window === undefined) {
            window = {
              resource: r.resource,
              reset: rl.reset,
              calls: 0,
              points: 0,
              limit: rl.limit,
              usedMax: used,
              remainingMin: rl.remaining,
            };
            this.resetWindows.set(key, window);
          }
          hot.lastReset = rl.reset;
          hot.lastWindow = window;
        }
        window.calls++;
        window.points += points;
        if (rl.limit > window.limit) window.limit = rl.limit;
        if (window.usedMax === null || used > window.usedMax) window.usedMax = used;
        if (rl.remaining < window.remainingMin) window.remainingMin = rl.remaining;
      } else {
        seriesOf(this.unwindowedCalls, r.resource).add(t, 1);
        seriesOf(this.unwindowedPoints, r.resource).add(t, points);
      }
    }

    if (r.cycle !== undefined) {
      if (r.session !== undefined) totals.cycleAttributed++;
      this.polling.add(r.session ?? SHARED, r.cycle, r.resource);
      this.cycleStarts.add(r.cycle, t);
    }
  }

  private hotFor(resource: string): HotResource {
    let hot = this.hotByName.get(resource);
    if (hot === undefined) {
      hot = {
        points: seriesOf(this.pointsPerSecond, resource),
        rlLimit: this.rlLimits.get(resource) ?? Number.NEGATIVE_INFINITY,
        lastReset: Number.NaN,
        lastWindow: undefined,
      };
      this.hotByName.set(resource, hot);
    }
    this.hotName = resource;
    this.hot = hot;
    return hot;
  }

  private addSpan(r: Extract<BodyRecord, { kind: 'span' }>): void {
    const key = r.labels === undefined ? r.name : `${r.name}\u0000${labelKey(r.labels)}`;
    let acc = this.spans.get(key);
    if (acc === undefined) {
      acc = newSpanAcc(r.name, sortedLabels(r.labels));
      this.spans.set(key, acc);
    }
    countSpan(acc, r.outcome, r.dur);
    let byName = this.spansByName.get(r.name);
    if (byName === undefined) {
      byName = newSpanAcc(r.name, {});
      this.spansByName.set(r.name, byName);
    }
    countSpan(byName, r.outcome, r.dur);
    if (r.name === POLL_CYCLE_SPAN) {
      this.pollCycles.addSpan(r);
      const cycle = numberOf(r.data?.cycle);
      if (cycle !== undefined && Number.isInteger(cycle)) this.cycleStarts.add(cycle, r.t);
    }
  }

  private addEvent(r: Extract<BodyRecord, { kind: 'event' }>): void {
    addTo(this.events, r.name, 1);
    if (r.name === STEADY_START_EVENT) {
      if (r.t < this.steadyAt) this.steadyAt = r.t;
      return;
    }
    if (r.name === POLL_CYCLE_SKIPPED_EVENT) {
      this.pollCycles.addSkipped(r.labels);
      return;
    }
    if (r.name !== RATELIMIT_SNAPSHOT_EVENT || r.data === undefined) return;
    const snapshot: Snapshot = { t: r.t, data: r.data };
    const s = this.snapshots;
    if (s.first === undefined || r.t < s.first.t) s.first = snapshot;
    if (s.last === undefined || r.t >= s.last.t) s.last = snapshot;
    // The emulator labels its snapshots (label: before|after); other producers may say phase.
    const phase = r.data.phase ?? r.labels?.phase ?? r.labels?.label;
    if (phase === 'before' && (s.before === undefined || r.t < s.before.t)) s.before = snapshot;
    if (phase === 'after' && (s.after === undefined || r.t >= s.after.t)) s.after = snapshot;
  }

  private addGauge(r: Extract<BodyRecord, { kind: 'gauge' }>): void {
    const key = r.labels === undefined ? r.name : `${r.name}\u0000${labelKey(r.labels)}`;
    const acc = this.gauges.get(key);
    if (acc === undefined) {
      const track = this.gauges.size < MAX_GAUGE_TRACKS ? newTrack() : null;
      if (track) trackAdd(track, r.t, r.value);
      this.gauges.set(key, {
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

  /** Folds in an analyzer that saw the records after this one's. Mutates this; not `other`. */
  merge(other: Analyzer): this {
    this.hotByName.clear();
    this.hotName = undefined;
    const a = this.totals;
    const b = other.totals;
    for (const key of Object.keys(a) as Array<keyof Totals>) a[key] += b[key];
    for (const dimension of DIMENSIONS) {
      const mine = this.counts[dimension];
      for (const [key, value] of other.counts[dimension]) {
        const entry = mine.get(key);
        if (entry === undefined) mine.set(key, { ...value });
        else {
          entry.calls += value.calls;
          entry.points += value.points;
        }
      }
    }
    for (const [key, value] of other.opaqueByResource) addTo(this.opaqueByResource, key, value);
    for (const [key, value] of other.sharedPoints) addTo(this.sharedPoints, key, value);
    for (const [key, value] of other.rlLimits) {
      const mine = this.rlLimits.get(key);
      if (mine === undefined || value > mine) this.rlLimits.set(key, value);
    }
    for (const [key, w] of other.resetWindows) {
      const mine = this.resetWindows.get(key);
      if (mine === undefined) this.resetWindows.set(key, { ...w });
      else {
        mine.calls += w.calls;
        mine.points += w.points;
        mine.limit = Math.max(mine.limit, w.limit);
        if (w.usedMax !== null && (mine.usedMax === null || w.usedMax > mine.usedMax))
          mine.usedMax = w.usedMax;
        mine.remainingMin = Math.min(mine.remainingMin, w.remainingMin);
      }
    }
    for (const [target, source] of [
      [this.unwindowedCalls, other.unwindowedCalls],
      [this.unwindowedPoints, other.unwindowedPoints],
      [this.pointsPerSecond, other.pointsPerSecond],
    ] as const) {
      for (const [key, series] of source) seriesOf(target, key).merge(series);
    }
    this.writesPerSecond.merge(other.writesPerSecond);
    this.bins.merge(other.bins);
    this.latency.rest.merge(other.latency.rest);
    this.latency.graphql.merge(other.latency.graphql);
    this.polling.merge(other.polling);
    this.cycleStarts.merge(other.cycleStarts);
    if (other.steadyAt < this.steadyAt) this.steadyAt = other.steadyAt;
    this.pollCycles.merge(other.pollCycles);
    if (other.minT < this.minT) this.minT = other.minT;
    if (other.maxEnd > this.maxEnd) this.maxEnd = other.maxEnd;
    for (const [target, source] of [
      [this.spans, other.spans],
      [this.spansByName, other.spansByName],
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
    for (const [key, value] of other.events) addTo(this.events, key, value);
    for (const [key, g] of other.gauges) {
      const mine = this.gauges.get(key);
      if (mine === undefined) {
        // Tracked only if this analyzer still had room for it, as one pass would have.
        this.gauges.set(key, { ...g, track: this.gauges.size < MAX_GAUGE_TRACKS ? g.track : null });
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
    const s = this.snapshots;
    const o = other.snapshots;
    if (o.first && (s.first === undefined || o.first.t < s.first.t)) s.first = o.first;
    if (o.last && (s.last === undefined || o.last.t >= s.last.t)) s.last = o.last;
    if (o.before && (s.before === undefined || o.before.t < s.before.t)) s.before = o.before;
    if (o.after && (s.after === undefined || o.after.t >= s.after.t)) s.after = o.after;
    for (const record of other.retained) this.retained.push(record);
    return this;
  }

  toState(): AnalyzerState {
    const seriesState = (map: Map<string, SecondSeries>) =>
      new Map([...map].map(([key, series]) => [key, series.toState()]));
    const spanState = (map: Map<string, SpanAcc>) =>
      new Map([...map].map(([key, acc]) => [key, { ...acc, latency: acc.latency.toState() }]));
    return {
      totals: this.totals,
      counts: this.counts,
      opaqueByResource: this.opaqueByResource,
      sharedPoints: this.sharedPoints,
      rlLimits: this.rlLimits,
      resetWindows: this.resetWindows,
      unwindowedCalls: seriesState(this.unwindowedCalls),
      unwindowedPoints: seriesState(this.unwindowedPoints),
      pointsPerSecond: seriesState(this.pointsPerSecond),
      writesPerSecond: this.writesPerSecond.toState(),
      bins: this.bins.toState(),
      latency: {
        rest: this.latency.rest.toState(),
        graphql: this.latency.graphql.toState(),
      },
      polling: this.polling.toState(),
      cycleStarts: this.cycleStarts.starts,
      steadyAt: this.steadyAt,
      pollCycles: this.pollCycles.toState(),
      minT: this.minT,
      maxEnd: this.maxEnd,
      spans: spanState(this.spans),
      spansByName: spanState(this.spansByName),
      events: this.events,
      gauges: this.gauges,
      snapshots: this.snapshots,
      retained: this.retained,
    };
  }

  static fromState(state: AnalyzerState, options: AnalyzerOptions = {}): Analyzer {
    const out = new Analyzer(options);
    const series = (map: Map<string, Float64Array>) =>
      new Map([...map].map(([key, values]) => [key, new SecondSeries(values)]));
    const spans = (map: AnalyzerState['spans']) =>
      new Map(
        [...map].map(([key, acc]) => [key, { ...acc, latency: LatencyHistogram.fromState(acc.latency) }]),
      );
    out.totals = state.totals;
    out.counts = state.counts;
    out.opaqueByResource = state.opaqueByResource;
    out.sharedPoints = state.sharedPoints;
    out.rlLimits = state.rlLimits;
    out.resetWindows = state.resetWindows;
    out.unwindowedCalls = series(state.unwindowedCalls);
    out.unwindowedPoints = series(state.unwindowedPoints);
    out.pointsPerSecond = series(state.pointsPerSecond);
    out.writesPerSecond = new SecondSeries(state.writesPerSecond);
    out.bins = StartEndBins.fromState(state.bins);
    out.latency = {
      rest: LatencyHistogram.fromState(state.latency.rest),
      graphql: LatencyHistogram.fromState(state.latency.graphql),
    };
    out.polling = CycleCounts.fromState(state.polling);
    out.cycleStarts = CycleStarts.fromState(state.cycleStarts);
    out.steadyAt = state.steadyAt;
    out.pollCycles = PollCycles.fromState(state.pollCycles);
    out.minT = state.minT;
    out.maxEnd = state.maxEnd;
    out.spans = spans(state.spans);
    out.spansByName = spans(state.spansByName);
    out.events = state.events;
    out.gauges = state.gauges;
    out.snapshots = state.snapshots;
    out.retained = state.retained;
    return out;
  }

  /** The Analysis of everything added so far. Does not change the analyzer. */
  finish(context: FinishContext = {}): Analysis {
    const header = this.options.header ?? context.stats?.header;
    const footer: EndFooter | undefined = context.stats?.footer;
    const totals = this.totals;
    const hasRecords = Number.isFinite(this.minT);
    const startMs = hasRecords ? Math.min(0, this.minT) : 0;
    const endMs = Math.max(hasRecords ? this.maxEnd : 0, footer?.t ?? 0, startMs);
    const durationMs = endMs - startMs;
    const knownSessions = [...this.counts.bySession.keys()].filter((k) => k !== NONE).length;
    const sessions = this.options.sessions ?? knownSessions;
    const epochMs = header?.epochMs ?? null;
    const warnings: string[] = [];
    if (totals.beyondSeries > 0) {
      warnings.push(
        `${totals.beyondSeries} records start more than a year into the run: left out of per-second series`,
      );
    }

    const burn = burnWindows(
      {
        resetWindows: this.resetWindows.values(),
        unwindowedCalls: this.unwindowedCalls,
        unwindowedPoints: this.unwindowedPoints,
        limitFor: (resource) =>
          this.rlLimits.get(resource) ??
          { ...DEFAULT_LIMITS, ...this.options.defaultLimits }[resource] ??
          null,
      },
      epochMs,
      startMs,
      endMs,
    );
    const bracket = rateLimitBracket(this.snapshots, this.pointsPerSecond, header);
    const projection = sessionProjection(
      {
        defaultLimits: this.options.defaultLimits,
        responseLimits: this.rlLimits,
        pointsPerSecond: this.pointsPerSecond,
        sharedPoints: this.sharedPoints,
      },
      sessions,
      durationMs,
    );
    const max1s = this.bins.maxInWindow(1000);
    const max10s = this.bins.maxInWindow(10_000);
    const perSecond = this.bins.series(1000);
    const first60s = new Array<number>(60).fill(0);
    if (perSecond) for (let i = 0; i < 60 && i < perSecond.length; i++) first60s[i] = perSecond[i]!;
    const concurrency = this.bins.peakConcurrency();
    const writesMax = this.writesPerSecond.maxInWindow(60);

    const api: Analysis['api'] = {
      totals: {
        calls: totals.calls,
        points: totals.points,
        secondaryPoints: totals.secondaryPoints,
        bytes: totals.bytes,
        errors: totals.errors,
        failed: totals.failed,
        killed: totals.killed,
        writes: totals.writes,
        conditional: totals.conditional,
        notModified: totals.notModified,
        opaque: totals.opaque,
      },
      counts: Object.fromEntries(
        DIMENSIONS.map((d) => [d, sortCounts(this.counts[d])]),
      ) as Analysis['api']['counts'],
      conditional: {
        requests: totals.conditional,
        notModified: totals.conditionalNotModified,
        notModifiedPct:
          totals.conditional > 0 ? round((100 * totals.conditionalNotModified) / totals.conditional) : null,
      },
      opaque: {
        calls: totals.opaque,
        sharePct: totals.calls > 0 ? round((100 * totals.opaque) / totals.calls) : null,
        byResource: Object.fromEntries([...this.opaqueByResource].sort(([a], [b]) => cmp(a, b))),
      },
      pollingFloor: pollingFloor(this.polling, this.cycleStarts, this.steadyAt, totals.cycleAttributed),
      burn,
      bracket,
      burst: {
        method: 'sliding',
        stepMs: this.bins.widthMs,
        max1s: max1s ? { calls: max1s.calls, perSecond: max1s.calls, atMs: max1s.atMs } : null,
        max10s: max10s ? { calls: max10s.calls, perSecond: max10s.calls / 10, atMs: max10s.atMs } : null,
        first60s,
      },
      concurrency: { peak: concurrency.peak, atMs: concurrency.atMs, resolutionMs: this.bins.widthMs },
      writes: { total: totals.writes, maxPerMinute: writesMax.value, atMs: writesMax.atMs },
      limited: {
        answers: totals.limitedAnswers,
        status403: totals.status403,
        status429: totals.status429,
        retryAfter: totals.retryAfter,
        primary: totals.limitedPrimary,
        secondary: totals.limitedSecondary,
      },
      latency: {
        all: this.allLatency().percentiles(),
        rest: this.latency.rest.percentiles(),
        graphql: this.latency.graphql.percentiles(),
      },
      projection,
    };
    for (const w of burn.warnings) warnings.push(w);
    if (bracket) for (const w of bracket.warnings) warnings.push(w);
    if (totals.opaque > 0) {
      warnings.push(
        `${totals.opaque} opaque calls (${api.opaque.sharePct?.toFixed(1)}%): status and cost unknown, not in the burn; the /rate_limit bracket is the way to see them`,
      );
    }

    const { pollCycles, warnings: pollWarnings } = this.pollCycles.result();
    for (const w of pollWarnings) warnings.push(w);
    const scorecard = trackBScorecard(api, sessions, this.options.scorecardSessions ?? 50);
    const schedule = scheduleSummary(this.spans.values(), this.events, header?.timeScale ?? 1);
    const scheduleNote = scheduleWarning(schedule);
    if (scheduleNote) warnings.push(scheduleNote);
    const badRecordReports = this.events.get('target.bad_record') ?? 0;
    if (badRecordReports > 0) {
      warnings.push(
        `target.bad_record: ${badRecordReports} report(s) of records from the system under test refused (times out of range, a span ending before it starts: docs/limits.md); the events say how many and why`,
      );
    }
    const input: Analysis['input'] = {
      file: context.file ?? null,
      lines: context.stats?.lines ?? 0,
      records: context.stats ? { ...context.stats.counts } : this.recordCounts(),
      skipped: context.stats?.skipped ?? 0,
      skippedReasons: context.stats?.skippedReasons ?? [],
      truncated: context.stats?.truncated ?? false,
      footer: footer?.reason ?? null,
      warnings: context.stats?.warnings ?? [],
    };
    if (input.skipped > 0) warnings.unshift(`${input.skipped} bad lines skipped (--lenient)`);
    for (const w of input.warnings) warnings.unshift(w);

    return {
      schemaVersion: ANALYSIS_SCHEMA_VERSION,
      generator: { name: 'fleetbench', version: VERSION },
      run: {
        runId: header?.runId ?? null,
        clock: header?.clock ?? null,
        scenario: header?.scenario.name ?? null,
        cell: header?.scenario.cell ?? null,
        seed: header?.seed ?? null,
        source: header?.source ?? null,
        target: header?.target ?? null,
        epochMs,
        startedAt: header?.startedAt ?? null,
        startMs,
        endMs,
        durationMs,
        sessions,
        repos: [...this.counts.byRepo.keys()].filter((k) => k !== NONE).length,
      },
      input,
      api,
      controlPlane: { pollCycles },
      scorecard,
      spans: {
        byName: [...this.spansByName.values()].sort((a, b) => cmp(a.name, b.name)).map(spanOut),
        byLabels: [...this.spans.entries()]
          .sort(([a], [b]) => cmp(a, b))
          .map(([, acc]) => ({ ...spanOut(acc), labels: acc.labels })),
      },
      events: { byName: Object.fromEntries([...this.events].sort(([a], [b]) => cmp(a, b))) },
      gauges: [...this.gauges.entries()]
        .sort(([a], [b]) => cmp(a, b))
        .map(([, g]) => ({
          name: g.name,
          labels: g.labels,
          count: g.count,
          last: g.last,
          lastAtMs: g.lastT,
          min: g.min,
          max: g.max,
        })),
      series: this.series(endMs),
      schedule,
      ...this.finished({ header, startMs, endMs }),
      warnings,
    };
  }

  /** The joined metrics (speed, turnover) from the retained records, in time order. */
  private finished(context: FinisherContext): Pick<Analysis, 'speed' | 'turnover' | 'faults'> {
    const out: Pick<Analysis, 'speed' | 'turnover' | 'faults'> = {};
    if (FINISHERS.length === 0) return out;
    // Stable sort: ties keep trace order, so the result does not depend on thread splits.
    const records = this.retained
      .map((r, i) => [r, i] as const)
      .sort(([a, i], [b, j]) => a.t - b.t || i - j)
      .map(([r]) => r);
    for (const finisher of FINISHERS) {
      const own = records.filter((r) => finisher.retains(r.name));
      (out as Record<string, unknown>)[finisher.key] = finisher.finish(own, context);
    }
    return out;
  }

  /** Time series for charts. Bins are fixed, from t = 0; at most MAX_SERIES_POINTS per series. */
  private series(endMs: number): Analysis['series'] {
    const totalSeconds = Math.ceil(Math.max(0, endMs) / 1000);
    const pick = (choices: number[]) =>
      choices.find(
        (binMs) => binMs % this.bins.widthMs === 0 && Math.ceil(endMs / binMs) <= MAX_SERIES_POINTS,
      ) ?? choices[choices.length - 1]!;
    const callSeries = (binMs: number) => {
      const values = this.bins.series(binMs) ?? [];
      const want = Math.max(values.length, Math.ceil(Math.max(0, endMs) / binMs));
      while (values.length < want) values.push(0);
      return { binMs, values };
    };
    const points: Record<string, number[]> = {};
    for (const [resource, series] of [...this.pointsPerSecond].sort(([a], [b]) => cmp(a, b))) {
      points[resource] = series.bins(60, totalSeconds);
    }
    return {
      calls: callSeries(pick([1000, 10_000, 60_000, 300_000, 3_600_000])),
      calls10s: callSeries(pick([10_000, 60_000, 300_000, 3_600_000])),
      writes: { binMs: 60_000, values: this.writesPerSecond.bins(60, totalSeconds) },
      points: { binMs: 60_000, byResource: points },
      gauges: this.gaugeSeries(endMs),
    };
  }

  /** Each tracked gauge over time: the last sample per bin (1 s bins up to 2 h, wider beyond). */
  private gaugeSeries(endMs: number): NonNullable<Analysis['series']['gauges']> {
    const binMs =
      [1000, 10_000, 60_000, 300_000, 3_600_000].find((w) => Math.ceil(endMs / w) <= MAX_SERIES_POINTS) ??
      3_600_000;
    return [...this.gauges.entries()]
      .sort(([a], [b]) => cmp(a, b))
      .flatMap(([, g]) =>
        g.track ? [{ name: g.name, labels: g.labels, binMs, ...trackPoints(g.track, binMs) }] : [],
      );
  }

  /** All calls: the REST and GraphQL histograms added (exact; cheaper than recording twice). */
  private allLatency(): LatencyHistogram {
    const all = new LatencyHistogram();
    all.merge(this.latency.rest);
    all.merge(this.latency.graphql);
    return all;
  }

  private recordCounts(): Analysis['input']['records'] {
    let span = 0;
    for (const acc of this.spansByName.values()) span += acc.ok + acc.error + acc.cancelled;
    let event = 0;
    for (const n of this.events.values()) event += n;
    let gauge = 0;
    for (const g of this.gauges.values()) gauge += g.count;
    return { api: this.totals.calls, span, event, gauge };
  }
}

export const RATELIMIT_SNAPSHOT_EVENT = 'ratelimit.snapshot';

/**
 * Whether an api record's `error` says its client was killed by a signal (docs/trace-format.md:
 * `signal SIGKILL`, or `signal (exit 137)` when only the exit code ≥ 128 tells).
 */
export function isKilledError(error: string): boolean {
  return error.startsWith('signal');
}
/** The phase marker the steady-state polling floor starts at. */
export const STEADY_START_EVENT = 'steady.start';

export function createAnalyzer(options: AnalyzerOptions = {}): Analyzer {
  return new Analyzer(options);
}

/** The array buffers of a state, for postMessage's transfer list (moved, not copied). */
export function stateTransferables(state: AnalyzerState): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  const add = (array: Int32Array | Float64Array) => buffers.add(array.buffer as ArrayBuffer);
  add(state.bins.starts);
  add(state.bins.ends);
  add(state.writesPerSecond);
  for (const map of [state.unwindowedCalls, state.unwindowedPoints, state.pointsPerSecond])
    for (const a of map.values()) add(a);
  return [...buffers];
}

export function analyzerFromState(state: AnalyzerState, options: AnalyzerOptions = {}): Analyzer {
  return Analyzer.fromState(state, options);
}

function sortCounts(map: Counts): Record<string, KeyCount> {
  const entries = [...map].sort(([ka, a], [kb, b]) => b.calls - a.calls || cmp(ka, kb));
  return Object.fromEntries(
    entries.map(([key, value]) => [key, { calls: value.calls, points: value.points }]),
  );
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

/** p50 (nearest rank), mean and max of integer counts given as value → frequency. */
