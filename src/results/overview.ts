/**
 * The few figures that summarise one cell, shared by baseline.md, the terminal table of
 * `fleetbench matrix` and the HTML report, so the three never disagree.
 */
import type { Analysis } from '../analyze/schema.ts';
import { scorecardFigure } from '../report/scorecard.ts';
import { type Column, columns, fmtInt, fmtMs, fmtNum, fmtPct, textColumn } from '../report/table.ts';
import type { Baseline } from './baseline.ts';
import type { BracketRow } from './bracket-row.ts';
import { scorecardCounts } from './checks.ts';
import { incompleteTrace } from './results.ts';

export type { BracketRow };

/** The `/rate_limit` bracket, for the resources the run touched (used, or charged by the trace). */
export function activeBracket(a: Analysis): BracketRow[] {
  const br = a.api.bracket;
  if (!br) return [];
  return Object.entries(br.byResource)
    .filter(([, v]) => (v.before?.used ?? 0) > 0 || (v.after?.used ?? 0) > 0 || v.tracePoints > 0)
    .map(([resource, v]) => ({
      resource,
      beforeUsed: v.before?.used ?? null,
      afterUsed: v.after?.used ?? null,
      limit: v.after?.limit ?? v.before?.limit ?? null,
      delta: v.deltaUsed,
      sameWindow: v.sameWindow,
      tracePoints: v.tracePoints,
      unseenPoints: v.unseenPoints,
    }));
}

export function bracketDeltaText(row: BracketRow): string {
  if (row.delta !== null) return `${row.delta >= 0 ? '+' : ''}${fmtNum(row.delta)}`;
  return 'window reset in between';
}

/** One line per judged rule failing, or the all-clear. */
export function scorecardWords(a: Analysis): string {
  const s = a.scorecard;
  const failing = s.rows.filter((r) => r.verdict === 'fail');
  const unknown = s.rows.filter((r) => r.verdict === 'unknown');
  if (failing.length > 0) {
    return `fails ${failing.length} of ${s.rows.length} Track B rules: ${failing
      .map((r) => `${r.title} ${scorecardFigure(r, s.at)} (limit ${r.comparison} ${fmtNum(r.limit)})`)
      .join('; ')}`;
  }
  if (unknown.length === s.rows.length) return 'nothing to judge (no Track B rule could be measured)';
  return `passes all ${s.rows.length - unknown.length} Track B rules${unknown.length > 0 ? ` (${unknown.length} not measurable)` : ''}`;
}

function resourceRate(a: Analysis, resource: string): number | null {
  return a.api.projection.byResource[resource]?.pointsPerHour ?? null;
}

/** Label → value: the summary of one run. */
/**
 * The summary table's rows. `scorecardJudged` false (a chaos wave, a turnover run): no Track B
 * row, since the run is judged on its own budgets only; a turnover run counts its registered
 * sessions (its actors), not the sessions its calls were attributed to.
 */
export function keyFigures(a: Analysis, scorecardJudged = true): Array<[string, string]> {
  const api = a.api;
  const pf = api.pollingFloor.perSessionCycle.all;
  const turnover = a.turnover ?? null;
  return [
    ...(scorecardJudged
      ? [
          ['Track B scorecard', `${a.scorecard.verdict.toUpperCase()}: ${scorecardWords(a)}`] as [
            string,
            string,
          ],
        ]
      : []),
    turnover
      ? [
          'run time, sessions registered, repos',
          `${fmtMs(a.run.durationMs)}, ${fmtInt(turnover.registered)}, ${fmtInt(a.run.repos)}`,
        ]
      : [
          'run time, sessions, repos',
          `${fmtMs(a.run.durationMs)}, ${fmtInt(a.run.sessions)}, ${fmtInt(a.run.repos)}`,
        ],
    [
      'API calls (points)',
      `${fmtInt(api.totals.calls)} (${fmtNum(api.totals.points)} points; ${fmtInt(api.totals.notModified)} answered 304)`,
    ],
    [
      'points per hour',
      `core ${fmtNum(resourceRate(a, 'core'), 0)}, graphql ${fmtNum(resourceRate(a, 'graphql'), 0)}`,
    ],
    [
      'calls per session per poll cycle',
      pf ? `p50 ${fmtNum(pf.p50)}, mean ${fmtNum(pf.mean)}, max ${fmtNum(pf.max)}` : '–',
    ],
    ['conditional requests answered 304', fmtPct(api.conditional.notModifiedPct)],
    [
      'peak concurrency; max req/s (1 s, 10 s)',
      `${fmtInt(api.concurrency.peak)} in flight; ${fmtNum(api.burst.max1s?.perSecond)}, ${fmtNum(api.burst.max10s?.perSecond)}`,
    ],
    ['writes per minute (max)', fmtInt(api.writes.maxPerMinute)],
    ['403 / 429 / retry-after answers', fmtInt(api.limited.answers)],
  ];
}

/**
 * A unit cut short (Ctrl-C, a failed run): its figures are partial, so it is marked partial and
 * never judged, neither pass nor fail (docs/matrix.md#interrupted-matrices).
 */
export function isPartialUnit(unit: Baseline['units'][number]): boolean {
  return unit.runs.some((r) => r.reason !== 'completed' || isPartialRun(r.analysis));
}

