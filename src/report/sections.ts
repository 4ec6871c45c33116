/**
 * What a summary and an analysis show, format-neutral: sections of tables, key/value pairs and
 * notes. The terminal and Markdown reporters render the same sections, so they never disagree.
 */
import { NONE } from '../analyze/analyzer.ts';
import type { Analysis, AnalysisPercentiles, KeyCount } from '../analyze/schema.ts';
import { scorecardFigure } from './scorecard.ts';
import { type Block, fmtBytes, fmtInt, fmtMs, fmtNum, fmtPct, type Section } from './table.ts';

export interface SectionOptions {
  /** Rows shown per breakdown table (the rest are counted as "more"). */
  top: number;
}

function countsTable(label: string, counts: Record<string, KeyCount>, total: number, top: number): Block {
  const entries = Object.entries(counts).sort(([ka, a], [kb, b]) => b.calls - a.calls || (ka < kb ? -1 : 1));
  const rows = entries
    .slice(0, top)
    .map(([key, v]) => [
      key,
      fmtInt(v.calls),
      fmtPct(total > 0 ? (100 * v.calls) / total : null),
      fmtNum(v.points),
    ]);
  return {
    kind: 'table',
    columns: [
      { header: label },
      { header: 'calls', align: 'right' },
      { header: 'share', align: 'right' },
      { header: 'points', align: 'right' },
    ],
    rows,
    more: Math.max(0, entries.length - top),
  };
}

