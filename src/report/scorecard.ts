import type { Analysis } from '../analyze/schema.ts';
import { fmtInt, fmtNum } from './table.ts';

/**
 * A scorecard row's figure, the one text every report shows (terminal, Markdown, HTML): a
 * projection says so, with the figure measured in the run beside it:
 * `-21.5 % (projected to 50; measured 90.3 % at 4)`: the projection first (it is what the rule
 * judges), the run's own figure at its own sessions beside it.
 */
export function scorecardFigure(row: Analysis['scorecard']['rows'][number], at = 50): string {
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
