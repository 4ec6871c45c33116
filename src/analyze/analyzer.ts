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
 * (structured-clone safe). Each accumulator (accumulators/) keeps one concern with its own add,
 * merge and state; the analyzer dispatches each record once by kind. Memory is bounded by the number of distinct keys (operations,
 * routes, sessions, (session, cycle) pairs, span label sets), never by the number of records.
 */

import { VERSION } from '../base/version.ts';
import type { ReadStats } from '../trace/parser.ts';
import type { ScannedCounts, ScannedRow } from '../trace/scanner.ts';
import type { ApiRecord, BodyRecord, EndFooter, EventRecord, RunHeader, SpanInput } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { Accumulator, AccumulatorKind } from './accumulators/accumulator.ts';
import { ApiCounts } from './accumulators/api-counts.ts';
import { ApiTiming } from './accumulators/api-timing.ts';
import { ApiTotals } from './accumulators/api-totals.ts';
import { Events } from './accumulators/events.ts';
import { Extent } from './accumulators/extent.ts';
import { Gauges, MAX_SERIES_POINTS } from './accumulators/gauges.ts';
import { Polling, STEADY_START_EVENT } from './accumulators/polling.ts';
import { RateLimit } from './accumulators/rate-limit.ts';
import { Retained } from './accumulators/retained.ts';
import { SessionCalls } from './accumulators/session-calls.ts';
import { Snapshots } from './accumulators/snapshots.ts';
import { Spans } from './accumulators/spans.ts';
import { Writes } from './accumulators/writes.ts';
import { rateLimitBracket } from './bracket.ts';
import { burnWindows } from './burn.ts';
import { edgesWarnings } from './edges.ts';
import { cmp, round } from './figures.ts';
import { harnessWarning } from './harness.ts';
import { DEFAULT_LIMITS, sessionProjection } from './projection.ts';
import { scheduleSummary, scheduleWarning } from './schedule.ts';
import type { Analysis } from './schema.ts';
import { ANALYSIS_SCHEMA_VERSION } from './schema-constants.ts';
import { trackBScorecard } from './scorecard.ts';

export { labelKey } from './accumulators/accumulator.ts';
export { NONE } from './accumulators/api-counts.ts';
export { isKilledError } from './accumulators/api-totals.ts';
export { MAX_SERIES_POINTS } from './accumulators/gauges.ts';
export { RATELIMIT_SNAPSHOT_EVENT } from './accumulators/snapshots.ts';
export { STEADY_START_EVENT };

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

/**
 * Every accumulator the analyzer is made of, by the name its state goes under. merge, toState,
 * fromState and the transfer list go over this table; `add` calls each one's adders directly
 * (one dispatch by kind, monomorphic calls on the per-record path).
 */
const ACCUMULATORS = {
  extent: Extent,
  totals: ApiTotals,
  counts: ApiCounts,
  timing: ApiTiming,
  writes: Writes,
  rateLimit: RateLimit,
  polling: Polling,
  spans: Spans,
  events: Events,
  snapshots: Snapshots,
  gauges: Gauges,
  retained: Retained,
  sessionCalls: SessionCalls,
} as const;
type Accumulators = { -readonly [K in keyof typeof ACCUMULATORS]: InstanceType<(typeof ACCUMULATORS)[K]> };
const NAMES = Object.keys(ACCUMULATORS) as Array<keyof Accumulators>;

/** Everything an analyzer holds, in structured-clone-safe form (for worker threads). */
export type AnalyzerState = { [K in keyof Accumulators]: ReturnType<Accumulators[K]['toState']> };

// Accumulator<unknown> and AccumulatorKind<…, unknown> views of the table, for the loops below.
const kinds = ACCUMULATORS as unknown as Record<string, AccumulatorKind<Accumulator<unknown>, unknown>>;

export class Analyzer implements TraceSink {
  readonly options: AnalyzerOptions;
  private acc: Accumulators;