function percentileRow(name: string, p: AnalysisPercentiles | null): string[] {
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

const percentileColumns = (first: string) => [
  { header: first },
  { header: 'count', align: 'right' as const },
  { header: 'min', align: 'right' as const },
  { header: 'avg', align: 'right' as const },
  { header: 'p50', align: 'right' as const },
  { header: 'p90', align: 'right' as const },
  { header: 'p95', align: 'right' as const },
  { header: 'p99', align: 'right' as const },
  { header: 'max', align: 'right' as const },
];

function runSection(a: Analysis): Section {
  const r = a.run;
  const pairs: Array<[string, string]> = [
    ['run', r.runId ?? '–'],
    ['scenario', r.cell ? `${r.scenario} (${r.cell})` : (r.scenario ?? '–')],
    ['clock', r.clock ?? '–'],
  ];
  if (r.target) pairs.push(['target', r.target]);
  if (r.source) pairs.push(['imported from', r.source]);
  if (r.startedAt) pairs.push(['started', r.startedAt]);
  pairs.push(['duration', fmtMs(r.durationMs)], ['sessions', fmtInt(r.sessions)], ['repos', fmtInt(r.repos)]);
  const i = a.input;
  if (i.file) pairs.push(['trace', i.file]);
  const records = i.records;
  pairs.push([
    'records',
    `${fmtInt(records.api)} api · ${fmtInt(records.span)} span · ${fmtInt(records.event)} event · ${fmtInt(records.gauge)} gauge`,
  ]);
  const blocks: Block[] = [{ kind: 'pairs', pairs }];
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
  if (notes.length > 0) blocks.push({ kind: 'notes', lines: notes, tone: 'warning' });
  return { title: 'Run', blocks };
}

function totalsSection(a: Analysis): Section {
  const t = a.api.totals;
  const byResource = Object.entries(a.api.counts.byResource)
    .map(([resource, v]) => `${resource} ${fmtNum(v.points)}`)
    .join(' · ');
  const pairs: Array<[string, string]> = [
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
  ];
  return { title: 'API calls', blocks: [{ kind: 'pairs', pairs }] };
}

function breakdownSections(
  a: Analysis,
  top: number,
  dimensions: Array<[keyof Analysis['api']['counts'], string]>,
): Section[] {
  const total = a.api.totals.calls;
  return dimensions.map(([key, label]) => {
    const counts = a.api.counts[key];
    const keys = Object.keys(counts);
    const unattributed = keys.length === 1 && keys[0] === NONE;
    return {
      title: `Calls by ${label}`,
      blocks: [
        unattributed
          ? { kind: 'notes', lines: [`no call carries a ${label}`], tone: 'info' }
          : countsTable(label, counts, total, top),
      ],
    };
  });
}

function burnSection(a: Analysis): Section {
  const burn = a.api.burn;
  const rows = burn.windows.map((w) => [
    w.resource,
    w.basis === 'reset' && w.reset !== null
      ? `resets ${new Date(w.reset * 1000).toISOString().slice(11, 19)}Z`
      : `hour ${fmtMs(w.startMs)}`,
    fmtMs(w.coveredMs),
    fmtInt(w.calls),
    fmtNum(w.points),
    fmtNum(w.pointsPerHour, 0),
    fmtInt(w.limit),
    fmtInt(w.usedMax),
    fmtPct(w.headroomPct),
  ]);
  const blocks: Block[] = [
    {
      kind: 'table',
      columns: [
        { header: 'resource' },
        { header: 'window' },
        { header: 'covered', align: 'right' },
        { header: 'calls', align: 'right' },
        { header: 'points', align: 'right' },
        { header: 'points/h', align: 'right' },
        { header: 'limit', align: 'right' },
        { header: 'used max', align: 'right' },
        { header: 'headroom', align: 'right' },
      ],
      rows,
    },
  ];
  const notes = [...burn.warnings];
  const opaque = Object.entries(a.api.opaque.byResource);
  if (opaque.length > 0) {
    notes.push(
      `not in the burn: ${opaque.map(([r, n]) => `${fmtInt(n)} opaque ${r} calls`).join(', ')} (cost unknown)`,
    );
  }
  if (notes.length > 0) blocks.push({ kind: 'notes', lines: notes, tone: 'warning' });
  return { title: 'Primary-limit burn per reset window', blocks };
}

function warningsSection(a: Analysis, shown: Set<string>): Section[] {
  const rest = a.warnings.filter((w) => !shown.has(w));
  return rest.length === 0
    ? []
    : [{ title: 'Warnings', blocks: [{ kind: 'notes', lines: rest, tone: 'warning' }] }];
}

export function summarySections(a: Analysis, options: SectionOptions): Section[] {
  const shown = new Set(a.api.burn.warnings);
  return [
    runSection(a),
    totalsSection(a),
    ...breakdownSections(a, options.top, [
      ['byOperation', 'operation'],
      ['byRoute', 'route'],
      ['byStatus', 'status'],
      ['bySource', 'source'],
      ['bySession', 'session'],
    ]),
    burnSection(a),
    ...warningsSection(a, shown),
  ];
}

function scorecardSection(a: Analysis): Section {
  const s = a.scorecard;
  const mark = { pass: '✓ pass', fail: '✗ FAIL', unknown: '? unknown' } as const;
  const rows = s.rows.map((r) => [
    r.title,
    scorecardFigure(r, s.at),
    `${r.comparison} ${fmtNum(r.limit)}`,
    `${mark[r.verdict]}${r.projected && r.verdict !== 'unknown' ? ' (projected)' : ''}`,
    r.basis,
  ]);
  const notes = [`verdict: ${mark[s.verdict]}`];
  if (s.projected && s.sessions > 0) {
    notes.push(
      `the run had ${s.sessions} sessions: the cost rows are projected to ${s.at} at the measured per-session cost`,
    );
  }
  return {
    title: 'Track B scorecard',
    blocks: [
      {
        kind: 'table',
        columns: [
          { header: 'row' },
          { header: 'measured', align: 'right' },
          { header: 'limit' },
          { header: 'verdict' },
          { header: 'basis' },
        ],
        rows,
      },
      { kind: 'notes', lines: notes, tone: s.verdict === 'fail' ? 'warning' : 'info' },
    ],
  };
}

function costSections(a: Analysis): Section[] {
  const api = a.api;
  const pf = api.pollingFloor;
  const sections: Section[] = [];
  const c = api.conditional;
  sections.push({
    title: 'Conditional requests',
    blocks: [
      {
        kind: 'pairs',
        pairs: [
          ['conditional requests', fmtInt(c.requests)],
          ['answered 304', `${fmtInt(c.notModified)} (${fmtPct(c.notModifiedPct)})`],
        ],
      },
    ],
  });
  const distRows = (
    d: Record<
      string,
      { cells: number; calls: number; p50: number | null; mean: number | null; max: number | null }
    >,
  ) =>
    Object.entries(d).map(([resource, v]) => [
      resource,
      fmtInt(v.cells),
      fmtInt(v.calls),
      fmtNum(v.p50),
      fmtNum(v.mean),
      fmtNum(v.max),
    ]);
  const distColumns = (first: string) => [
    { header: 'resource' },
    { header: first, align: 'right' as const },
    { header: 'calls', align: 'right' as const },
    { header: 'p50', align: 'right' as const },
    { header: 'mean', align: 'right' as const },
    { header: 'max', align: 'right' as const },
  ];
  const pfBlocks: Block[] = [];
  if (pf.attributedCalls === 0 && Object.keys(pf.sharedPerCycle).length === 0) {
    pfBlocks.push({
      kind: 'notes',
      lines: [
        'no call carries a poll cycle id (attribution `cycle`): the polling floor cannot be computed per session per cycle',
      ],
      tone: 'info',
    });
  } else {
    pfBlocks.push({
      kind: 'pairs',
      pairs: [
        ['session-attributed calls', fmtInt(pf.attributedCalls)],
        ['sessions × cycles', `${fmtInt(pf.sessions)} × ${fmtInt(pf.cycles)}`],
      ],
    });
    if (Object.keys(pf.perSessionCycle).length > 0)
      pfBlocks.push({
        kind: 'table',
        columns: distColumns('session·cycles'),
        rows: distRows(pf.perSessionCycle),
      });
    if (Object.keys(pf.sharedPerCycle).length > 0) {
      pfBlocks.push({
        kind: 'notes',
        lines: ['calls with a cycle but no session (shared, per cycle):'],
        tone: 'info',
      });
      pfBlocks.push({ kind: 'table', columns: distColumns('cycles'), rows: distRows(pf.sharedPerCycle) });
    }
    const st = pf.steady;
    if (st) {
      pfBlocks.push({
        kind: 'notes',
        lines: [
          `steady state: the ${fmtInt(st.cycles)} cycles from the steady.start marker (${fmtMs(st.sinceMs)}) on, ${fmtInt(st.sessions)} sessions:`,
        ],
        tone: 'info',
      });
      if (Object.keys(st.perSessionCycle).length > 0)
        pfBlocks.push({
          kind: 'table',
          columns: distColumns('session·cycles'),
          rows: distRows(st.perSessionCycle),
        });
      else
        pfBlocks.push({
          kind: 'notes',
          lines: ['no session-attributed calls after the marker'],
          tone: 'info',
        });
      if (Object.keys(st.sharedPerCycle).length > 0) {
        pfBlocks.push({ kind: 'notes', lines: ['steady state, shared (per cycle):'], tone: 'info' });
        pfBlocks.push({ kind: 'table', columns: distColumns('cycles'), rows: distRows(st.sharedPerCycle) });
      }
    }
  }
  sections.push({ title: 'Polling floor (calls per session per poll cycle)', blocks: pfBlocks });

  const b = api.burst;
  sections.push({
    title: 'Burst shape',
    blocks: [
      {
        kind: 'pairs',
        pairs: [
          ['max req/s, any 1 s', b.max1s ? `${fmtNum(b.max1s.perSecond)} (at ${fmtMs(b.max1s.atMs)})` : '–'],
          [
            'max req/s, any 10 s',
            b.max10s
              ? `${fmtNum(b.max10s.perSecond)} (${fmtInt(b.max10s.calls)} calls at ${fmtMs(b.max10s.atMs)})`
              : '–',
          ],
          [
            'peak concurrency',
            `${fmtInt(api.concurrency.peak)} in flight (at ${fmtMs(api.concurrency.atMs)}, ±${fmtMs(api.concurrency.resolutionMs)})`,
          ],
          [
            'writes per minute (max)',
            `${fmtInt(api.writes.maxPerMinute)} (of ${fmtInt(api.writes.total)} writes)`,
          ],
          [
            '403 / 429 / retry-after',
            `${fmtInt(api.limited.answers)} (403: ${fmtInt(api.limited.status403)}, 429: ${fmtInt(api.limited.status429)}, retry-after: ${fmtInt(api.limited.retryAfter)})`,
          ],
          ['first 60 s, calls per second', sparkline(b.first60s)],
        ],
      },
      {
        kind: 'notes',
        lines: [
          `windows slide ${fmtMs(b.stepMs)} at a time; concurrency bins are ${fmtMs(api.concurrency.resolutionMs)} wide`,
        ],
        tone: 'info',
      },
    ],
  });

  sections.push({
    title: 'Call latency',
    blocks: [
      {
        kind: 'table',
        columns: percentileColumns('calls'),
        rows: [
          percentileRow('all', api.latency.all),
          percentileRow('rest', api.latency.rest),
          percentileRow('graphql', api.latency.graphql),
        ],
      },
      {
        kind: 'notes',
        lines: ['HDR histogram, 3 significant digits (1 µs unit); min and max exact'],
        tone: 'info',
      },
    ],
  });

  const p = api.projection;
  sections.push({
    title: 'Projection: sessions under the hourly limit',
    blocks: [
      {
        kind: 'table',
        columns: [
          { header: 'resource' },
          { header: 'limit/h', align: 'right' },
          { header: 'points/h', align: 'right' },
          { header: 'shared/h', align: 'right' },
          { header: 'per session/h', align: 'right' },
          { header: 'sessions that fit', align: 'right' },
        ],
        rows: Object.entries(p.byResource).map(([resource, v]) => [
          resource,
          `${fmtInt(v.limit)}${v.limitSource === 'default' ? '*' : ''}`,
          fmtNum(v.pointsPerHour, 1),
          fmtNum(v.sharedPointsPerHour, 1),
          fmtNum(v.perSessionPointsPerHour, 2),
          v.sessionsThatFit === null ? '–' : fmtInt(v.sessionsThatFit),
        ]),
      },
      {
        kind: 'notes',
        lines: [
          `at ${fmtInt(p.sessions)} sessions; ${p.model}`,
          ...(Object.values(p.byResource).some((v) => v.limitSource === 'default')
            ? ['* limit not seen in any response: the default']
            : []),
        ],
        tone: 'info',
      },
    ],
  });

  const br = api.bracket;
  if (br) {
    sections.push({
      title: '/rate_limit bracket',
      blocks: [
        {
          kind: 'table',
          columns: [
            { header: 'resource' },
            { header: 'used before', align: 'right' },
            { header: 'used after', align: 'right' },
            { header: 'delta', align: 'right' },
            { header: 'trace points', align: 'right' },
            { header: 'unseen', align: 'right' },
          ],
          rows: Object.entries(br.byResource).map(([resource, v]) => [
            resource,
            fmtNum(v.before?.used),
            fmtNum(v.after?.used),
            fmtNum(v.deltaUsed),
            fmtNum(v.tracePoints),
            fmtNum(v.unseenPoints),
          ]),
        },
        ...(br.warnings.length > 0
          ? [{ kind: 'notes' as const, lines: br.warnings, tone: 'warning' as const }]
          : []),
      ],
    });
  }
  return sections;
}

/** The poll loop: does it keep its interval? */
function pollCyclesSection(a: Analysis): Section[] {
  const pc = a.controlPlane.pollCycles;
  if (pc === null) return [];
  const d = pc.durationMs;
  const lag = pc.lagMs;
  const pairs: Array<[string, string]> = [
    ['cycles', fmtInt(pc.count)],
    ['interval', pc.intervalMs === null ? '– (the cycles declare none)' : fmtMs(pc.intervalMs)],
    ['duration p50 / p95 / max', d ? `${fmtMs(d.p50)} / ${fmtMs(d.p95)} / ${fmtMs(d.max)}` : '–'],
    [
      'overruns (duration > interval)',
      pc.intervalMs === null
        ? '–'
        : `${fmtInt(pc.overruns)} of ${fmtInt(pc.intervalKnown)} (${fmtPct(pc.overrunPct)})`,
    ],
    ['start lag p95 / max', lag ? `${fmtMs(lag.p95)} / ${fmtMs(lag.max)}` : '–'],
    ['skipped cycles', fmtInt(pc.skipped)],
  ];
  const blocks: Block[] = [{ kind: 'pairs', pairs }];
  if (pc.overruns > 0 || pc.skipped > 0) {
    blocks.push({
      kind: 'notes',
      lines: [
        'the poll loop does not keep its interval: cycles outlast it, start late or are skipped (more concurrency, fewer calls per cycle, or a longer interval)',
      ],
      tone: 'warning',
    });
  }
  return [{ title: 'Poll cycles (control plane)', blocks }];
}

/** Open-model schedule accuracy: intended vs actual starts, missed starts, the verdict. */
export function scheduleSection(a: Analysis): Section[] {
  const s = a.schedule;
  if (!s) return [];
  const pairs: Array<[string, string]> = [
    ['scheduled starts', fmtInt(s.operations)],
    ['missed', fmtInt(s.missed)],
    [
      'start lag',
      s.lag ? `p50 ${fmtMs(s.lag.p50)} · p99 ${fmtMs(s.lag.p99)} · max ${fmtMs(s.lag.max)}` : '–',
    ],
    [
      'schedule',
      s.kept ? 'kept (a valid ceiling)' : 'NOT kept: not a valid ceiling (the offered load fell short)',
    ],
  ];
  const blocks: Block[] = [{ kind: 'pairs', pairs }];
  if (!s.kept) blocks.push({ kind: 'notes', lines: s.reasons, tone: 'warning' });
  return [{ title: 'Schedule', blocks }];
}

function speedSections(a: Analysis, top: number): Section[] {
  const sections: Section[] = [];
  if (a.spans.byName.length > 0) {
    const labelled = a.spans.byLabels.filter((s) => Object.keys(s.labels).length > 0);
    sections.push({
      title: 'Spans',
      blocks: [
        {
          kind: 'table',
          columns: percentileColumns('span'),
          rows: a.spans.byName.map((s) => percentileRow(s.name, s.latency)),
        },
        {
          kind: 'notes',
          lines: a.spans.byName
            .filter((s) => s.outcomes.error + s.outcomes.cancelled > 0)
            .map((s) => `${s.name}: ${s.outcomes.error} errors, ${s.outcomes.cancelled} cancelled`),
          tone: 'warning',
        },
      ],
    });
    if (labelled.length > 0) {
      const labelText = (labels: Record<string, unknown>) =>
        Object.entries(labels)
          .map(([k, v]) => `${k}=${String(v)}`)
          .join(' ');
      sections.push({
        title: 'Spans by label set',
        blocks: [
          {
            kind: 'table',
            columns: percentileColumns('span {labels}'),
            rows: labelled
              .slice(0, top * 2)
              .map((s) => percentileRow(`${s.name} {${labelText(s.labels)}}`, s.latency)),
            more: Math.max(0, labelled.length - top * 2),
          },
        ],
      });
    }
  }
  const events = Object.entries(a.events.byName);
  if (events.length > 0) {
    sections.push({
      title: 'Events',
      blocks: [
        {
          kind: 'table',
          columns: [{ header: 'event' }, { header: 'count', align: 'right' }],
          rows: events.map(([name, n]) => [name, fmtInt(n)]),
        },
      ],
    });
  }
  if (a.gauges.length > 0) {
    sections.push({
      title: 'Gauges',
      blocks: [
        {
          kind: 'table',
          columns: [
            { header: 'gauge' },
            { header: 'samples', align: 'right' },
            { header: 'last', align: 'right' },
            { header: 'min', align: 'right' },
            { header: 'max', align: 'right' },
          ],
          rows: a.gauges.map((g) => [
            `${g.name}${
              Object.keys(g.labels).length > 0
                ? ` {${Object.entries(g.labels)
                    .map(([k, v]) => `${k}=${String(v)}`)
                    .join(' ')}}`
                : ''
            }`,
            fmtInt(g.count),
            fmtNum(g.last),
            fmtNum(g.min),
            fmtNum(g.max),
          ]),
        },
      ],
    });
  }
  return sections;
}

// ── Turnover (park/wake): analysis.turnover ──────────────────────────────────────────────────
const OPERATION_TITLES: Record<string, string> = {
  create: 'create (register)',
  park_register: 'park_register',
  park: 'park',
  wake: 'time to wake',
  wake_first_touch: 'wake first touch',
  step: 'step',
};

/** The steady window (`turnover_window`), the whole run's latencies, and failures by kind. */
export function turnoverSections(a: Analysis): Section[] {
  const t = a.turnover;
  if (t === undefined) return [];
  const sections: Section[] = [];
  const w = t.window;
  const reasons = (m: Record<string, number>) =>
    Object.entries(m)
      .filter(([, n]) => n > 0)
      .map(([r, n]) => `${r} ${fmtInt(n)}`)
      .join(', ');
  if (w === null) {
    sections.push({
      title: 'Turnover window',
      blocks: [
        {
          kind: 'notes',
          lines: ['no turnover.fill.done marker: the fill did not finish, so there is no steady window'],
          tone: 'warning',
        },
      ],
    });
  } else {
    const sw = w.swaps;
    const missed = reasons(sw.missedByReason);
    sections.push({
      title: 'Turnover window',
      blocks: [
        {
          kind: 'pairs',
          pairs: [
            [
              'window',
              `${fmtMs(w.startMs)} → ${fmtMs(w.endMs)} (${fmtMs(w.durationMs)}, from turnover.fill.done)`,
            ],
            ['modes', `lifecycle ${t.lifecycleMode ?? '–'}, resume ${t.resumeMode ?? '–'}`],
            ['sessions registered', fmtInt(t.registered)],
            [
              'swaps done / asked',
              `${fmtInt(sw.done)} / ${fmtInt(sw.asked)} (${fmtPct(sw.donePct)})${missed ? `; missed: ${missed}` : ''}`,
            ],
            [
              'failures (attempts)',
              `busy ${fmtInt(w.failuresByKind.busy)}, crashed ${fmtInt(w.failuresByKind.crashed)}, not_found ${fmtInt(w.failuresByKind.not_found)}`,
            ],
          ],
        },
        {
          kind: 'table',
          columns: [
            { header: 'turnover_window' },
            { header: 'count', align: 'right' },
            { header: 'per s', align: 'right' },
            { header: 'failures', align: 'right' },
            { header: 'errors', align: 'right' },
            { header: 'p50', align: 'right' },
            { header: 'p90', align: 'right' },
            { header: 'p95', align: 'right' },
            { header: 'p99', align: 'right' },
            { header: 'max', align: 'right' },
          ],
          rows: w.rows.map((r) => [
            OPERATION_TITLES[r.operation] ?? r.operation,
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
        },
        {
          kind: 'table',
          columns: [
            { header: 'sessions by state' },
            { header: 'min', align: 'right' },
            { header: 'mean', align: 'right' },
            { header: 'max', align: 'right' },
            { header: 'last', align: 'right' },
          ],
          rows: [
            ...(['awake', 'parked', 'waking', 'parking'] as const).map((state) => [
              state,
              fmtInt(w.states[state].min),
              fmtNum(w.states[state].mean, 1),
              fmtInt(w.states[state].max),
              fmtInt(w.states[state].last),
            ]),
            ['total', fmtInt(w.states.total.min), '', fmtInt(w.states.total.max), ''],
          ],
        },
      ],
    });
  }
  const swaps = t.swaps;
  const missed = reasons(swaps.missedByReason);
  sections.push({
    title: 'Turnover (whole run)',
    blocks: [
      {
        kind: 'table',
        columns: percentileColumns('operation'),
        rows: [
          ...t.operations.map((r) => percentileRow(OPERATION_TITLES[r.operation] ?? r.operation, r.latency)),
          ...(t.timeToWake.implicit && t.timeToWake.explicit
            ? [
                percentileRow('time to wake {implicit}', t.timeToWake.implicit),
                percentileRow('time to wake {explicit}', t.timeToWake.explicit),
              ]
            : []),
        ],
      },
      {
        kind: 'pairs',
        pairs: [
          [
            'markers',
            `registration done ${fmtMs(t.markers.registrationDoneMs)}, fill done ${fmtMs(t.markers.fillDoneMs)}${t.markers.doneMs !== null ? `, turnover done ${fmtMs(t.markers.doneMs)}` : ''}`,
          ],
          [
            'swaps done / asked',
            `${fmtInt(swaps.done)} / ${fmtInt(swaps.asked)} (${fmtPct(swaps.donePct)})${missed ? `; missed: ${missed}` : ''}`,
          ],
        ],
      },
    ],
  });
  const f = t.failures;
  const ops = Object.keys(f.byOperation).sort();
  sections.push({
    title: 'Actor failures',
    blocks:
      f.total === 0
        ? [{ kind: 'notes', lines: ['no failed attempts'], tone: 'info' }]
        : [
            {
              kind: 'table',
              columns: [
                { header: 'kind' },
                ...ops.map((op) => ({ header: op, align: 'right' as const })),
                { header: 'total', align: 'right' },
              ],
              rows: (['busy', 'crashed', 'not_found'] as const).map((kind) => [
                kind,
                ...ops.map((op) => fmtInt(f.byOperation[op]?.[kind])),
                fmtInt(f.byKind[kind]),
              ]),
            },
            {
              kind: 'pairs',
              pairs: [
                [
                  'reactions',
                  `retried ${fmtInt(f.byReaction.retry)}, replaced ${fmtInt(f.byReaction.replace)}, gave up ${fmtInt(f.byReaction.give_up)}`,
                ],
              ],
            },
          ],
  });
  return sections;
}

/** SPEC §6 speed metrics (analysis.speed): one row per metric and label set, HDR percentiles. */
function speedMetricsSection(a: Analysis): Section[] {
  const speed = a.speed;
  if (!speed) return [];
  const rows: string[][] = [];
  for (const [name, metric] of Object.entries(speed.metrics)) {
    for (const group of metric.groups) {
      const p = group.latency;
      rows.push([
        name,
        Object.entries(group.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(' '),
        metric.role,
        fmtInt(p.count),
        fmtMs(p.p50),
        fmtMs(p.p90),
        fmtMs(p.p95),
        fmtMs(p.p99),
        fmtMs(p.max),
      ]);
    }
  }
  const byKind = new Map<string, number>();
  for (const r of speed.restarts) byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + 1);
  const outages = speed.restarts.map((r) => r.outageMs).filter((x): x is number => x !== null);
  const runs = speed.runs;
  const pairs: Array<[string, string]> = [
    [
      'runs',
      `${fmtInt(runs.created)} created · ${fmtInt(runs.withActivity)} showed activity · ${fmtInt(runs.interrupted)} interrupted by a restart · ${fmtInt(runs.noActivity)} without activity`,
    ],
  ];
  if (speed.restarts.length > 0) {
    pairs.push(
      [
        'restarts',
        `${speed.restarts.length} (${[...byKind].map(([k, n]) => `${k} ${n}`).join(' · ')})${outages.length < speed.restarts.length ? `, ${speed.restarts.length - outages.length} FAILED (never ready)` : ''}, outage max ${fmtMs(outages.length > 0 ? Math.max(...outages) : null)} (removed from recoveries)`,
      ],
      [
        'recoveries',
        `${fmtInt(speed.recoveries.length)} measured · ${fmtInt(speed.unrecovered.length)} without a provider event before the end`,
      ],
    );
  }
  const blocks: Section['blocks'] = [
    {
      kind: 'table',
      columns: [
        { header: 'metric' },
        { header: 'scope' },
        { header: 'role' },
        ...['n', 'p50', 'p90', 'p95', 'p99', 'max'].map((header) => ({ header, align: 'right' as const })),
      ],
      rows,
    },
    { kind: 'pairs', pairs },
  ];
  if (speed.notes.length > 0) blocks.push({ kind: 'notes', lines: speed.notes, tone: 'info' });
  return [{ title: 'Speed', blocks }];
}

export function analysisSections(a: Analysis, options: SectionOptions): Section[] {
  const shown = new Set([...a.api.burn.warnings, ...(a.api.bracket?.warnings ?? [])]);
  return [
    runSection(a),
    totalsSection(a),
    ...breakdownSections(a, options.top, [
      ['byOperation', 'operation'],
      ['byRoute', 'route'],
      ['byStatus', 'status'],
      ['bySource', 'source'],
      ['bySession', 'session'],
      ['byRepo', 'repo'],
      ['byPhase', 'phase'],
    ]),
    burnSection(a),
    ...costSections(a),
    ...pollCyclesSection(a),
    scorecardSection(a),
    ...turnoverSections(a),
    ...speedMetricsSection(a),
    ...scheduleSection(a),
    ...speedSections(a, options.top),
    ...warningsSection(a, shown),
  ];
}

const BARS = ' ▁▂▃▄▅▆▇█';

/** Calls per second as a one-line bar chart (max shown after it). */
export function sparkline(values: number[]): string {
  const max = Math.max(0, ...values);
  if (max === 0) return '(no calls)';
  return `${values.map((v) => BARS[Math.ceil((v / max) * (BARS.length - 1))]).join('')}  max ${fmtInt(max)}`;
}

/** How a run ended, as the `run` command knows it (the trace alone does not say all of it). */
export interface RunOutcome {
  reason: 'completed' | 'interrupted' | 'failed';
  /** Why a failed run stopped. */
  failure?: { source: string; message: string };
  /** Sessions the executors started, and those they could not start on schedule. */
  sessionsStarted: number;
  sessionsDropped: number;
  tracePath: string;
  summaryPath?: string | null;
  /** Wall-clock time the run took. */
  wallMs: number;
}

export interface RunSummaryOptions {
  outcome: RunOutcome;
  /** `--set` overrides and `--seed` as the user wrote them, shown under the scenario. */
  overrides?: readonly string[];
  /** Show the Track B scorecard (default true; `fleetbench run` leaves it to a budget verdict). */
  scorecard?: boolean;
}

/** A by-state gauge's last sample (`sessions`, or turnover's `actors`): final states, busiest first. */
function finalSessionStates(a: Analysis, gauge = 'sessions'): string {
  const gauges = a.gauges.filter((g) => g.name === gauge && typeof g.labels.state === 'string');
  if (gauges.length === 0) return '–';
  const lastAt = Math.max(...gauges.map((g) => g.lastAtMs));
  const states = gauges
    .filter((g) => g.lastAtMs === lastAt && g.last > 0)
    .sort((x, y) => y.last - x.last || (String(x.labels.state) < String(y.labels.state) ? -1 : 1))
    .map((g) => `${fmtNum(g.last)} ${String(g.labels.state)}`);
  return states.length === 0 ? 'none' : `${states.join(', ')} (at ${fmtMs(lastAt)})`;
}

/**
 * The end-of-run summary `fleetbench run` prints, k6-like: about 25 lines with what a load
 * tester reads first (the run, quota burn, the steady polling floor, burst shape, the poll
 * loop) and the Track B scorecard. The whole analysis is in the summary file.
 */
export function runSummarySections(a: Analysis, options: RunSummaryOptions): Section[] {
  const o = options.outcome;
  const r = a.run;
  const api = a.api;
  const scenario =
    r.cell && r.cell !== r.scenario ? `${r.cell} ${r.scenario ?? ''}`.trim() : (r.scenario ?? r.cell ?? '–');
  const interrupted = o.reason === 'interrupted';
  const runPairs: Array<[string, string]> = [
    ['scenario', `${scenario} · ${r.clock ?? '?'} clock · seed ${r.seed ?? '–'}`],
    ...(r.target && r.target !== 'reference' ? [['target', r.target] as [string, string]] : []),
    ...(options.overrides && options.overrides.length > 0
      ? [['overrides', options.overrides.join(' · ')] as [string, string]]
      : []),
    [
      'duration',
      `${fmtMs(r.durationMs)} run time in ${fmtMs(o.wallMs)} wall · ${o.reason === 'failed' ? 'FAILED' : interrupted ? 'INTERRUPTED' : 'completed'}`,
    ],
    o.sessionsStarted === 0 && a.turnover
      ? [
          'sessions',
          `${fmtInt(a.turnover.registered)} registered by the turnover executor · final: ${finalSessionStates(a, 'actors')}`,
        ]
      : [
          'sessions',
          `${fmtInt(o.sessionsStarted)} started, ${fmtInt(o.sessionsDropped)} dropped · final: ${finalSessionStates(a)}`,
        ],
    ['files', `trace ${o.tracePath}${o.summaryPath ? ` · summary ${o.summaryPath}` : ''}`],
  ];
  const runBlocks: Block[] = [{ kind: 'pairs', pairs: runPairs }];
  const runNotes: string[] = [];
  if (interrupted) runNotes.push('the run was interrupted: every figure covers only what ran');
  if (o.reason === 'failed')
    runNotes.push(
      `the run FAILED (${o.failure?.source ?? 'target'}: ${o.failure?.message ?? 'unknown'}): partial, budgets not judged`,
    );
  if (o.sessionsDropped > 0)
    runNotes.push(`${fmtInt(o.sessionsDropped)} sessions could not start on schedule (dropped)`);
  if (runNotes.length > 0) runBlocks.push({ kind: 'notes', lines: runNotes, tone: 'warning' });

  const c = api.conditional;
  const apiPairs: Array<[string, string]> = [
    [
      'calls',
      c.requests === 0
        ? `${fmtInt(api.totals.calls)} · no conditional requests`
        : `${fmtInt(api.totals.calls)} · 304 ${fmtPct(c.notModifiedPct)} of ${fmtInt(c.requests)} conditional`,
    ],
  ];
  for (const [resource, counts] of Object.entries(api.counts.byResource)) {
    const p = api.projection.byResource[resource];
    const perHour = p?.pointsPerHour ?? null;
    // The headroom measured at the run's own sessions: the same figure (and precision) the
    // scorecard shows beside a projected headroom row.
    const headroom =
      p && perHour !== null ? Math.round((10_000 * (p.limit - perHour)) / p.limit) / 100 : null;
    apiPairs.push([
      resource,
      `${fmtInt(counts.calls)} calls · ${fmtNum(counts.points)} points · ${fmtNum(perHour, 0)}/h of ${fmtInt(p?.limit)} · headroom ${headroom === null ? '–' : `${fmtNum(headroom)} %`} measured`,
    ]);
  }
  const pf = api.pollingFloor;
  const steady = pf.steady;
  const floor = steady ? steady.perSessionCycle.all : pf.perSessionCycle.all;
  apiPairs.push([
    steady ? 'polling floor (steady)' : 'polling floor (whole run)',
    floor === undefined || floor.p50 === null
      ? '– (no calls carry a session and a cycle)'
      : `p50 ${fmtNum(floor.p50)} · mean ${fmtNum(floor.mean)} · max ${fmtNum(floor.max)} calls/session/cycle${
          steady
            ? ` (${fmtInt(steady.cycles)} cycles from ${fmtMs(steady.sinceMs)})`
            : ' (no steady.start marker)'
        }`,
  ]);
  apiPairs.push(
    [
      'max req/s 1 s · 10 s',
      `${fmtNum(api.burst.max1s?.perSecond ?? null)} · ${fmtNum(api.burst.max10s?.perSecond ?? null)}`,
    ],
    ['peak concurrency', `${fmtInt(api.concurrency.peak)} in flight`],
    ['writes/min (max)', `${fmtInt(api.writes.maxPerMinute)} (of ${fmtInt(api.writes.total)} writes)`],
    [
      '403 / 429 / retry-after',
      `${fmtInt(api.limited.status403)} / ${fmtInt(api.limited.status429)} / ${fmtInt(api.limited.retryAfter)}`,
    ],
  );
  const pc = a.controlPlane.pollCycles;
  if (pc !== null) {
    apiPairs.push([
      'poll cycles',
      `${fmtInt(pc.count)} · p95 ${fmtMs(pc.durationMs?.p95 ?? null)} vs ${fmtMs(pc.intervalMs)} interval · ${fmtInt(pc.overruns)} overran it · ${fmtInt(pc.skipped)} skipped · lag max ${fmtMs(pc.lagMs?.max ?? null)}`,
    ]);
  }

  const s = a.scorecard;
  const mark = { pass: '✓ pass', fail: '✗ FAIL', unknown: '? unknown' } as const;
  const scoreBlocks: Block[] = [
    {
      kind: 'table',
      columns: [
        { header: 'row' },
        { header: 'measured', align: 'right' },
        { header: 'limit' },
        { header: 'verdict' },
      ],
      rows: s.rows.map((row) => [
        row.title,
        scorecardFigure(row, s.at),
        `${row.comparison} ${fmtNum(row.limit)}`,
        `${mark[row.verdict]}${row.projected && row.verdict !== 'unknown' ? ' (projected)' : ''}`,
      ]),
    },
  ];
  if (s.projected && s.sessions > 0)
    scoreBlocks.push({
      kind: 'notes',
      lines: [`headroom rows projected from ${fmtInt(s.sessions)} to ${fmtInt(s.at)} sessions`],
      tone: 'info',
    });
  return [
    { title: 'Run', blocks: runBlocks },
    // A run that started no sessions (turnover) made no API calls worth a block.
    ...(o.sessionsStarted > 0
      ? [{ title: 'GitHub API', blocks: [{ kind: 'pairs', pairs: apiPairs }] as Block[] }]
      : []),
    ...(options.scorecard === false
      ? []
      : [{ title: `Track B scorecard: ${mark[s.verdict]}`, blocks: scoreBlocks }]),
  ];
}
