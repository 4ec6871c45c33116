/** What a run was and what it called: the run, API totals, calls broken down by a dimension, warnings. */
import { NONE } from '../../analyze/analyzer.ts';
import type { Analysis, KeyCount } from '../../analyze/schema.ts';
import { type Block, columns, fmtBytes, fmtInt, fmtMs, fmtNum, fmtPct, type Section } from '../table.ts';
import { note, notesIf, type Pair, pairs, table } from './build.ts';

export function runSection(a: Analysis): Section {
  const r = a.run;
  const list: Pair[] = [
    ['run', r.runId ?? '–'],
    ['scenario', r.cell ? `${r.scenario} (${r.cell})` : (r.scenario ?? '–')],
    ['clock', r.clock ?? '–'],
  ];
  if (r.target) list.push(['target', r.target]);
  if (r.source) list.push(['imported from', r.source]);
  if (r.startedAt) list.push(['started', r.startedAt]);
  list.push(['duration', fmtMs(r.durationMs)], ['sessions', fmtInt(r.sessions)], ['repos', fmtInt(r.repos)]);
  const i = a.input;
  if (i.file) list.push(['trace', i.file]);
  const records = i.records;
  list.push([
    'records',
    `${fmtInt(records.api)} api · ${fmtInt(records.span)} span · ${fmtInt(records.event)} event · ${fmtInt(records.gauge)} gauge`,
  ]);
  const notes: string[] = [];
  if (i.skipped > 0) {
    notes.push(`${fmtInt(i.skipped)} bad lines skipped (--lenient):`);
    for (const reason of i.skippedReasons) notes.push(`  ${reason}`);
    if (i.skipped > i.skippedReasons.length)
      notes.push(`  … and ${fmtInt(i.skipped - i.skippedReasons.length)} more`);
  }
  if (i.truncated)
    notes.push(
      'the trace has no end footer: the run was killed or the file was cut; figures cover what is there',
    );
  else if (i.footer && i.footer !== 'completed') notes.push(`the run ended ${i.footer}`);
  return { title: 'Run', blocks: [pairs(list), ...notesIf(notes, 'warning')] };
}

export function totalsSection(a: Analysis): Section {
  const t = a.api.totals;
  const byResource = Object.entries(a.api.counts.byResource)
    .map(([resource, v]) => `${resource} ${fmtNum(v.points)}`)
    .join(' · ');
  return {
    title: 'API calls',
    blocks: [
      pairs([
        ['calls', fmtInt(t.calls)],
        ['points (primary)', `${fmtNum(t.points)}${byResource ? `  (${byResource})` : ''}`],
        ['points (secondary)', fmtNum(t.secondaryPoints)],
        ['errors (≥ 400)', fmtInt(t.errors)],
        [
          'failed calls',
          `${fmtInt(t.failed)} (answered ≥ 400, or no answer and the client failed; ${fmtInt(t.killed)} killed by a signal)`,
        ],
        ['conditional / 304', `${fmtInt(t.conditional)} / ${fmtInt(t.notModified)}`],
        ['writes', fmtInt(t.writes)],
        ['opaque (status unknown)', `${fmtInt(a.api.opaque.calls)} (${fmtPct(a.api.opaque.sharePct)})`],
        ['bytes', fmtBytes(t.bytes)],
      ]),
    ],
  };
}

/** Calls, share and points per key, busiest first; `top` rows, the rest counted. */
function countsTable(label: string, counts: Record<string, KeyCount>, total: number, top: number): Block {
  const entries = Object.entries(counts).sort(([ka, a], [kb, b]) => b.calls - a.calls || (ka < kb ? -1 : 1));
  return table(
    columns(label, 'calls', 'share', 'points'),
    entries
      .slice(0, top)
      .map(([key, v]) => [
        key,
        fmtInt(v.calls),
        fmtPct(total > 0 ? (100 * v.calls) / total : null),
        fmtNum(v.points),
      ]),
    Math.max(0, entries.length - top),
  );
}

export type Dimension = [keyof Analysis['api']['counts'], string];

export function breakdownSections(a: Analysis, top: number, dimensions: Dimension[]): Section[] {
  const total = a.api.totals.calls;
  return dimensions.map(([key, label]) => {
    const counts = a.api.counts[key];
    const keys = Object.keys(counts);
    const unattributed = keys.length === 1 && keys[0] === NONE;
    return {
      title: `Calls by ${label}`,
      blocks: [
        unattributed
          ? note([`no call carries ${/^[aeiou]/i.test(label) ? 'an' : 'a'} ${label}`], 'info')
          : countsTable(label, counts, total, top),
      ],
    };
  });
}

/** The analysis' warnings not already shown beside the figures they are about. */
export function warningsSection(a: Analysis, shown: Set<string>): Section[] {
  const rest = a.warnings.filter((w) => !shown.has(w));
  return rest.length === 0 ? [] : [{ title: 'Warnings', blocks: [note(rest, 'warning')] }];
}
