/**
 * Judging: a budget set against one or more analyses (docs/budgets.md).
 *
 * - Distribution metrics pool the samples of every group a scope selects, across all inputs
 *   (a wave is many runs; several run directories are one aggregate), and take percentiles
 *   over the pool: exact (nearest-rank) up to EXACT_SAMPLE_LIMIT samples, from an HDR
 *   histogram beyond; each row says which (`percentileMethod`). With a single sample only p95
 *   and above (and max, min, count) are judged: a single run is judged against p95, aggregates
 *   against p50 too.
 * - Samples whose start kind is unknown are judged against the looser of the cold and warm
 *   budgets of the same scope, in a row of their own.
 * - A judged row fails when one of its limits fails; a report row is shown `over`, never
 *   fails the verdict. Both become `budget.breach` events (breachEvents).
 * - A row whose scope matches no sample in this input (or a value metric the input has no value
 *   for) is **no samples**: shown as such, never a pass, never a misconfiguration, and it fails
 *   only when samples are required (`require: true` on the entry, or `requireSamples`). A run
 *   whose adapter has no entry in a `per: [adapter]` set has no budget: said, not failed.
 * - Misconfiguration (exit 104) is found when the file is read (budgets.ts): an unknown metric
 *   or label, a bad expression, a repeated entry.
 */
import { LatencyHistogram, type PercentileMethod } from '../analyze/histogram.ts';
import type { Analysis } from '../analyze/schema.ts';
import type { EventRecord } from '../trace/schema.ts';
import type { BudgetEntry, BudgetSet, Op, Threshold } from './budgets.ts';
import { distributionGroups, labelValuesSeen, type SampleGroup, type ValueMetric } from './metrics.ts';

export interface JudgeInput {
  /** What the analysis came from (a run directory, a trace path): shown in errors. */
  name: string;
  analysis: Analysis;
}

export interface StatResult {
  threshold: Threshold;
  measured: number | null;
  /** False when the statistic is shown but not judged (p50 of a single sample). */
  judged: boolean;
  ok: boolean;
}

export interface VerdictRow {
  metric: string;
  scope: Record<string, string>;
  mode: 'judged' | 'report';
  unit: string;
  kind: 'distribution' | 'value';
  /** Samples (distribution) or inputs with a value. */
  n: number;
  p50: number | null;
  p95: number | null;
  value: number | null;
  stats: StatResult[];
  /**
   * `no-samples`: the scope matched nothing in this input (not judged, not a pass); a row that
   * requires samples and has none is `fail` with `noSamples` set. `skipped`: an adapter the run
   * did not use (`per:`).
   */
  status: 'pass' | 'fail' | 'skipped' | 'no-samples';
  /** Set when the row had no samples (status `no-samples`, or `fail` when they were required). */
  noSamples?: boolean;
  /** No samples because the run cannot support the value (a projection without a steady window): the note says why. */
  notJudged?: boolean;
  /** Distribution rows: how the percentiles were taken (exact nearest-rank, or HDR). */
  percentileMethod?: PercentileMethod;
  note?: string;
  /** Value rows: words that stay beside the value (`projected to 50 sessions; …`). */
  qualifier?: string;
  line?: number;
  /** For restart_recovery_control_plane breaches: the full restart and provider-load parts. */
  context?: Record<string, unknown>;
  /** Judged through an alias (`aliases:`): the scope of the entry that judged it (`adapter: codex`). */
  judgedAs?: Record<string, string>;
  /**
   * Restart rows: the cut runs in scope that were never recovered. `failing` is what fails the
   * row: every run that ended unrecovered, and every one still recovering at the end whose wait
   * so far is already over the row's largest limit.
   */
  unrecovered?: {
    failing: number;
    pending: number;
    runs: UnrecoveredRun[];
  };
}

