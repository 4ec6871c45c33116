/**
 * `fleetbench compare A B`: per unit (cell) and metric, the medians of A and B, the change, and
 * a verdict that accounts for run-to-run noise. The noise estimate comes from repeats (runs with
 * different seeds): with two or more runs a side, a two-sided Mann–Whitney U test per metric,
 * Holm–Bonferroni across the judged metrics (one family) and across the reported ones (another),
 * and a minimum practical change. One run a side cannot tell noise from change: such metrics are
 * shown but `untested`. docs/matrix.md#compare explains the choices.
 */
import type { Analysis } from '../analyze/schema.ts';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { type ResultSet, type ResultUnit, repeatedRun } from '../results/results.ts';
import { extractMetrics, type MetricDef } from './metrics.ts';
import { holm, mannWhitney, median, minimumP, type RankTest } from './stats.ts';

export type CompareVerdict =
  | 'regression'
  | 'improvement'
  | 'no change'
  | 'negligible'
  | 'untested'
  | 'inconclusive'
  | 'only in A'
  | 'only in B'
  | 'in neither';

export interface CompareOptions {
  /** Family-wise error rate per family (judged, reported). Default 0.05. */
  alpha?: number;
  /** Smallest relative change of the median that counts (0.05 = 5%). */
  minChange?: number;
}

export interface MetricComparison {
  unit: string;
  def: MetricDef;
  a: number[];
  b: number[];
  medianA: number | null;
  medianB: number | null;
  /** (median B − median A) / |median A|; ±Infinity from 0; null when a side has no value. */
  change: number | null;
  /** B is on the worse side of A (by the metric's direction). */
  worse: boolean;
  test: RankTest | null;
  /** Holm-adjusted p (within its family); null when untested. */
  pAdjusted: number | null;
  verdict: CompareVerdict;
}

export interface UnitComparison {
  /** `S2-T1-50`, or `A-id vs B-id` when single units with different ids were paired. */
  id: string;
  heading: string;
  runsA: number;
  runsB: number;
  metrics: MetricComparison[];
}

export interface Comparison {
  a: string;
  b: string;
  alpha: number;
  minChange: number;
  method: string;
  units: UnitComparison[];
  onlyA: string[];
  onlyB: string[];
  /** Judged metrics that got worse beyond noise: the exit code. */
  regressions: MetricComparison[];
  /**
   * Set when no judged change could be called at this α, whatever the runs measured: too few
   * runs a side for the family of judged metrics (even A and B completely apart would not be
   * significant after Holm's correction). "No change" is then not what the data says.
   */
  inconclusive?: {
    /** Runs on the smaller side. */
    runsPerSide: number;
    /** Judged metrics that could differ (tested, or, with one run a side, with values that differ). */
    family: number;
    /** The smallest p any of them could reach, after Holm. */
    smallestAdjustedP: number;
    /** Runs a side that could show a change of that family at this α. */
    repeatsNeeded: number;
  };
  /**
   * Judged metrics measured on one side only (`unit: title (only in A)`): a B whose runs cannot
   * support a metric (a headroom without a steady window) hides how it changed, so the verdict is
   * inconclusive (exit 4), never "no judged metric got worse".
   */
  oneSided?: string[];
  notes: string[];
}

interface Pair {
  id: string;
  heading: string;
  a: ResultUnit;
  b: ResultUnit;
}

function pairUnits(a: ResultSet, b: ResultSet): { pairs: Pair[]; onlyA: string[]; onlyB: string[] } {
  if (a.units.length === 1 && b.units.length === 1) {
    const [ua, ub] = [a.units[0]!, b.units[0]!];
    const id = ua.id === ub.id ? ua.id : `${ua.id} vs ${ub.id}`;
    return {
      pairs: [{ id, heading: ua.id === ub.id ? ua.heading : id, a: ua, b: ub }],
      onlyA: [],
      onlyB: [],
    };
  }
  const inB = new Map(b.units.map((u) => [u.id, u]));
  const pairs: Pair[] = [];
  const onlyA: string[] = [];
  for (const ua of a.units) {
    const ub = inB.get(ua.id);
    if (ub) pairs.push({ id: ua.id, heading: ua.heading, a: ua, b: ub });
    else onlyA.push(ua.id);
  }
  const inA = new Set(a.units.map((u) => u.id));
  return { pairs, onlyA, onlyB: b.units.filter((u) => !inA.has(u.id)).map((u) => u.id) };
}

