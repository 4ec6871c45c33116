/**
 * A verdict as report sections (terminal, Markdown): one table per budget set, judged and
 * report-only rows marked, then the verdict and what a breach is made of.
 */
import { type Block, type Column, fmtInt, fmtMs, fmtNum, type Section } from '../report/table.ts';
import type { Threshold } from './budgets.ts';
import {
  type RecoveryCause,
  statLabel,
  type UnrecoveredRun,
  type Verdict,
  type VerdictRow,
} from './judge.ts';

export function fmtValue(value: number | null, unit: string): string {
  if (value === null) return '–';
  return unit === 'ms' ? fmtMs(value) : `${fmtNum(value)}${unit === '%' ? '%' : ` ${unit}`}`;
}

/** A value row's value as shown everywhere, with its qualifier (`-269% (projected to 50 sessions)`). */
export function valueText(row: Pick<VerdictRow, 'value' | 'unit' | 'qualifier'>): string {
  const value = fmtValue(row.value, row.unit);
  return row.qualifier ? `${value} (${row.qualifier})` : value;
}

/**
 * The unit of one statistic's figure: a count is of samples whatever the metric's unit (`count ≤
 * 5 samples`, never `5ms`: docs/budgets.md), every other statistic is in the metric's unit.
 */
export function statUnit(threshold: Pick<Threshold, 'stat'>, unit: string): string {
  return threshold.stat === 'count' && unit === 'ms' ? 'samples' : unit;
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
      const text = `${statLabel(s.threshold)} ${OPS[s.threshold.op]} ${fmtLimit(s.threshold.limit, statUnit(s.threshold, row.unit))}`;
      return s.judged || row.status === 'skipped' ? text : `(${text})`;
    })
    .join(' · ');
}

export function verdictText(row: VerdictRow): string {
  if (row.status === 'skipped') return '– skipped';
  if (row.noSamples && row.notJudged)
    return row.status === 'fail' ? '✗ FAIL (not judged; required)' : '– not judged';
  if (row.noSamples) return row.status === 'fail' ? '✗ FAIL (no samples; required)' : '– no samples';
  const failed = row.stats.filter((s) => s.judged && !s.ok).map((s) => statLabel(s.threshold));
  if (row.unrecovered && row.unrecovered.failing > 0) failed.push('unrecovered');
  if (row.stats.length === 0 && failed.length === 0) return 'reported';
  if (row.mode === 'report') return failed.length > 0 ? `over (${failed.join(', ')})` : 'ok';
  return failed.length > 0 ? `✗ FAIL (${failed.join(', ')})` : '✓ pass';
}

/** How a verdict's percentiles were taken, in words (docs/analysis.md#percentiles). */
export function methodText(method: 'exact' | 'hdr'): string {
  return method === 'exact'
    ? 'exact (nearest-rank over every sample)'
    : 'from an HDR histogram, 3 significant digits (more than 10,000 samples)';
}

export function scopeText(scope: Record<string, string>, judgedAs?: Record<string, string>): string {
  const entries = Object.entries(scope);
  if (entries.length === 0) return '(all)';
  return entries
    .map(([k, v]) =>
      judgedAs?.[k] !== undefined && judgedAs[k] !== v ? `${k}=${v} (as ${judgedAs[k]})` : `${k}=${v}`,
    )
    .join(' ');
}

/** `s-0003 graceful: failed, adapter_failed` / `s-0003 hard: still recovering at the end (≥ 2m00s)`. */
function unrecoveredText(r: UnrecoveredRun): string {
  if (r.open) {
    const wait =
      r.atLeastMs === null ? 'the control plane never came back' : `≥ ${fmtMs(r.atLeastMs)} so far`;
    return `${r.session} ${r.kind}: still recovering when the trace ended (${wait})`;
  }
  return `${r.session} ${r.kind}: ${r.status ?? 'ended'}${r.errorCode ? `, ${r.errorCode}` : ''}`;
}

/**
 * Where a recovery's control-plane share went, in words: `lost-run detection 5m08s after the kill
 * (4m30s after ready), retry due 30s later, started 3.58s after that; boot 38.1s (removed)`.
 */
export function causeText(cause: RecoveryCause): string {
  const parts: string[] = [];
  if (cause.lostRunDetectionMs !== undefined)
    parts.push(
      `lost-run detection ${fmtMs(cause.lostRunDetectionMs)} after the kill (${fmtMs(cause.lostAfterReadyMs ?? 0)} after ready)`,
    );
  if (cause.retryDelayMs !== undefined) parts.push(`retry delay ${fmtMs(cause.retryDelayMs)}`);
  if (cause.retryStartMs !== undefined)
    parts.push(`retry started ${fmtMs(cause.retryStartMs)} after it was due and the server ready`);
  if (cause.bootMs !== undefined) parts.push(`boot ${fmtMs(cause.bootMs)} (kill → ready, not in the share)`);
  return parts.length > 0
    ? parts.join(', ')
    : 'the trace has no lost-run or retry records to split it further';
}