/** A cut run that was never recovered, as a verdict names it. */
export interface UnrecoveredRun {
  session: string;
  run: string | null;
  kind: string;
  status: string | null;
  errorCode: string | null;
  open: boolean;
  atLeastMs: number | null;
  /** It fails the row (ended unrecovered, or already waiting longer than the limit). */
  failing: boolean;
}

export interface Verdict {
  budget: string;
  baseline: string;
  source: string;
  inputs: string[];
  rows: VerdictRow[];
  /** Misconfiguration found while judging (`file:line: reason`): exit 104. */
  errors: string[];
  judgedBreaches: number;
  reportBreaches: number;
  /** Rows with no samples in this input (not judged; failing only when required). */
  noSamples: number;
  /** Judged-mode rows that were judged (held or failed), and those that were not (no samples, a projection the run cannot support): the headline says both. */
  judgedRows?: number;
  unjudgedRows?: number;
  /** Why nothing applies when the run's adapter (a `per:` key) has no entry: no budget. */
  noBudget?: string;
  /** Cut runs never recovered that no restart row of this set judges (their adapter has none): said. */
  unjudgedCuts?: string;
  /**
   * With `--require-judged`: why nothing at all was judged (no entry for the input's adapter,
   * every row report-only), which fails the verdict: a CI gate that requires judging never passes
   * on a set that judged nothing.
   */
  nothingJudged?: string;
  /**
   * `pass`: every judged row holds; `fail`: a judged breach (or required samples missing);
   * `no-samples`: nothing was judged (every row without samples, or no budget for the run);
   * `error`: misconfigured.
   */
  verdict: 'pass' | 'fail' | 'error' | 'no-samples';
}

export interface JudgeOptions {
  /** Rows with no samples fail (`--require-samples`) instead of being shown as no samples. */
  requireSamples?: boolean;
}

export function statLabel(t: Threshold): string {
  if (t.stat !== 'p') return t.stat;
  return Number.isInteger(t.percentile) ? `p${t.percentile}` : `p(${t.percentile})`;
}

function compare(measured: number, op: Op, limit: number): boolean {
  switch (op) {
    case '<':
      return measured < limit;
    case '<=':
      return measured <= limit;
    case '>':
      return measured > limit;
    case '>=':
      return measured >= limit;
    case '==':
      return measured === limit;
    case '!=':
      return measured !== limit;
  }
}

const matches = (labels: Record<string, string>, scope: Record<string, string>) =>
  Object.entries(scope).every(([k, v]) => labels[k] === v);

function pooled(groups: readonly SampleGroup[]): number[] {
  return groups.flatMap((g) => g.values);
}

function distributionStat(
  values: readonly number[],
  t: Threshold,
  histogram: LatencyHistogram,
): number | null {
  if (values.length === 0) return null;
  switch (t.stat) {
    case 'p':
      return histogram.valueAt(t.percentile ?? 50);
    case 'avg':
      return Math.round((values.reduce((s, v) => s + v, 0) / values.length) * 1000) / 1000;
    case 'min':
      return histogram.min;
    case 'max':
      return histogram.max;
    case 'count':
      return values.length;
    default:
      return null;
  }
}

/** One sample cannot say anything about a median: only p95 and up (and extremes) are judged. */
function judgedWith(t: Threshold, n: number): boolean {
  if (n !== 1) return true;
  if (t.stat === 'p') return (t.percentile ?? 0) >= 95;
  return t.stat !== 'avg';
}

function histogramOf(values: readonly number[]): LatencyHistogram {
  const h = new LatencyHistogram();
  for (const v of values) h.record(v);
  return h;
}

