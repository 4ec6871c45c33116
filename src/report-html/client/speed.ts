/**
 * The speed run's two pictures (plain SVG, no chart library): "Runs over time", one row per
 * session with each run from its creation to its end and what happened around each restart,
 * and "Recovery split", one stacked bar per recovery (the control plane's share, the provider's)
 * against the budget's line. Everything a reader needs is drawn, labelled and in the legend.
 */
import type { RecoverySplit, RunsOverTime } from '../types.ts';

const SVG = 'http://www.w3.org/2000/svg';

type Attrs = Record<string, string | number>;

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<SVGElement | string>
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const c of children) node.append(c);
  return node;
}

const titled = <T extends SVGElement>(node: T, text: string): T => {
  node.append(svg('title', {}, text));
  return node;
};

/** Colours told apart with every common colour-vision deficiency (Okabe–Ito). */
const COLOUR = {
  run: '#56B4E9',
  runFailed: '#D55E00',
  activity: '#0072B2',
  outage: '#D55E00',
  ready: '#009E73',
  lost: '#E69F00',
  retry: '#CC79A7',
  recovered: '#009E73',
  unrecovered: '#D55E00',
  controlPlane: '#0072B2',
  provider: '#E69F00',
  limit: '#b91c1c',
  axis: '#374151',
  grid: '#e5e7eb',
} as const;

/** Run time in ms → `m:ss` (or `h:mm:ss`). */
function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

function seconds(ms: number): string {
  if (ms === 0) return '0 s';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/** A round tick step (1, 2 or 5 × 10^n of `unit`) giving about `count` ticks over `span`. */
function tickStep(span: number, count: number, unit = 1): number {
  const raw = span / count / unit;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].find((m) => m * power >= raw)! * power;
  return step * unit;
}

const MAX_ROWS = 80;