/** Metric id → definition and the values of each run (nulls dropped). */
function collect(analyses: Analysis[]): Map<string, { def: MetricDef; values: number[] }> {
  const out = new Map<string, { def: MetricDef; values: number[] }>();
  for (const analysis of analyses) {
    for (const { def, value } of extractMetrics(analysis)) {
      let entry = out.get(def.id);
      if (!entry) {
        entry = { def, values: [] };
        out.set(def.id, entry);
      }
      if (value !== null) entry.values.push(value);
    }
  }
  return out;
}

export function relativeChange(medianA: number, medianB: number): number {
  if (medianA === 0)
    return medianB === 0 ? 0 : medianB > 0 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  return (medianB - medianA) / Math.abs(medianA);
}

/** One metric, before the family correction: medians, change, direction and the rank test. */
export function measureMetric(unit: string, def: MetricDef, a: number[], b: number[]): MetricComparison {
  const medianA = a.length > 0 ? median(a) : null;
  const medianB = b.length > 0 ? median(b) : null;
  const base = { unit, def, a, b, medianA, medianB, pAdjusted: null };
  if (medianA === null || medianB === null) {
    return {
      ...base,
      change: null,
      worse: false,
      test: null,
      // Absent on both sides (turnover metrics of two cost runs): said so, never "only in B".
      verdict:
        medianA === null && medianB === null ? 'in neither' : medianA === null ? 'only in B' : 'only in A',
    };
  }
  const change = relativeChange(medianA, medianB);
  const worse = def.better === 'lower' ? medianB > medianA : medianB < medianA;
  if (a.length < 2 || b.length < 2) return { ...base, change, worse, test: null, verdict: 'untested' };
  return { ...base, change, worse, test: mannWhitney(a, b), verdict: 'no change' };
}

/**
 * Holm within each family, then the verdicts. Tests whose samples are all tied (`degenerate`)
 * cannot reject whatever the labels, so they are left out of the family (Tarone's refinement):
 * counting them would only make the others harder to call.
 */
export function judgeFamily(family: MetricComparison[], alpha: number, minChange: number): void {
  const tested = family.filter((m) => m.test !== null && m.test.method !== 'degenerate');
  const adjusted = holm(tested.map((m) => m.test!.p));
  tested.forEach((m, i) => {
    m.pAdjusted = adjusted[i]!;
  });
  // Too few runs for any of them to reach α after Holm: not significant says nothing, so
  // nothing is called "no change" (docs/matrix.md#the-statistics-and-why).
  const smallest = Math.min(...tested.map((m) => minimumP(m.a.length, m.b.length)));
  const unreachable = tested.length > 0 && smallest * tested.length >= alpha;
  for (const m of family) {
    if (m.test === null) continue;
    if (m.test.method === 'degenerate') {
      m.pAdjusted = 1;
      m.verdict = 'no change';
      continue;
    }
    const significant = m.pAdjusted! < alpha;
    if (!significant) m.verdict = unreachable ? 'inconclusive' : 'no change';
    else if (Math.abs(m.change ?? 0) < minChange) m.verdict = 'negligible';
    else m.verdict = m.worse ? 'regression' : 'improvement';
  }
}

/** Repeats needed a side before any difference can be significant in a family of `k` tests. */
export function repeatsNeeded(k: number, alpha: number): number {
  for (let n = 2; n <= 50; n++) if (minimumP(n, n) * k < alpha) return n;
  return 50;
}

