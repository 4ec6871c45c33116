/**
 * Speed metrics (docs/analysis.md#speed), joined at finish from the run, provider and restart records of a
 * trace, whatever produced it. Definitions (docs/analysis.md#speed has the full text):
 *
 * - time_to_first_activity: `run.created` → the session's first provider activity a user sees
 *   (a text delta, a tool-call start, a reasoning indicator). time_to_first_text: → the first
 *   text delta. input_wait: the `input.received` that opened the run → `run.created`.
 * - agent_boot: `provider.boot` spans (process start → ready), by adapter and start kind.
 * - restart_recovery: `controlplane.ready` → the recovered run's next provider event of a
 *   listed agent-activity type (RECOVERY_EVENT_TYPES: diagnostics and unlisted types do not
 *   count). restart_recovery_control_plane: ready → the start of that run's
 *   `provider.session.load` (its end minus its duration, however late it was written), or the
 *   full latency when nothing was reloaded. restart_provider_load: that load's duration.
 *   Outage time (kill → ready) is removed from all three: a run still recovering when the next
 *   restart lands gives one sample, anchored at the first ready, with the second outage taken
 *   out of the full latency, the control-plane share and the load alike.
 *
 * Everything is computed after the whole trace is read, so a span written after the event it
 * explains (a load span that ends after `session.resumed`) still counts.
 */
import type { FinisherContext, RetainedRecord } from './finisher.ts';
import { LatencyHistogram } from './histogram.ts';
import type { SpeedAnalysis, SpeedMetricName } from './schema.ts';

export const SPEED_RECORD_NAMES = new Set([
  'run.created',
  'run.ended',
  'input.received',
  'provider.event',
  'provider.boot',
  'provider.session.load',
  'controlplane.restart',
  'controlplane.ready',
]);

/** Role (judged or report-only) and labels of each metric, as docs/analysis.md#speed defines them. */
export const SPEED_METRIC_INFO: Record<
  SpeedMetricName,
  { role: 'judged' | 'report'; labels: string[]; description: string }
> = {
  time_to_first_activity: {
    role: 'judged',
    labels: ['adapter', 'start'],
    description: 'run created → first text delta, tool-call start or reasoning indicator',
  },
  time_to_first_text: {
    role: 'report',
    labels: ['adapter', 'start'],
    description: 'run created → first text delta (tool-first agents call tools before they write)',
  },
  input_wait: {
    role: 'report',
    labels: ['adapter'],
    description: 'the input that opened a run was received → the run exists',
  },
  agent_boot: {
    role: 'judged',
    labels: ['adapter', 'start'],
    description: 'provider process start → ready (provider.boot)',
  },
  restart_recovery: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description: 'control plane ready → the recovered run’s next provider event, outage removed',
  },
  restart_recovery_control_plane: {
    role: 'judged',
    labels: ['adapter', 'kind'],
    description:
      'control plane ready → start of provider.session.load (or → next provider event when nothing reloads), outage removed',
  },
  restart_provider_load: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description: 'the recovery’s provider.session.load duration',
  },
};

type Ev = Extract<RetainedRecord, { kind: 'event' }>;
type Span = Extract<RetainedRecord, { kind: 'span' }>;

interface RunInfo {
  run: string | null;
  adapter: string;
  start: string;
  createdAt: number;
  endedAt: number;
  inputAt?: number;
}

interface ProviderEv {
  t: number;
  type: string;
  item?: string;
}

interface Load {
  start: number;
  dur: number;
  /** `data.run` of the span, when it names its run. */
  run?: string;
}

interface Restart {
  kind: string;
  killAt: number;
  readyAt: number | null;
}

const str = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;

const startKind = (value: unknown): string => (value === 'cold' || value === 'warm' ? value : 'unknown');

/**
 * The provider events a recovery ends at, as the method lists them: turn submitted / accepted /
 * started, item started / delta / completed, tool execution started / progressed / completed,
 * session resumed. Anything else (diagnostics, `rate_limits.updated`, a type this list does not
 * name) is not the recovered run doing work, so it never ends a recovery.
 */
