/**
 * Turnover metrics (docs/analysis.md#turnover), joined at finish from the actor spans, the `actor.failure` events,
 * the turnover markers and ticks, and the `actors` gauge: time to wake (one sample per wake, in
 * both resume modes), wake first touch, park vs park_register, step latency, failures by kind,
 * swaps done vs asked, sessions by state over time, and the `turnover_window` row over the
 * steady window only (from `turnover.fill.done`). Names: docs/trace-format.md; definitions:
 * docs/analysis.md.
 */
import type { Finisher, FinisherContext, RetainedRecord } from './finishers.ts';
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

export function finishTurnover(
  records: readonly RetainedRecord[],
  context: FinisherContext,
): TurnoverAnalysis | undefined {
  if (records.length === 0) return undefined;
  // Markers first: the window needs the fill marker before anything is counted into it.
  const markers = { registrationDoneMs: null, fillStartMs: null, fillDoneMs: null, doneMs: null } as Record<
    'registrationDoneMs' | 'fillStartMs' | 'fillDoneMs' | 'doneMs',
    number | null
  >;
  const markerKey: Record<string, keyof typeof markers> = {
    'turnover.registration.done': 'registrationDoneMs',
    'turnover.fill.start': 'fillStartMs',
    'turnover.fill.done': 'fillDoneMs',
    'turnover.done': 'doneMs',
  };
  let any = false;
  for (const r of records) {
    if (r.kind === 'event' && markerKey[r.name] !== undefined) {
      const key = markerKey[r.name]!;
      if (markers[key] === null) markers[key] = r.t;
    }
    if (r.kind === 'span' && SPAN_OPERATION[r.name] !== undefined) any = true;
    if (r.kind === 'gauge' && r.name === 'actors') any = true;
  }
  if (!any) return undefined;
  const windowStart = markers.fillDoneMs;
  const windowEnd = markers.doneMs ?? context.endMs;
  const inWindow = (t: number) => windowStart !== null && t >= windowStart && t < windowEnd;

  const ops = new Map<TurnoverOperation, OpAcc>();
  const windowOps = new Map<TurnoverOperation, OpAcc>();
  const acc = (map: Map<TurnoverOperation, OpAcc>, op: TurnoverOperation) => {
    let a = map.get(op);
    if (a === undefined) {
      a = newOp();
      map.set(op, a);
    }
    return a;
  };
  const wakeByResume = {
    all: new LatencyHistogram(),
    implicit: new LatencyHistogram(),
    explicit: new LatencyHistogram(),
  };
  const failures = {
    total: 0,
    byKind: kinds(),
    byOperation: {} as Record<string, Record<Kind, number>>,
    byReaction: { retry: 0, replace: 0, give_up: 0 },
  };
  const windowFailures = kinds();
  const swaps: SwapAcc = { asked: 0, done: 0, missed: reasons() };
  const windowSwaps: SwapAcc = { asked: 0, done: 0, missed: reasons() };
  let lifecycleMode: string | null = null;
  let resumeMode: string | null = null;
  // Gauge samples, grouped by time (the executor writes the four states at one instant).
  const sampleTimes: number[] = [];
  const samples: Array<Record<State, number>> = [];

  for (const r of records) {
    if (r.kind === 'span') {
      const op = SPAN_OPERATION[r.name];
      if (op === undefined) continue;
      const labels = r.labels ?? {};
      if (lifecycleMode === null && typeof labels.mode === 'string') lifecycleMode = labels.mode;
      const error = r.outcome === 'error';
      const a = acc(ops, op);
      a.count++;
      if (error) a.errors++;
      a.latency.record(r.dur);
      if (inWindow(r.t)) {
        const w = acc(windowOps, op);
        w.count++;
        if (error) w.errors++;
        w.latency.record(r.dur);
      }
      if (op === 'wake') {
        wakeByResume.all.record(r.dur);
        if (labels.resume === 'implicit') wakeByResume.implicit.record(r.dur);
        else if (labels.resume === 'explicit') wakeByResume.explicit.record(r.dur);
        if (resumeMode === null && typeof labels.resume === 'string') resumeMode = labels.resume;
      }
    } else if (r.kind === 'event') {
      if (r.name === 'actor.failure') {
        const labels = r.labels ?? {};
        const kind = labels.kind as Kind;
        const op = String(labels.op ?? 'unknown');
        const reaction = labels.reaction as keyof typeof failures.byReaction;
        failures.total++;
        if (kind in failures.byKind) failures.byKind[kind]++;
        failures.byOperation[op] ??= kinds();
        if (kind in failures.byKind) failures.byOperation[op]![kind]++;
        if (reaction in failures.byReaction) failures.byReaction[reaction]++;
        // A park failure belongs to registration when it happened before registration was done.
        if (op === 'park') {
          const registering = markers.registrationDoneMs === null || r.t <= markers.registrationDoneMs;
          acc(ops, registering ? 'park_register' : 'park').failures++;
        } else if (op === 'wake' || op === 'create') acc(ops, op).failures++;
        if (inWindow(r.t)) {
          if (kind in windowFailures) windowFailures[kind]++;
          if (op === 'park' || op === 'wake') acc(windowOps, op).failures++;
        }
      } else if (r.name === 'turnover.tick') {
        const asked = num(r.data?.asked);
        const done = num(r.data?.done);
        swaps.asked += asked;
        swaps.done += done;
        if (inWindow(r.t)) {
          windowSwaps.asked += asked;
          windowSwaps.done += done;
        }
      } else if (r.name === 'turnover.swap.missed') {
        const reason = r.labels?.reason as Reason;
        if (!(reason in swaps.missed)) continue;
        const n = num(r.data?.count);
        swaps.missed[reason] += n;
        if (inWindow(r.t)) windowSwaps.missed[reason] += n;
      }
    } else if (r.kind === 'gauge' && r.name === 'actors') {
      const state = r.labels?.state as State;
      if (!STATES.includes(state)) continue;
      if (sampleTimes[sampleTimes.length - 1] !== r.t) {
        sampleTimes.push(r.t);
        samples.push({ awake: 0, parked: 0, waking: 0, parking: 0 });
      }
      samples[samples.length - 1]![state] = r.value;
    }
  }
  let registered = 0;
  for (const s of samples) registered = Math.max(registered, s.awake + s.parked + s.waking + s.parking);

  const totalSeconds = (context.endMs - Math.min(0, context.startMs)) / 1000;
  const windowMs = windowStart === null ? 0 : windowEnd - windowStart;
  return {
    lifecycleMode,
    resumeMode,
    registered,
    markers,
    operations: opRows(ops, ALL_OPERATIONS, totalSeconds),
    timeToWake: {
      all: wakeByResume.all.percentiles(),
      implicit: wakeByResume.implicit.percentiles(),
      explicit: wakeByResume.explicit.percentiles(),
    },
    failures,
    swaps: swapsOut(swaps),
    states: stateSeries(sampleTimes, samples, context.endMs),
    window:
      windowStart === null
        ? null
        : {
            name: 'turnover_window',
            startMs: windowStart,
            endMs: windowEnd,
            durationMs: windowMs,
            rows: opRows(windowOps, WINDOW_OPERATIONS, windowMs / 1000),
            swaps: swapsOut(windowSwaps),
            failuresByKind: windowFailures,
            states: windowStates(sampleTimes, samples, windowStart, windowEnd),
          },
  };
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
