/**
 * What the HTML report draws: one JSON document built from a run (summary.json) or a matrix
 * (baseline.json), embedded in the page. Only what the charts and tables need is kept (series,
 * percentiles, counts), so a 54-cell matrix stays a few hundred kB. Speed, turnover and budget
 * verdicts are read when the analysis carries them and reported absent otherwise.
 */
import { NONE } from '../analyze/analyzer.ts';
import type { Analysis, AnalysisPercentiles } from '../analyze/schema.ts';
import { scorecardFigure } from '../report/scorecard.ts';
import { activeBracket, isPartialRun, keyFigures, scorecardWords } from '../results/overview.ts';
import { incompleteTrace, type ResultSet, type ResultUnit } from '../results/results.ts';
import type {
  BudgetRow,
  GaugeGroup,
  LatencyGroup,
  Percentiles,
  RecoverySplit,
  ReportData,
  RunsOverTime,
  ScaleMetric,
  UnitReport,
} from './types.ts';

export type * from './types.ts';

export const REPORT_DATA_VERSION = 1;

const MAX_SESSIONS_SHOWN = 200;

function percentiles(p: AnalysisPercentiles): Percentiles {
  return { count: p.count, min: p.min, p50: p.p50, p90: p.p90, p95: p.p95, p99: p.p99, max: p.max };
}

function latencyGroups(a: Analysis): LatencyGroup[] {
  const groups: LatencyGroup[] = [];
  const api = Object.entries(a.api.latency).flatMap(([name, p]) =>
    p === null
      ? []
      : [{ name: name === 'all' ? 'all calls' : name === 'rest' ? 'REST' : 'GraphQL', p: percentiles(p) }],
  );
  if (api.length > 0) {
    groups.push({
      id: 'api',
      title: 'API call latency',
      explain:
        'How long GitHub (the emulator) took to answer, per protocol: each line goes from the fastest call (min) through the percentiles to the slowest (max).',
      rows: api,
    });
  }
  const spans = a.spans.byName
    .filter((s) => s.latency !== null)
    .sort((x, y) => y.count - x.count)
    .slice(0, 8)
    .map((s) => ({ name: s.name, p: percentiles(s.latency!) }));
  if (spans.length > 0) {
    groups.push({
      id: 'spans',
      title: 'Span durations',
      explain:
        'Timed operations of the control plane and the workload (poll cycles, session starts, ...): the most frequent ones, min to max.',
      rows: spans,
    });
  }
  return groups;
}

const SPEED_TITLES: Record<string, [string, string]> = {
  time_to_first_activity: [
    'Time to first activity',
    'Run created → the first thing a user would see (text, tool call or reasoning indicator). Judged.',
  ],
  time_to_first_text: ['Time to first text', 'Run created → the first text delta. Reported, never judged.'],
  input_wait: ['Input wait', 'How long the input waited for its run to exist. Reported, never judged.'],
  agent_boot: ['Agent boot', 'Provider process start → ready. Judged.'],
  agent_launch: [
    'Agent launch',
    'A run started → its agent process spawned: the control plane’s own preparation. Judged.',
  ],
  restart_recovery: [
    'Restart recovery (full)',
    'Control plane ready → the recovered run’s next provider event, outage removed. Reported.',
  ],
  restart_recovery_control_plane: [
    'Restart recovery: the control plane’s share',
    'Control plane ready → start of the provider’s session load (or the next event when nothing reloads). Judged.',
  ],
  restart_provider_load: ['Restart: provider session load', 'The provider.session.load duration. Reported.'],
  controlplane_boot: [
    'Control-plane boot',
    'A control-plane process spawned → ready, at the start and after each restart. Reported.',
  ],
  lost_run_detection: [
    'Lost-run detection',
    'The kill that orphaned a run → the control plane marking it lost. Reported.',
  ],
};

/** `codex · cold start`, `codex · hard restart`: label values as words, no field names. */
function seriesName(labels: Record<string, unknown>): string {
  const words = Object.entries(labels).map(([k, v]) =>
    k === 'start' ? `${v} start` : k === 'kind' ? `${v} restart` : String(v),
  );
  return words.length === 0 ? 'all' : words.join(' · ');
}