export const RECOVERY_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn.submitted',
  'turn.accepted',
  'turn.started',
  'item.started',
  'item.delta',
  'item.completed',
  'tool.execution.started',
  'tool.execution.progressed',
  'tool.execution.completed',
  'session.resumed',
]);

/** Whether a provider event can end a recovery (only the listed agent-activity types). */
export function countsAsProviderEvent(type: string): boolean {
  return RECOVERY_EVENT_TYPES.has(type);
}

/** First activity a user sees: a text delta, a tool-call start, or a reasoning indicator. */
export function isActivity(e: ProviderEv): boolean {
  if (e.type === 'item.delta') return e.item === 'text' || e.item === 'reasoning';
  if (e.type === 'item.started') return e.item === 'reasoning' || e.item === 'tool_call';
  return e.type === 'tool.execution.started';
}

const round3 = (x: number) => Math.round(x * 1000) / 1000;

class Groups {
  private readonly byKey = new Map<string, { labels: Record<string, string>; values: number[] }>();
  add(labels: Record<string, string>, value: number): void {
    const key = JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : 1)));
    let group = this.byKey.get(key);
    if (!group) {
      group = { labels, values: [] };
      this.byKey.set(key, group);
    }
    group.values.push(round3(Math.max(0, value)));
  }
  out(): SpeedAnalysis['metrics'][SpeedMetricName]['groups'] {
    return [...this.byKey.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, g]) => {
        const h = new LatencyHistogram();
        for (const v of g.values) h.record(v);
        return { labels: g.labels, latency: h.percentiles()!, values: g.values };
      });
  }
}

/** The part of [from, to] that falls inside restart outages. */
function outageWithin(restarts: readonly Restart[], from: number, to: number): number {
  let total = 0;
  for (const r of restarts) {
    const end = r.readyAt ?? Number.POSITIVE_INFINITY;
    const overlap = Math.min(to, end) - Math.max(from, r.killAt);
    if (overlap > 0) total += overlap;
  }
  return total;
}

