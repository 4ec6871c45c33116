/**
 * The matrix's budget checks beyond the Track B scorecard (which every Analysis already
 * carries): each unit is judged against its own scenario's `budgets:` (a chaos wave against
 * native-speed, turnover against the turnover set), the same judge `fleetbench run` and
 * `fleetbench check` use. The rows are kept per run in baseline.json and shown by the report.
 */

import type { Analysis } from '../analyze/schema.ts';
import {
  type BudgetSet,
  fmtValue,
  judge,
  limitText,
  resolveBudgets,
  statLabel,
  type Verdict,
  type VerdictRow,
  valueText,
} from '../judge/index.ts';
import type { CheckRow } from './baseline.ts';

/**
 * Judges one run against budgets beyond the Track B scorecard (which every Analysis carries):
 * the rows are kept in baseline.json and shown by the report; judged failures fail --check.
 * Default: the unit's own scenario budgets (scenarioBudgetJudge).
 */
export type Judge = (analysis: Analysis, unitId: string) => CheckRow[] | null;

/** Judged already through the scorecard: repeating its rows would only say the same twice. */
export const SCORECARD_SET = 'track-b';

function measuredText(row: VerdictRow): string {
  if (row.noSamples) return 'no samples';
  if (row.kind === 'value') return valueText(row);
  return `p50 ${fmtValue(row.p50, row.unit)} · p95 ${fmtValue(row.p95, row.unit)} (n ${row.n})`;
}

function checkRow(budget: string, row: VerdictRow): CheckRow {
  return {
    budget,
    metric: row.metric,
    scope: Object.entries(row.scope)
      .map(([k, v]) => `${k}=${v}`)
      .join(' '),
    measured: measuredText(row),
    limit: limitText(row),
    // No samples is neither a pass nor a failure (unless required): shown as not measured.
    verdict: row.status === 'fail' ? 'fail' : row.status === 'no-samples' ? 'unknown' : 'pass',
    judged: row.mode === 'judged',
    ...(row.stats.length > 0
      ? { limits: Object.fromEntries(row.stats.map((s) => [statLabel(s.threshold), s.threshold.limit])) }
      : {}),
  };
}

/** A verdict's rows as baseline check rows (skipped rows left out; errors as failing rows). */
export function verdictCheckRows(verdict: Verdict): CheckRow[] {
  const rows = verdict.rows.filter((r) => r.status !== 'skipped').map((r) => checkRow(verdict.budget, r));
  // A misconfigured set fails loudly, as in `fleetbench check`.
  for (const error of verdict.errors)
    rows.push({
      budget: verdict.budget,
      metric: verdict.budget,
      scope: '',
      measured: error,
      limit: '',
      verdict: 'fail',
      judged: true,
    });
  return rows;
}

/**
 * Whether a run's Track B scorecard verdict counts, from the budget sets its scenario names: yes
 * when they include `track-b` (every A2 cell) or when it names none (nothing else judges it; the
 * scorecard is all there is); no for a run judged on other budgets (a chaos wave, turnover).
 */
export function scorecardCounts(budgets: readonly string[] | undefined): boolean {
  return budgets === undefined || budgets.length === 0 || budgets.includes(SCORECARD_SET);
}

/** A judge for the units of one matrix, given each unit's budget sets as its plan resolved them. */
export function scenarioBudgetJudge(budgetsOf: (unitId: string) => readonly string[]): Judge {
  const setsByUnit = new Map<string, BudgetSet[]>();
  return (analysis, unitId) => {
    let sets = setsByUnit.get(unitId);
    if (!sets) {
      sets = budgetsOf(unitId)
        .filter((ref) => ref !== SCORECARD_SET)
        .map(resolveBudgets);
      setsByUnit.set(unitId, sets);
    }
    if (sets.length === 0) return null;
    return sets.flatMap((set) => verdictCheckRows(judge(set, [{ name: unitId, analysis }])));
  };
}