/**
 * Only runs that completed are compared (docs/matrix.md#only-completed-runs-are-compared): a run
 * interrupted, failed or cut short has the figures of part of a run (fewer calls, a lower burn),
 * so with it the comparison could call a regression "no change" and exit 0. Refused with the run
 * and its reason, exit 3, as `check` refuses to judge it.
 */
export function refuseIncomplete(set: ResultSet): void {
  const refuse = (what: string) =>
    new FleetbenchError('E_RESULTS', `${set.source}: ${what}: a run that did not complete is not compared`, {
      exitCode: ExitCode.runFailed,
      hint: 'compare runs that completed: run that side again (docs/matrix.md#only-completed-runs-are-compared)',
    });
  if (set.incomplete !== undefined) throw refuse(set.incomplete);
  for (const unit of set.units)
    for (const run of unit.runs)
      if (run.incomplete !== undefined)
        throw refuse(
          `${unit.id}${run.seed !== null ? ` seed ${run.seed}` : ''}${run.dir ? ` (${run.dir})` : ''}: ${run.incomplete}`,
        );
}

/**
 * A comparison that compares nothing is bad input, never "no change" with exit 0
 * (docs/matrix.md#fleetbench-compare): a side with no run (a directory whose summary.json files
 * are not fleetbench runs), or two sides with no cell or scenario in common.
 */
function refuseNothingToCompare(a: ResultSet, b: ResultSet, pairs: readonly Pair[]): void {
  const runs = (set: ResultSet) => set.units.reduce((n, u) => n + u.runs.length, 0);
  const units = (set: ResultSet) => set.units.map((u) => u.id).join(', ');
  for (const [side, set] of [
    ['A', a],
    ['B', b],
  ] as const) {
    if (runs(set) === 0)
      throw new FleetbenchError('E_RESULTS', `${set.source}: side ${side} holds no run: nothing to compare`);
    // A run counted twice on a side is not a second sample of its noise: copies of one run would
    // read as runs that agree, and a difference could pass as significant or negligible.
    for (const unit of set.units) {
      const repeated = repeatedRun(
        unit.runs.map((r, i) => ({ name: r.dir ?? `${unit.id} run ${i + 1}`, analysis: r.analysis })),
      );
      if (repeated)
        throw new FleetbenchError(
          'E_RESULTS',
          `${set.source}: side ${side} holds one run twice (run ${JSON.stringify(repeated.runId)}: ${repeated.first} and ${repeated.again}): compare needs independent runs`,
          { hint: 'give each run once (docs/matrix.md#fleetbench-compare)' },
        );
    }
  }
  if (pairs.length === 0)
    throw new FleetbenchError(
      'E_RESULTS',
      `A and B have no cell or scenario in common (A: ${units(a)}; B: ${units(b)}): nothing to compare`,
      { hint: 'compare results of the same cells or scenarios (docs/matrix.md#fleetbench-compare)' },
    );
}

