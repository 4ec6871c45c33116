/**
 * The report page's script: reads the embedded JSON (model.ts) and draws the tables and charts
 * with uPlot. Bundled with uPlot by esbuild into the page (page.ts): no network, no globals
 * but `window.fleetbenchReport` (what was drawn, for tests and for curious readers).
 */
import uPlot from 'uplot';
import { BRACKET_COLUMNS } from '../../results/bracket-row.ts';
import type {
  BudgetRow,
  GaugeGroup,
  LatencyGroup,
  ReportData,
  ScaleMetric,
  TimelineMarker,
  UnitReport,
} from '../types.ts';
import { recoverySplitLegend, recoverySplitSvg, runsOverTimeLegend, runsOverTimeSvg } from './speed.ts';

type Child = Node | string | null | undefined | false;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined && c !== false) node.append(c);
  return node;
}

/** Okabe–Ito: six colours told apart with every common colour-vision deficiency. */
const PALETTE = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9'];
/** A chart with more series than this is split into small multiples. */
const MAX_SERIES = PALETTE.length;
const nf = new Intl.NumberFormat('en-US', { maximumFractionDigits: 2 });
const fmt = (v: number | null | undefined) =>
  v === null || v === undefined || Number.isNaN(v) ? '–' : nf.format(v);

function fmtMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '–';
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${nf.format(ms)} ms`;
  if (ms < 60_000) return `${nf.format(ms / 1000)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** Run time in seconds → `m:ss` (or `h:mm:ss`). */
function clock(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

const charts: Array<{ id: string; plot: uPlot }> = [];
/** What was drawn: chart ids, and each chart's title, axis labels and series (tests read it). */
const report = {
  charts: [] as string[],
  notes: [] as string[],
  layout: [] as Array<{ id: string; title: string; xLabel: string; yLabel: string; series: string[] }>,
  /** SVG pictures (runs over time, recovery split): id, title and how many marks of each kind. */
  pictures: [] as Array<{ id: string; title: string; marks: Record<string, number> }>,
};
(window as unknown as { fleetbenchReport: typeof report }).fleetbenchReport = report;

interface ChartSpec {
  id: string;
  title: string;
  explain: string;
  data: uPlot.AlignedData;
  series: uPlot.Series[];
  axes?: uPlot.Axis[];
  scales?: uPlot.Scales;
  xLabel: string;
  yLabel: string;
  xFormat?: (v: number) => string;
  height?: number;
  legendNote?: string;
  /** Vertical lines at these moments (x in the chart's own unit). */
  markers?: Array<{ x: number; label: string; kind: TimelineMarker['kind'] }>;
}

function figure(spec: ChartSpec): HTMLElement {
  const holder = el('div', { class: 'chart', 'data-chart': spec.id });
  const fig = el(
    'figure',
    { id: `chart-${spec.id}` },
    el('h4', {}, spec.title),
    el('p', { class: 'explain' }, spec.explain),
    holder,
    spec.legendNote ? el('p', { class: 'note' }, spec.legendNote) : null,
  );
  // Drawn once the figure is in the document and has a width.
  queueMicrotask(() => draw(spec, holder));
  return fig;
}

function draw(spec: ChartSpec, holder: HTMLElement): void {
  const width = Math.max(320, Math.min(holder.clientWidth || 900, 1100));
  const xFormat = spec.xFormat ?? ((v: number) => fmt(v));
  const opts: uPlot.Options = {
    width,
    height: spec.height ?? 260,
    series: [{ label: spec.xLabel, value: (_u, v) => (v === null ? '–' : xFormat(v)) }, ...spec.series],
    scales: { x: { time: false }, ...spec.scales },
    axes: spec.axes ?? [
      { label: spec.xLabel, values: (_u, splits) => splits.map((v) => xFormat(v)), stroke: '#374151' },
      { label: spec.yLabel, stroke: '#374151', size: 60 },
    ],
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
    hooks: {
      ...(spec.markers && spec.markers.length > 0
        ? { draw: [(u: uPlot) => drawMarkers(u, spec.markers!)] }
        : {}),
      // Without a cursor on the chart (a static view, a print, a screenshot) the legend shows
      // the values at the last point with data, not dashes.
      setLegend: [
        (u: uPlot) => {
          if (u.legend.idx === null || u.legend.idx === undefined) u.setLegend({ idx: resting });
        },
      ],
    },
  };
  const resting = restingIndex(spec.data);
  const plot = new uPlot(opts, spec.data, holder);
  plot.setLegend({ idx: resting });
  charts.push({ id: spec.id, plot });
  report.charts = report.charts.filter((id) => id !== spec.id);
  report.charts.push(spec.id);
  report.layout = report.layout.filter((l) => l.id !== spec.id);
  report.layout.push({
    id: spec.id,
    title: spec.title,
    xLabel: String(opts.axes?.[0]?.label ?? ''),
    yLabel: String(opts.axes?.[1]?.label ?? ''),
    series: spec.series.map((s) => String(s.label ?? '')),
  });
}

/** The last x index where some series has a value: what a legend shows when no cursor is on the chart. */
function restingIndex(data: uPlot.AlignedData): number {
  for (let i = data[0].length - 1; i > 0; i--)
    if (data.slice(1).some((values) => values[i] !== null && values[i] !== undefined)) return i;
  return 0;
}

const MARKER_COLOUR = { restart: '#b91c1c', ready: '#15803d', fault: '#b45309', marker: '#4b5563' } as const;

/** Restarts, faults and phase markers as labelled dashed lines across the plot. */
function drawMarkers(u: uPlot, markers: NonNullable<ChartSpec['markers']>): void {
  const { ctx } = u;
  const { top, height } = u.bbox;
  ctx.save();
  ctx.font = `${Math.round(10 * devicePixelRatio)}px sans-serif`;
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  ctx.lineWidth = devicePixelRatio;
  let lastLabelX = Number.NEGATIVE_INFINITY;
  for (const m of markers) {
    const x = Math.round(u.valToPos(m.x, 'x', true));
    if (!Number.isFinite(x) || x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
    ctx.strokeStyle = MARKER_COLOUR[m.kind];
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    // Labels that would overlap the previous one are left out (the line stays).
    if (x - lastLabelX > 70 * devicePixelRatio) {
      ctx.fillStyle = MARKER_COLOUR[m.kind];
      ctx.fillText(m.label, x + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
      lastLabelX = x;
    }
  }
  ctx.restore();
}

/** The run's markers in the x unit of a timeline (run seconds by default). */
function markersInSeconds(u: UnitReport, scale = 1000): ChartSpec['markers'] {
  return u.markers.map((m) => ({ x: m.tMs / scale, label: m.label, kind: m.kind }));
}

function markerNote(u: UnitReport): string {
  if (u.markers.length === 0) return '';
  const words = {
    restart: 'restarts (red)',
    ready: 'control plane ready again (green)',
    fault: 'faults (amber)',
    marker: 'phase markers (grey)',
  };
  const kinds = [...new Set(u.markers.map((m) => words[m.kind]))];
  return ` Dashed lines: ${kinds.join(', ')}.`;
}

/** A y scale that starts at 0 (counts and rates are never drawn from an arbitrary floor). */
const FROM_ZERO: uPlot.Scale = { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] };

function line(label: string, i: number, extra: Partial<uPlot.Series> = {}): uPlot.Series {
  return { label, stroke: PALETTE[i % PALETTE.length]!, width: 1.5, value: (_u, v) => fmt(v), ...extra };
}

function bars(label: string, color: string): uPlot.Series {
  return {
    label,
    stroke: color,
    fill: `${color}99`,
    width: 1,
    paths: uPlot.paths.bars!({ size: [0.8, 40] }),
    points: { show: false },
    value: (_u, v) => fmt(v),
  };
}

function note(text: string, tone: 'info' | 'warn' = 'info'): HTMLElement {
  report.notes.push(text);
  return el('p', { class: `callout ${tone}` }, text);
}

function table(headers: string[], rows: Array<Array<Node | string>>, cls = ''): HTMLElement {
  return el(
    'table',
    { class: cls },
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', {}, c))))),
  );
}

const VERDICT_WORD = { pass: 'PASS', fail: 'FAIL', unknown: 'NOT MEASURED' } as const;

function badge(verdict: 'pass' | 'fail' | 'unknown'): HTMLElement {
  return el('span', { class: `badge ${verdict}` }, VERDICT_WORD[verdict]);
}

function comparisonWords(c: string): string {
  return { '>=': 'at least', '<': 'below', '<=': 'at most', '==': 'exactly' }[c] ?? c;
}

// ——— one run ————————————————————————————————————————————————————————————————————————————

function verdictSection(u: UnitReport): HTMLElement {
  const rows = u.scorecard.map((r) => [
    r.title,
    r.shown,
    `${comparisonWords(r.comparison)} ${fmt(r.limit)} ${r.unit}`,
    badge(r.verdict),
    r.basis,
  ]);
  const section = el(
    'section',
    { class: 'card' },
    el('h3', {}, 'Budget verdicts'),
    el(
      'p',
      { class: 'explain' },
      u.scorecardJudged
        ? 'The Track B scorecard is the built-in budget for API cost: every rule must hold for a control plane to run 50 sessions on one 5,000/h GitHub token without being throttled. '
        : 'This run is judged on the budgets its scenario names (below), not on the Track B scorecard: a chaos wave or a turnover run is not sized for the API cost rules, so none is shown. ',
      u.scorecardJudged && u.projected && u.sessions > 0
        ? `This run had ${u.sessions} session${u.sessions === 1 ? '' : 's'}: the two headroom rows project its per-session cost to 50 sessions; the other rows are measured as they were.`
        : '',
    ),
    u.ended === 'completed'
      ? ''
      : note(
          u.ended === null
            ? 'This trace has no footer (the run was killed or is still being written): every figure covers only what was recorded.'
            : `This run ended ${u.ended} (Ctrl-C or a failure): every figure covers only what ran before that.`,
          'warn',
        ),
    el('p', { class: `verdict ${u.verdict}` }, badge(u.verdict), ` ${u.id} ${u.verdictWords}.`),
    // Judged on its own budgets only: no Track B verdict beside them.
    u.scorecardJudged
      ? table(['rule', 'measured', 'limit', 'verdict', 'how it was measured'], rows, 'scorecard')
      : '',
  );
  section.append(budgetTable(u.budgets));
  return section;
}

function budgetTable(budgets: BudgetRow[] | null): HTMLElement {
  if (budgets === null || budgets.length === 0) {
    return note(
      'No speed or turnover budget checks in these results: they appear here when the run carries budget verdicts (fleetbench check, docs/budgets.md).',
    );
  }
  return el(
    'div',
    {},
    el('h4', {}, 'Budget checks'),
    table(
      ['metric', 'scope', 'measured', 'limit', 'mode', 'verdict'],
      budgets.map((b) => [
        b.metric,
        b.scope,
        b.measured,
        b.limit,
        b.judged ? 'judged' : 'report only',
        budgetVerdict(b),
      ]),
    ),
  );
}

/**
 * The terminal's words (fleetbench check): judged rows pass or FAIL; report-only rows are never
 * a pass or a failure, they are `ok`, `over` their limit, or `reported` (no limit).
 */
function budgetVerdict(b: BudgetRow): HTMLElement {
  if (b.judged) return badge(b.verdict);
  const words = b.verdict === 'fail' ? 'over' : b.verdict === 'pass' ? 'ok' : 'reported';
  return el('span', { class: `cell ${b.verdict === 'fail' ? 'unknown' : ''}` }, words);
}

function figuresSection(u: UnitReport): HTMLElement {
  const showBracket = u.githubCalls > 0 || u.bracket.length > 0;
  const bracket = !showBracket
    ? ''
    : u.bracket.length === 0
      ? note('No /rate_limit snapshots bracket this run.')
      : table(
          [...BRACKET_COLUMNS],
          u.bracket.map((b) => [
            b.resource,
            fmt(b.beforeUsed),
            fmt(b.afterUsed),
            fmt(b.limit),
            b.delta === null ? 'window reset in between' : `${b.delta >= 0 ? '+' : ''}${fmt(b.delta)}`,
            fmt(b.tracePoints),
            fmt(b.unseenPoints),
          ]),
        );
  return el(
    'section',
    { class: 'card' },
    el('h3', {}, 'Summary'),
    table(
      ['figure', 'value'],
      u.figures.map(([k, v]) => [k, v]),
      'pairs',
    ),
    // A run that made no GitHub calls has no cost for the bracket to check.
    ...(showBracket
      ? [
          el('h4', {}, 'Rate-limit bracket'),
          el(
            'p',
            { class: 'explain' },
            'GitHub’s /rate_limit read just before and just after the run: the delta is what the run really cost, including calls the trace could not see.',
          ),
          bracket,
        ]
      : []),
  );
}

function callsChart(u: UnitReport): HTMLElement {
  const binS = u.calls.binMs / 1000;
  const x = u.calls.values.map((_, i) => i * binS);
  const perSecond = u.calls.values.map((v) => v / binS);
  const tenS = u.calls10s.binMs / 1000;
  const smooth = x.map((t) => (u.calls10s.values[Math.floor(t / tenS)] ?? 0) / tenS);
  return figure({
    id: 'calls',
    title: 'Calls over time',
    explain: `API calls started per second (grey bars: ${binS} s bins) and their average over ${tenS} s windows (blue line), over the ${fmtMs(u.durationMs)} run. Spikes are poll cycles, spawns or bursts${u.scorecardJudged ? '; the Track B limits are 30 req/s over any 1 s and 20 req/s over any 10 s' : ''}.${markerNote(u)}`,
    data: [x, perSecond, smooth],
    series: [
      { ...bars(`calls/s (${binS} s bins)`, '#9ca3af') },
      line(`calls/s, ${tenS} s average`, 0, { width: 2 }),
    ],
    xLabel: 'run time (m:ss)',
    yLabel: 'calls per second',
    xFormat: clock,
    scales: { y: FROM_ZERO },
    markers: markersInSeconds(u),
  });
}

function burstChart(u: UnitReport): HTMLElement {
  return figure({
    id: 'burst',
    title: 'Burst shape: the first 60 seconds',
    explain:
      'Calls started in each of the first 60 seconds: what a cold or freshly started control plane sends before its caches and ETags take effect.',
    data: [u.first60s.map((_, i) => i), u.first60s],
    series: [bars('calls in that second', '#2563eb')],
    xLabel: 'second of the run',
    yLabel: 'calls',
    xFormat: (v) => `${Math.round(v)} s`,
    scales: { y: FROM_ZERO },
  });
}

function perSessionChart(u: UnitReport): HTMLElement {
  if (u.perSession.ids.length === 0) {
    return note(
      'No call carries a session: calls per session cannot be shown (the trace has no per-session attribution).',
    );
  }
  const ids = u.perSession.ids;
  return figure({
    id: 'per-session',
    title: 'Calls per session',
    explain: `Calls attributed to each session over the whole run, busiest first (hover for the session id). ${u.perSession.unattributed > 0 ? `${fmt(u.perSession.unattributed)} calls belong to no session (shared guards and GraphQL batches).` : ''}`,
    data: [ids.map((_, i) => i + 1), u.perSession.calls],
    series: [bars('calls', '#7c3aed')],
    xLabel: 'session (busiest first)',
    yLabel: 'calls',
    xFormat: (v) => ids[Math.round(v) - 1] ?? String(Math.round(v)),
    // Half a bar of room at each end, so the first and last bars are whole; calls from 0.
    scales: { x: { time: false, range: [0.5, ids.length + 0.5] }, y: FROM_ZERO },
    axes: [
      {
        label: 'sessions, busiest first',
        values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')),
        stroke: '#374151',
      },
      { label: 'calls', stroke: '#374151', size: 60 },
    ],
    legendNote: u.perSession.more > 0 ? `${u.perSession.more} quieter sessions not drawn.` : undefined,
  });
}

function burnChart(u: UnitReport): HTMLElement {
  if (u.burn.resources.length === 0) return note('No primary-limit points were charged in this run.');
  const binMin = u.burn.binMs / 60_000;
  const length = Math.max(...u.burn.resources.map((r) => r.points.length));
  const x = Array.from({ length: length + 1 }, (_, i) => i * binMin);
  const series: uPlot.Series[] = [];
  const data: Array<Array<number | null>> = [x];
  u.burn.resources.forEach((r, i) => {
    let sum = 0;
    data.push([0, ...Array.from({ length }, (_, k) => (sum += r.points[k] ?? 0))]);
    series.push(line(`${r.resource} points used`, i, { width: 2 }));
  });
  // One pace line per distinct limit (core and GraphQL are both 5,000/h by default).
  const limits = new Map<number, string[]>();
  for (const r of u.burn.resources)
    if (r.limit !== null) limits.set(r.limit, [...(limits.get(r.limit) ?? []), r.resource]);
  [...limits].forEach(([limit, resources], i) => {
    data.push(x.map((m) => (limit * m) / 60));
    series.push({
      label: `limit pace: ${fmt(limit)}/h (${resources.join(', ')})`,
      stroke: '#6b7280',
      width: 1.5,
      dash: [6, 4 + 2 * i],
      points: { show: false },
      value: (_u, v) => fmt(v),
    });
  });
  return figure({
    id: 'burn',
    title: 'Rate-limit burn against the limit',
    explain:
      'Primary-limit points used since the start (solid) against the pace that would use the whole hourly limit in exactly one hour (dashed). A solid line above its dashed one runs out of quota before the hour resets.',
    data: data as uPlot.AlignedData,
    series,
    xLabel: 'run time (minutes)',
    yLabel: 'points',
    xFormat: (v) => `${fmt(v)} min`,
    scales: { y: FROM_ZERO },
    markers: markersInSeconds(u, 60_000),
  });
}

/**
 * A percentile spectrum, HDR-style: the x axis is −log10(1 − q), so 50 %, 90 %, 99 % and the
 * maximum are evenly spaced and the tail gets the room it deserves.
 */
const PERCENTILE_TICKS: Array<{
  label: string;
  x: number;
  key: 'min' | 'p50' | 'p90' | 'p95' | 'p99' | 'max';
}> = [
  { label: '0 %', x: 0, key: 'min' },
  { label: '50 %', x: Math.log10(2), key: 'p50' },
  { label: '90 %', x: 1, key: 'p90' },
  { label: '95 %', x: Math.log10(20), key: 'p95' },
  { label: '99 %', x: 2, key: 'p99' },
  { label: 'max', x: 3, key: 'max' },
];
const percentileTickLabel = (v: number) =>
  PERCENTILE_TICKS.find((s) => Math.abs(s.x - v) < 1e-9)?.label ?? '';

/** One readable unit for a chart's latencies: ms, s or min, whichever fits its largest value. */
function latencyUnit(maxMs: number): { name: string; short: string; perMs: number } {
  if (maxMs >= 120_000) return { name: 'minutes', short: 'min', perMs: 1 / 60_000 };
  if (maxMs >= 2_000) return { name: 'seconds', short: 's', perMs: 1 / 1000 };
  return { name: 'milliseconds', short: 'ms', perMs: 1 };
}

/** Latency distributions as small multiples: at most MAX_SERIES series a chart, then a table. */
function latencyChart(g: LatencyGroup, id: string): HTMLElement {
  const drawn = g.rows.filter((r) => r.p.max > 0);
  if (drawn.length === 0) {
    return el('div', {}, el('h4', {}, g.title), note(`${g.title}: every sample was 0 ms.`));
  }
  const chunks: Array<typeof drawn> = [];
  for (let i = 0; i < drawn.length; i += MAX_SERIES) chunks.push(drawn.slice(i, i + MAX_SERIES));
  const zero = g.rows.filter((r) => r.p.max === 0).map((r) => r.name);
  const figures = chunks.map((rows, k) => {
    const unit = latencyUnit(Math.max(...rows.map((r) => r.p.max)));
    const data: Array<Array<number | null>> = [PERCENTILE_TICKS.map((s) => s.x)];
    const series: uPlot.Series[] = [];
    rows.forEach((r, i) => {
      // A log axis has no 0: a 0 ms percentile is left out (a gap), never drawn at 1 µs.
      data.push(PERCENTILE_TICKS.map((s) => (r.p[s.key] > 0 ? r.p[s.key] * unit.perMs : null)));
      series.push(
        line(`${r.name} (${fmt(r.p.count)} sample${r.p.count === 1 ? '' : 's'})`, i, {
          width: 2,
          value: (_u, v) => (v === null ? '–' : `${fmt(v)} ${unit.short}`),
        }),
      );
    });
    const part = chunks.length > 1 ? ` (${k + 1} of ${chunks.length})` : '';
    return figure({
      id: k === 0 ? id : `${id}-${k + 1}`,
      title: `${g.title}${part}`,
      explain:
        k === 0
          ? `${g.explain} Each line is one distribution, from its fastest sample (0 %) through 50 %, 90 %, 95 % and 99 % to the slowest (max); HDR histograms, 3 significant digits.`
          : '',
      data: data as uPlot.AlignedData,
      series,
      xLabel: 'percentile',
      yLabel: `${unit.name} (log scale)`,
      xFormat: percentileTickLabel,
      scales: { x: { time: false, range: [-0.05, 3.05] }, y: { distr: 3 } },
      height: 220,
      axes: [
        {
          label: 'percentile',
          splits: () => PERCENTILE_TICKS.map((s) => s.x),
          values: (_u, splits) => splits.map(percentileTickLabel),
          stroke: '#374151',
        },
        {
          label: `${unit.name} (log scale)`,
          stroke: '#374151',
          size: 60,
          values: (_u, splits) => splits.map((v) => fmt(v)),
        },
      ],
    });
  });
  return el(
    'div',
    { class: 'multiples' },
    ...figures,
    zero.length > 0 ? el('p', { class: 'note' }, `Always 0 ms, not drawn: ${zero.join(', ')}.`) : null,
    table(
      ['', 'count', 'min', 'p50', 'p90', 'p95', 'p99', 'max'],
      g.rows.map((r) => [
        r.name,
        fmt(r.p.count),
        fmtMs(r.p.min),
        fmtMs(r.p.p50),
        fmtMs(r.p.p90),
        fmtMs(r.p.p95),
        fmtMs(r.p.p99),
        fmtMs(r.p.max),
      ]),
      'numbers',
    ),
  );
}

function gaugeChart(
  group: GaugeGroup,
  id: string,
  title: string,
  explain: string,
  markers: ChartSpec['markers'] = [],
): HTMLElement {
  const flat = group.lines.filter((l) => l.v.every((v) => v === 0)).map((l) => l.label);
  const g = { ...group, lines: group.lines.filter((l) => l.v.some((v) => v !== 0)) };
  if (g.lines.length === 0) return el('div', {}, el('h4', {}, title), note(`${title}: every sample was 0.`));
  // One x axis for all lines: the union of sample times; a line holds its last value in between.
  const times = [...new Set(g.lines.flatMap((l) => l.t))].sort((a, b) => a - b);
  const data: Array<Array<number | null>> = [times.map((t) => t / 1000)];
  for (const l of g.lines) {
    const values: Array<number | null> = [];
    let k = 0;
    let last: number | null = null;
    for (const t of times) {
      while (k < l.t.length && l.t[k]! <= t) last = l.v[k++]!;
      values.push(last);
    }
    data.push(values);
  }
  return figure({
    id,
    title,
    explain,
    data: data as uPlot.AlignedData,
    series: g.lines.map((l, i) => line(l.label, i, { width: 2, paths: uPlot.paths.stepped!({ align: 1 }) })),
    xLabel: 'run time (m:ss)',
    yLabel: g.name,
    xFormat: clock,
    scales: { y: FROM_ZERO },
    markers,
    legendNote: flat.length > 0 ? `Always 0, not drawn: ${flat.join(', ')}.` : undefined,
  });
}

/** An SVG picture in a figure, with its legend, counted for readers and tests (report.pictures). */
function picture(
  id: string,
  title: string,
  explain: string,
  drawing: SVGSVGElement,
  legend: Array<[string, string]>,
): HTMLElement {
  const marks: Record<string, number> = {};
  for (const node of drawing.querySelectorAll('[class]')) {
    const name = node.getAttribute('class')!.split(' ')[0]!;
    marks[name] = (marks[name] ?? 0) + 1;
  }
  report.pictures = report.pictures.filter((p) => p.id !== id);
  report.pictures.push({ id, title, marks });
  report.charts = report.charts.filter((c) => c !== id);
  report.charts.push(id);
  return el(
    'figure',
    { id: `chart-${id}`, 'data-picture': id },
    el('h4', {}, title),
    el('p', { class: 'explain' }, explain),
    drawing as unknown as HTMLElement,
    el(
      'p',
      { class: 'legend' },
      ...legend.map(([colour, words]) =>
        el(
          'span',
          { class: 'legend-item' },
          el('span', { class: 'swatch', style: `background:${colour}` }),
          ` ${words}`,
        ),
      ),
    ),
  );
}

/** A speed run's runs and recoveries: runs over time, then the recovery split. */
function runsSection(u: UnitReport): HTMLElement | null {
  if (!u.runsOverTime && !u.recoverySplit) return null;
  const section = el('section', { class: 'card' }, el('h3', {}, 'Runs and recoveries'));
  const t = u.runsOverTime;
  if (t) {
    section.append(
      picture(
        'runs-over-time',
        'Runs over time',
        `One row per session: each run from its creation to its end (the dark tick: its first activity). A restart shades the time the control plane was down; a run it cut shows when it was found lost, when its retry started and its first event after the restart, or a cross when it was never recovered.${t.sessions.length > 80 ? ` The first 80 of ${t.sessions.length} sessions.` : ''}${t.leftOut > 0 ? ` ${t.leftOut} runs past the analysis' limit are not drawn.` : ''}`,
        runsOverTimeSvg(t),
        runsOverTimeLegend(),
      ),
    );
  }
  const split = u.recoverySplit;
  if (split) {
    if (split.bars.length > 0)
      section.append(
        picture(
          'recovery-split',
          'Recovery split',
          "One bar per recovery, from the moment the control plane was ready again: its own share (finding the run, retrying it, starting its agent) and the provider's (the agent's start and session load). The red line is the budget for the control plane's share.",
          recoverySplitSvg(split),
          recoverySplitLegend(split.budget),
        ),
      );
    if (split.unrecovered.length > 0)
      section.append(
        note(
          `Cut by a restart and never recovered (no bar: a failure of its restart row): ${split.unrecovered.join('; ')}.`,
          'warn',
        ),
      );
  }
  return section;
}

function runSections(u: UnitReport): HTMLElement {
  const root = el('div', { class: 'unit', 'data-unit': u.id });
  root.append(
    el('h2', {}, u.heading),
    el(
      'p',
      { class: 'lead' },
      u.whatItTells ? `What this tells us: ${u.whatItTells}` : '',
      u.runs > 1 ? ` (${u.runs} runs with different seeds; the charts show the first, seed ${u.seed}.)` : '',
    ),
    verdictSection(u),
    figuresSection(u),
  );
  const cost = el('section', { class: 'card' }, el('h3', {}, 'API cost over time'));
  // Charts of GitHub calls only for a run that made some: four empty charts say nothing.
  if (u.githubCalls > 0) cost.append(callsChart(u), burstChart(u), perSessionChart(u), burnChart(u));
  else cost.append(note('This run made no GitHub API calls: there is no API cost to chart.'));
  const runs = runsSection(u);
  if (runs) root.append(runs);
  // A turnover or speed run is about park/wake or runs and recoveries: those come first, its
  // (small) API traffic last.
  const costLast = u.turnover !== null || runs !== null;
  if (!costLast) root.append(cost);

  const latency = el('section', { class: 'card' }, el('h3', {}, 'Latency distributions'));
  if (u.latency.length === 0) latency.append(note('No latency samples in this run.'));
  u.latency.forEach((g) => {
    latency.append(latencyChart(g, `latency-${g.id}`));
  });
  for (const g of u.speed) latency.append(latencyChart(g, `latency-${g.id}`));
  if (u.speed.length === 0)
    latency.append(
      note(
        'No speed metrics (time to first activity, agent boot, restart recovery) in this run: they come from native runs and chaos waves.',
      ),
    );
  root.append(latency);

  const states = el('section', { class: 'card' }, el('h3', {}, 'Sessions by state over time'));
  const turnoverGauge = u.turnover?.states?.name;
  const others = u.gauges.filter((g) => g.name !== turnoverGauge);
  if (others.length === 0 && !u.turnover?.states)
    states.append(note('No gauge samples over time in this run.'));
  others.forEach((g, i) => {
    states.append(
      gaugeChart(
        g,
        `gauge-${i}`,
        `${g.name} by ${g.by || 'value'}`,
        `The “${g.name}” gauge sampled during the run, one line per ${g.by || 'series'}: how many sessions were in each state at each moment.${markerNote(u)}`,
        markersInSeconds(u),
      ),
    );
  });
  if (u.turnover) {
    if (u.turnover.states) {
      states.append(
        gaugeChart(
          u.turnover.states,
          'turnover-states',
          'Turnover: sessions by state',
          `Registered sessions that are awake, parked, waking or parking, sampled every second. The steady window starts when the fill is done.${markerNote(u)}`,
          markersInSeconds(u),
        ),
      );
    } else states.append(note('This run has turnover metrics but no sessions-by-state gauge to draw.'));
    if (u.turnover.latency) states.append(latencyChart(u.turnover.latency, 'latency-turnover'));
  } else {
    states.append(
      note(
        'No turnover in this run (the analysis has no turnover section): the park/wake states appear here for runs of the turnover executor.',
      ),
    );
  }
  if (u.turnover) root.insertBefore(states, latency);
  else root.append(states);
  if (costLast) root.append(cost);
  if (u.warnings.length > 0) {
    root.append(
      el('section', { class: 'card' }, el('h3', {}, 'Warnings'), ...u.warnings.map((w) => note(w, 'warn'))),
    );
  }
  return root;
}

/** `9 runs: 7 cells of the A2 cost matrix, and chaos-codex-c4, turnover`. */
function leadForMatrix(data: ReportData): string {
  const cells = data.units.filter((u) => u.scorecardJudged);
  const others = data.units.filter((u) => !u.scorecardJudged);
  const seeds = data.repeats > 1 ? ` (${data.repeats} seeds each)` : '';
  const what =
    others.length === 0
      ? `${cells.length} cells of the A2 cost matrix${seeds}`
      : `${data.units.length} runs${seeds}: ${cells.length} cells of the A2 cost matrix, measured for GitHub API quota, and ${others.map((u) => u.id).join(', ')}, judged on their own budgets`;
  return `fleetbench ran ${what}, against its embedded reference control plane in virtual time.`;
}

// ——— a matrix ————————————————————————————————————————————————————————————————————————————

function verdictMatrix(data: ReportData): HTMLElement {
  const rowIds = data.units[0]?.scorecard.map((r) => r.id) ?? [];
  const titles =
    data.units[0]?.scorecard.map(
      (r) => `${r.title} (${comparisonWords(r.comparison)} ${fmt(r.limit)} ${r.unit})`,
    ) ?? [];
  // Only the cost cells: a run judged on its own budgets is listed below with them.
  const rows = data.units
    .filter((u) => u.scorecardJudged)
    .map((u) => [
      u.id,
      badge(u.verdict),
      ...rowIds.map((id) => {
        const r = u.scorecard.find((x) => x.id === id);
        if (!r) return '–';
        // The same figure as every other report (a projection says so).
        return el('span', { class: `cell ${r.verdict}`, title: r.basis }, r.shown);
      }),
    ]);
  return el(
    'section',
    { class: 'card' },
    el('h3', {}, 'Budget verdicts per cell'),
    el(
      'p',
      { class: 'explain' },
      'Each cell against the Track B scorecard: green holds, red breaks the rule. Headroom rows are projected to 50 sessions for cells with fewer. Hover a number for how it was measured. Runs that are not cost cells (a chaos wave, a turnover run) are judged on their own budgets, listed below the table.',
    ),
    table(['cell', 'Track B', ...titles], rows, 'verdicts'),
    budgetNote(data),
  );
}

function budgetNote(data: ReportData): HTMLElement {
  const withBudgets = data.units.filter((u) => u.budgets && u.budgets.length > 0);
  if (withBudgets.length === 0) {
    return note(
      'No speed or turnover budget checks in these results (they appear here when the runs carry budget verdicts).',
    );
  }
  return el(
    'div',
    {},
    ...withBudgets.map((u) =>
      el(
        'div',
        {},
        el('h4', {}, u.id),
        u.scorecardJudged
          ? ''
          : el('p', { class: `verdict ${u.verdict}` }, badge(u.verdict), ` ${u.id} ${u.verdictWords}.`),
        budgetTable(u.budgets),
      ),
    ),
  );
}

function scaleSection(data: ReportData): HTMLElement | null {
  const scale = data.scale;
  if (!scale) return null;
  const select = el(
    'select',
    { id: 'scale-metric' },
    ...scale.metrics.map((m) => el('option', { value: m.id }, `${m.title} (${m.unit})`)),
  );
  const grid = el('div', { class: 'scale-grid' });
  const render = (metric: ScaleMetric) => {
    for (const c of charts.filter((c) => c.id.startsWith('scale-'))) {
      c.plot.destroy();
      charts.splice(charts.indexOf(c), 1);
    }
    report.charts = report.charts.filter((id) => !id.startsWith('scale-'));
    grid.replaceChildren(
      ...scale.scenarios.map((s) => {
        const cells = scale.cells.filter((c) => c.scenario === s.id);
        const scales = [...new Set(cells.map((c) => c.scale))].sort((a, b) => a - b);
        const lineOf = (topology: string) =>
          scales.map((n) => {
            // Scale 1 exists only as T1; it starts the T2 line too.
            const c = cells.find((x) => x.scale === n && (x.topology === topology || n === 1));
            return c ? (c.values[metric.id] ?? null) : null;
          });
        // A T2 line only where the scenario ran T2 cells (scale 1 alone is no spread line).
        const spread = cells.some((c) => c.topology === 'T2' && c.scale > 1);
        const point = { width: 2, spanGaps: true, points: { show: true, size: 7 } };
        return figure({
          id: `scale-${s.id}`,
          title: `${s.id} ${s.title}`,
          explain: `${metric.title} at each scale; ${metric.better} is better. T1: all sessions on one repo${spread ? '; T2: spread over N/5 repos' : ' (this scenario ran no T2 cells)'}.`,
          data: (spread ? [scales, lineOf('T1'), lineOf('T2')] : [scales, lineOf('T1')]) as uPlot.AlignedData,
          series: [line('T1 concentrated', 0, point), ...(spread ? [line('T2 spread', 1, point)] : [])],
          xLabel: 'sessions',
          yLabel: metric.unit,
          scales: { x: { time: false, distr: 3, range: [0.8, 62] } },
          axes: [
            {
              label: 'sessions (log scale)',
              splits: () => scales,
              // uPlot's log axis hides ticks between powers of ten: here every scale is a tick.
              filter: (_u, splits) => splits,
              values: (_u, splits) => splits.map((v) => String(v)),
              stroke: '#374151',
            },
            { label: metric.unit, stroke: '#374151', size: 60 },
          ],
          height: 220,
        });
      }),
    );
  };
  select.addEventListener('change', () => render(scale.metrics.find((m) => m.id === select.value)!));
  const section = el(
    'section',
    { class: 'card', id: 'scale' },
    el('h3', {}, 'Scale curves per scenario'),
    el(
      'p',
      { class: 'explain' },
      'How a metric grows from 1 to 50 sessions, for each scenario run at more than one scale, per topology. A flat per-session cost means the control plane scales linearly; a rising one means it gets more expensive per session as the fleet grows. Sessions on a log axis. The legend shows the largest scale; hover for the others.',
    ),
    el('label', {}, 'metric: ', select),
    grid,
  );
  queueMicrotask(() => render(scale.metrics[0]!));
  return section;
}

function pruningSection(data: ReportData): HTMLElement | null {
  const p = data.pruning;
  if (!p) return null;
  const kept = p.decisions.filter((d) => d.kept).length;
  return el(
    'section',
    { class: 'card' },
    el('h3', {}, 'Pruning'),
    el(
      'p',
      { class: 'explain' },
      `A cell is kept only if one of its Track B scorecard metrics differs by more than ${fmt(100 * p.threshold)}% from an adjacent scale point; the others tell nothing their neighbours do not. ${kept} of ${p.decisions.length} cells kept.`,
    ),
    table(
      ['cell', 'decision', 'why'],
      p.decisions.map((d) => [
        d.id,
        el(
          'span',
          { class: `cell ${d.kept ? 'pass' : 'unknown'}` },
          d.kept ? (d.representative ? 'kept (representative)' : 'kept') : 'pruned',
        ),
        d.reason,
      ]),
    ),
  );
}

function matrixPage(data: ReportData, main: HTMLElement): void {
  main.append(verdictMatrix(data));
  const scale = scaleSection(data);
  if (scale) main.append(scale);
  const pruning = pruningSection(data);
  if (pruning) main.append(pruning);
  const select = el(
    'select',
    { id: 'unit-select' },
    ...data.units.map((u) => el('option', { value: u.id }, `${u.heading} (${VERDICT_WORD[u.verdict]})`)),
  );
  const detail = el('div', { id: 'unit-detail' });
  const show = (id: string) => {
    for (const c of charts.filter((c) => !c.id.startsWith('scale-'))) {
      c.plot.destroy();
      charts.splice(charts.indexOf(c), 1);
    }
    report.charts = report.charts.filter((c) => c.startsWith('scale-'));
    detail.replaceChildren(runSections(data.units.find((u) => u.id === id)!));
  };
  select.addEventListener('change', () => show(select.value));
  main.append(
    el(
      'section',
      { class: 'card' },
      el('h3', {}, 'One cell in detail'),
      el(
        'p',
        { class: 'explain' },
        'Pick a cell: its verdicts, summary, charts and latency distributions follow.',
      ),
      el('label', {}, 'cell: ', select),
    ),
    detail,
  );
  show(data.units[0]!.id);
}

// ——— the page ———————————————————————————————————————————————————————————————————————————

function glossary(): HTMLElement {
  const items: Array<[string, string]> = [
    [
      'Virtual time',
      'The run is simulated on a discrete-event clock, seeded: minutes of control-plane activity take a fraction of a second, and the same seed gives the same numbers.',
    ],
    [
      'Reference control plane',
      'The embedded agent orchestrator that fleetbench runs out of the box: it spawns sessions on issues and polls GitHub (an emulator with real quota rules) for their pull requests.',
    ],
    [
      'Points',
      'What a call costs against GitHub’s primary hourly limit (5,000 per user token for REST core, 5,000 for GraphQL). A 304 answer to a conditional request costs 0.',
    ],
    [
      'Headroom',
      '100 × (limit − points per hour) ÷ limit: the share of the hourly limit left unused. Track B wants at least 40% at 50 sessions.',
    ],
    [
      'Poll cycle',
      'One pass of the control plane’s lifecycle loop (every 30 s by default) over its sessions.',
    ],
    [
      'Cells',
      'A2 matrix cells read S2-T1-50: scenario S2 (quiet steady state), topology T1 (all sessions on one repo; T2 spreads them over N/5 repos), 50 sessions.',
    ],
  ];
  return el(
    'section',
    { class: 'card glossary' },
    el('h3', {}, 'How to read this report'),
    el('dl', {}, ...items.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)])),
  );
}