function distributionRow(
  entry: BudgetEntry,
  scope: Record<string, string>,
  thresholds: Threshold[],
  values: number[],
  mode: 'judged' | 'report',
): VerdictRow {
  const histogram = histogramOf(values);
  const stats = thresholds.map((threshold): StatResult => {
    const measured = distributionStat(values, threshold, histogram);
    const judged = judgedWith(threshold, values.length);
    return {
      threshold,
      measured,
      judged,
      ok: measured === null || compare(measured, threshold.op, threshold.limit),
    };
  });
  const failing = stats.some((s) => s.judged && !s.ok);
  return {
    percentileMethod: histogram.method,
    metric: entry.metric.name,
    scope,
    mode,
    unit: 'ms',
    kind: 'distribution',
    n: values.length,
    p50: histogram.valueAt(50),
    p95: histogram.valueAt(95),
    value: null,
    stats,
    status: failing ? 'fail' : 'pass',
    ...(values.length === 1 && stats.some((s) => !s.judged)
      ? { note: 'a single sample: judged against p95 only' }
      : {}),
    line: entry.line,
  };
}

/** The looser of two limits on the same statistic: larger for upper bounds, smaller for lower. */
function looser(a: Threshold, b: Threshold): Threshold {
  const upper = a.op === '<' || a.op === '<=';
  const pick = upper
    ? a.limit >= b.limit
      ? a
      : b
    : a.op === '>' || a.op === '>='
      ? a.limit <= b.limit
        ? a
        : b
      : a;
  return pick;
}

/** A row for an entry whose scope matched no sample: failing only when samples are required. */
function noSamplesRow(entry: BudgetEntry, required: boolean, why: string): VerdictRow {
  return {
    metric: entry.metric.name,
    scope: entry.scope,
    mode: entry.mode,
    unit: entry.metric.unit,
    kind: entry.metric.kind,
    n: 0,
    p50: null,
    p95: null,
    value: null,
    stats: entry.thresholds.map((threshold) => ({ threshold, measured: null, judged: false, ok: true })),
    status: required ? 'fail' : 'no-samples',
    noSamples: true,
    note: required ? `no samples, and samples are required: ${why}` : `no samples: ${why}`,
    line: entry.line,
  };
}

/**
 * Samples of an unknown start kind: one extra row per (metric, scope without start), judged
 * against the looser of the cold and warm entries of that scope; keyed by both entries.
 */
function unknownStartRows(
  entries: readonly BudgetEntry[],
  analyses: readonly Analysis[],
  skippedFor: (entry: BudgetEntry) => string | undefined,
): Map<BudgetEntry, VerdictRow> {
  const pairs = new Map<string, { cold?: BudgetEntry; warm?: BudgetEntry; rest: Record<string, string> }>();
  for (const entry of entries) {
    const start = entry.scope.start;
    if (entry.metric.kind !== 'distribution' || (start !== 'cold' && start !== 'warm')) continue;
    const rest = { ...entry.scope };
    delete rest.start;
    const key = `${entry.metric.name} ${JSON.stringify(Object.entries(rest).sort())}`;
    const pair = pairs.get(key) ?? { rest };
    pair[start] = entry;
    pairs.set(key, pair);
  }
  const unknownRows = new Map<BudgetEntry, VerdictRow>();
  for (const pair of pairs.values()) {
    const first = (pair.cold ?? pair.warm)!;
    const values = pooled(
      distributionGroups(first.metric.name, analyses).filter(
        (g) => g.labels.start === 'unknown' && matches(g.labels, pair.rest),
      ),
    );
    if (values.length === 0 || skippedFor(first)) continue;
    const thresholds: Threshold[] = [];
    const all = [...(pair.cold?.thresholds ?? []), ...(pair.warm?.thresholds ?? [])];
    for (const t of all) {
      const same = (u: Threshold) => u.stat === t.stat && u.percentile === t.percentile && u.op === t.op;
      const index = thresholds.findIndex(same);
      if (index < 0) thresholds.push(t);
      else thresholds[index] = looser(thresholds[index]!, t);
    }
    const mode = pair.cold?.mode === 'judged' || pair.warm?.mode === 'judged' ? 'judged' : 'report';
    const row = distributionRow(first, { ...pair.rest, start: 'unknown' }, thresholds, values, mode);
    row.note = 'start kind unknown: judged against the looser of the cold and warm budgets';
    if (first.judgedAs) row.judgedAs = { ...first.judgedAs, start: 'unknown' };
    if (pair.cold) unknownRows.set(pair.cold, row);
    if (pair.warm) unknownRows.set(pair.warm, row);
  }
  return unknownRows;
}