/** One group per speed metric, a series per label set (adapter, start kind, restart kind). */
function speedGroups(a: Analysis): LatencyGroup[] {
  return Object.entries(a.speed?.metrics ?? {}).flatMap(([name, metric]) => {
    const rows = metric.groups
      .filter((g) => g.latency.count > 0)
      .map((g) => ({ name: seriesName(g.labels), p: percentiles(g.latency) }));
    if (rows.length === 0) return [];
    const [title, explain] = SPEED_TITLES[name] ?? [name.replace(/_/g, ' '), ''];
    return [{ id: `speed-${name}`, title, explain, rows }];
  });
}

/** Restarts (kill and ready), injected faults and turnover's phase markers, in run ms. */
function timelineMarkers(a: Analysis): UnitReport['markers'] {
  const markers: UnitReport['markers'] = [];
  for (const r of a.speed?.restarts ?? []) {
    markers.push({ tMs: r.killAtMs, label: `${r.kind} restart`, kind: 'restart' });
    if (r.readyAtMs !== null && r.readyAtMs !== undefined)
      markers.push({ tMs: r.readyAtMs, label: 'ready', kind: 'ready' });
  }
  for (const f of a.faults ?? []) {
    // Restarts are drawn from the recovery they caused (kill and ready) when there is one.
    if (f.phase === 'start' && f.type === 'restart' && (a.speed?.restarts?.length ?? 0) > 0) continue;
    if (f.phase === 'end') continue;
    markers.push({ tMs: f.tMs, label: f.phase === 'failed' ? `${f.type} failed` : f.type, kind: 'fault' });
  }
  const t = a.turnover?.markers as Record<string, number | null | undefined> | undefined;
  const names: Array<[string, string]> = [
    ['fillStartMs', 'fill starts'],
    ['fillDoneMs', 'fill done'],
    ['doneMs', 'turnover done'],
  ];
  for (const [key, label] of names) {
    const v = t?.[key];
    if (typeof v === 'number') markers.push({ tMs: v, label, kind: 'marker' });
  }
  return markers.sort((x, y) => x.tMs - y.tMs);
}

const TURNOVER_NAMES: Record<string, string> = {
  park: 'park',
  park_register: 'park at registration',
  wake: 'time to wake',
  wake_first_touch: 'wake: first touch',
  step: 'step',
  create: 'create',
};

/**
 * Turnover latencies: the steady window's operations (what the budgets judge), plus parking at
 * registration from the whole run; one series each (the whole-run copies of the same samples
 * would draw the same line twice).
 */
function turnoverLatency(a: Analysis): LatencyGroup | null {
  const t = a.turnover as
    | {
        window?: { rows?: Array<{ operation: string; latency: AnalysisPercentiles | null }> };
        operations?: Array<{ operation: string; latency: AnalysisPercentiles | null }>;
      }
    | null
    | undefined;
  const windowRows = t?.window?.rows ?? [];
  const seen = new Set(windowRows.map((r) => r.operation));
  const extra = (t?.operations ?? []).filter(
    (o) => o.operation === 'park_register' && !seen.has(o.operation),
  );
  const rows = [...windowRows, ...extra]
    .filter((r) => r.latency !== null && r.latency.count > 0)
    .map((r) => ({
      name: TURNOVER_NAMES[r.operation] ?? r.operation.replace(/_/g, ' '),
      p: percentiles(r.latency!),
    }));
  return rows.length === 0
    ? null
    : {
        id: 'turnover',
        title: 'Turnover latencies',
        explain:
          'Park, wake, first touch after a wake and step latency over the steady window; parking at registration over the whole run.',
        rows,
      };
}

function gaugeGroups(a: Analysis): GaugeGroup[] {
  const byName = new Map<string, GaugeGroup>();
  for (const g of a.series.gauges ?? []) {
    const keys = Object.keys(g.labels);
    const label = keys.length === 0 ? g.name : keys.map((k) => String(g.labels[k])).join(' ');
    let group = byName.get(g.name);
    if (!group) {
      group = { name: g.name, by: keys.join(', '), lines: [] };
      byName.set(g.name, group);
    }
    group.lines.push({ label, t: g.t, v: g.v });
  }
  return [...byName.values()];
}

