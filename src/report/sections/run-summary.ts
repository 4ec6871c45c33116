/**
 * The end-of-run summary `fleetbench run` prints, k6-like: about 25 lines with what a load
 * tester reads first (the run, quota burn, the steady polling floor, burst shape, the poll
 * loop) and the Track B scorecard. The whole analysis is in the summary file.
 */
import type { Analysis } from '../../analyze/schema.ts';
import { type Block, fmtInt, fmtMs, fmtNum, fmtPct, type Section } from '../table.ts';
import { note, notesIf, type Pair, pairs, table } from './build.ts';
import { modelCoverageSection } from './control-plane.ts';
import { attributionPairs, costPairs, troublePairs } from './edges.ts';
import { scorecardColumns, scorecardRow, VERDICT_MARK } from './scorecard.ts';

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
  /** Where the scenario puts its steady.start marker: says what duration would judge the projections. */
  steadyStartMs?: number;
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

function runBlocks(a: Analysis, options: RunSummaryOptions): Block[] {
  const o = options.outcome;
  const r = a.run;
  const scenario =
    r.cell && r.cell !== r.scenario ? `${r.cell} ${r.scenario ?? ''}`.trim() : (r.scenario ?? r.cell ?? '–');
  const interrupted = o.reason === 'interrupted';
  const list: Pair[] = [
    ['scenario', `${scenario} · ${r.clock ?? '?'} clock · seed ${r.seed ?? '–'}`],
    ...(r.target && r.target !== 'reference' ? [['target', r.target] as Pair] : []),
    ...(options.overrides && options.overrides.length > 0
      ? [['overrides', options.overrides.join(' · ')] as Pair]
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
  const notes: string[] = [];
  if (interrupted) notes.push('the run was interrupted: every figure covers only what ran');
  if (o.reason === 'failed')
    notes.push(
      `the run FAILED (${o.failure?.source ?? 'target'}: ${o.failure?.message ?? 'unknown'}): partial, budgets not judged`,
    );
  if (o.sessionsDropped > 0)
    notes.push(`${fmtInt(o.sessionsDropped)} sessions could not start on schedule (dropped)`);
  return [pairs(list), ...notesIf(notes, 'warning')];
}

function apiPairs(a: Analysis): Pair[] {
  const api = a.api;
  const c = api.conditional;
  const list: Pair[] = [
    [
      'calls',
      c.requests === 0
        ? `${fmtInt(api.totals.calls)} · no conditional requests`
        : `${fmtInt(api.totals.calls)} · 304 ${fmtPct(c.notModifiedPct)} of ${fmtInt(c.requests)} conditional`,
    ],
  ];
  const window = api.projection.window;
  // Where the per-hour rate was read: the steady window, or (not judged) the whole run.
  const rateBasis = !window
    ? ''
    : window.judged
      ? window.basis === 'all-active'
        ? ` (steady: every session polling, from ${fmtMs(window.fromMs)})`
        : ` (steady, from ${fmtMs(window.fromMs)})`
      : ' over the whole run, its start included';
  for (const [resource, counts] of Object.entries(api.counts.byResource)) {
    const p = api.projection.byResource[resource];
    const perHour = p?.pointsPerHour ?? null;
    // The headroom measured at the run's own sessions: the same figure (and precision) the
    // scorecard shows beside a projected headroom row.
    const headroom =
      p && perHour !== null ? Math.round((10_000 * (p.limit - perHour)) / p.limit) / 100 : null;
    list.push([
      resource,
      `${fmtInt(counts.calls)} calls · ${fmtNum(counts.points)} points · ${fmtNum(perHour, 0)}/h of ${fmtInt(p?.limit)}${rateBasis} · headroom ${headroom === null ? '–' : `${fmtNum(headroom)} %`} ${window && !window.judged ? '(not judged)' : 'measured'}`,
    ]);
  }
  list.push(pollingFloorLine(api.pollingFloor));
  list.push(
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
    list.push([
      'poll cycles',
      `${fmtInt(pc.count)} · p95 ${fmtMs(pc.durationMs?.p95 ?? null)} vs ${fmtMs(pc.intervalMs)} interval · ${fmtInt(pc.overruns)} overran it · ${fmtInt(pc.skipped)} skipped · lag max ${fmtMs(pc.lagMs?.max ?? null)}`,
    ]);
  }
  return list;
}

function scorecardBlocks(a: Analysis): Block[] {
  const s = a.scorecard;
  return [
    table(
      scorecardColumns,
      s.rows.map((row) => scorecardRow(s, row)),
    ),
    ...(s.projected && s.sessions > 0
      ? [note([`headroom rows projected from ${fmtInt(s.sessions)} to ${fmtInt(s.at)} sessions`], 'info')]
      : []),
  ];
}

/**
 * Why the projections were not judged and, when the scenario says where its steady window starts,
 * the duration that would judge them (`--set duration=3m30s`).
 */
export function projectionNotes(a: Analysis, steadyStartMs?: number): string[] {
  const window = a.api.projection.window;
  if (!window || a.api.totals.calls === 0) return [];
  if (window.judged) return window.note ? [`steady window: ${window.note}`] : [];
  const advice =
    steadyStartMs !== undefined
      ? `this scenario's steady.start marker is at ${fmtMs(steadyStartMs)}: --set duration=${durationText(steadyStartMs + window.neededMs)} or longer judges them`
      : window.advice;
  return [
    `projections not judged (per-hour burn, headroom at ${fmtInt(a.scorecard.at)} sessions): ${window.reason}; ${advice}`,
  ];
}

/** A duration as `--set` takes it: `3m30s`. */
function durationText(ms: number): string {
  const s = Math.ceil(ms / 1000);
  const m = Math.floor(s / 60);
  const rest = s % 60;
  return m === 0 ? `${rest}s` : rest === 0 ? `${m}m` : `${m}m${rest}s`;
}

export function runSummarySections(a: Analysis, options: RunSummaryOptions): Section[] {
  const projection = projectionNotes(a, options.steadyStartMs);
  return [
    { title: 'Run', blocks: runBlocks(a, options) },
    // A run that started no sessions (turnover) made no API calls worth a block.
    ...(options.outcome.sessionsStarted > 0
      ? [{ title: 'GitHub API', blocks: [pairs(apiPairs(a)), ...notesIf(projection, 'info')] }]
      : []),
    ...modelCoverageSection(a),
    // A control plane measured from its traffic: what was attributed, a task's cost, what went wrong.
    ...(a.edges
      ? [
          {
            title: 'Edges (the control plane from its traffic)',
            blocks: [pairs([...attributionPairs(a.edges), ...costPairs(a.edges), ...troublePairs(a.edges)])],
          },
        ]
      : []),
    ...(options.scorecard === false
      ? []
      : [{ title: `Track B scorecard: ${VERDICT_MARK[a.scorecard.verdict]}`, blocks: scorecardBlocks(a) }]),
  ];
}

type PollingFloor = Analysis['api']['pollingFloor'];
type FloorFigure = PollingFloor['perSessionCycle'][string] | undefined;

const floorText = (f: FloorFigure) =>
  f === undefined || f.p50 === null
    ? null
    : `p50 ${fmtNum(f.p50)} · mean ${fmtNum(f.mean)} · max ${fmtNum(f.max)}`;

/**
 * Calls per session per poll cycle, from the steady marker on when there is one; when that
 * window is empty, why it is (and the whole run's figure, when there is one): the run ended
 * before a cycle started in it, or its calls carry no session or no cycle.
 */
export function pollingFloorLine(pf: PollingFloor): [string, string] {
  const whole = floorText(pf.perSessionCycle.all);
  const steady = pf.steady;
  if (!steady) {
    return [
      'polling floor (whole run)',
      whole === null ? `– (${noFloorReason(pf)})` : `${whole} calls/session/cycle (no steady.start marker)`,
    ];
  }
  const inWindow = floorText(steady.perSessionCycle.all);
  if (inWindow !== null)
    return [
      'polling floor (steady)',
      `${inWindow} calls/session/cycle (${fmtInt(steady.cycles)} cycles from ${fmtMs(steady.sinceMs)})`,
    ];
  const why =
    whole === null
      ? noFloorReason(pf)
      : steady.cycles === 0
        ? `no poll cycle with session calls started from ${fmtMs(steady.sinceMs)}, the steady marker, to the end; whole run: ${whole} calls/session/cycle`
        : `none of the ${fmtInt(steady.cycles)} poll cycles from ${fmtMs(steady.sinceMs)} has a call that carries a session; whole run: ${whole} calls/session/cycle`;
  return ['polling floor (steady)', `– (${why})`];
}

/** Why the whole run has no polling floor. */
function noFloorReason(pf: PollingFloor): string {
  if (pf.attributedCalls === 0) return 'no call carries a poll cycle id';
  return `the ${fmtInt(pf.attributedCalls)} calls with a poll cycle id carry no session`;
}