/** An entry for a label value the run does not have (another adapter's): not judged. */
function skippedRow(entry: BudgetEntry, note: string): VerdictRow {
  const { noSamples: _, ...row } = noSamplesRow(entry, false, note);
  return { ...row, status: 'skipped', note };
}

/** A single-valued metric's row: with several runs every one must hold, so the worst is judged. */
function valueRow(
  entry: BudgetEntry,
  metric: ValueMetric,
  measured: readonly number[],
  analyses: readonly Analysis[],
): VerdictRow {
  const stats = entry.thresholds.map((threshold): StatResult => {
    // Several runs: every one must hold, so the worst value is the one judged.
    const lower = threshold.op === '>' || threshold.op === '>=';
    const failing = measured.find((v) => !compare(v, threshold.op, threshold.limit));
    const value = failing ?? (lower ? Math.min(...measured) : Math.max(...measured));
    return { threshold, measured: value, judged: true, ok: failing === undefined };
  });
  const qualifier = analyses.map((a) => metric.qualify?.(a) ?? null).find((q) => q !== null);
  return {
    metric: metric.name,
    scope: entry.scope,
    mode: entry.mode,
    unit: metric.unit,
    kind: 'value',
    ...(qualifier ? { qualifier } : {}),
    n: measured.length,
    p50: null,
    p95: null,
    value: stats[0]?.measured ?? null,
    stats,
    status: stats.some((s) => !s.ok) ? 'fail' : 'pass',
    line: entry.line,
  };
}

/**
 * The entries as judged. An entry scoped by a value other values are aliased to (`aliases:
 * {adapter: {codex_local: codex}}`) judges each of those the run has, in a row of its own scoped
 * by the run's value (`judgedAs` keeps the entry's); the entry itself stays for its own value,
 * unless the run has only aliases of it (then listing it as skipped would only confuse).
 */
function expandAliases(set: BudgetSet, seen: ReadonlyMap<string, ReadonlySet<string>>): BudgetEntry[] {
  const keys = Object.keys(set.aliases);
  if (keys.length === 0) return set.entries;
  const out: BudgetEntry[] = [];
  for (const entry of set.entries) {
    const judged: BudgetEntry[] = [];
    let ownValueSeen = true;
    for (const key of keys) {
      const target = entry.scope[key];
      if (target === undefined) continue;
      const values = seen.get(key) ?? new Set<string>();
      if (!values.has(target)) ownValueSeen = false;
      for (const [from, to] of Object.entries(set.aliases[key]!))
        if (to === target && values.has(from))
          judged.push({ ...entry, scope: { ...entry.scope, [key]: from }, judgedAs: entry.scope });
    }
    if (judged.length === 0 || ownValueSeen) out.push(entry);
    out.push(...judged);
  }
  return out;
}

/** The restart metrics a cut run that was never recovered fails (its recovery never came). */
const RECOVERY_METRICS: ReadonlySet<string> = new Set(['restart_recovery', 'restart_recovery_control_plane']);

/** At most this many unrecovered runs are named in a row (the count says the rest). */
const NAMED_UNRECOVERED = 10;

type Unrecovered = NonNullable<Analysis['speed']>['unrecovered'][number];

/**
 * A restart row with the cut runs in its scope that were never recovered: one that ended so fails
 * the row (never a pass over the runs that did recover); one still recovering when the trace
 * ended fails it once its wait so far is over the row's largest limit, and is said otherwise.
 */
