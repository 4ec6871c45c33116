/**
 * Turnover metrics (docs/analysis.md#turnover), joined at finish from the actor spans, the `actor.failure` events,
 * the turnover markers and ticks, and the `actors` gauge: time to wake (one sample per wake, in
 * both resume modes), wake first touch, park vs park_register, step latency, failures by kind,
 * swaps done vs asked, sessions by state over time, and the `turnover_window` row over the
 * steady window only (from `turnover.fill.done`). Names: docs/trace-format.md; definitions:
 * docs/analysis.md.
 */
import type { Finisher, FinisherContext, RetainedRecord } from './finisher.ts';
import { LatencyHistogram } from './histogram.ts';
import type { TurnoverAnalysis, TurnoverOperation } from './schema.ts';

const SPAN_OPERATION: Record<string, TurnoverOperation> = {
  'actor.create': 'create',
  'actor.park_register': 'park_register',
  'actor.park': 'park',
  'actor.wake': 'wake',
  'actor.wake.first_touch': 'wake_first_touch',
  'actor.step': 'step',
};
const OPERATION_SPAN = Object.fromEntries(Object.entries(SPAN_OPERATION).map(([s, o]) => [o, s])) as Record<
  TurnoverOperation,
  string
>;
const ALL_OPERATIONS: TurnoverOperation[] = [
  'create',
  'park_register',
  'park',
  'wake',
  'wake_first_touch',
  'step',
];
const WINDOW_OPERATIONS: TurnoverOperation[] = ['park', 'wake', 'wake_first_touch', 'step'];
const STATES = ['awake', 'parked', 'waking', 'parking'] as const;
type State = (typeof STATES)[number];
const KINDS = ['busy', 'crashed', 'not_found'] as const;
type Kind = (typeof KINDS)[number];
const REASONS = ['no-idle-awake', 'no-parked', 'no-parked-ready'] as const;
type Reason = (typeof REASONS)[number];
/** Same cap as the analyzer's series: a chart never gets more points than this. */
const MAX_POINTS = 7200;

interface OpAcc {
  count: number;
  errors: number;
  failures: number;
  latency: LatencyHistogram;
}

const newOp = (): OpAcc => ({ count: 0, errors: 0, failures: 0, latency: new LatencyHistogram() });
const kinds = () => ({ busy: 0, crashed: 0, not_found: 0 });
const reasons = (): Record<Reason, number> => ({ 'no-idle-awake': 0, 'no-parked': 0, 'no-parked-ready': 0 });

interface SwapAcc {
  asked: number;
  done: number;
  missed: Record<Reason, number>;
}

function swapsOut(s: SwapAcc): TurnoverAnalysis['swaps'] {
  const missed = REASONS.reduce((sum, r) => sum + s.missed[r], 0);
  return {
    asked: s.asked,
    done: s.done,
    missed,
    missedByReason: s.missed,
    donePct: s.asked > 0 ? Math.round((10_000 * s.done) / s.asked) / 100 : null,
  };
}

function opRows(ops: Map<TurnoverOperation, OpAcc>, names: TurnoverOperation[], seconds: number) {
  return names.map((operation) => {
    const acc = ops.get(operation) ?? newOp();
    return {
      operation,
      span: OPERATION_SPAN[operation],
      count: acc.count,
      errors: acc.errors,
      failures: acc.failures,
      perSecond: seconds > 0 ? Math.round((1000 * acc.count) / seconds) / 1000 : null,
      latency: acc.latency.percentiles(),
    };
  });
}

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

type Markers = TurnoverAnalysis['markers'];

const MARKER_KEY: Record<string, keyof Markers> = {
  'turnover.registration.done': 'registrationDoneMs',
  'turnover.fill.start': 'fillStartMs',
  'turnover.fill.done': 'fillDoneMs',
  'turnover.done': 'doneMs',
};

/**
 * The first of each turnover marker, or undefined when the records hold no actor span and no
 * `actors` gauge (not a turnover run). Read first: the window needs the fill marker before
 * anything is counted into it.
 */