export function computeSpeed(
  records: readonly RetainedRecord[],
  context: FinisherContext,
): SpeedAnalysis | undefined {
  const runsBySession = new Map<string, RunInfo[]>();
  const inputsBySession = new Map<string, number[]>();
  const eventsBySession = new Map<string, ProviderEv[]>();
  const loadsBySession = new Map<string, Load[]>();
  const restarts: Restart[] = [];
  const boots = new Groups();
  const notes: string[] = [];
  let openRestart: Restart | undefined;
  let unattributed = 0;
  let relevant = false;
  const push = <T>(map: Map<string, T[]>, key: string, value: T) => {
    const list = map.get(key);
    if (list) list.push(value);
    else map.set(key, [value]);
  };

  for (const r of records) {
    switch (r.name) {
      case 'controlplane.restart':
        if (r.kind !== 'event') break;
        relevant = true;
        if (openRestart) restarts.push(openRestart);
        openRestart = { kind: str(r.labels?.kind) ?? 'unknown', killAt: r.t, readyAt: null };
        break;
      case 'controlplane.ready':
        if (r.kind !== 'event' || !openRestart) break;
        openRestart.readyAt = r.t;
        restarts.push(openRestart);
        openRestart = undefined;
        break;
      case 'run.created': {
        if (r.kind !== 'event' || r.session === undefined) break;
        relevant = true;
        const runs = runsBySession.get(r.session);
        const previous = runs?.[runs.length - 1];
        if (previous && previous.endedAt > r.t) previous.endedAt = r.t;
        const inputs = inputsBySession.get(r.session) ?? [];
        let inputAt: number | undefined;
        for (let i = inputs.length - 1; i >= 0; i--) {
          if (inputs[i]! <= r.t && (previous === undefined || inputs[i]! > previous.createdAt)) {
            inputAt = inputs[i];
            break;
          }
        }
        push(runsBySession, r.session, {
          run: str((r as Ev).data?.run) ?? null,
          adapter: str(r.labels?.adapter) ?? 'unknown',
          start: startKind(r.labels?.start),
          createdAt: r.t,
          endedAt: Number.POSITIVE_INFINITY,
          inputAt,
        });
        break;
      }
      case 'run.ended': {
        if (r.kind !== 'event' || r.session === undefined) break;
        const runs = runsBySession.get(r.session);
        const last = runs?.[runs.length - 1];
        if (last && last.endedAt === Number.POSITIVE_INFINITY) last.endedAt = r.t;
        break;
      }
      case 'input.received':
        if (r.kind === 'event' && r.session !== undefined) push(inputsBySession, r.session, r.t);
        break;
      case 'provider.event': {
        if (r.kind !== 'event') break;
        relevant = true;
        if (r.session === undefined) {
          unattributed++;
          break;
        }
        push(eventsBySession, r.session, {
          t: r.t,
          type: str(r.labels?.type) ?? 'unknown',
          item: str(r.labels?.item),
        });
        break;
      }
      case 'provider.boot': {
        if (r.kind !== 'span' || r.outcome !== 'ok') break;
        relevant = true;
        boots.add({ adapter: str(r.labels?.adapter) ?? 'unknown', start: startKind(r.labels?.start) }, r.dur);
        break;
      }
      case 'provider.session.load': {
        if (r.kind !== 'span' || r.session === undefined) break;
        const span = r as Span;
        // The load's start is its end minus its duration: the span's own `t`. When it was
        // written (`writtenAt`, possibly long after) only says when it arrived; the whole trace
        // is read before the join, so a late span counts like any other.
        const run = str(span.data?.run);
        push(loadsBySession, r.session, { start: span.t, dur: span.dur, ...(run ? { run } : {}) });
        break;
      }
    }
  }
  if (openRestart) restarts.push(openRestart);
  if (!relevant) return undefined;
  if (unattributed > 0) notes.push(`${unattributed} provider events carry no session: left out of the joins`);

  const firstActivity = new Groups();
  const firstText = new Groups();
  const inputWait = new Groups();
  const recovery = new Groups();
  const controlPlane = new Groups();
  const providerLoad = new Groups();
  const runCounts = { created: 0, withActivity: 0, interrupted: 0, noActivity: 0 };
  const recoveries: SpeedAnalysis['recoveries'] = [];
  const unrecovered: SpeedAnalysis['unrecovered'] = [];
  const completed = restarts.filter((r): r is Restart & { readyAt: number } => r.readyAt !== null);
  const killedBetween = (from: number, to: number) => restarts.some((r) => r.killAt > from && r.killAt < to);

  for (const [session, runs] of [...runsBySession].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const events = eventsBySession.get(session) ?? [];
    const counted = events.filter((e) => countsAsProviderEvent(e.type));
    const loads = (loadsBySession.get(session) ?? []).sort((a, b) => a.start - b.start);
    for (const run of runs) {
      runCounts.created++;
      const inRun = (e: ProviderEv) => e.t >= run.createdAt && e.t <= run.endedAt;
      const labels = { adapter: run.adapter, start: run.start };
      if (run.inputAt !== undefined) inputWait.add({ adapter: run.adapter }, run.createdAt - run.inputAt);
      const activity = events.find((e) => inRun(e) && isActivity(e));
      if (!activity) runCounts.noActivity++;
      else if (killedBetween(run.createdAt, activity.t)) runCounts.interrupted++;
      else {
        runCounts.withActivity++;
        firstActivity.add(labels, activity.t - run.createdAt);
        const text = events.find((e) => inRun(e) && e.type === 'item.delta' && e.item === 'text');
        if (text && !killedBetween(run.createdAt, text.t)) firstText.add(labels, text.t - run.createdAt);
      }

      // Recoveries: every restart whose kill found this run active, unless the run was still
      // recovering from an earlier one (then that sample continues through this outage).
      let coveredUntil = Number.NEGATIVE_INFINITY;
      for (const restart of completed) {
        if (restart.killAt <= run.createdAt || restart.killAt >= run.endedAt) continue;
        if (restart.killAt < coveredUntil) continue;
        const anchor = restart.readyAt;
        const next = counted.find((e) => e.t >= anchor && e.t <= run.endedAt);
        const recoveryLabels = { adapter: run.adapter, kind: restart.kind };
        if (!next) {
          unrecovered.push({
            session,
            run: run.run,
            adapter: run.adapter,
            kind: restart.kind,
            readyAtMs: anchor,
          });
          coveredUntil = Number.POSITIVE_INFINITY;
          continue;
        }
        coveredUntil = next.t;
        // The load of this run (by its run id when the span names one) that this restart
        // caused: the last one starting between ready and the run's next provider event.
        let load: Load | undefined;
        for (const l of loads) {
          if (l.run !== undefined && run.run !== null && l.run !== run.run) continue;
          if (l.start >= anchor && l.start <= next.t) load = l;
        }
        const removed = outageWithin(completed, anchor, next.t);
        const full = next.t - anchor - removed;
        const cp = load ? load.start - anchor - outageWithin(completed, anchor, load.start) : full;
        // Outage time is removed from all three figures, the load's too (a restart during it).
        const loadMs = load ? load.dur - outageWithin(completed, load.start, load.start + load.dur) : null;
        const absorbed = completed.filter((r) => r.killAt > anchor && r.killAt < next.t).length;
        recovery.add(recoveryLabels, full);
        controlPlane.add(recoveryLabels, cp);
        if (loadMs !== null) providerLoad.add(recoveryLabels, loadMs);
        recoveries.push({
          session,
          run: run.run,
          adapter: run.adapter,
          kind: restart.kind,
          readyAtMs: round3(anchor),
          eventAtMs: round3(next.t),
          eventType: next.type,
          fullMs: round3(full),
          controlPlaneMs: round3(cp),
          providerLoadMs: loadMs === null ? null : round3(loadMs),
          loadStartMs: load ? round3(load.start) : null,
          outageRemovedMs: round3(removed),
          absorbedRestarts: absorbed,
        });
      }
    }
  }
  if (runCounts.interrupted > 0) {
    notes.push(
      `${runCounts.interrupted} runs had a restart before their first activity: left out of time_to_first_activity (their wait is a recovery)`,
    );
  }
  if (unrecovered.length > 0) {
    notes.push(`${unrecovered.length} recovered runs had no provider event before the trace ends`);
  }
  if (restarts.some((r) => r.readyAt === null)) {
    notes.push('a restart has no controlplane.ready before the trace ends: its outage is open');
  }

  const metric = (name: SpeedMetricName, groups: Groups) => {
    const out = groups.out();
    return {
      ...SPEED_METRIC_INFO[name],
      samples: out.reduce((n, g) => n + g.values.length, 0),
      groups: out,
    };
  };
  void context;
  return {
    metrics: {
      time_to_first_activity: metric('time_to_first_activity', firstActivity),
      time_to_first_text: metric('time_to_first_text', firstText),
      input_wait: metric('input_wait', inputWait),
      agent_boot: metric('agent_boot', boots),
      restart_recovery: metric('restart_recovery', recovery),
      restart_recovery_control_plane: metric('restart_recovery_control_plane', controlPlane),
      restart_provider_load: metric('restart_provider_load', providerLoad),
    },
    runs: runCounts,
    restarts: restarts.map((r) => ({
      kind: r.kind,
      killAtMs: round3(r.killAt),
      readyAtMs: r.readyAt === null ? null : round3(r.readyAt),
      outageMs: r.readyAt === null ? null : round3(r.readyAt - r.killAt),
    })),
    recoveries,
    unrecovered,
    notes,
  };
}

export const speedFinisher = {
  key: 'speed' as const,
  retains: (name: string) => SPEED_RECORD_NAMES.has(name),
  finish: computeSpeed,
};