const TURNOVER_STATES = ['awake', 'parked', 'waking', 'parking'];

/**
 * Budget verdicts carried by the analysis itself (`analysis.budgets` or `analysis.check`), for
 * results that were judged outside a matrix: rows with metric, scope, measured, limit, verdict
 * and judged. Matrix runs carry theirs as `checks` in baseline.json.
 */
export function budgetRows(doc: unknown): BudgetRow[] | null {
  const d = doc as Record<string, unknown> | null;
  const container = (d?.budgets ?? d?.check) as Record<string, unknown> | unknown[] | undefined;
  const rows = Array.isArray(container) ? container : (container as { rows?: unknown } | undefined)?.rows;
  if (!Array.isArray(rows)) return null;
  const text = (v: unknown) =>
    v === undefined || v === null ? '–' : typeof v === 'object' ? JSON.stringify(v) : String(v);
  return rows.map((raw) => {
    const r = raw as Record<string, unknown>;
    const verdict = String(r.verdict ?? r.status ?? 'unknown');
    return {
      metric: text(r.metric ?? r.name),
      scope: text(r.scope ?? r.labels ?? ''),
      measured: r.noSamples === true || verdict === 'no-samples' ? 'no samples' : text(r.measured ?? r.value),
      limit: text(r.limit),
      verdict: verdict === 'pass' || verdict === 'fail' ? verdict : 'unknown',
      judged: r.judged !== false && r.mode !== 'report',
    };
  });
}

/**
 * A unit's verdict: its Track B scorecard when its scenario judges it (the A2 cells), otherwise
 * the budgets it was judged on (a chaos wave on native-speed, turnover on turnover).
 */
function unitVerdict(
  unit: ResultUnit,
  a: Analysis,
  budgets: BudgetRow[] | null,
): Pick<UnitReport, 'verdict' | 'verdictWords'> {
  // Cut short (Ctrl-C): partial figures are shown, never judged (docs/matrix.md).
  const partial = unit.runs.find((r) => r.incomplete !== undefined || isPartialRun(r.analysis));
  if (partial)
    return {
      verdict: 'unknown',
      verdictWords: `is partial (${partial.incomplete ?? incompleteTrace(partial.analysis) ?? 'it did not complete'}): its figures are shown, not judged`,
    };
  if (unit.scorecardJudged) return { verdict: a.scorecard.verdict, verdictWords: scorecardWords(a) };
  // A row with no samples was not judged: it neither holds nor fails (docs/budgets.md).
  const judged = (budgets ?? []).filter((b) => b.judged && b.verdict !== 'unknown');
  if (judged.length === 0)
    return {
      verdict: 'unknown',
      verdictWords:
        (budgets ?? []).length > 0
          ? 'has no samples for any of its budget rows: nothing judged'
          : 'is judged on no budget (the Track B scorecard does not apply to it)',
    };
  const failing = judged.filter((b) => b.verdict === 'fail');
  return failing.length === 0
    ? {
        verdict: 'pass',
        verdictWords:
          judged.length === 1 ? 'holds its one judged budget' : `holds all ${judged.length} judged budgets`,
      }
    : {
        verdict: 'fail',
        verdictWords: `breaches ${failing.length} of ${judged.length} judged budget${judged.length === 1 ? '' : 's'}: ${failing
          .map((b) => `${b.metric}${b.scope ? ` {${b.scope}}` : ''} ${b.measured} (limit ${b.limit})`)
          .join('; ')}`,
      };
}

