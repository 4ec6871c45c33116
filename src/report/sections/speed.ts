/**
 * Speed: the metrics of docs/analysis.md#speed (first activity, boot, restart recovery) from analysis.speed, and
 * what the trace's own spans, events and gauges say.
 */
import type { Analysis, SpeedMetricName } from '../../analyze/schema.ts';
import { SPEED_METRIC_INFO } from '../../analyze/speed.ts';
import { type Block, columns, fmtInt, fmtMs, fmtNum, type Section, textColumn } from '../table.ts';
import {
  labelText,
  note,
  notesIf,
  type Pair,
  pairs,
  percentileColumns,
  percentileRow,
  table,
} from './build.ts';

/** One row per metric and label set, HDR percentiles; runs, restarts and recoveries below. */
export function speedMetricsSection(a: Analysis): Section[] {
  const speed = a.speed;
  if (!speed) return a.harness ? [{ title: 'Harness', blocks: harnessBlocks(a.harness) }] : [];
  const rows: string[][] = [];
  for (const [name, metric] of Object.entries(speed.metrics)) {
    for (const group of metric.groups) {
      const p = group.latency;
      rows.push([
        name,
        // Where each row starts and ends: the judged control-plane row stops where the
        // agent is (re)started; the report rows to the first activity go on to the model's answer.
        SPEED_METRIC_INFO[name as SpeedMetricName]?.span ?? '',
        labelText(group.labels),
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
  const list: Pair[] = [
    [
      'runs',
      `${fmtInt(runs.created)} created · ${fmtInt(runs.withActivity)} showed activity · ${fmtInt(runs.interrupted)} interrupted by a restart · ${fmtInt(runs.noActivity)} without activity`,
    ],
  ];
  if (speed.restarts.length > 0) {
    list.push(
      [
        'restarts',
        `${speed.restarts.length} (${[...byKind].map(([k, n]) => `${k} ${n}`).join(' · ')})${outages.length < speed.restarts.length ? `, ${speed.restarts.length - outages.length} FAILED (never ready)` : ''}, outage max ${fmtMs(outages.length > 0 ? Math.max(...outages) : null)} (removed from recoveries)`,
      ],
      ['recoveries', recoveryCountsText(speed)],
    );
    const toActivity = providerPartText(speed);
    if (toActivity) list.push(['to first activity', toActivity]);
  }
  if ((runs.skipped ?? 0) > 0)
    list.push(['skipped', `${fmtInt(runs.skipped)} inputs answered without a run`]);
  const blocks: Block[] = [
    table(
      [
        textColumn('metric'),
        textColumn('from → to'),
        textColumn('scope'),
        ...columns('role', 'n', 'p50', 'p90', 'p95', 'p99', 'max'),
      ],
      rows,
    ),
    pairs(list),
    ...notesIf(speed.notes, 'info'),
    ...(a.harness ? harnessBlocks(a.harness) : []),
  ];
  return [{ title: 'Speed', blocks }];
}

/**
 * The recoveries measured to the agent's first activity: the provider's part of them (p50 of
 * its share) and the model requests inside it, retries of a provider fault named:
 * `8 of 8 recoveries: provider's part p50 1.2 s of 5.6 s (21 %); 14 model requests, 3 retries (rate-limit 3)`.
 */
function providerPartText(speed: NonNullable<Analysis['speed']>): string | undefined {
  const measured = speed.recoveries.filter(
    (r) => typeof r.toActivityMs === 'number' && typeof r.providerToActivityMs === 'number',
  );
  if (measured.length === 0) return undefined;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length / 2) - 1]!;
  const full = median(measured.map((r) => r.toActivityMs!));
  const provider = median(measured.map((r) => r.providerToActivityMs!));
  const share = median(
    measured.map((r) => (r.toActivityMs! > 0 ? r.providerToActivityMs! / r.toActivityMs! : 0)),
  );
  let requests = 0;
  let retries = 0;
  const faults = new Map<string, number>();
  for (const r of measured) {
    requests += r.modelRequests?.count ?? 0;
    retries += r.modelRequests?.retries ?? 0;
    for (const [kind, n] of Object.entries(r.modelRequests?.faults ?? {}))
      faults.set(kind, (faults.get(kind) ?? 0) + n);
  }
  const faultText = faults.size > 0 ? ` (${[...faults].map(([k, n]) => `${k} ${n}`).join(' · ')})` : '';
  return `${measured.length} of ${speed.recoveries.length} recoveries: ready → first activity p50 ${fmtMs(full)}, the provider's part (agent (re)started → first activity) p50 ${fmtMs(provider)}, ${Math.round(share * 100)} % of each (p50); ${fmtInt(requests)} model request${requests === 1 ? '' : 's'} in it, ${fmtInt(retries)} retr${retries === 1 ? 'y' : 'ies'}${faultText}`;
}

/**
 * The speed table's footer: what fleetbench's own processes took of the run's CPU beside the
 * control plane and the agents (the speeds above were measured on the machine they shared).
 */
function harnessBlocks(harness: NonNullable<Analysis['harness']>): Block[] {
  const { cpuS } = harness;
  const total = cpuS.harness + cpuS.controlPlane + cpuS.agents + cpuS.other;
  const share = harness.sharePct === null ? '–' : `${fmtNum(harness.sharePct, 1)} %`;
  const parts = [`control plane ${fmtNum(cpuS.controlPlane, 1)}`, `agents ${fmtNum(cpuS.agents, 1)}`];
  if (cpuS.other > 0) parts.push(`other ${fmtNum(cpuS.other, 1)}`);
  const line = `fleetbench ${fmtNum(cpuS.harness, 1)} CPU-s of ${fmtNum(total, 1)} (${share}${harness.boundPct === null ? '' : `, bound ${harness.boundPct} %`}); ${parts.join(', ')}; over ${fmtNum(harness.windowS, 0)} s`;
  // Over its bound, the analysis' warnings say so (the observer disturbed the observed).
  return [pairs([['harness share', line]])];
}

/** Every cut run accounted for, by adapter and restart kind: `codex hard: 2 cut · 1 recovered · 1 NOT recovered`. */
function recoveryCountsText(speed: NonNullable<Analysis['speed']>): string {
  const counts = speed.recoveryCounts ?? [];
  if (counts.length === 0)
    return `${fmtInt(speed.recoveries.length)} measured · ${fmtInt(speed.unrecovered.length)} not recovered`;
  return counts
    .map((c) => {
      const parts = [`${fmtInt(c.cut)} cut`, `${fmtInt(c.recovered)} recovered`];
      if (c.finished > 0) parts.push(`${fmtInt(c.finished)} finished without a new agent`);
      const closed = c.unrecovered - c.open;
      if (closed > 0) parts.push(`${fmtInt(closed)} NOT recovered`);
      if (c.open > 0) parts.push(`${fmtInt(c.open)} still recovering at the end`);
      return `${c.adapter} ${c.kind}: ${parts.join(' · ')}`;
    })
    .join('; ');
}

/** Span percentiles (by name, then by label set), event counts, gauges. */
export function traceRecordSections(a: Analysis, top: number): Section[] {
  const sections: Section[] = [];
  if (a.spans.byName.length > 0) {
    const labelled = a.spans.byLabels.filter((s) => Object.keys(s.labels).length > 0);
    sections.push({
      title: 'Spans',
      blocks: [
        table(
          percentileColumns('span'),
          a.spans.byName.map((s) => percentileRow(s.name, s.latency)),
        ),
        note(
          a.spans.byName
            .filter((s) => s.outcomes.error + s.outcomes.cancelled > 0)
            .map((s) => `${s.name}: ${s.outcomes.error} errors, ${s.outcomes.cancelled} cancelled`),
          'warning',
        ),
      ],
    });
    if (labelled.length > 0) {
      sections.push({
        title: 'Spans by label set',
        blocks: [
          table(
            percentileColumns('span {labels}'),
            labelled
              .slice(0, top * 2)
              .map((s) => percentileRow(`${s.name} {${labelText(s.labels)}}`, s.latency)),
            Math.max(0, labelled.length - top * 2),
          ),
        ],
      });
    }
  }
  const events = Object.entries(a.events.byName);
  if (events.length > 0) {
    sections.push({
      title: 'Events',
      blocks: [
        table(
          columns('event', 'count'),
          events.map(([name, n]) => [name, fmtInt(n)]),
        ),
      ],
    });
  }
  if (a.gauges.length > 0) {
    sections.push({
      title: 'Gauges',
      blocks: [
        table(
          columns('gauge', 'samples', 'last', 'min', 'max'),
          a.gauges.map((g) => [
            `${g.name}${Object.keys(g.labels).length > 0 ? ` {${labelText(g.labels)}}` : ''}`,
            fmtInt(g.count),
            fmtNum(g.last),
            fmtNum(g.min),
            fmtNum(g.max),
          ]),
        ),
      ],
    });
  }
  return sections;
}