/**
 * A run whose trace does not record a whole run that completed: it ends interrupted or failed,
 * has no footer, holds an event that fails the run, or was read skipping lines (the reasons
 * check and compare refuse it for: incompleteTrace). Partial figures.
 */
export function isPartialRun(a: Analysis): boolean {
  return incompleteTrace(a) !== undefined;
}

/**
 * The Track B column of the tables: the verdict, `partial`, or `n/a: SET` for a unit judged on
 * other budget sets (a chaos wave on native-speed): saying which, so a reader does not take a
 * run that passed its own budgets for one nobody judged.
 */
export function trackBText(unit: Baseline['units'][number], a: Analysis): string {
  if (isPartialUnit(unit)) return 'partial: not judged';
  if (!scorecardCounts(unit.budgets)) return `n/a: ${unit.budgets.join(', ')}`;
  if (a.scorecard.verdict === 'fail') return 'FAIL';
  // Every judged rule held, the projections were not judged (no steady window): said so.
  const unknown = a.scorecard.rows.filter((r) => r.verdict === 'unknown');
  if (a.scorecard.verdict === 'unknown' && unknown.every((r) => r.notJudged !== undefined))
    return `pass (${unknown.length} not judged)`;
  return a.scorecard.verdict;
}

/**
 * Cost units whose projections (per-hour burn, headroom at 50 sessions) were not judged: no
 * steady window, or one shorter than a poll interval (a spawn storm has none).
 */
export function projectionNotJudgedUnits(b: Baseline): Baseline['units'] {
  return b.units.filter(
    (u) =>
      !isPartialUnit(u) &&
      scorecardCounts(u.budgets) &&
      u.runs.some((r) => r.analysis.scorecard.rows.some((row) => row.notJudged !== undefined)),
  );
}

/** `1 with its projections not judged (no steady window): S3-T1-25`, or nothing. */
export function projectionNotJudgedText(b: Baseline): string | undefined {
  const units = projectionNotJudgedUnits(b);
  if (units.length === 0) return undefined;
  return `${units.length} with the headroom projections not judged (no steady window long enough to project from): ${units.map((u) => u.id).join(', ')}`;
}

/** Units with a run that fails the Track B scorecard or a judged budget check (partial ones are not judged). */
/**
 * Units with a run that did not complete (failed, cut short): never judged, so a gate (`matrix
 * --check`, `demo`) never passes them, as `check` refuses them (exit 3).
 */
export function incompleteUnits(b: Baseline): Baseline['units'] {
  return b.units.filter((u) => u.runs.length > 0 && isPartialUnit(u));
}

export function failingUnits(b: Baseline): Baseline['units'] {
  return b.units.filter(
    (u) =>
      !isPartialUnit(u) &&
      u.runs.some(
        (r) =>
          (scorecardCounts(u.budgets) && r.analysis.scorecard.verdict === 'fail') ||
          (r.checks ?? []).some((c) => c.judged && c.verdict === 'fail'),
      ),
  );
}

/**
 * The matrix footer's budget line: what was judged and how it went, and what was not judged
 * (partial cells) or did not run at all (an interrupted matrix), counted, never hidden.
 */
export function budgetFooter(b: Baseline): string {
  const notRun = b.units.filter((u) => u.runs.length === 0);
  const partial = b.units.filter((u) => u.runs.length > 0 && isPartialUnit(u));
  const judged = b.units.length - notRun.length - partial.length;
  const failing = failingUnits(b);
  const plural = (n: number) => (n === 1 ? '' : 's');
  const head =
    judged === 0
      ? 'budgets: no cell ran to the end: nothing judged'
      : failing.length === 0
        ? `budgets: ${judged === b.units.length ? 'every cell passes' : `all ${judged} judged cell${plural(judged)} pass`} the Track B scorecard`
        : `budgets: ${failing.length} of ${judged} judged cell${plural(judged)} fail a judged budget: ${failing.map((u) => u.id).join(', ')}`;
  const notJudged = projectionNotJudgedText(b);
  const tail = [
    ...(notJudged ? [notJudged] : []),
    ...(partial.length > 0
      ? [`${partial.length} partial (interrupted, not judged): ${partial.map((u) => u.id).join(', ')}`]
      : []),
    ...(notRun.length > 0 ? [`${notRun.length} did not run: ${notRun.map((u) => u.id).join(', ')}`] : []),
  ];
  return tail.length > 0 ? `${head}; ${tail.join('; ')}` : head;
}

/** The overview table's columns (baseline.md and the `matrix` terminal table), one row a unit. */
export const OVERVIEW_COLUMNS: Column[] = [
  textColumn('cell'),
  ...columns(
    'Track B',
    'calls',
    'core points/h',
    'calls/session/cycle',
    'peak in flight',
    'max req/s 1 s',
    'max req/s 10 s',
    'writes/min',
  ),
];

export function overviewCells(unit: Baseline['units'][number], a: Analysis): string[] {
  const api = a.api;
  return [
    unit.id,
    trackBText(unit, a),
    fmtInt(api.totals.calls),
    fmtNum(api.projection.byResource.core?.pointsPerHour, 0),
    fmtNum(api.pollingFloor.perSessionCycle.all?.mean),
    fmtInt(api.concurrency.peak),
    fmtNum(api.burst.max1s?.perSecond),
    fmtNum(api.burst.max10s?.perSecond),
    fmtInt(api.writes.maxPerMinute),
  ];
}
