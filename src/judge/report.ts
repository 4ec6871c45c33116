/**
 * A verdict as report sections (terminal, Markdown): one table per budget set, judged and
 * report-only rows marked, then the verdict and what a breach is made of.
 */
import { type Block, type Column, fmtInt, fmtMs, fmtNum, type Section } from '../report/table.ts';
import type { Threshold } from './budgets.ts';
import { statLabel, type Verdict, type VerdictRow } from './judge.ts';

export function fmtValue(value: number | null, unit: string): string {
  if (value === null) return '–';
  return unit === 'ms' ? fmtMs(value) : `${fmtNum(value)}${unit === '%' ? '%' : ` ${unit}`}`;
}

/** A value row's value as shown everywhere, with its qualifier (`-269% (projected to 50 sessions)`). */
export function valueText(row: Pick<VerdictRow, 'value' | 'unit' | 'qualifier'>): string {
  const value = fmtValue(row.value, row.unit);
  return row.qualifier ? `${value} (${row.qualifier})` : value;
}

/** Limits as written: `65.5s`, not a rounded `1m06s`. */
function fmtLimit(value: number, unit: string): string {
  if (unit !== 'ms') return fmtValue(value, unit);
  if (value < 1000) return `${fmtNum(value)}ms`;
  return `${Math.round(value) / 1000}s`;
}

const OPS: Record<Threshold['op'], string> = {
  '<': '<',
  '<=': '≤',
  '>': '>',
  '>=': '≥',
  '==': '=',
  '!=': '≠',
};

export function limitText(row: VerdictRow): string {
  if (row.stats.length === 0) return '–';
  return row.stats
    .map((s) => {
      const text = `${statLabel(s.threshold)} ${OPS[s.threshold.op]} ${fmtLimit(s.threshold.limit, row.unit)}`;
      return s.judged || row.status === 'skipped' ? text : `(${text})`;
    })
    .join(' · ');
}

export function verdictText(row: VerdictRow): string {
  if (row.status === 'skipped') return '– skipped';
  if (row.noSamples) return row.status === 'fail' ? '✗ FAIL (no samples; required)' : '– no samples';
  if (row.stats.length === 0) return 'reported';
  const failed = row.stats.filter((s) => s.judged && !s.ok).map((s) => statLabel(s.threshold));
  if (row.mode === 'report') return failed.length > 0 ? `over (${failed.join(', ')})` : 'ok';
  return failed.length > 0 ? `✗ FAIL (${failed.join(', ')})` : '✓ pass';
}

/** How a verdict's percentiles were taken, in words (docs/analysis.md#percentiles). */
export function methodText(method: 'exact' | 'hdr'): string {
  return method === 'exact'
    ? 'exact (nearest-rank over every sample)'
    : 'from an HDR histogram, 3 significant digits (more than 10,000 samples)';
}

export function scopeText(scope: Record<string, string>): string {
  const entries = Object.entries(scope);
  return entries.length === 0 ? '(all)' : entries.map(([k, v]) => `${k}=${v}`).join(' ');
}

export function verdictSection(verdict: Verdict): Section {
  const hasDistribution = verdict.rows.some((r) => r.kind === 'distribution');
  const hasValue = verdict.rows.some((r) => r.kind === 'value');
  const columns: Column[] = [
    { header: 'metric' },
    { header: 'scope' },
    { header: 'mode' },
    { header: 'n', align: 'right' },
    ...(hasDistribution
      ? [
          { header: 'p50', align: 'right' as const },
          { header: 'p95', align: 'right' as const },
        ]
      : []),
    ...(hasValue ? [{ header: 'value', align: 'right' as const }] : []),
    { header: 'limit' },
    { header: 'verdict' },
  ];
  // Skipped rows (an adapter the run did not use) are counted below, not listed.
  const rows = verdict.rows
    .filter((r) => r.status !== 'skipped')
    .map((r) => [
      r.metric,
      scopeText(r.scope),
      r.mode,
      fmtInt(r.n),
      ...(hasDistribution
        ? r.noSamples
          ? ['no samples', '']
          : [fmtValue(r.p50, r.unit), fmtValue(r.p95, r.unit)]
        : []),
      ...(hasValue ? [r.kind === 'value' ? (r.noSamples ? 'no samples' : valueText(r)) : ''] : []),
      limitText(r),
      verdictText(r),
    ]);
  const blocks: Block[] = [{ kind: 'table', columns, rows }];
  const notes: string[] = [];
  for (const r of verdict.rows) {
    if (r.note && r.status !== 'skipped') notes.push(`${r.metric} ${scopeText(r.scope)}: ${r.note}`);
  }
  const methods = new Set(verdict.rows.flatMap((r) => (r.percentileMethod ? [r.percentileMethod] : [])));
  if (methods.size > 0) notes.push(`percentiles: ${[...methods].map(methodText).join('; ')}`);
  if (verdict.noBudget) notes.push(verdict.noBudget);
  const skipped = verdict.rows.filter((r) => r.status === 'skipped');
  if (skipped.length > 0) {
    const why = [...new Set(skipped.map((r) => r.note))].join('; ');
    notes.push(`${skipped.length} rows not shown: ${why}`);
  }
  for (const r of verdict.rows) {
    if (r.status !== 'fail' || !r.context) continue;
    for (const s of r.stats) {
      if (s.ok || !s.judged) continue;
      const c = r.context[statLabel(s.threshold)] as
        | { restartRecoveryMs: number | null; providerLoadMs: number | null }
        | undefined;
      notes.push(
        `${r.metric} ${scopeText(r.scope)} ${statLabel(s.threshold)} ${fmtMs(s.measured)} > ${fmtLimit(s.threshold.limit, 'ms')}: ` +
          `the full restart is ${fmtMs(c?.restartRecoveryMs ?? null)} of which provider load ${fmtMs(c?.providerLoadMs ?? null)}`,
      );
    }
  }
  const mark =
    verdict.verdict === 'error'
      ? '✗ misconfigured'
      : verdict.verdict === 'fail'
        ? `✗ ${verdict.judgedBreaches} judged budget${verdict.judgedBreaches === 1 ? '' : 's'} breached`
        : verdict.verdict === 'no-samples'
          ? verdict.noBudget
            ? '– no budget for this input: nothing judged'
            : '– no samples: nothing judged'
          : '✓ every judged budget holds';
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  const extras = [
    ...(verdict.reportBreaches > 0
      ? [`${plural(verdict.reportBreaches, 'report-only row')} over the limit`]
      : []),
    ...(verdict.noSamples > 0 && verdict.verdict !== 'no-samples'
      ? [`${plural(verdict.noSamples, 'row')} with no samples, not judged`]
      : []),
  ];
  const extra = extras.length > 0 ? ` (${extras.join('; ')})` : '';
  notes.push(`verdict: ${mark}${extra}`);
  for (const error of verdict.errors) notes.push(error);
  blocks.push({
    kind: 'notes',
    lines: notes,
    tone: verdict.verdict === 'pass' || verdict.verdict === 'no-samples' ? 'info' : 'warning',
  });
  return {
    title: `Budgets: ${verdict.budget} (${verdict.source}; baseline: ${verdict.baseline})`,
    blocks,
  };
}
