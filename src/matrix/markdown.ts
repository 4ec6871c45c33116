/**
 * baseline.md: the human-readable baseline (docs/matrix.md#the-baseline). An overview table, the pruning table, then
 * one section per cell: `### S2-T1-50: Quiet steady state, concentrated, 50 sessions`, what the
 * cell tells us, the `/rate_limit` bracket before/after and its delta, the summary, and the
 * analysis (the same sections `fleetbench analyze --markdown` prints). Deterministic: no wall
 * times, no dates.
 */
import type { Analysis } from '../analyze/schema.ts';
import { markdownBlocks } from '../report/markdown.ts';
import { analysisSections } from '../report/sections/index.ts';
import { SCORECARD_TITLE } from '../report/sections/scorecard.ts';
import { columns, fmtInt, fmtNum, markdownTable, type Section } from '../report/table.ts';
import type { Baseline, BaselineUnit } from '../results/baseline.ts';
import { BRACKET_COLUMNS } from '../results/bracket-row.ts';
import { scorecardCounts } from '../results/checks.ts';
import {
  activeBracket,
  bracketDeltaText,
  budgetFooter,
  keyFigures,
  OVERVIEW_COLUMNS,
  overviewCells,
} from '../results/overview.ts';

/** Sections of `analyze` that the cell section already shows in its own words. */
const SHOWN_ABOVE = new Set(['/rate_limit bracket']);

function sectionsMarkdown(sections: Section[], level: string): string[] {
  return sections.flatMap((s) => [`${level} ${s.title}`, '', ...markdownBlocks(s.blocks, 'baseline.json')]);
}

function bracketMarkdown(a: Analysis): string[] {
  const rows = activeBracket(a);
  if (a.api.bracket === null) return ['No `/rate_limit` snapshots in this run.', ''];
  if (rows.length === 0) return ['No resource was used between the snapshots.', ''];
  const at = `before at ${fmtNum(a.api.bracket.beforeAtMs / 1000)} s, after at ${fmtNum(a.api.bracket.afterAtMs / 1000)} s`;
  return [
    `Rate-limit bracket (\`/rate_limit\` ${at}):`,
    '',
    ...markdownTable(
      columns(...BRACKET_COLUMNS),
      rows.map((r) => [
        r.resource,
        fmtInt(r.beforeUsed),
        fmtInt(r.afterUsed),
        fmtInt(r.limit),
        bracketDeltaText(r),
        fmtNum(r.tracePoints),
        fmtNum(r.unseenPoints),
      ]),
    ),
    '',
  ];
}

function unitMarkdown(unit: BaselineUnit): string[] {
  const lines = [`### ${unit.heading}`, ''];
  lines.push(`What this cell tells us: ${unit.whatItTells ?? '(the scenario does not say)'}`, '');
  const first = unit.runs[0];
  if (!first) return [...lines, 'Did not run (the matrix was interrupted).', ''];
  const a = first.analysis;
  if (unit.runs.length > 1) {
    lines.push(
      `${unit.runs.length} runs with seeds ${unit.runs.map((r) => r.seed).join(', ')}; the figures below are the first run's (every run is in baseline.json and under \`${first.dir.replace(/[^/]+$/, '')}\`).`,
      '',
    );
  }
  if (first.reason !== 'completed') lines.push('> ⚠ interrupted: partial figures, not judged', '');
  lines.push(...bracketMarkdown(a));
  lines.push('#### Summary', '');
  lines.push(
    ...markdownTable(
      [{ header: 'metric' }, { header: 'value' }],
      [
        ...keyFigures(a, scorecardCounts(unit.budgets)),
        ['sessions started (dropped)', `${fmtInt(first.sessionsStarted)} (${fmtInt(first.sessionsDropped)})`],
        ['run directory', `\`${first.dir}\``],
      ],
    ),
    '',
  );
  lines.push('#### Analysis', '');
  lines.push(
    ...sectionsMarkdown(
      analysisSections(a, { top: 10 }).filter(
        // A run judged on its own budgets (a chaos wave, turnover) shows no Track B verdict.
        (s) => !SHOWN_ABOVE.has(s.title) && (scorecardCounts(unit.budgets) || s.title !== SCORECARD_TITLE),
      ),
      '#####',
    ),
  );
  return lines;
}

export function baselineMarkdown(b: Baseline): string {
  const lines = ['# fleetbench baseline', ''];
  const runs = b.units.reduce((n, u) => n + u.runs.length, 0);
  lines.push(
    `${b.units.length} unit${b.units.length === 1 ? '' : 's'} (\`--cells ${b.selection}\`), ${runs} run${runs === 1 ? '' : 's'}` +
      (b.repeats > 1 ? ` (${b.repeats} seeds each)` : '') +
      `, virtual time, ${b.generator.name} ${b.generator.version}.` +
      (b.overrides.length > 0 ? ` Overrides: ${b.overrides.map((o) => `\`${o}\``).join(', ')}.` : ''),
    '',
    'Every metric of every run is in `baseline.json` (schema: `fleetbench schema baseline`); each run directory holds its trace.',
    '',
  );
  if (b.partial) lines.push('> ⚠ The matrix was interrupted: some cells are missing or partial.', '');

  lines.push('## Overview', '');
  lines.push(
    ...markdownTable(
      [...OVERVIEW_COLUMNS, { header: '403/429', align: 'right' }],
      b.units.map((u) => {
        const a = u.runs[0]?.analysis;
        if (!a) return [u.id, 'did not run', '', '', '', '', '', '', '', ''];
        return [...overviewCells(u, a), fmtInt(a.api.limited.answers)];
      }),
    ),
    '',
    `${budgetFooter(b).replace(/^budgets: /, 'Budgets: ')}.`,
    '',
  );

  lines.push('## Pruning', '');
  if (b.pruning === null) {
    lines.push('Not applied: it needs at least two A2 cells of one scenario at different scales.', '');
  } else {
    const kept = b.pruning.decisions.filter((d) => d.kept).length;
    lines.push(
      `Rule: keep a cell only if one of its Track B scorecard metrics differs by more than ${fmtNum(100 * b.pruning.threshold)}% from an adjacent scale point (the next smaller or larger scale of the same scenario and topology; S·-T1-1 is the scale-1 point of both lines). ${kept} of ${b.pruning.decisions.length} cells kept; run only those next time with \`--cells ${keptSelector(b) || '…'}\`.`,
      '',
      ...markdownTable(
        [{ header: 'cell' }, { header: 'decision' }, { header: 'why' }],
        b.pruning.decisions.map((d) => [
          d.id,
          d.kept ? (d.representative ? 'kept (representative)' : 'kept') : 'pruned',
          d.reason,
        ]),
      ),
      '',
    );
  }

  lines.push('## Cells', '');
  for (const unit of b.units) lines.push(...unitMarkdown(unit));
  return `${lines.join('\n').trimEnd()}\n`;
}

/** The kept cells as a --cells value. */
export function keptSelector(b: Baseline): string {
  return (b.pruning?.decisions ?? [])
    .filter((d) => d.kept)
    .map((d) => d.id)
    .join(',');
}