function turnoverMarkers(
  records: readonly RetainedRecord[],
): (Markers & { firstTickMs: number | null; lastTickMs: number | null }) | undefined {
  const markers: Markers = { registrationDoneMs: null, fillStartMs: null, fillDoneMs: null, doneMs: null };
  let firstTickMs: number | null = null;
  let lastTickMs: number | null = null;
  let any = false;
  for (const r of records) {
    if (r.kind === 'event' && MARKER_KEY[r.name] !== undefined) {
      const key = MARKER_KEY[r.name]!;
      if (markers[key] === null) markers[key] = r.t;
    }
    if (r.kind === 'event' && r.name === 'turnover.tick') {
      if (firstTickMs === null || r.t < firstTickMs) firstTickMs = r.t;
      if (lastTickMs === null || r.t > lastTickMs) lastTickMs = r.t;
    }
    if (r.kind === 'span' && SPAN_OPERATION[r.name] !== undefined) any = true;
    if (r.kind === 'gauge' && r.name === 'actors') any = true;
  }
  return any ? { ...markers, firstTickMs, lastTickMs } : undefined;
}

/**
 * The steady window's smallest size the turnover budgets judge (docs/analysis.md#turnover): a
 * pool's queues build up over minutes (at 50 swaps/s the built-in pool holds every budget for its
 * first minute and breaches four from the third), and the budgets were derived on a 5-minute
 * window of 3,000 swaps. Below either, a row that holds is not judged; one that breaches fails.
 */
export const MIN_TURNOVER_WINDOW_MS = 5 * 60_000;
export const MIN_TURNOVER_WINDOW_SWAPS = 1000;

/** Why a steady window is too small to judge a turnover row that holds in it (null: it is not). */
export function turnoverWindowTooSmall(durationMs: number, asked: number): string | null {
  const short = durationMs < MIN_TURNOVER_WINDOW_MS;
  const few = asked < MIN_TURNOVER_WINDOW_SWAPS;
  if (!short && !few) return null;
  const what = [
    ...(short
      ? [`${Math.round(durationMs / 100) / 10} s long (at least ${MIN_TURNOVER_WINDOW_MS / 60_000} minutes)`]
      : []),
    ...(few ? [`${asked} swaps asked (at least ${MIN_TURNOVER_WINDOW_SWAPS.toLocaleString('en-US')})`] : []),
  ].join(', ');
  return `the steady turnover window is too small to judge a row that passes in it: ${what}; a longer turnover.steady judges it`;
}

export function finishTurnover(
  records: readonly RetainedRecord[],
  context: FinisherContext,
): TurnoverAnalysis | undefined {
  if (records.length === 0) return undefined;
  const found = turnoverMarkers(records);
  if (found === undefined) return undefined;
  const { firstTickMs, lastTickMs, ...markers } = found;
  // The window is where the swaps were (a tick is a second of swaps, written from the fill
  // marker on): markers moved in the trace do not move it off them. Without ticks, the markers.
  const window =
    markers.fillDoneMs === null
      ? null
      : firstTickMs !== null && lastTickMs !== null
        ? { start: firstTickMs, end: Math.min(context.endMs, lastTickMs + 1000) }
        : { start: markers.fillDoneMs, end: markers.doneMs ?? context.endMs };
  const tally = new TurnoverTally(markers, window);
  for (const r of records) {
    if (r.kind === 'span') tally.span(r);
    else if (r.kind === 'event') tally.event(r);
    else if (r.kind === 'gauge' && r.name === 'actors') tally.actors(r);
  }
  return tally.result(context);
}

type SpanRecord = Extract<RetainedRecord, { kind: 'span' }>;
type EventRecord = Extract<RetainedRecord, { kind: 'event' }>;
type GaugeRecord = Extract<RetainedRecord, { kind: 'gauge' }>;

/** The turnover figures of a whole run and of its steady window, counted record by record. */
class TurnoverTally {
  private readonly windowStart: number | null;
  private readonly ops = new Map<TurnoverOperation, OpAcc>();
  private readonly windowOps = new Map<TurnoverOperation, OpAcc>();
  private readonly wakeByResume = {
    all: new LatencyHistogram(),
    implicit: new LatencyHistogram(),
    explicit: new LatencyHistogram(),
  };
  private readonly failures = {
    total: 0,
    byKind: kinds(),
    byOperation: {} as Record<string, Record<Kind, number>>,
    byReaction: { retry: 0, replace: 0, give_up: 0 },
  };
  private readonly windowFailures = kinds();
  private readonly swaps: SwapAcc = { asked: 0, done: 0, missed: reasons() };
  private readonly windowSwaps: SwapAcc = { asked: 0, done: 0, missed: reasons() };
  private lifecycleMode: string | null = null;
  private resumeMode: string | null = null;
  // Gauge samples, grouped by time (the executor writes the four states at one instant).
  private readonly sampleTimes: number[] = [];
  private readonly samples: Array<Record<State, number>> = [];