interface RecoveryContext {
  session: string;
  kind: string;
  restartRecoveryMs: number;
  controlPlaneMs: number;
  providerLoadMs: number | null;
  cause: RecoveryCause;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The verdict in words: never "every judged budget holds" while a judged row went unjudged; then
 * how many were judged and how many not, and what else is worth a glance (report rows over).
 */
export function headlineParts(verdict: Verdict): { mark: string; extra: string } {
  const unjudged = verdict.unjudgedRows ?? 0;
  const judged = verdict.judgedRows ?? 0;
  const notJudged = verdict.rows.filter(
    (r) => r.mode === 'judged' && r.noSamples && r.notJudged && r.status !== 'fail',
  ).length;
  const noSamples = unjudged - notJudged;
  const why = [
    ...(notJudged > 0 ? [`${notJudged} the run cannot support`] : []),
    ...(noSamples > 0 ? [`${noSamples} with no samples`] : []),
  ].join(', ');
  const mark =
    verdict.verdict === 'error'
      ? '✗ misconfigured'
      : verdict.verdict === 'fail' && verdict.judgedBreaches === 0 && verdict.nothingJudged
        ? `✗ nothing judged, and judging is required (--require-judged): ${verdict.nothingJudged}`
        : verdict.verdict === 'fail'
          ? `✗ ${verdict.judgedBreaches} judged budget${verdict.judgedBreaches === 1 ? '' : 's'} breached`
          : verdict.verdict === 'no-samples'
            ? verdict.noBudget
              ? '– no budget for this input: nothing judged'
              : notJudged > 0
                ? `– nothing judged: ${unjudged} judged rows not judged (${why})`
                : unjudged === 0
                  ? '– nothing judged: no judged row (its rows are report-only)'
                  : '– no samples: nothing judged'
            : unjudged > 0
              ? `✓ ${judged} of ${judged + unjudged} judged rows hold; ${unjudged} not judged (${why})`
              : '✓ every judged budget holds';
  const extras = [
    ...(verdict.reportBreaches > 0
      ? [`${plural(verdict.reportBreaches, 'report-only row')} over the limit`]
      : []),
    ...(verdict.verdict === 'fail' && unjudged > 0 ? [`${unjudged} judged rows not judged (${why})`] : []),
  ];
  return { mark, extra: extras.length > 0 ? ` (${extras.join('; ')})` : '' };
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
      scopeText(r.scope, r.judgedAs),
      r.mode,
      fmtInt(r.n),
      ...(hasDistribution
        ? r.noSamples
          ? ['no samples', '']
          : [fmtValue(r.p50, r.unit), fmtValue(r.p95, r.unit)]
        : []),
      ...(hasValue
        ? [
            r.kind === 'value'
              ? r.noSamples
                ? r.notJudged
                  ? r.value === null
                    ? 'not judged'
                    : `${valueText(r)} (not judged)`
                  : 'no samples'
                : valueText(r)
              : '',
          ]
        : []),
      limitText(r),
      verdictText(r),
    ]);
  const blocks: Block[] = [{ kind: 'table', columns, rows }];
  const notes: string[] = [];
  for (const r of verdict.rows) {
    if (r.note && r.status !== 'skipped') notes.push(`${r.metric} ${scopeText(r.scope)}: ${r.note}`);
  }
  for (const r of verdict.rows) {
    const u = r.unrecovered;
    if (!u || r.status === 'skipped') continue;
    const more = u.failing + u.pending - u.runs.length;
    const named = `${u.runs.map(unrecoveredText).join('; ')}${more > 0 ? `; ${more} more` : ''}`;
    notes.push(
      u.failing > 0
        ? `${r.metric} ${scopeText(r.scope)}: ${u.failing} cut run${u.failing === 1 ? '' : 's'} NOT recovered (${named}): a failure of this row, whatever the recovered runs measured`
        : `${r.metric} ${scopeText(r.scope)}: ${u.pending} cut run${u.pending === 1 ? '' : 's'} still recovering when the trace ended, under the limit so far: not judged (${named})`,
    );
  }
  const aliased = verdict.rows.filter((r) => r.judgedAs && r.status !== 'skipped');
  if (aliased.length > 0) {
    const pairs = new Set(
      aliased.flatMap((r) =>
        Object.entries(r.judgedAs!)
          .filter(([k, v]) => r.scope[k] !== v)
          .map(([k, v]) => `${k} ${r.scope[k]} by the ${v} rows`),
      ),
    );
    notes.push(`judged by ${verdict.budget} (${verdict.baseline}): ${[...pairs].join(', ')}`);
  }
  const methods = new Set(verdict.rows.flatMap((r) => (r.percentileMethod ? [r.percentileMethod] : [])));
  if (methods.size > 0) notes.push(`percentiles: ${[...methods].map(methodText).join('; ')}`);
  if (verdict.noBudget) notes.push(verdict.noBudget);
  if (verdict.unjudgedCuts) notes.push(verdict.unjudgedCuts);
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
    // The slowest recovery of each restart kind: its split and where the control plane's share went.
    const byKind = (r.context.byKind ?? {}) as Record<string, RecoveryContext>;
    for (const [kind, w] of Object.entries(byKind)) {
      notes.push(
        `  ${kind} restarts, slowest (${w.session}): control plane ${fmtMs(w.controlPlaneMs)} + provider ${fmtMs(w.providerLoadMs)} = ${fmtMs(w.restartRecoveryMs)}; ` +
          `the control plane's share: ${causeText(w.cause)}`,
      );
    }
  }
  const { mark, extra } = headlineParts(verdict);
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