function main(): void {
  const blob = document.getElementById('fleetbench-data');
  const data = JSON.parse(blob?.textContent ?? 'null') as ReportData | null;
  const app = document.getElementById('app')!;
  if (!data || data.units.length === 0) {
    app.append(note('This report has no runs in it.', 'warn'));
    return;
  }
  document.title = data.title;
  const header = el(
    'header',
    {},
    el('h1', {}, data.title),
    el(
      'p',
      { class: 'lead' },
      data.kind === 'matrix'
        ? leadForMatrix(data)
        : 'fleetbench ran this scenario and measured what it costs in GitHub API quota, and, where the scenario exercises them, how fast agents start and recover and what park/wake turnover costs.',
      data.overrides.length > 0 ? ` Overrides: ${data.overrides.join(', ')}.` : '',
    ),
    el(
      'p',
      { class: `verdict big ${data.overall.verdict}` },
      badge(data.overall.verdict),
      ` ${data.overall.words}`,
    ),
    el('p', { class: 'source' }, `Source: ${data.source} · ${data.generator}`),
  );
  const main = el('main', {});
  app.append(header, main);
  if (data.kind === 'matrix') matrixPage(data, main);
  else main.append(runSections(data.units[0]!));
  main.append(glossary());
  (window as unknown as { fleetbenchReady: boolean }).fleetbenchReady = true;
}

main();
