import type { Analysis } from '../analyze/schema.ts';
import { fmtInt, fmtNum } from './table.ts';

/**
 * A scorecard row's figure, the one text every report shows (terminal, Markdown, HTML): a
 * projection says so, with the figure measured in the run beside it:
 * `-21.5 % (projected to 50; measured 90.3 % at 4)`: the projection first (it is what the rule
 * judges), the run's own figure at its own sessions beside it.
 */
export function scorecardFigure(row: Analysis['scorecard']['rows'][number], at = 50): string {
  return `${judgedFigure(row, at)}${runLimitText(row)}`;
}

/**
 * A headroom row of a run whose GitHub had another hourly limit than the 5,000/h token it is
 * judged on: that limit and the headroom against it, shown beside, never judged.
 */
export function runLimitText(row: Analysis['scorecard']['rows'][number]): string {
  if (row.runLimit === undefined) return '';
  const against =
    row.runLimitHeadroom === null || row.runLimitHeadroom === undefined
      ? ''
      : `: ${fmtNum(row.runLimitHeadroom)} ${row.unit} against it`;
  return ` [the run's limit was ${fmtInt(row.runLimit)}/h${against}, not judged]`;
}

function judgedFigure(row: Analysis['scorecard']['rows'][number], at: number): string {
  if (row.notJudged !== undefined) {
    // A projection the run cannot support: not judged, with the whole run's own figure beside it.
    const observed =
      row.observed === null || row.observed === undefined
        ? ''
        : ` (measured ${fmtNum(row.observed)} ${row.unit} at ${fmtInt(row.observedAt ?? null)} over the whole run)`;
    return `not judged${observed}`;
  }
  if (row.measured === null) return '–';
  const value = `${fmtNum(row.measured)} ${row.unit}`;
  if (!row.projected) return value;
  const observed =
    row.observed === null || row.observed === undefined ? '–' : `${fmtNum(row.observed)} ${row.unit}`;
  return `${value} (projected to ${fmtInt(at)}; measured ${observed} at ${fmtInt(row.observedAt ?? null)})`;
}