/** Runs over time, from the speed analysis' timeline (absent: a run without native runs). */
function runsOverTime(a: Analysis): RunsOverTime | null {
  const speed = a.speed;
  const timeline = speed?.timeline;
  if (!speed || !timeline || timeline.runs.length === 0) return null;
  const sessions = [...new Set(timeline.runs.map((r) => r.session))].sort();
  const index = new Map(sessions.map((id, i) => [id, i]));
  const at = (session: string | null) => (session === null ? null : (index.get(session) ?? null));
  return {
    durationMs: a.run.durationMs,
    sessions,
    runs: timeline.runs.map((r) => ({
      session: index.get(r.session)!,
      createdMs: r.createdAtMs,
      activityMs: r.firstActivityAtMs,
      endedMs: r.endedAtMs,
      status: r.status,
    })),
    restarts: speed.restarts.map((r) => ({ kind: r.kind, killMs: r.killAtMs, readyMs: r.readyAtMs })),
    recoveries: speed.recoveries.flatMap((r) => {
      const session = at(r.session);
      return session === null
        ? []
        : [
            {
              session,
              kind: r.kind,
              killMs: r.killAtMs ?? null,
              lostMs: r.lostAtMs ?? null,
              retryMs: r.retryAtMs ?? null,
              eventMs: r.eventAtMs,
            },
          ];
    }),
    unrecovered: speed.unrecovered.flatMap((u) => {
      const session = at(u.session);
      return session === null
        ? []
        : [
            {
              session,
              kind: u.kind,
              killMs: u.killAtMs ?? null,
              lostMs: u.lostAtMs ?? null,
              status: u.status ?? null,
              errorCode: u.errorCode ?? null,
              open: u.open === true,
            },
          ];
    }),
    skipped: timeline.skipped.map((k) => ({ session: at(k.session), tMs: k.tMs })),
    leftOut: timeline.leftOut,
  };
}

/** Run ms → `m:ss`. */
const clockText = (ms: number) =>
  `${Math.floor(ms / 60_000)}:${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}`;

/** `adapter=codex_local kind=hard` → its labels. */
function scopeLabels(scope: string): Record<string, string> {
  return Object.fromEntries(
    scope
      .split(' ')
      .map((part) => part.split('='))
      .filter((kv): kv is [string, string] => kv.length === 2),
  );
}

/**
 * One bar per recovery, split into the control plane's share and the provider's, with the
 * judged control-plane limit (p95) of the budget row whose scope holds it.
 */
function recoverySplit(a: Analysis, budgets: BudgetRow[] | null): RecoverySplit | null {
  const speed = a.speed;
  if (!speed || (speed.recoveries.length === 0 && speed.unrecovered.length === 0)) return null;
  const rows = (budgets ?? []).filter((b) => b.metric === 'restart_recovery_control_plane' && b.limits);
  const limitRow = (adapter: string, kind: string) =>
    rows.find((b) => {
      const labels = scopeLabels(b.scope);
      return labels.adapter === adapter && (labels.kind === undefined || labels.kind === kind);
    });
  // In the order of the restarts, then by session: one restart's recoveries side by side.
  const recoveries = [...speed.recoveries].sort(
    (x, y) => x.readyAtMs - y.readyAtMs || (x.session < y.session ? -1 : x.session > y.session ? 1 : 0),
  );
  return {
    bars: recoveries.map((r) => {
      const row = limitRow(r.adapter, r.kind);
      return {
        label: `${r.session} · ${r.kind} at ${clockText(r.killAtMs ?? r.readyAtMs)}`,
        adapter: r.adapter,
        kind: r.kind,
        controlPlaneMs: r.controlPlaneMs,
        providerMs: Math.max(0, r.fullMs - r.controlPlaneMs),
        limitMs: row?.limits?.p95 ?? row?.limits?.max ?? null,
      };
    }),
    unrecovered: speed.unrecovered.map(
      (u) =>
        `${u.session} (${u.adapter}, ${u.kind} restart): ${
          u.open
            ? 'still recovering when the trace ended'
            : `${u.status ?? 'ended'}${u.errorCode ? `, ${u.errorCode}` : ''}`
        }`,
    ),
    budget: rows[0]?.budget ?? null,
  };
}