  private readonly windowEnd: number;

  constructor(
    private readonly markers: Markers,
    window: { start: number; end: number } | null,
  ) {
    this.windowStart = window?.start ?? null;
    this.windowEnd = window?.end ?? 0;
  }

  private inWindow(t: number): boolean {
    return this.windowStart !== null && t >= this.windowStart && t < this.windowEnd;
  }

  private acc(map: Map<TurnoverOperation, OpAcc>, op: TurnoverOperation): OpAcc {
    let a = map.get(op);
    if (a === undefined) {
      a = newOp();
      map.set(op, a);
    }
    return a;
  }

  span(r: SpanRecord): void {
    const op = SPAN_OPERATION[r.name];
    if (op === undefined) return;
    const labels = r.labels ?? {};
    if (this.lifecycleMode === null && typeof labels.mode === 'string') this.lifecycleMode = labels.mode;
    const error = r.outcome === 'error';
    const a = this.acc(this.ops, op);
    a.count++;
    if (error) a.errors++;
    a.latency.record(r.dur);
    if (this.inWindow(r.t)) {
      const w = this.acc(this.windowOps, op);
      w.count++;
      if (error) w.errors++;
      w.latency.record(r.dur);
    }
    if (op === 'wake') {
      this.wakeByResume.all.record(r.dur);
      if (labels.resume === 'implicit') this.wakeByResume.implicit.record(r.dur);
      else if (labels.resume === 'explicit') this.wakeByResume.explicit.record(r.dur);
      if (this.resumeMode === null && typeof labels.resume === 'string') this.resumeMode = labels.resume;
    }
  }

  event(r: EventRecord): void {
    if (r.name === 'actor.failure') this.failure(r);
    else if (r.name === 'turnover.tick') {
      const asked = num(r.data?.asked);
      const done = num(r.data?.done);
      this.swaps.asked += asked;
      this.swaps.done += done;
      if (this.inWindow(r.t)) {
        this.windowSwaps.asked += asked;
        this.windowSwaps.done += done;
      }
    } else if (r.name === 'turnover.swap.missed') {
      const reason = r.labels?.reason as Reason;
      if (!(reason in this.swaps.missed)) return;
      const n = num(r.data?.count);
      this.swaps.missed[reason] += n;
      if (this.inWindow(r.t)) this.windowSwaps.missed[reason] += n;
    }
  }

  private failure(r: EventRecord): void {
    const labels = r.labels ?? {};
    const kind = labels.kind as Kind;
    const op = String(labels.op ?? 'unknown');
    const reaction = labels.reaction as keyof typeof this.failures.byReaction;
    const failures = this.failures;
    failures.total++;
    if (kind in failures.byKind) failures.byKind[kind]++;
    failures.byOperation[op] ??= kinds();
    if (kind in failures.byKind) failures.byOperation[op]![kind]++;
    if (reaction in failures.byReaction) failures.byReaction[reaction]++;
    // A park failure belongs to registration when it happened before registration was done.
    if (op === 'park') {
      const registering = this.markers.registrationDoneMs === null || r.t <= this.markers.registrationDoneMs;
      this.acc(this.ops, registering ? 'park_register' : 'park').failures++;
    } else if (op === 'wake' || op === 'create') this.acc(this.ops, op).failures++;
    if (this.inWindow(r.t)) {
      if (kind in this.windowFailures) this.windowFailures[kind]++;
      if (op === 'park' || op === 'wake') this.acc(this.windowOps, op).failures++;
    }
  }

  actors(r: GaugeRecord): void {
    const state = r.labels?.state as State;
    if (!STATES.includes(state)) return;
    if (this.sampleTimes[this.sampleTimes.length - 1] !== r.t) {
      this.sampleTimes.push(r.t);
      this.samples.push({ awake: 0, parked: 0, waking: 0, parking: 0 });
    }
    this.samples[this.samples.length - 1]![state] = r.value;
  }