export function compareResults(a: ResultSet, b: ResultSet, options: CompareOptions = {}): Comparison {
  refuseIncomplete(a);
  refuseIncomplete(b);
  const alpha = options.alpha ?? 0.05;
  const minChange = options.minChange ?? 0.05;
  const { pairs, onlyA, onlyB } = pairUnits(a, b);
  refuseNothingToCompare(a, b, pairs);
  const units: UnitComparison[] = pairs.map((pair) => {
    const ma = collect(pair.a.runs.map((r) => r.analysis));
    const mb = collect(pair.b.runs.map((r) => r.analysis));
    const ids = [...ma.keys(), ...[...mb.keys()].filter((k) => !ma.has(k))];
    return {
      id: pair.id,
      heading: pair.heading,
      runsA: pair.a.runs.length,
      runsB: pair.b.runs.length,
      metrics: ids.map((id) => {
        const def = (ma.get(id) ?? mb.get(id))!.def;
        return measureMetric(pair.id, def, ma.get(id)?.values ?? [], mb.get(id)?.values ?? []);
      }),
    };
  });
  const all = units.flatMap((u) => u.metrics);
  const judged = all.filter((m) => m.def.judged);
  judgeFamily(judged, alpha, minChange);
  judgeFamily(
    all.filter((m) => !m.def.judged),
    alpha,
    minChange,
  );

  const notes: string[] = [];
  const inconclusive = resolution(units, judged, alpha);
  if (inconclusive) {
    notes.push(
      inconclusive.runsPerSide < 2
        ? `one run on a side: run-to-run noise is unknown, so no change can be called significant (metrics marked untested): use at least ${inconclusive.repeatsNeeded} runs a side (\`fleetbench compare --repeat ${inconclusive.repeatsNeeded} REF_A REF_B\`, or \`fleetbench matrix --repeat ${inconclusive.repeatsNeeded}\` for each side)`
        : `with ${inconclusive.runsPerSide} runs on the smaller side and ${inconclusive.family} judged metrics that could differ, even a complete separation of A and B gives p ≥ ${fmtP(inconclusive.smallestAdjustedP)} after Holm's correction, not below α = ${alpha}: use at least ${inconclusive.repeatsNeeded} runs a side`,
    );
  }
  const oneSided = judged
    .filter((m) => m.verdict === 'only in A' || m.verdict === 'only in B')
    .map((m) => `${m.unit}: ${m.def.title} (${m.verdict})`);
  if (oneSided.length > 0)
    notes.push(
      `judged metrics with a value on one side only, not compared: ${oneSided.join('; ')} (the other side's runs cannot support them: docs/matrix.md#fleetbench-compare)`,
    );
  if (onlyA.length > 0) notes.push(`only in A (not compared): ${onlyA.join(', ')}`);
  if (onlyB.length > 0) notes.push(`only in B (not compared): ${onlyB.join(', ')}`);

  return {
    a: a.source,
    b: b.source,
    alpha,
    minChange,
    method:
      'two-sided Mann–Whitney U per metric (exact permutation p with mid-ranks up to 60 runs, normal approximation beyond), Holm–Bonferroni within the judged and within the reported metrics, change of medians ≥ min-change',
    units,
    onlyA,
    onlyB,
    regressions: judged.filter((m) => m.verdict === 'regression'),
    ...(inconclusive ? { inconclusive } : {}),
    ...(oneSided.length > 0 ? { oneSided } : {}),
    notes,
  };
}

const fmtP = (p: number) => (p >= 0.01 ? p.toFixed(3) : p.toPrecision(2));

/**
 * Whether these runs could show any judged change at α: with n runs a side the smallest exact p
 * is 2 / C(2n, n), times the family's size after Holm. Undefined when they could; otherwise the
 * runs, the family and the repeats that would (docs/matrix.md#the-statistics-and-why).
 */
function resolution(
  units: readonly UnitComparison[],
  judged: readonly MetricComparison[],
  alpha: number,
): Comparison['inconclusive'] {
  if (units.length === 0) return undefined;
  const smallest = Math.min(...units.flatMap((u) => [u.runsA, u.runsB]));
  const biggest = Math.max(...units.flatMap((u) => [u.runsA, u.runsB]));
  // The judged metrics that could differ: a test that is not degenerate, or (untested, one run a
  // side) values that are not all equal.
  const family = judged.filter((m) =>
    m.test
      ? m.test.method !== 'degenerate'
      : m.a.length > 0 && m.b.length > 0 && new Set([...m.a, ...m.b]).size > 1,
  ).length;
  if (family === 0) return undefined;
  const smallestAdjustedP = Math.min(1, minimumP(smallest, biggest) * family);
  if (smallest >= 2 && smallestAdjustedP < alpha) return undefined;
  return { runsPerSide: smallest, family, smallestAdjustedP, repeatsNeeded: repeatsNeeded(family, alpha) };
}