export function unitReport(unit: ResultUnit): UnitReport {
  const run = unit.runs[0]!;
  const a = run.analysis;
  const budgets = run.checks ?? budgetRows(a);
  const sessions = Object.entries(a.api.counts.bySession)
    .filter(([key]) => key !== NONE)
    .sort(([ka, x], [kb, y]) => y.calls - x.calls || (ka < kb ? -1 : 1));
  const limits = a.api.projection.byResource;
  const turnoverStates = gaugeGroups(a).find((g) =>
    g.lines.some((l) => TURNOVER_STATES.includes(l.label.split(' ').pop() ?? '')),
  );
  const turnoverPresent = a.turnover !== undefined && a.turnover !== null;
  return {
    id: unit.id,
    heading: unit.heading,
    whatItTells: unit.whatItTells,
    runs: unit.runs.length,
    seed: run.seed,
    dir: run.dir,
    ...unitVerdict(unit, a, budgets),
    scorecardJudged: unit.scorecardJudged,
    ended: a.input.footer,
    projected: a.scorecard.projected,
    figures: keyFigures(a, unit.scorecardJudged),
    bracket: activeBracket(a),
    scorecard: a.scorecard.rows.map((r) => ({ ...r, shown: scorecardFigure(r, a.scorecard.at) })),
    budgets,
    durationMs: a.run.durationMs,
    sessions: a.run.sessions,
    calls: a.series.calls,
    calls10s: a.series.calls10s,
    first60s: a.api.burst.first60s,
    perSession: {
      ids: sessions.slice(0, MAX_SESSIONS_SHOWN).map(([k]) => k),
      calls: sessions.slice(0, MAX_SESSIONS_SHOWN).map(([, v]) => v.calls),
      unattributed: a.api.counts.bySession[NONE]?.calls ?? 0,
      more: Math.max(0, sessions.length - MAX_SESSIONS_SHOWN),
    },
    burn: {
      binMs: a.series.points.binMs,
      resources: Object.entries(a.series.points.byResource)
        .filter(([, values]) => values.some((v) => v > 0))
        .map(([resource, points]) => ({ resource, points, limit: limits[resource]?.limit ?? null })),
    },
    latency: latencyGroups(a),
    gauges: gaugeGroups(a),
    speed: speedGroups(a),
    githubCalls: a.api.totals.calls,
    runsOverTime: runsOverTime(a),
    recoverySplit: recoverySplit(a, budgets),
    markers: timelineMarkers(a),
    turnover: turnoverPresent
      ? {
          latency: turnoverLatency(a),
          states: turnoverStates ?? null,
        }
      : null,
    warnings: a.warnings,
  };
}

const SCALE_METRICS: Array<ScaleMetric & { get: (a: Analysis) => number | null | undefined }> = [
  {
    id: 'core-per-session-hour',
    title: 'REST core points per session per hour',
    unit: 'points/h',
    better: 'lower',
    get: (a) => a.api.projection.byResource.core?.perSessionPointsPerHour,
  },
  {
    id: 'core-per-hour',
    title: 'REST core points per hour (all sessions)',
    unit: 'points/h',
    better: 'lower',
    get: (a) => a.api.projection.byResource.core?.pointsPerHour,
  },
  {
    id: 'calls-per-session-cycle',
    title: 'calls per session per poll cycle (mean)',
    unit: 'calls',
    better: 'lower',
    get: (a) => a.api.pollingFloor.perSessionCycle.all?.mean,
  },
  {
    id: 'rest-core-headroom',
    title: 'REST core headroom at 50 sessions (projected from each cell’s own sessions below 50)',
    unit: '%',
    better: 'higher',
    get: (a) => a.scorecard.rows.find((r) => r.id === 'rest-core-headroom')?.measured,
  },
  {
    id: 'peak',
    title: 'peak concurrency',
    unit: 'in flight',
    better: 'lower',
    get: (a) => a.api.concurrency.peak,
  },
  {
    id: 'max-1s',
    title: 'max req/s over any 1 s',
    unit: 'req/s',
    better: 'lower',
    get: (a) => a.api.burst.max1s?.perSecond,
  },
  {
    id: 'max-10s',
    title: 'max req/s over any 10 s',
    unit: 'req/s',
    better: 'lower',
    get: (a) => a.api.burst.max10s?.perSecond,
  },
  {
    id: 'writes',
    title: 'writes per minute (max)',
    unit: 'writes/min',
    better: 'lower',
    get: (a) => a.api.writes.maxPerMinute,
  },
];