/** Runs over time: rows of sessions, runs as bars, outages shaded, recoveries marked. */
export function runsOverTimeSvg(data: RunsOverTime): SVGSVGElement {
  const rows = Math.min(data.sessions.length, MAX_ROWS);
  const left = 70;
  const right = 16;
  const top = 22;
  const rowH = 22;
  const width = 1000;
  const height = top + rows * rowH + 34;
  const plotW = width - left - right;
  const span = Math.max(1, data.durationMs);
  const x = (ms: number) => left + (Math.min(Math.max(ms, 0), span) / span) * plotW;
  const y = (row: number) => top + row * rowH;
  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width: '100%',
    role: 'img',
    'aria-label': 'Runs over time',
    class: 'runs-over-time',
  });
  // Grid and time axis.
  const step = tickStep(span, 8, 1000);
  for (let t = 0; t <= span; t += step) {
    root.append(
      svg('line', { x1: x(t), x2: x(t), y1: top - 4, y2: y(rows), stroke: COLOUR.grid }),
      svg(
        'text',
        { x: x(t), y: y(rows) + 14, 'text-anchor': 'middle', 'font-size': 11, fill: COLOUR.axis },
        clock(t),
      ),
    );
  }
  root.append(
    svg(
      'text',
      { x: left + plotW / 2, y: y(rows) + 30, 'text-anchor': 'middle', 'font-size': 11, fill: COLOUR.axis },
      'run time (m:ss)',
    ),
  );
  // Outages (kill → ready) shaded across every row, the kill and the ready as lines; a label
  // that would run into the previous one is left out (its line and shading stay).
  let lastLabelEnd = Number.NEGATIVE_INFINITY;
  for (const r of data.restarts) {
    const end = r.readyMs ?? span;
    root.append(
      titled(
        svg('rect', {
          x: x(r.killMs),
          y: top - 4,
          width: Math.max(1, x(end) - x(r.killMs)),
          height: rows * rowH + 4,
          fill: COLOUR.outage,
          'fill-opacity': 0.12,
          class: 'outage',
        }),
        `${r.kind} restart at ${clock(r.killMs)}: the control plane was down until ${r.readyMs === null ? 'the end' : clock(r.readyMs)} (${seconds(end - r.killMs)})`,
      ),
      svg('line', {
        x1: x(r.killMs),
        x2: x(r.killMs),
        y1: top - 8,
        y2: y(rows),
        stroke: COLOUR.outage,
        'stroke-dasharray': '4 3',
      }),
    );
    const label = `${r.kind} restart`;
    if (x(r.killMs) > lastLabelEnd) {
      root.append(
        svg('text', { x: x(r.killMs) + 3, y: top - 10, 'font-size': 10, fill: COLOUR.outage }, label),
      );
      lastLabelEnd = x(r.killMs) + 3 + label.length * 5.6;
    }
    if (r.readyMs !== null)
      root.append(
        svg('line', {
          x1: x(r.readyMs),
          x2: x(r.readyMs),
          y1: top - 4,
          y2: y(rows),
          stroke: COLOUR.ready,
          'stroke-dasharray': '2 3',
        }),
      );
  }
  for (let row = 0; row < rows; row++) {
    root.append(
      svg(
        'text',
        { x: left - 6, y: y(row) + rowH / 2 + 4, 'text-anchor': 'end', 'font-size': 11, fill: COLOUR.axis },
        data.sessions[row]!,
      ),
    );
  }
  // Each run: created → ended (still going at the end: to the edge, no end cap).
  for (const run of data.runs) {
    if (run.session >= rows) continue;
    const failed = run.status !== null && run.status !== 'succeeded' && run.status !== 'replaced';
    const end = run.endedMs ?? span;
    root.append(
      titled(
        svg('rect', {
          x: x(run.createdMs),
          y: y(run.session) + 6,
          width: Math.max(1.5, x(end) - x(run.createdMs)),
          height: rowH - 12,
          rx: 2,
          fill: failed ? '#fde2d5' : COLOUR.run,
          'fill-opacity': failed ? 1 : 0.55,
          stroke: failed ? COLOUR.runFailed : 'none',
          class: failed ? 'run failed' : 'run',
        }),
        `${data.sessions[run.session]}: run created ${clock(run.createdMs)}, first activity ${run.activityMs === null ? '–' : clock(run.activityMs)}, ${run.endedMs === null ? 'still going at the end' : `ended ${clock(run.endedMs)}`}${run.status ? ` (${run.status})` : ''}`,
      ),
    );
    if (run.activityMs !== null)
      root.append(
        svg('line', {
          x1: x(run.activityMs),
          x2: x(run.activityMs),
          y1: y(run.session) + 4,
          y2: y(run.session) + rowH - 4,
          stroke: COLOUR.activity,
          'stroke-width': 1.5,
          class: 'activity',
        }),
      );
  }
  const cy = (session: number) => y(session) + rowH / 2;
  const diamond = (cx: number, c: number, colour: string, label: string, cls: string) =>
    titled(
      svg('path', {
        d: `M${cx} ${c - 6}L${cx + 6} ${c}L${cx} ${c + 6}L${cx - 6} ${c}Z`,
        fill: colour,
        stroke: '#fff',
        class: cls,
      }),
      label,
    );
  for (const r of data.recoveries) {
    if (r.session >= rows) continue;
    const who = data.sessions[r.session]!;
    if (r.lostMs !== null)
      root.append(
        diamond(x(r.lostMs), cy(r.session), COLOUR.lost, `${who}: found lost at ${clock(r.lostMs)}`, 'lost'),
      );
    if (r.retryMs !== null)
      root.append(
        titled(
          svg('path', {
            d: `M${x(r.retryMs) - 5} ${cy(r.session) - 6}L${x(r.retryMs) + 6} ${cy(r.session)}L${x(r.retryMs) - 5} ${cy(r.session) + 6}Z`,
            fill: COLOUR.retry,
            stroke: '#fff',
            class: 'retry',
          }),
          `${who}: retry started at ${clock(r.retryMs)}`,
        ),
      );
    root.append(
      titled(
        svg('circle', {
          cx: x(r.eventMs),
          cy: cy(r.session),
          r: 5,
          fill: COLOUR.recovered,
          stroke: '#fff',
          class: 'recovered',
        }),
        `${who}: first event after the ${r.kind} restart at ${clock(r.eventMs)}`,
      ),
    );
  }
  for (const u of data.unrecovered) {
    if (u.session >= rows) continue;
    const who = data.sessions[u.session]!;
    if (u.lostMs !== null)
      root.append(
        diamond(x(u.lostMs), cy(u.session), COLOUR.lost, `${who}: found lost at ${clock(u.lostMs)}`, 'lost'),
      );
    const at = x(u.killMs ?? 0);
    const c = cy(u.session);
    root.append(
      titled(
        svg('path', {
          d: `M${at - 5} ${c - 5}L${at + 5} ${c + 5}M${at - 5} ${c + 5}L${at + 5} ${c - 5}`,
          stroke: COLOUR.unrecovered,
          'stroke-width': 2.5,
          class: 'unrecovered',
        }),
        `${who}: cut by the ${u.kind} restart and NOT recovered (${u.open ? 'still recovering when the trace ended' : `${u.status ?? 'ended'}${u.errorCode ? `, ${u.errorCode}` : ''}`})`,
      ),
    );
  }
  for (const k of data.skipped) {
    if (k.session === null || k.session >= rows) continue;
    root.append(
      titled(
        svg('circle', {
          cx: x(k.tMs),
          cy: cy(k.session),
          r: 4,
          fill: '#fff',
          stroke: COLOUR.axis,
          class: 'skipped',
        }),
        `${data.sessions[k.session]}: input answered without a run at ${clock(k.tMs)}`,
      ),
    );
  }
  return root;
}