  constructor(options: AnalyzerOptions = {}, accumulators?: Accumulators) {
    this.options = options;
    this.acc =
      accumulators ??
      (Object.fromEntries(NAMES.map((name) => [name, new kinds[name]!()])) as unknown as Accumulators);
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
   * (src/trace/scanner.ts) hands every api line over as the same reused object. Every
   * accumulator copies what it keeps (accumulators/accumulator.ts).
   */
  add(record: BodyRecord): void {
    const acc = this.acc;
    switch (record.kind) {
      case 'api':
        this.addApi(record);
        return;
      case 'span':
        acc.extent.add(record.t, record.t + record.dur);
        acc.spans.addSpan(record);
        acc.polling.addSpan(record);
        break;
      case 'event':
        // A marker is a declaration, not a measurement: one placed after every record does not
        // make the run longer (and its burn thinner).
        if (record.name !== STEADY_START_EVENT) acc.extent.add(record.t, record.t);
        this.addEvent(record);
        break;
      case 'gauge':
        acc.extent.add(record.t, record.t);
        acc.gauges.addGauge(record);
        break;
    }
    acc.retained.add(record);
  }

  /**
   * Says that an api call ending at `endMs` (ms of run time) will be added, to this analyzer or
   * to one merged with it: the time bins take the width it needs at once (StartEndBins.reach;
   * the analysis is the same, found with less work).
   */
  expectCallEnd(endMs: number): void {
    this.acc.timing.bins.reach(endMs);
  }

  /**
   * An api record the trace scanner read, with the ids of its strings (scanner.ts ScannedRow):
   * as add(), the counts by id. `r` is the scanner's reused record, kept no more than any other.
   */
  addScanned(r: ApiRecord, row: ScannedRow): void {
    this.addApi(r, row);
  }

  /**
   * The api counts of the records the scanner reads are counted in its module from now on
   * (ApiCounts.countScanned), until endScanned(), which must come before finish, merge or state.
   */
  countScanned(counts: ScannedCounts): void {
    this.acc.counts.countScanned(counts);
  }

  endScanned(): void {
    this.acc.counts.endScanned();
  }

  private addApi(r: ApiRecord, row?: ScannedRow): void {
    const acc = this.acc;
    acc.extent.add(r.t, r.t + r.dur);
    acc.totals.addApi(r);
    if (row === undefined) acc.counts.addApi(r);
    else acc.counts.addScanned(r, row);
    acc.timing.addApi(r);
    acc.writes.addApi(r);
    acc.rateLimit.addApi(r);
    acc.polling.addApi(r, row);
    acc.sessionCalls.addApi(r, row);
  }

  private addEvent(r: EventRecord): void {
    const acc = this.acc;
    acc.events.addEvent(r);
    acc.polling.addEvent(r);
    acc.snapshots.addEvent(r);
  }

  /** Folds in an analyzer that saw the records after this one's. Mutates this; not `other`. */
  merge(other: Analyzer): this {
    const mine = this.acc as unknown as Record<string, Accumulator<unknown>>;
    const theirs = other.acc as unknown as Record<string, Accumulator<unknown>>;
    for (const name of NAMES) mine[name]!.merge(theirs[name]!);
    return this;
  }

  toState(): AnalyzerState {
    const acc = this.acc as unknown as Record<string, Accumulator<unknown>>;
    return Object.fromEntries(NAMES.map((name) => [name, acc[name]!.toState()])) as AnalyzerState;
  }

  static fromState(state: AnalyzerState, options: AnalyzerOptions = {}): Analyzer {
    const parts = state as unknown as Record<string, unknown>;
    const accumulators = Object.fromEntries(
      NAMES.map((name) => [name, kinds[name]!.fromState(parts[name])]),
    ) as unknown as Accumulators;
    return new Analyzer(options, accumulators);
  }

  /** The Analysis of everything added so far. Does not change the analyzer. */
  finish(context: FinishContext = {}): Analysis {
    const header = this.options.header ?? context.stats?.header;
    const footer: EndFooter | undefined = context.stats?.footer;
    const { extent, counts, polling, spans, events, gauges } = this.acc;
    const hasRecords = Number.isFinite(extent.minT);
    const startMs = hasRecords ? Math.min(0, extent.minT) : 0;
    const endMs = Math.max(hasRecords ? extent.maxEnd : 0, footer?.t ?? 0, startMs);
    const durationMs = endMs - startMs;
    const sessions = this.options.sessions ?? counts.known('bySession');
    const epochMs = header?.epochMs ?? null;
    // In the order a reader meets them: series, cost, cycles, schedule, the target's records;
    // the input's own warnings go first.
    const warnings: string[] = [];
    const { pollCycles, warnings: pollWarnings } = polling.pollCycles.result();
    const api = this.apiSection(
      { header, epochMs, startMs, endMs, recordsEndMs: hasRecords ? extent.maxEnd : startMs, sessions },
      warnings,
    );
    for (const w of pollWarnings) warnings.push(w);
    const scorecard = trackBScorecard(api, sessions, this.options.scorecardSessions ?? 50);
    const schedule = scheduleSummary(spans.byLabels.values(), events.byName, header?.timeScale ?? 1);
    const scheduleNote = scheduleWarning(schedule);
    if (scheduleNote) warnings.push(scheduleNote);
    const badRecordReports = events.byName.get('target.bad_record') ?? 0;
    if (badRecordReports > 0) {
      warnings.push(
        `target.bad_record: ${badRecordReports} report(s) of records from the system under test refused (times out of range, a span ending before it starts: docs/limits.md); the events say how many and why`,
      );
    }
    const retained = this.acc.retained.finish({ header, startMs, endMs, calls: this.acc.sessionCalls });
    const harnessNote = retained.harness && harnessWarning(retained.harness);
    if (harnessNote) warnings.push(harnessNote);
    if (retained.edges) for (const w of edgesWarnings(retained.edges)) warnings.push(w);
    const input = this.inputSection(context, footer);
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
        repos: counts.known('byRepo'),
      },
      input,
      api,
      controlPlane: { pollCycles },
      scorecard,
      spans: spans.result(),
      events: { byName: events.sorted() },
      gauges: gauges.result(),
      series: this.series(endMs),
      schedule,
      ...retained,
      warnings,
    };
  }

  /** The API cost: totals, burn per reset window, bracket, burst shape, projection. */
  private apiSection(
    run: {
      header: RunHeader | undefined;
      epochMs: number | null;
      startMs: number;
      endMs: number;
      recordsEndMs: number;
      sessions: number;
    },
    warnings: string[],
  ): Analysis['api'] {
    const { totals, counts, timing, writes, rateLimit, polling, snapshots } = this.acc;
    const { header, epochMs, startMs, endMs, sessions } = run;
    const beyondSeries = writes.beyondSeries + rateLimit.beyondSeries;
    if (beyondSeries > 0) {
      warnings.push(
        `${beyondSeries} records start more than a year into the run: left out of per-second series`,
      );
    }
    const burn = burnWindows(
      {
        resetWindows: rateLimit.resetWindows.values(),
        unwindowedCalls: rateLimit.unwindowedCalls,
        unwindowedPoints: rateLimit.unwindowedPoints,
        limitFor: (resource) =>
          rateLimit.rlLimits.get(resource) ??
          { ...DEFAULT_LIMITS, ...this.options.defaultLimits }[resource] ??
          null,
      },
      epochMs,
      startMs,
      endMs,
    );
    const bracket = rateLimitBracket(snapshots.taken, rateLimit.pointsPerSecond, header);
    const projection = sessionProjection(
      {
        defaultLimits: this.options.defaultLimits,
        responseLimits: rateLimit.rlLimits,
        pointsPerSecond: rateLimit.pointsPerSecond,
        sharedPoints: rateLimit.sharedPoints,
      },
      sessions,
      {
        startMs,
        endMs,
        recordsEndMs: run.recordsEndMs,
        steadyAtMs: polling.steadyAt,
        ...polling.steadyWindowInput(),
      },
    );
    const max1s = timing.bins.maxInWindow(1000);
    const max10s = timing.bins.maxInWindow(10_000);
    const perSecond = timing.bins.series(1000);
    const first60s = new Array<number>(60).fill(0);
    if (perSecond) for (let i = 0; i < 60 && i < perSecond.length; i++) first60s[i] = perSecond[i]!;
    const concurrency = timing.bins.peakConcurrency();
    const writesMax = writes.perSecond.maxInWindow(60);
    const opaqueSharePct = totals.calls > 0 ? round((100 * totals.opaque) / totals.calls) : null;

    for (const w of burn.warnings) warnings.push(w);
    if (bracket) for (const w of bracket.warnings) warnings.push(w);
    if (totals.opaque > 0) {
      warnings.push(
        `${totals.opaque} opaque calls (${opaqueSharePct?.toFixed(1)}%): status and cost unknown, not in the burn; the /rate_limit bracket is the way to see them`,
      );
    }
    return {
      totals: {
        calls: totals.calls,
        points: totals.points,
        secondaryPoints: totals.secondaryPoints,
        bytes: totals.bytes,
        errors: totals.errors,
        failed: totals.failed,
        killed: totals.killed,
        writes: writes.total,
        conditional: totals.conditional,
        notModified: totals.notModified,
        opaque: totals.opaque,
      },
      counts: counts.result(),
      conditional: {
        requests: totals.conditional,
        notModified: totals.conditionalNotModified,
        notModifiedPct:
          totals.conditional > 0 ? round((100 * totals.conditionalNotModified) / totals.conditional) : null,
      },
      opaque: {
        calls: totals.opaque,
        sharePct: opaqueSharePct,
        byResource: Object.fromEntries([...totals.opaqueByResource].sort(([a], [b]) => cmp(a, b))),
      },
      pollingFloor: polling.floor(),
      burn,
      bracket,
      burst: {
        method: 'sliding',
        stepMs: timing.bins.widthMs,
        max1s: max1s ? { calls: max1s.calls, perSecond: max1s.calls, atMs: max1s.atMs } : null,
        max10s: max10s ? { calls: max10s.calls, perSecond: max10s.calls / 10, atMs: max10s.atMs } : null,
        first60s,
      },
      concurrency: { peak: concurrency.peak, atMs: concurrency.atMs, resolutionMs: timing.bins.widthMs },
      writes: { total: writes.total, maxPerMinute: writesMax.value, atMs: writesMax.atMs },
      limited: {
        answers: totals.limitedAnswers,
        status403: totals.status403,
        status429: totals.status429,
        retryAfter: totals.retryAfter,
        primary: totals.limitedPrimary,
        secondary: totals.limitedSecondary,
      },
      latency: {
        all: timing.allLatency().percentiles(),
        rest: timing.rest.percentiles(),
        graphql: timing.graphql.percentiles(),
      },
      projection,
    };
  }

  /** What was read: the file, its lines and records, what was skipped, the footer. */
  private inputSection(context: FinishContext, footer: EndFooter | undefined): Analysis['input'] {
    const { totals, spans, events, gauges } = this.acc;
    return {
      file: context.file ?? null,
      lines: context.stats?.lines ?? 0,
      records: context.stats
        ? { ...context.stats.counts }
        : { api: totals.calls, span: spans.count(), event: events.count(), gauge: gauges.count() },
      skipped: context.stats?.skipped ?? 0,
      skippedReasons: context.stats?.skippedReasons ?? [],
      truncated: context.stats?.truncated ?? false,
      footer: footer?.reason ?? null,
      warnings: context.stats?.warnings ?? [],
    };
  }

  /** Time series for charts. Bins are fixed, from t = 0; at most MAX_SERIES_POINTS per series. */
  private series(endMs: number): Analysis['series'] {
    const { timing, rateLimit, writes, gauges } = this.acc;
    const totalSeconds = Math.ceil(Math.max(0, endMs) / 1000);
    const pick = (choices: number[]) =>
      choices.find(
        (binMs) => binMs % timing.bins.widthMs === 0 && Math.ceil(endMs / binMs) <= MAX_SERIES_POINTS,
      ) ?? choices[choices.length - 1]!;
    const callSeries = (binMs: number) => {
      const values = timing.bins.series(binMs) ?? [];
      const want = Math.max(values.length, Math.ceil(Math.max(0, endMs) / binMs));
      while (values.length < want) values.push(0);
      return { binMs, values };
    };
    const points: Record<string, number[]> = {};
    for (const [resource, series] of [...rateLimit.pointsPerSecond].sort(([a], [b]) => cmp(a, b))) {
      points[resource] = series.bins(60, totalSeconds);
    }
    return {
      calls: callSeries(pick([1000, 10_000, 60_000, 300_000, 3_600_000])),
      calls10s: callSeries(pick([10_000, 60_000, 300_000, 3_600_000])),
      writes: { binMs: 60_000, values: writes.perSecond.bins(60, totalSeconds) },
      points: { binMs: 60_000, byResource: points },
      gauges: gauges.series(endMs),
    };
  }
}

export function createAnalyzer(options: AnalyzerOptions = {}): Analyzer {
  return new Analyzer(options);
}

/** The array buffers of a state, for postMessage's transfer list (moved, not copied). */
export function stateTransferables(state: AnalyzerState): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  const parts = state as unknown as Record<string, unknown>;
  for (const name of NAMES)
    for (const buffer of kinds[name]!.transferables?.(parts[name]) ?? []) buffers.add(buffer);
  return [...buffers];
}

export function analyzerFromState(state: AnalyzerState, options: AnalyzerOptions = {}): Analyzer {
  return Analyzer.fromState(state, options);
}