function withUnrecovered(row: VerdictRow, analyses: readonly Analysis[]): void {
  const found: Unrecovered[] = analyses.flatMap((a) =>
    (a.speed?.unrecovered ?? []).filter((u) => matches({ adapter: u.adapter, kind: u.kind }, row.scope)),
  );
  if (found.length === 0) return;
  const upper = row.stats
    .filter((s) => s.threshold.op === '<' || s.threshold.op === '<=')
    .map((s) => s.threshold.limit);
  const largest = upper.length > 0 ? Math.max(...upper) : Number.POSITIVE_INFINITY;
  const runs = found.map((u): UnrecoveredRun => {
    const atLeast = u.atLeastMs ?? null;
    const open = u.open === true;
    // Never ready again: the wait is unbounded, so it is over any limit.
    const over = open && (u.readyAtMs === null || (atLeast !== null && atLeast > largest));
    return {
      session: u.session,
      run: u.run,
      kind: u.kind,
      status: u.status ?? null,
      errorCode: u.errorCode ?? null,
      open,
      atLeastMs: atLeast,
      failing: !open || over,
    };
  });
  const failing = runs.filter((r) => r.failing).length;
  row.unrecovered = {
    failing,
    pending: runs.length - failing,
    runs: runs.slice(0, NAMED_UNRECOVERED),
  };
  if (failing > 0) {
    row.status = 'fail';
    if (row.noSamples) {
      // No recovery at all, and runs that were never recovered: judged, and failed.
      delete row.noSamples;
      row.note = 'no run recovered';
    }
  }
}

/** Cut runs never recovered whose adapter has no restart row in this set: said under the table. */
function unrecoveredWithoutRow(
  rows: readonly VerdictRow[],
  analyses: readonly Analysis[],
): string | undefined {
  const judged = rows.filter((r) => RECOVERY_METRICS.has(r.metric) && r.status !== 'skipped');
  const left = analyses.flatMap((a) =>
    (a.speed?.unrecovered ?? []).filter(
      (u) => !judged.some((r) => matches({ adapter: u.adapter, kind: u.kind }, r.scope)),
    ),
  );
  if (left.length === 0) return undefined;
  const byAdapter = new Map<string, number>();
  for (const u of left) byAdapter.set(u.adapter, (byAdapter.get(u.adapter) ?? 0) + 1);
  return `${left.length} cut run${left.length === 1 ? '' : 's'} never recovered with no restart row here to judge ${left.length === 1 ? 'it' : 'them'} (${[...byAdapter].map(([a, n]) => `${a}: ${n}`).join(', ')})`;
}

