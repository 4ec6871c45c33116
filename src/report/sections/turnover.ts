/** Turnover (park/wake), from analysis.turnover: the steady window, the whole run, actor failures. */
import type { Analysis } from '../../analyze/schema.ts';
import { columns, fmtInt, fmtMs, fmtNum, fmtPct, numericColumn, type Section, textColumn } from '../table.ts';
import { note, pairs, percentileColumns, percentileRow, table } from './build.ts';

const OPERATION_TITLES: Record<string, string> = {
  create: 'create (register)',
  park_register: 'park_register',
  park: 'park',
  wake: 'time to wake',
  wake_first_touch: 'wake first touch',
  step: 'step',
};

const operationTitle = (operation: string) => OPERATION_TITLES[operation] ?? operation;

type Turnover = NonNullable<Analysis['turnover']>;

/** `reason n, reason n` for the reasons that happened. */
function reasons(m: Record<string, number>): string {
  return Object.entries(m)
    .filter(([, n]) => n > 0)
    .map(([r, n]) => `${r} ${fmtInt(n)}`)
    .join(', ');
}

function swapsDone(swaps: Turnover['swaps']): string {
  const missed = reasons(swaps.missedByReason);
  return `${fmtInt(swaps.done)} / ${fmtInt(swaps.asked)} (${fmtPct(swaps.donePct)})${missed ? `; missed: ${missed}` : ''}`;
}

function windowSection(t: Turnover): Section {
  const w = t.window;
  if (w === null) {
    return {
      title: 'Turnover window',
      blocks: [
        note(
          ['no turnover.fill.done marker: the fill did not finish, so there is no steady window'],
          'warning',
        ),
      ],
    };
  }
  return {
    title: 'Turnover window',
    blocks: [
      pairs([
        [
          'window',
          `${fmtMs(w.startMs)} → ${fmtMs(w.endMs)} (${fmtMs(w.durationMs)}, from turnover.fill.done)`,
        ],
        ['modes', `lifecycle ${t.lifecycleMode ?? '–'}, resume ${t.resumeMode ?? '–'}`],
        ['sessions registered', fmtInt(t.registered)],
        ['swaps done / asked', swapsDone(w.swaps)],
        [
          'failures (attempts)',
          `busy ${fmtInt(w.failuresByKind.busy)}, crashed ${fmtInt(w.failuresByKind.crashed)}, not_found ${fmtInt(w.failuresByKind.not_found)}`,
        ],
      ]),
      table(
        columns('turnover_window', 'count', 'per s', 'failures', 'errors', 'p50', 'p90', 'p95', 'p99', 'max'),
        w.rows.map((r) => [
          operationTitle(r.operation),
          fmtInt(r.count),
          fmtNum(r.perSecond),
          fmtInt(r.failures),
          fmtInt(r.errors),
          fmtMs(r.latency?.p50),
          fmtMs(r.latency?.p90),
          fmtMs(r.latency?.p95),
          fmtMs(r.latency?.p99),
          fmtMs(r.latency?.max),
        ]),
      ),
      table(columns('sessions by state', 'min', 'mean', 'max', 'last'), [
        ...(['awake', 'parked', 'waking', 'parking'] as const).map((state) => [
          state,
          fmtInt(w.states[state].min),
          fmtNum(w.states[state].mean, 1),
          fmtInt(w.states[state].max),
          fmtInt(w.states[state].last),
        ]),
        ['total', fmtInt(w.states.total.min), '', fmtInt(w.states.total.max), ''],
      ]),
    ],
  };
}

function wholeRunSection(t: Turnover): Section {
  const m = t.markers;
  return {
    title: 'Turnover (whole run)',
    blocks: [
      table(percentileColumns('operation'), [
        ...t.operations.map((r) => percentileRow(operationTitle(r.operation), r.latency)),
        ...(t.timeToWake.implicit && t.timeToWake.explicit
          ? [
              percentileRow('time to wake {implicit}', t.timeToWake.implicit),
              percentileRow('time to wake {explicit}', t.timeToWake.explicit),
            ]
          : []),
      ]),
      pairs([
        [
          'markers',
          `registration done ${fmtMs(m.registrationDoneMs)}, fill done ${fmtMs(m.fillDoneMs)}${m.doneMs !== null ? `, turnover done ${fmtMs(m.doneMs)}` : ''}`,
        ],
        ['swaps done / asked', swapsDone(t.swaps)],
      ]),
    ],
  };
}

function actorFailuresSection(t: Turnover): Section {
  const f = t.failures;
  const ops = Object.keys(f.byOperation).sort();
  return {
    title: 'Actor failures',
    blocks:
      f.total === 0
        ? [note(['no failed attempts'], 'info')]
        : [
            table(
              [textColumn('kind'), ...ops.map(numericColumn), numericColumn('total')],
              (['busy', 'crashed', 'not_found'] as const).map((kind) => [
                kind,
                ...ops.map((op) => fmtInt(f.byOperation[op]?.[kind])),
                fmtInt(f.byKind[kind]),
              ]),
            ),
            pairs([
              [
                'reactions',
                `retried ${fmtInt(f.byReaction.retry)}, replaced ${fmtInt(f.byReaction.replace)}, gave up ${fmtInt(f.byReaction.give_up)}`,
              ],
            ]),
          ],
  };
}

/** The steady window (`turnover_window`), the whole run's latencies, and failures by kind. */
export function turnoverSections(a: Analysis): Section[] {
  const t = a.turnover;
  if (t === undefined) return [];
  return [windowSection(t), wholeRunSection(t), actorFailuresSection(t)];
}
