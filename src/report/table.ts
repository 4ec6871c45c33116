/**
 * The small shared table formatter, and number formats every reporter uses. A report is a list
 * of sections (sections/ decides what is shown); reporters only decide how it looks.
 */

export interface Column {
  header: string;
  align?: 'left' | 'right';
}

/** A left-aligned column: names, labels, text. */
export function textColumn(header: string): Column {
  return { header };
}

/** A right-aligned column: counts, amounts, durations, percentages. */
export function numericColumn(header: string): Column {
  return { header, align: 'right' };
}

/** A label column followed by right-aligned figure columns. */
export function columns(label: string, ...figures: string[]): Column[] {
  return [textColumn(label), ...figures.map(numericColumn)];
}

export type Block =
  | { kind: 'table'; columns: Column[]; rows: string[][]; more?: number }
  | { kind: 'pairs'; pairs: Array<[string, string]> }
  | { kind: 'notes'; lines: string[]; tone?: 'warning' | 'info' };

export interface Section {
  title: string;
  blocks: Block[];
}

/** Display width: code points, not UTF-16 units (✓, …, µ count as one column). */
export function width(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

function pad(text: string, size: number, align: 'left' | 'right'): string {
  const fill = ' '.repeat(Math.max(0, size - width(text)));
  return align === 'right' ? fill + text : text + fill;
}

/** Aligned plain-text table: a header, a rule, rows; columns two spaces apart. */
export function textTable(columns: Column[], rows: string[][], indent = ''): string[] {
  const sizes = columns.map((c, i) => Math.max(width(c.header), ...rows.map((r) => width(r[i] ?? ''))));
  const line = (cells: string[]) =>
    indent +
    cells
      .map((cell, i) => pad(cell, sizes[i]!, columns[i]!.align ?? 'left'))
      .join('  ')
      .trimEnd();
  return [
    line(columns.map((c) => c.header)),
    indent + sizes.map((s) => '─'.repeat(s)).join('  '),
    ...rows.map(line),
  ];
}

/** GitHub-flavoured Markdown table. */
export function markdownTable(columns: Column[], rows: string[][]): string[] {
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  return [
    `| ${columns.map((c) => esc(c.header)).join(' | ')} |`,
    `| ${columns.map((c) => (c.align === 'right' ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${columns.map((_, i) => esc(r[i] ?? '')).join(' | ')} |`),
  ];
}

export function fmtInt(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  return Math.round(value).toLocaleString('en-US');
}

export function fmtNum(value: number | null | undefined, digits = 2): string {
  if (value === null || value === undefined) return '–';
  if (Number.isInteger(value)) return value.toLocaleString('en-US');
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function fmtPct(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined) return '–';
  return `${value.toFixed(digits)}%`;
}

/** Milliseconds as k6 prints durations: µs, ms, s, m. */
export function fmtMs(value: number | null | undefined): string {
  if (value === null || value === undefined) return '–';
  const abs = Math.abs(value);
  if (value === 0) return '0s';
  if (abs < 1) return `${(value * 1000).toFixed(0)}µs`;
  if (abs < 1000) return `${Number(value.toFixed(2))}ms`;
  if (abs < 60_000) return `${Number((value / 1000).toFixed(2))}s`;
  const totalSeconds = Math.round(abs / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  if (minutes < 60) return `${value < 0 ? '-' : ''}${minutes}m${seconds.toString().padStart(2, '0')}s`;
  return `${value < 0 ? '-' : ''}${Math.floor(minutes / 60)}h${(minutes % 60).toString().padStart(2, '0')}m`;
}

export function fmtBytes(value: number): string {
  if (value < 1024) return `${value} B`;
  if (value < 1024 ** 2) return `${(value / 1024).toFixed(1)} kB`;
  if (value < 1024 ** 3) return `${(value / 1024 ** 2).toFixed(1)} MB`;
  return `${(value / 1024 ** 3).toFixed(2)} GB`;
}