export function judge(set: BudgetSet, inputs: readonly JudgeInput[], options: JudgeOptions = {}): Verdict {
  const analyses = inputs.map((i) => i.analysis);
  const rows: VerdictRow[] = [];
  const errors: string[] = [];
  const required = (entry: BudgetEntry) => entry.require || options.requireSamples === true;
  const scopeText = (scope: Record<string, string>) =>
    Object.keys(scope).length === 0
      ? '(all)'
      : `{${Object.entries(scope)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}}`;

  // Which per-key values the run has (its adapters): entries for the others are skipped.
  const seen = new Map(set.per.map((key) => [key, labelValuesSeen(key, analyses)]));
  const skippedFor = (entry: BudgetEntry): string | undefined => {
    for (const [key, values] of seen) {
      const want = entry.scope[key];
      if (want !== undefined && !values.has(want)) return `no ${key}=${want} in this run`;
    }
    return undefined;
  };

  const entries = expandAliases(
    set,
    new Map(Object.keys(set.aliases).map((key) => [key, seen.get(key) ?? labelValuesSeen(key, analyses)])),
  );
  const unknownRows = unknownStartRows(entries, analyses, skippedFor);
  const emittedUnknown = new Set<VerdictRow>();

  for (const entry of entries) {
    const metric = entry.metric;
    const skip = skippedFor(entry);
    if (skip) {
      rows.push(skippedRow(entry, skip));
      continue;
    }
    if (metric.kind === 'distribution') {
      const groups = distributionGroups(metric.name, analyses);
      const values = pooled(groups.filter((g) => matches(g.labels, entry.scope)));
      const unknown = unknownRows.get(entry);
      let row: VerdictRow | undefined;
      if (values.length > 0) row = distributionRow(entry, entry.scope, entry.thresholds, values, entry.mode);
      else if (!unknown) {
        const have = [...new Set(groups.map((g) => scopeText(g.labels)))];
        row = noSamplesRow(
          entry,
          required(entry),
          `${metric.name} ${scopeText(entry.scope)} matches nothing in this input ` +
            (have.length > 0 ? `(it has ${have.join(', ')})` : `(it has no ${metric.name} samples)`),
        );
      }
      if (row) {
        if (entry.judgedAs) row.judgedAs = entry.judgedAs;
        if (RECOVERY_METRICS.has(metric.name)) withUnrecovered(row, analyses);
        rows.push(row);
      }
      if (unknown && !emittedUnknown.has(unknown)) {
        emittedUnknown.add(unknown);
        rows.push(unknown);
      }
      continue;
    }
    const measured = analyses.map((a) => metric.read(a)).filter((v): v is number => v !== null);
    if (measured.length === 0) {
      // A value the run cannot support (a projection without a steady window) says why.
      const why = analyses.map((a) => metric.notJudged?.(a) ?? null).find((w) => w !== null);
      const row = noSamplesRow(
        entry,
        required(entry),
        why ?? `${metric.name} has no value in ${inputs.map((i) => i.name).join(', ')}`,
      );
      if (why) {
        row.notJudged = true;
        row.note = required(entry) ? `${why} (and samples are required)` : why;
      }
      rows.push(row);
      continue;
    }
    const row = valueRow(entry, metric, measured, analyses);
    // Measured in a window too small to show it holds (a turnover window of seconds): a breach
    // there is a breach, a hold is not judged.
    const tooSmall =
      row.status === 'pass' && row.mode === 'judged'
        ? analyses.map((a) => metric.notJudged?.(a) ?? null).find((w) => w !== null)
        : null;
    if (tooSmall) {
      rows.push({
        ...row,
        status: required(entry) ? 'fail' : 'no-samples',
        noSamples: true,
        notJudged: true,
        note: required(entry) ? `${tooSmall} (and samples are required)` : tooSmall,
      });
      continue;
    }
    rows.push(row);
  }
  // A run whose adapter has no entry has no budget (as in the source method): said, not failed.
  let noBudget: string | undefined;
  const unjudgedCuts = unrecoveredWithoutRow(rows, analyses);
  if (set.per.length > 0 && set.entries.length > 0 && rows.every((r) => r.status === 'skipped')) {
    const have = set.per
      .map((key) => {
        const values = [...(seen.get(key) ?? [])];
        return values.length > 0 ? `its ${key}: ${values.join(', ')}` : `no sample carries a '${key}' label`;
      })
      .join('; ');
    noBudget = `no budget: ${set.name} has no entry for this input (${have})`;
  }

  for (const row of rows) {
    if (row.status === 'fail' && row.metric === 'restart_recovery_control_plane') {
      row.context = restartContext(row, analyses);
    }
  }
  const failing = (r: VerdictRow) => r.status === 'fail';
  // Missing samples that were required fail the verdict whatever the row's mode.
  const judgedBreaches = rows.filter((r) => failing(r) && (r.mode === 'judged' || r.noSamples)).length;
  const reportBreaches = rows.filter((r) => failing(r) && r.mode === 'report' && !r.noSamples).length;
  const judgedMode = rows.filter((r) => r.mode === 'judged' && r.status !== 'skipped');
  // Nothing judged unless a judged row was (report rows alone judge nothing).
  const judgedRows = judgedMode.filter((r) => r.status === 'pass' || r.status === 'fail').length;
  // Required rows without samples already fail; what is left is a set with no judged row here.
  const nothingJudged =
    options.requireSamples === true && errors.length === 0 && judgedBreaches === 0 && judgedRows === 0
      ? (noBudget ?? `${set.name} has no judged row for this input (its rows are report-only)`)
      : undefined;
  return {
    judgedRows: judgedMode.filter((r) => r.status === 'pass' || r.status === 'fail').length,
    unjudgedRows: judgedMode.filter((r) => r.status === 'no-samples').length,
    budget: set.name,
    baseline: set.baseline,
    source: set.source,
    inputs: inputs.map((i) => i.name),
    rows,
    errors,
    judgedBreaches,
    reportBreaches,
    noSamples: rows.filter((r) => r.noSamples).length,
    ...(noBudget ? { noBudget } : {}),
    ...(unjudgedCuts ? { unjudgedCuts } : {}),
    ...(nothingJudged ? { nothingJudged } : {}),
    verdict:
      errors.length > 0
        ? 'error'
        : judgedBreaches > 0 || nothingJudged
          ? 'fail'
          : judgedRows === 0
            ? 'no-samples'
            : 'pass',
  };
}