function overall(units: UnitReport[], notRun: string[] = []): ReportData['overall'] {
  const budgetFails = (u: UnitReport) => (u.budgets ?? []).filter((b) => b.judged && b.verdict === 'fail');
  const isPartial = (u: UnitReport) => u.ended === 'interrupted' || u.ended === 'failed';
  const partial = units.filter(isPartial);
  const failing = units.filter((u) => !isPartial(u) && (u.verdict === 'fail' || budgetFails(u).length > 0));
  // What was not judged is counted beside the verdict, never folded into it.
  const unjudged = [
    ...(partial.length > 0
      ? [`${partial.length} partial (interrupted, not judged): ${partial.map((u) => u.id).join(', ')}`]
      : []),
    ...(notRun.length > 0 ? [`${notRun.length} did not run: ${notRun.join(', ')}`] : []),
  ];
  const after = unjudged.length > 0 ? ` ${unjudged.join('; ')}.` : '';
  if (units.length === 1 && notRun.length === 0) {
    const u = units[0]!;
    return { verdict: failing.length > 0 ? 'fail' : u.verdict, words: `${u.id} ${u.verdictWords}.` };
  }
  const judgedOn = units.some((u) => !u.scorecardJudged)
    ? 'their budgets (the A2 cells: the Track B scorecard)'
    : 'every Track B rule';
  const judged = units.length - partial.length;
  if (failing.length === 0) {
    if (judged === 0) return { verdict: 'unknown', words: `No run ran to the end: nothing judged.${after}` };
    return {
      verdict: unjudged.length > 0 ? 'unknown' : 'pass',
      words: `${judged === units.length && notRun.length === 0 ? `All ${judged} runs pass` : `All ${judged} judged runs pass`} ${judgedOn}.${after}`,
    };
  }
  const reasons = failing.map((u) => {
    const rules = u.scorecardJudged
      ? u.scorecard.filter((r) => r.verdict === 'fail').map((r) => r.title)
      : [];
    const budgets = budgetFails(u).map((b) => b.metric);
    return `${u.id} (${[...rules, ...budgets].join(', ')})`;
  });
  return {
    verdict: 'fail',
    words: `${failing.length} of ${judged} judged runs fail: ${reasons.join('; ')}; the others pass.${after}`,
  };
}

export function reportData(set: ResultSet, options: { title?: string } = {}): ReportData {
  const units = set.units.filter((u) => u.runs.length > 0).map((u) => unitReport(u));
  const b = set.baseline;
  // Scale curves only for scenarios run at more than one scale: a single point is no curve.
  const ran = b?.units.filter((u) => u.cell !== null && u.runs.length > 0) ?? [];
  const scalesOf = (scenario: string) =>
    new Set(ran.filter((u) => u.cell!.scenario === scenario).map((u) => u.cell!.scale));
  const scenarios = [...new Set(ran.map((u) => u.cell!.scenario))].filter((id) => scalesOf(id).size > 1);
  const cells = ran.filter((u) => scenarios.includes(u.cell!.scenario));
  return {
    version: REPORT_DATA_VERSION,
    kind: set.kind === 'baseline' ? 'matrix' : 'run',
    title:
      options.title ??
      (set.kind === 'baseline'
        ? `fleetbench matrix: ${units.length} cell${units.length === 1 ? '' : 's'}`
        : `fleetbench run: ${units[0]?.heading ?? set.source}`),
    source: set.source,
    generator:
      `${units[0] ? set.units[0]!.runs[0]!.analysis.generator.name : 'fleetbench'} ${set.units[0]?.runs[0]?.analysis.generator.version ?? ''}`.trim(),
    overall: overall(
      units,
      set.units.filter((u) => u.runs.length === 0).map((u) => u.id),
    ),
    units,
    scale:
      cells.length > 1
        ? {
            metrics: SCALE_METRICS.map(({ get: _get, ...m }) => m),
            scenarios: scenarios.map((id) => ({
              id,
              title: cells
                .find((c) => c.cell!.scenario === id)!
                .heading.split(',')[0]!
                .replace(/^\S+: /, ''),
            })),
            cells: cells.map((u) => ({
              id: u.id,
              scenario: u.cell!.scenario,
              topology: u.cell!.topology,
              scale: u.cell!.scale,
              values: Object.fromEntries(
                SCALE_METRICS.map((m) => {
                  const v = m.get(u.runs[0]!.analysis);
                  return [m.id, v === undefined || v === null || !Number.isFinite(v) ? null : v];
                }),
              ),
            })),
          }
        : null,
    pruning: b?.pruning ?? null,
    overrides: b?.overrides ?? [],
    repeats: b?.repeats ?? 1,
  };
}
