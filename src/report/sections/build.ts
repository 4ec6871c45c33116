/**
 * Small builders for the blocks a section is made of, so a section reads as data: which columns,
 * which rows, which notes. They build exactly the literals the reporters take (table.ts, which
 * also has the column builders: matrix and CLI tables use them too).
 */
import type { AnalysisPercentiles } from '../../analyze/schema.ts';
import { type Block, type Column, columns, fmtInt, fmtMs } from '../table.ts';

export type Pair = [string, string];
export type Tone = 'warning' | 'info';

/** A table; `more` counts the rows left out (shown as "… N more"). */
export function table(cols: Column[], rows: string[][], more?: number): Block {
  return more === undefined
    ? { kind: 'table', columns: cols, rows }
    : { kind: 'table', columns: cols, rows, more };
}

export function pairs(list: Pair[]): Block {
  return { kind: 'pairs', pairs: list };
}

export function note(lines: string[], tone: Tone): Block {
  return { kind: 'notes', lines, tone };
}

/** A notes block when there is something to say, else nothing. */
export function notesIf(lines: string[], tone: Tone): Block[] {
  return lines.length > 0 ? [note(lines, tone)] : [];
}

/** The HDR percentile columns, after a first column naming the row. */
export const percentileColumns = (first: string): Column[] =>
  columns(first, 'count', 'min', 'avg', 'p50', 'p90', 'p95', 'p99', 'max');

/** One row under percentileColumns; a metric with no samples is a count of 0 and dashes. */
export function percentileRow(name: string, p: AnalysisPercentiles | null): string[] {
  if (p === null) return [name, '0', '–', '–', '–', '–', '–', '–', '–'];
  return [
    name,
    fmtInt(p.count),
    fmtMs(p.min),
    fmtMs(p.mean),
    fmtMs(p.p50),
    fmtMs(p.p90),
    fmtMs(p.p95),
    fmtMs(p.p99),
    fmtMs(p.max),
  ];
}

/** `k=v k=v`, as label sets are shown. */
export function labelText(labels: Record<string, unknown>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join(' ');
}