/** The legend of runsOverTimeSvg, as words beside swatches. */
export function runsOverTimeLegend(): Array<[string, string]> {
  return [
    [COLOUR.run, 'a run: created → ended (red outline: it failed)'],
    [COLOUR.activity, 'its first activity'],
    [COLOUR.outage, 'restart: the control plane down (kill → ready, shaded)'],
    [COLOUR.lost, 'run found lost (◆)'],
    [COLOUR.retry, 'retry started (▶)'],
    [COLOUR.recovered, 'first event after the restart (●)'],
    [COLOUR.unrecovered, 'cut and never recovered (✕)'],
  ];
}

/** One horizontal stacked bar per recovery, the budget's limit as a line through its row. */
export function recoverySplitSvg(data: RecoverySplit): SVGSVGElement {
  const left = 170;
  const right = 120;
  const top = 10;
  const rowH = 24;
  const width = 1000;
  const rows = data.bars.length;
  const height = top + rows * rowH + 36;
  const plotW = width - left - right;
  const max = Math.max(1, ...data.bars.map((b) => Math.max(b.controlPlaneMs + b.providerMs, b.limitMs ?? 0)));
  const x = (ms: number) => left + (ms / max) * plotW;
  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`,
    width: '100%',
    role: 'img',
    'aria-label': 'Recovery split',
    class: 'recovery-split',
  });
  const step = tickStep(max, 6, 1000);
  for (let t = 0; t <= max; t += step) {
    root.append(
      svg('line', { x1: x(t), x2: x(t), y1: top, y2: top + rows * rowH, stroke: COLOUR.grid }),
      svg(
        'text',
        { x: x(t), y: top + rows * rowH + 14, 'text-anchor': 'middle', 'font-size': 11, fill: COLOUR.axis },
        seconds(t),
      ),
    );
  }
  root.append(
    svg(
      'text',
      {
        x: left + plotW / 2,
        y: top + rows * rowH + 30,
        'text-anchor': 'middle',
        'font-size': 11,
        fill: COLOUR.axis,
      },
      'recovery time after ready (outage removed)',
    ),
  );
  data.bars.forEach((b, i) => {
    const y0 = top + i * rowH;
    const total = b.controlPlaneMs + b.providerMs;
    root.append(
      svg(
        'text',
        { x: left - 6, y: y0 + rowH / 2 + 4, 'text-anchor': 'end', 'font-size': 11, fill: COLOUR.axis },
        b.label,
      ),
      titled(
        svg('rect', {
          x: x(0),
          y: y0 + 4,
          width: Math.max(1, x(b.controlPlaneMs) - x(0)),
          height: rowH - 8,
          fill: COLOUR.controlPlane,
          class: 'control-plane',
        }),
        `${b.label}: the control plane's share ${seconds(b.controlPlaneMs)}`,
      ),
      titled(
        svg('rect', {
          x: x(b.controlPlaneMs),
          y: y0 + 4,
          width: Math.max(b.providerMs > 0 ? 1 : 0, x(total) - x(b.controlPlaneMs)),
          height: rowH - 8,
          fill: COLOUR.provider,
          class: 'provider',
        }),
        `${b.label}: the provider's share ${seconds(b.providerMs)}`,
      ),
      svg(
        'text',
        { x: x(total) + 6, y: y0 + rowH / 2 + 4, 'font-size': 11, fill: COLOUR.axis },
        `${seconds(b.controlPlaneMs)} + ${seconds(b.providerMs)}`,
      ),
    );
    if (b.limitMs !== null)
      root.append(
        titled(
          svg('line', {
            x1: x(b.limitMs),
            x2: x(b.limitMs),
            y1: y0 + 1,
            y2: y0 + rowH - 1,
            stroke: COLOUR.limit,
            'stroke-width': 2.5,
            class: 'limit',
          }),
          `${b.label}: the budget for the control plane's share, ${seconds(b.limitMs)} (p95)`,
        ),
      );
  });
  return root;
}

export function recoverySplitLegend(budget: string | null): Array<[string, string]> {
  return [
    [COLOUR.controlPlane, "the control plane's share (ready → the provider starts loading)"],
    [COLOUR.provider, "the provider's share (its start and session load)"],
    [COLOUR.limit, `the budget for the control plane's share (p95${budget ? `, ${budget}` : ''})`],
  ];
}