type Recovery = NonNullable<Analysis['speed']>['recoveries'][number];

/**
 * Where a recovery's control-plane share went, from the control plane's own records when the
 * trace has them (ms; absent when it does not say): the restart's boot (kill → ready, removed
 * from the share), the lost-run detection (kill → the run marked lost), the retry's delay (the
 * attempt's end → the retry due) and its start (due, or ready if later → its agent started).
 */
export interface RecoveryCause {
  bootMs?: number;
  lostRunDetectionMs?: number;
  lostAfterReadyMs?: number;
  retryDelayMs?: number;
  retryStartMs?: number;
}

export function recoveryCause(r: Recovery): RecoveryCause {
  const cause: RecoveryCause = {};
  const ms = (x: number) => Math.round(x * 1000) / 1000;
  if (r.killAtMs !== undefined) cause.bootMs = ms(r.readyAtMs - r.killAtMs);
  if (r.lostAtMs !== null && r.lostAtMs !== undefined && r.killAtMs !== undefined) {
    cause.lostRunDetectionMs = ms(r.lostAtMs - r.killAtMs);
    cause.lostAfterReadyMs = ms(Math.max(0, r.lostAtMs - r.readyAtMs));
  }
  const due = r.retryDueAtMs;
  if (due !== null && due !== undefined && r.retryFromAtMs !== null && r.retryFromAtMs !== undefined)
    cause.retryDelayMs = ms(due - r.retryFromAtMs);
  if (r.retryAtMs !== null && r.retryAtMs !== undefined)
    cause.retryStartMs = ms(r.retryAtMs - Math.max(due ?? r.readyAtMs, r.readyAtMs));
  return cause;
}

/** The recovery with the largest control-plane share of each restart kind in the row's scope. */
function worstByKind(row: VerdictRow, analyses: readonly Analysis[]): Record<string, Recovery> {
  const worst: Record<string, Recovery> = {};
  for (const a of analyses) {
    for (const r of a.speed?.recoveries ?? []) {
      if (!matches({ adapter: r.adapter, kind: r.kind }, row.scope)) continue;
      const seen = worst[r.kind];
      if (!seen || r.controlPlaneMs > seen.controlPlaneMs) worst[r.kind] = r;
    }
  }
  return worst;
}

const recoveryContext = (r: Recovery) => ({
  session: r.session,
  run: r.run,
  kind: r.kind,
  readyAtMs: r.readyAtMs,
  restartRecoveryMs: r.fullMs,
  controlPlaneMs: r.controlPlaneMs,
  providerLoadMs: r.providerLoadMs,
  outageRemovedMs: r.outageRemovedMs,
  cause: recoveryCause(r),
});