  result(context: FinisherContext): TurnoverAnalysis {
    const { sampleTimes, samples, windowStart, windowEnd } = this;
    let registered = 0;
    for (const s of samples) registered = Math.max(registered, s.awake + s.parked + s.waking + s.parking);
    const totalSeconds = (context.endMs - Math.min(0, context.startMs)) / 1000;
    const windowMs = windowStart === null ? 0 : windowEnd - windowStart;
    return {
      lifecycleMode: this.lifecycleMode,
      resumeMode: this.resumeMode,
      registered,
      markers: this.markers,
      operations: opRows(this.ops, ALL_OPERATIONS, totalSeconds),
      timeToWake: {
        all: this.wakeByResume.all.percentiles(),
        implicit: this.wakeByResume.implicit.percentiles(),
        explicit: this.wakeByResume.explicit.percentiles(),
      },
      failures: this.failures,
      swaps: swapsOut(this.swaps),
      states: stateSeries(sampleTimes, samples, context.endMs),
      window:
        windowStart === null
          ? null
          : {
              name: 'turnover_window',
              startMs: windowStart,
              endMs: windowEnd,
              durationMs: windowMs,
              rows: opRows(this.windowOps, WINDOW_OPERATIONS, windowMs / 1000),
              swaps: swapsOut(this.windowSwaps),
              failuresByKind: this.windowFailures,
              states: windowStates(sampleTimes, samples, windowStart, windowEnd),
              ...judgedWindow(windowMs, this.windowSwaps.asked),
            },
    };
  }
}

function judgedWindow(durationMs: number, asked: number): { judged: boolean; notJudged: string | null } {
  const why = turnoverWindowTooSmall(durationMs, asked);
  return { judged: why === null, notJudged: why };
}

function stateSeries(times: number[], samples: Array<Record<State, number>>, endMs: number) {
  const binMs =
    [1000, 10_000, 60_000, 300_000, 3_600_000].find((b) => Math.ceil(endMs / b) <= MAX_POINTS) ?? 3_600_000;
  const bins = Math.max(0, Math.ceil(endMs / binMs));
  const out = { binMs } as { binMs: number } & Record<State, number[]>;
  for (const state of STATES) out[state] = new Array<number>(bins).fill(0);
  // Each bin holds the last sample at or before its end, carried forward over bins without one.
  let k = 0;
  let last: Record<State, number> | undefined;
  for (let b = 0; b < bins; b++) {
    const end = (b + 1) * binMs;
    while (k < times.length && times[k]! < end) last = samples[k++];
    if (last) for (const state of STATES) out[state][b] = last[state];
  }
  return out;
}

function windowStates(times: number[], samples: Array<Record<State, number>>, start: number, end: number) {
  const acc = () => ({ min: Number.POSITIVE_INFINITY, max: Number.NEGATIVE_INFINITY, sum: 0, last: 0 });
  const per = { awake: acc(), parked: acc(), waking: acc(), parking: acc(), total: acc() };
  let n = 0;
  const add = (a: ReturnType<typeof acc>, v: number) => {
    if (v < a.min) a.min = v;
    if (v > a.max) a.max = v;
    a.sum += v;
    a.last = v;
  };
  samples.forEach((s, i) => {
    if (times[i]! < start || times[i]! >= end) return;
    n++;
    for (const state of STATES) add(per[state], s[state]);
    add(per.total, s.awake + s.parked + s.waking + s.parking);
  });
  const out = (a: ReturnType<typeof acc>) =>
    n === 0
      ? { min: 0, max: 0, mean: 0, last: 0 }
      : { min: a.min, max: a.max, mean: Math.round((100 * a.sum) / n) / 100, last: a.last };
  const total = out(per.total);
  return {
    awake: out(per.awake),
    parked: out(per.parked),
    waking: out(per.waking),
    parking: out(per.parking),
    total: { min: total.min, max: total.max },
  };
}

export const turnoverFinisher: Finisher = {
  key: 'turnover',
  retains: (name) => name === 'actors' || name.startsWith('actor.') || name.startsWith('turnover.'),
  finish: finishTurnover,
};
