/** The Track B scorecard: each row's measured figure against its limit, and the verdict. */
import type { Analysis } from '../../analyze/schema.ts';
import { scorecardFigure } from '../scorecard.ts';
import { type Column, fmtNum, numericColumn, type Section, textColumn } from '../table.ts';
import { note, table } from './build.ts';

export const VERDICT_MARK = { pass: '✓ pass', fail: '✗ FAIL', unknown: '? unknown' } as const;

type Scorecard = Analysis['scorecard'];

export const scorecardColumns: Column[] = [
  textColumn('row'),
  numericColumn('measured'),
  textColumn('limit'),
  textColumn('verdict'),
];

/** row, measured, limit, verdict (projected or not): the cells both scorecard tables share. */
export function scorecardRow(s: Scorecard, r: Scorecard['rows'][number]): string[] {
  return [
    r.title,
    scorecardFigure(r, s.at),
    `${r.comparison} ${fmtNum(r.limit)}`,
    r.notJudged !== undefined
      ? '– not judged'
      : `${VERDICT_MARK[r.verdict]}${r.projected && r.verdict !== 'unknown' ? ' (projected)' : ''}`,
  ];
}

/** The section's title (a matrix's Markdown leaves the section out of runs not judged on it). */
export const SCORECARD_TITLE = 'Track B scorecard';

export function scorecardSection(a: Analysis): Section {
  const s = a.scorecard;
  const notes = [`verdict: ${VERDICT_MARK[s.verdict]}`];
  if (s.projected && s.sessions > 0) {
    notes.push(
      `the run had ${s.sessions} sessions: the cost rows are projected to ${s.at} at the measured per-session cost`,
    );
  }
  return {
    title: SCORECARD_TITLE,
    blocks: [
      table(
        [...scorecardColumns, textColumn('basis')],
        s.rows.map((r) => [...scorecardRow(s, r), r.basis]),
      ),
      note(notes, s.verdict === 'fail' ? 'warning' : 'info'),
    ],
  };
}