/**
 * What a control-plane breach needs to be read: in the same scope, the full restart latency
 * and the provider-load part at each failing statistic, the recovery with the largest
 * control-plane share, and the largest of each restart kind with where its share went.
 */
function restartContext(row: VerdictRow, analyses: readonly Analysis[]): Record<string, unknown> {
  const pick = (metric: string) =>
    pooled(distributionGroups(metric, analyses).filter((g) => matches(g.labels, row.scope)));
  const full = pick('restart_recovery');
  const load = pick('restart_provider_load');
  const fullH = histogramOf(full);
  const loadH = histogramOf(load);
  const at: Record<string, { restartRecoveryMs: number | null; providerLoadMs: number | null }> = {};
  for (const s of row.stats) {
    if (s.ok || !s.judged) continue;
    at[statLabel(s.threshold)] = {
      restartRecoveryMs: distributionStat(full, s.threshold, fullH),
      providerLoadMs: distributionStat(load, s.threshold, loadH),
    };
  }
  const byKind = worstByKind(row, analyses);
  const kinds = Object.values(byKind);
  const worst = kinds.reduce<Recovery | undefined>(
    (w, r) => (!w || r.controlPlaneMs > w.controlPlaneMs ? r : w),
    undefined,
  );
  return {
    ...at,
    worst: worst ? recoveryContext(worst) : null,
    byKind: Object.fromEntries(
      Object.entries(byKind)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([kind, r]) => [kind, recoveryContext(r)]),
    ),
  };
}

/** `budget.breach` events for every failing limit (judged and report rows). */
export function breachEvents(verdict: Verdict, t: number): EventRecord[] {
  const out: EventRecord[] = [];
  for (const row of verdict.rows) {
    if (row.status !== 'fail') continue;
    const limits = Object.fromEntries(row.stats.map((s) => [statLabel(s.threshold), s.threshold.limit]));
    if (row.unrecovered && row.unrecovered.failing > 0) {
      out.push({
        kind: 'event',
        name: 'budget.breach',
        t,
        labels: { budget: verdict.budget, metric: row.metric, stat: 'unrecovered', mode: row.mode },
        data: {
          scope: row.scope,
          ...(row.judgedAs ? { judgedAs: row.judgedAs } : {}),
          measured: row.unrecovered.failing,
          op: '==',
          limit: 0,
          limits,
          unit: 'runs',
          baseline: verdict.baseline,
          runs: row.unrecovered.runs.filter((r) => r.failing),
        },
      });
    }
    if (row.noSamples) {
      out.push({
        kind: 'event',
        name: 'budget.breach',
        t,
        labels: { budget: verdict.budget, metric: row.metric, stat: 'samples', mode: row.mode },
        data: {
          scope: row.scope,
          measured: 0,
          required: true,
          limits,
          unit: row.unit,
          baseline: verdict.baseline,
        },
      });
      continue;
    }
    for (const s of row.stats) {
      if (s.ok || !s.judged) continue;
      const label = statLabel(s.threshold);
      out.push({
        kind: 'event',
        name: 'budget.breach',
        t,
        labels: { budget: verdict.budget, metric: row.metric, stat: label, mode: row.mode },
        data: {
          scope: row.scope,
          ...(row.judgedAs ? { judgedAs: row.judgedAs } : {}),
          measured: s.measured,
          op: s.threshold.op,
          limit: s.threshold.limit,
          limits,
          unit: row.unit,
          ...(s.threshold.percentile !== undefined ? { percentile: s.threshold.percentile } : {}),
          baseline: verdict.baseline,
          samples: row.n,
          ...(row.context
            ? {
                restartRecoveryMs: (row.context[label] as { restartRecoveryMs?: number } | undefined)
                  ?.restartRecoveryMs,
                providerLoadMs: (row.context[label] as { providerLoadMs?: number } | undefined)
                  ?.providerLoadMs,
                worst: row.context.worst,
                byKind: row.context.byKind,
              }
            : {}),
        },
      });
    }
  }
  return out;
}
