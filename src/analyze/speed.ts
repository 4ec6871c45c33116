/**
 * Speed metrics (docs/analysis.md#speed), joined at finish from the run, provider and restart records of a
 * trace, whatever produced it. Definitions (docs/analysis.md#speed has the full text):
 *
 * - time_to_first_activity: `run.created` → the session's first provider activity a user sees
 *   (a text delta, a tool-call start, a reasoning indicator). time_to_first_text: → the first
 *   text delta. input_wait: the `input.received` that opened the run → `run.created`.
 * - agent_boot: `provider.boot` spans (process start → ready), by adapter and start kind.
 *   agent_launch: `agent.launch` spans (a run started → its agent's process spawned: the control
 *   plane's own preparation), written by targets that see a run start (paperclip).
 * - restart_recovery: `controlplane.ready` → the recovered run's next provider event of a
 *   listed agent-activity type (RECOVERY_EVENT_TYPES: diagnostics and unlisted types do not
 *   count). restart_recovery_control_plane: ready → the start of that run's
 *   `provider.session.load` (its end minus its duration, however late it was written), or the
 *   full latency when nothing was reloaded. restart_provider_load: that load's duration.
 *   Outage time (kill → ready) is removed from all three: a run still recovering when the next
 *   restart lands gives one sample, anchored at the first ready, with the second outage taken
 *   out of the full latency, the control-plane share and the load alike.
 * - controlplane_boot: `controlplane.boot` spans (a control-plane process spawned → ready), by
 *   reason (`start` or the restart kind). lost_run_detection: `run.lost` spans (the kill that
 *   orphaned a run → the control plane marking it lost), by adapter and restart kind. Both are
 *   written by real targets that see them (the paperclip target, docs/paperclip.md).
 *
 * - From a world's edges (a control plane known only by its traffic), edges-speed.ts measures
 *   time_to_first_activity, agent_boot and the three restart metrics its own way, and
 *   `addEdges` puts them into the same groups and recovery rows.
 *
 * Everything is computed after the whole trace is read, so a span written after the event it
 * explains (a load span that ends after `session.resumed`) still counts.
 */
import { restartThatLostRun } from '../trace/lost-run.ts';
import { EDGE_RECORD_NAMES, readEdges } from './edges-model.ts';
import { type EdgeSample, type EdgeSpeed, edgeSpeed, measuredSpeed } from './edges-speed.ts';
import type { FinisherContext, RetainedRecord } from './finisher.ts';
import { LatencyHistogram } from './histogram.ts';
import type { SpeedAnalysis, SpeedMetricName } from './schema.ts';
import { MAX_TIMELINE_RUNS } from './schema-constants.ts';

export const SPEED_RECORD_NAMES = new Set([
  'run.created',
  'run.ended',
  'input.received',
  'provider.event',
  'provider.boot',
  'agent.launch',
  'provider.session.load',
  'controlplane.restart',
  'controlplane.ready',
  'controlplane.boot',
  'run.lost',
  'run.skipped',
  // Paperclip's own words for an attempt and its retry (docs/paperclip.md): why a cut run was
  // not recovered (its status and error code), when its retry started.
  'paperclip.attempt',
  'paperclip.retry',
  // The model requests a recovered agent made before its first activity (its prefill, its
  // retries of a provider fault): the provider's part of restart_provider_to_activity.
  'provider.request',
]);

/** Role (judged or report-only) and labels of each metric, as docs/analysis.md#speed defines them. */
export const SPEED_METRIC_INFO: Record<
  SpeedMetricName,
  {
    role: 'judged' | 'report';
    labels: string[];
    description: string;
    /** Where a sample starts and ends, in a few words (every speed table shows it). */
    span: string;
  }
> = {
  time_to_first_activity: {
    role: 'judged',
    labels: ['adapter', 'start'],
    description:
      'run created → first text delta, tool-call start or reasoning indicator (from a world’s edges: work created → first streamed model output)',
    span: 'run created → first activity',
  },
  time_to_first_text: {
    role: 'report',
    labels: ['adapter', 'start'],
    description: 'run created → first text delta (tool-first agents call tools before they write)',
    span: 'run created → first text',
  },
  input_wait: {
    role: 'report',
    labels: ['adapter'],
    description: 'the input that opened a run was received → the run exists',
    span: 'input received → run created',
  },
  agent_boot: {
    role: 'judged',
    labels: ['adapter', 'start'],
    description:
      'provider process start → ready (provider.boot; from a world’s edges: agent spawned → its first model request)',
    span: 'agent start → agent ready',
  },
  agent_launch: {
    role: 'judged',
    labels: ['adapter', 'start'],
    description:
      'a run started → its agent process spawned: the control plane’s own preparation of a run (agent.launch; a target that sees the run start writes it, never a world’s edges)',
    span: 'run started → agent spawned',
  },
  restart_recovery: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description:
      'control plane ready → the recovered run’s next provider event (from a world’s edges: the first model request of an agent spawned after the kill, 0 when before ready), outage removed',
    span: 'ready → next agent event',
  },
  restart_recovery_control_plane: {
    role: 'judged',
    labels: ['adapter', 'kind'],
    description:
      'control plane ready → start of provider.session.load (or → next provider event when nothing reloads; from a world’s edges: → the recovering agent’s spawn), outage removed',
    span: 'ready → agent (re)started',
  },
  restart_provider_load: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description:
      'the recovery’s provider.session.load duration (from a world’s edges: the recovering agent’s spawn → its first model request)',
    span: 'agent (re)started → its first event',
  },
  controlplane_boot: {
    role: 'report',
    labels: ['reason'],
    description:
      'a control-plane process spawned → ready (controlplane.boot), at the start and after each restart',
    span: 'control plane spawned → ready',
  },
  lost_run_detection: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description: 'the kill that orphaned a run → the control plane marking it lost (run.lost)',
    span: 'the kill that lost it → marked lost',
  },
  restart_recovery_to_activity: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description:
      "control plane ready → the recovered agent's first activity (streamed model output or a tool call), outage removed: the control plane's share, then the agent's start, its model requests, prefill and every retry of a provider fault",
    span: 'ready → first activity',
  },
  restart_provider_to_activity: {
    role: 'report',
    labels: ['adapter', 'kind'],
    description:
      "the provider's part of restart_recovery_to_activity: the agent (re)started (its session load's start; else its next event) → its first activity, with its model requests, prefill and retries of a provider fault",
    span: 'agent (re)started → first activity',
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
  /** How it ended: its own `run.ended`, the session's next run, or not before the trace did. */
  end: 'ended' | 'replaced' | 'open';
  /** `run.ended`'s status and error code, when it said. */
  status?: string;
  errorCode?: string;
  inputAt?: number;
  firstActivityAt?: number;
}

/** What the control plane said of a run: it was found lost, retried, and how its last attempt ended. */
interface RunFate {
  lostAt?: number;
  retries: Array<{ fromAt: number; spawnedAt: number; dueAt?: number }>;
  status?: string;
  errorCode?: string;
  lastAttemptAt?: number;
}

interface ProviderEv {
  t: number;
  type: string;
  item?: string;
}

/** A model request of a session (`provider.request`): when, how long, a retry, its fault. */
interface ModelRequest {
  t: number;
  dur: number;
  retry: boolean;
  fault?: string;
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
  const input = new SpeedRecords();
  for (const r of records) input.add(r);
  input.end();
  // A control plane known only by its traffic (a world's edges): edges-speed.ts measures it.
  const world = readEdges(records);
  const measured = world ? edgeSpeed(world, context.endMs) : undefined;
  const edges = measured && measuredSpeed(measured) ? measured : undefined;
  if (!input.relevant && !edges) return undefined;
  const join = new SpeedJoin(input.restarts, input.fates, context.endMs);
  if (edges) join.addEdges(edges, input.boots);
  for (const [session, runs] of [...input.runsBySession].sort(([a], [b]) => (a < b ? -1 : 1)))
    join.session(
      session,
      runs,
      input.eventsBySession.get(session) ?? [],
      input.loadsBySession.get(session) ?? [],
      input.requestsBySession.get(session) ?? [],
    );
  return join.result(input);
}

const push = <T>(map: Map<string, T[]>, key: string, value: T) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/** The records speed joins, gathered by session in one pass (restarts in time order). */
class SpeedRecords {
  readonly runsBySession = new Map<string, RunInfo[]>();
  readonly inputsBySession = new Map<string, number[]>();
  readonly eventsBySession = new Map<string, ProviderEv[]>();
  readonly loadsBySession = new Map<string, Load[]>();
  readonly requestsBySession = new Map<string, ModelRequest[]>();
  readonly restarts: Restart[] = [];
  readonly boots = new Groups();
  readonly launches = new Groups();
  readonly controlPlaneBoots = new Groups();
  readonly lostRuns = new Groups();
  /** By run id (`data.run`): what the control plane's own records say happened to it. */
  readonly fates = new Map<string, RunFate>();
  /** Inputs answered without a run (`run.skipped`). */
  readonly skipped: Array<{ session: string | null; adapter: string; tMs: number }> = [];
  /** Provider events without a session: left out of the joins. */
  unattributed = 0;
  /** `run.lost` spans, timed at end() from the restart that lost each run. */
  private readonly lost: Span[] = [];
  /** When each attempt's agent started (`paperclip.attempt`, by Paperclip's run id). */
  private readonly attemptStarts = new Map<string, number>();
  /** Whether the run has anything speed measures (else no speed section). */
  relevant = false;
  private openRestart: Restart | undefined;

  add(r: RetainedRecord): void {
    switch (r.name) {
      case 'controlplane.restart':
        if (r.kind !== 'event') break;
        this.relevant = true;
        if (this.openRestart) this.restarts.push(this.openRestart);
        this.openRestart = { kind: str(r.labels?.kind) ?? 'unknown', killAt: r.t, readyAt: null };
        break;
      case 'controlplane.ready':
        if (r.kind !== 'event' || !this.openRestart) break;
        this.openRestart.readyAt = r.t;
        this.restarts.push(this.openRestart);
        this.openRestart = undefined;
        break;
      case 'run.created':
        if (r.kind !== 'event' || r.session === undefined) break;
        this.relevant = true;
        this.runCreated(r, r.session);
        break;
      case 'run.ended': {
        if (r.kind !== 'event' || r.session === undefined) break;
        const runs = this.runsBySession.get(r.session);
        const last = runs?.[runs.length - 1];
        if (last && last.end === 'open') {
          last.endedAt = r.t;
          last.end = 'ended';
          const status = str(r.labels?.status);
          const errorCode = str(r.data?.errorCode);
          if (status !== undefined) last.status = status;
          if (errorCode !== undefined) last.errorCode = errorCode;
        }
        break;
      }
      case 'run.skipped':
        if (r.kind !== 'event') break;
        this.relevant = true;
        this.skipped.push({
          session: r.session ?? null,
          adapter: str(r.labels?.adapter) ?? 'unknown',
          tMs: round3(r.t),
        });
        break;
      case 'paperclip.attempt': {
        if (r.kind !== 'span') break;
        const attempt = str(r.data?.paperclipRun);
        const started = r.data?.processStartedAtMs ?? r.data?.startedAtMs;
        if (attempt !== undefined)
          this.attemptStarts.set(attempt, typeof started === 'number' ? started : r.t);
        const run = str(r.data?.run);
        if (run === undefined) break;
        const fate = this.fate(run);
        // The last attempt says how the run ended (attempts of one run do not overlap).
        if (fate.lastAttemptAt === undefined || r.t >= fate.lastAttemptAt) {
          fate.lastAttemptAt = r.t;
          fate.status = str(r.labels?.status);
          fate.errorCode = str(r.labels?.errorCode);
        }
        break;
      }
      case 'paperclip.retry': {
        if (r.kind !== 'span') break;
        const run = str(r.data?.run);
        if (run === undefined || r.outcome === 'error') break;
        const due = r.data?.retryDueAtMs;
        this.fate(run).retries.push({
          fromAt: r.t,
          spawnedAt: r.t + r.dur,
          ...(typeof due === 'number' ? { dueAt: due } : {}),
        });
        break;
      }
      case 'input.received':
        if (r.kind === 'event' && r.session !== undefined) push(this.inputsBySession, r.session, r.t);
        break;
      case 'provider.event':
        if (r.kind !== 'event') break;
        this.relevant = true;
        if (r.session === undefined) {
          this.unattributed++;
          break;
        }
        push(this.eventsBySession, r.session, {
          t: r.t,
          type: str(r.labels?.type) ?? 'unknown',
          item: str(r.labels?.item),
        });
        break;
      case 'provider.boot':
      case 'agent.launch':
        if (r.kind !== 'span' || r.outcome !== 'ok') break;
        this.relevant = true;
        (r.name === 'provider.boot' ? this.boots : this.launches).add(
          { adapter: str(r.labels?.adapter) ?? 'unknown', start: startKind(r.labels?.start) },
          r.dur,
        );
        break;
      case 'controlplane.boot':
        if (r.kind !== 'span' || r.outcome !== 'ok') break;
        this.relevant = true;
        this.controlPlaneBoots.add({ reason: str(r.labels?.reason) ?? 'unknown' }, r.dur);
        break;
      case 'run.lost': {
        if (r.kind !== 'span') break;
        this.relevant = true;
        this.lost.push(r as Span);
        const run = str(r.data?.run);
        if (run !== undefined) this.fate(run).lostAt = r.t + r.dur;
        break;
      }
      case 'provider.request': {
        // A request to the vendor's own endpoints (Claude Code's settings, policy) is no model request.
        if (r.kind !== 'span' || r.session === undefined || r.labels?.api === 'first-party') break;
        const attempt = r.data?.attempt;
        const fault = str(r.data?.fault);
        push(this.requestsBySession, r.session, {
          t: r.t,
          dur: r.dur,
          retry: typeof attempt === 'number' && attempt > 1,
          ...(fault !== undefined ? { fault } : {}),
        });
        break;
      }
      case 'provider.session.load': {
        if (r.kind !== 'span' || r.session === undefined) break;
        const span = r as Span;
        // The load's start is its end minus its duration: the span's own `t`. When it was
        // written (`writtenAt`, possibly long after) only says when it arrived; the whole trace
        // is read before the join, so a late span counts like any other.
        const run = str(span.data?.run);
        push(this.loadsBySession, r.session, { start: span.t, dur: span.dur, ...(run ? { run } : {}) });
        break;
      }
    }
  }

  private fate(run: string): RunFate {
    let fate = this.fates.get(run);
    if (!fate) {
      fate = { retries: [] };
      this.fates.set(run, fate);
    }
    return fate;
  }

  /** A new run ends the session's previous one and takes the input it answers. */
  private runCreated(r: Ev, session: string): void {
    const runs = this.runsBySession.get(session);
    const previous = runs?.[runs.length - 1];
    if (previous && previous.endedAt > r.t) {
      previous.endedAt = r.t;
      if (previous.end === 'open') previous.end = 'replaced';
    }
    const inputs = this.inputsBySession.get(session) ?? [];
    let inputAt: number | undefined;
    for (let i = inputs.length - 1; i >= 0; i--) {
      if (inputs[i]! <= r.t && (previous === undefined || inputs[i]! > previous.createdAt)) {
        inputAt = inputs[i];
        break;
      }
    }
    push(this.runsBySession, session, {
      run: str(r.data?.run) ?? null,
      adapter: str(r.labels?.adapter) ?? 'unknown',
      start: startKind(r.labels?.start),
      createdAt: r.t,
      endedAt: Number.POSITIVE_INFINITY,
      end: 'open',
      inputAt,
    });
  }

  /** The trace ended: a restart still open stays in the list with no ready time. */
  end(): void {
    if (this.openRestart) this.restarts.push(this.openRestart);
    this.openRestart = undefined;
    // lost_run_detection from the kill that orphaned the run (when the trace says when its
    // attempt started), not from whichever restart its writer took: a graceful restart after a
    // kill -9 finds the run lost at once, but it was the kill -9 that lost it.
    for (const span of this.lost) {
      const lostAt = span.t + span.dur;
      const attempt = str(span.data?.paperclipRun);
      const startedAt = attempt === undefined ? undefined : this.attemptStarts.get(attempt);
      const kill = startedAt === undefined ? undefined : restartThatLostRun(this.restarts, startedAt, lostAt);
      this.lostRuns.add(
        {
          adapter: str(span.labels?.adapter) ?? 'unknown',
          kind: kill?.kind ?? str(span.labels?.kind) ?? 'unknown',
        },
        kill ? lostAt - kill.killAt : span.dur,
      );
    }
  }
}

type Tally = { cut: number; recovered: number; finished: number; unrecovered: number; open: number };

/** Counts of cut runs kept in several places at once (by adapter and kind, by restart). */
class CutTally {
  constructor(private readonly tallies: readonly Tally[]) {}
  bump(field: keyof Tally): void {
    for (const t of this.tallies) t[field]++;
  }
}

/** The joins of runs with their provider events: first activity and text, input wait, recoveries. */
class SpeedJoin {
  private readonly firstActivity = new Groups();
  private readonly firstText = new Groups();
  private readonly inputWait = new Groups();
  private readonly recovery = new Groups();
  private readonly controlPlane = new Groups();
  private readonly providerLoad = new Groups();
  private readonly toActivity = new Groups();
  private readonly providerToActivity = new Groups();
  private readonly runCounts = { created: 0, withActivity: 0, interrupted: 0, noActivity: 0, skipped: 0 };
  private readonly recoveries: SpeedAnalysis['recoveries'] = [];
  private readonly unrecovered: SpeedAnalysis['unrecovered'] = [];
  private readonly counts = new Map<string, SpeedAnalysis['recoveryCounts'][number]>();
  private readonly byRestart = new Map<Restart, Tally>();
  private readonly timeline: NonNullable<SpeedAnalysis['timeline']>['runs'] = [];
  private leftOut = 0;
  private readonly edgeNotes: string[] = [];
  private readonly completed: Array<Restart & { readyAt: number }>;

  constructor(
    private readonly restarts: readonly Restart[],
    private readonly fates: ReadonlyMap<string, RunFate>,
    private readonly endMs: number,
  ) {
    this.completed = restarts.filter((r): r is Restart & { readyAt: number } => r.readyAt !== null);
  }

  /** The samples and recovery rows measured from a world's edges (edges-speed.ts), beside the runs'. */
  addEdges(edges: EdgeSpeed, boots: Groups): void {
    const add = (groups: Groups, samples: readonly EdgeSample[]) => {
      for (const s of samples) groups.add(s.labels, s.value);
    };
    add(this.firstActivity, edges.firstActivity);
    add(boots, edges.agentBoot);
    add(this.recovery, edges.recovery);
    add(this.controlPlane, edges.recoveryControlPlane);
    add(this.providerLoad, edges.recoveryProvider);
    this.recoveries.push(...edges.recoveries);
    this.unrecovered.push(...edges.unrecovered);
    const addCounts = (into: Tally, from: Tally) => {
      into.cut += from.cut;
      into.recovered += from.recovered;
      into.finished += from.finished;
      into.unrecovered += from.unrecovered;
      into.open += from.open;
    };
    for (const c of edges.recoveryCounts) addCounts(this.kindTally(c.adapter, c.kind), c);
    for (const restart of this.restarts) {
      const runs = edges.restartRuns.get(restart.killAt);
      if (!runs) continue;
      let own = this.byRestart.get(restart);
      if (!own) {
        own = { cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 };
        this.byRestart.set(restart, own);
      }
      addCounts(own, runs);
    }
    this.edgeNotes.push(...edges.notes);
  }

  private killedBetween(from: number, to: number): boolean {
    return this.restarts.some((r) => r.killAt > from && r.killAt < to);
  }

  session(
    session: string,
    runs: readonly RunInfo[],
    events: readonly ProviderEv[],
    loads: Load[],
    requests: readonly ModelRequest[],
  ): void {
    const counted = events.filter((e) => countsAsProviderEvent(e.type));
    loads.sort((a, b) => a.start - b.start);
    for (const run of runs) {
      this.runCounts.created++;
      const inRun = (e: ProviderEv) => e.t >= run.createdAt && e.t <= run.endedAt;
      const labels = { adapter: run.adapter, start: run.start };
      if (run.inputAt !== undefined)
        this.inputWait.add({ adapter: run.adapter }, run.createdAt - run.inputAt);
      const activity = events.find((e) => inRun(e) && isActivity(e));
      if (!activity) this.runCounts.noActivity++;
      else if (this.killedBetween(run.createdAt, activity.t)) this.runCounts.interrupted++;
      else {
        this.runCounts.withActivity++;
        this.firstActivity.add(labels, activity.t - run.createdAt);
        const text = events.find((e) => inRun(e) && e.type === 'item.delta' && e.item === 'text');
        if (text && !this.killedBetween(run.createdAt, text.t))
          this.firstText.add(labels, text.t - run.createdAt);
      }
      this.addToTimeline(session, run, activity?.t);
      this.runRecoveries(session, run, { counted, events, loads, requests });
    }
  }

  private addToTimeline(session: string, run: RunInfo, activityAt: number | undefined): void {
    if (this.timeline.length >= MAX_TIMELINE_RUNS) {
      this.leftOut++;
      return;
    }
    this.timeline.push({
      session,
      run: run.run,
      adapter: run.adapter,
      createdAtMs: round3(run.createdAt),
      firstActivityAtMs: activityAt === undefined ? null : round3(activityAt),
      endedAtMs: run.end === 'open' ? null : round3(run.endedAt),
      status: run.status ?? (run.end === 'replaced' ? 'replaced' : null),
    });
  }

  /**
   * The tallies a cut run counts in: its adapter and restart kind's (`recoveryCounts`), and the
   * restart's own (`restarts[].runs`).
   */
  private count(adapter: string, kind: string, restart: Restart): CutTally {
    const c = this.kindTally(adapter, kind);
    let own = this.byRestart.get(restart);
    if (!own) {
      own = { cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 };
      this.byRestart.set(restart, own);
    }
    return new CutTally([c, own]);
  }

  /** The adapter and restart kind's tally (`recoveryCounts`). */
  private kindTally(adapter: string, kind: string): SpeedAnalysis['recoveryCounts'][number] {
    const key = `${adapter}\u0000${kind}`;
    let c = this.counts.get(key);
    if (!c) {
      c = { adapter, kind, cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 };
      this.counts.set(key, c);
    }
    return c;
  }

  /**
   * Recoveries: every restart whose kill found this run active, unless the run was still
   * recovering from an earlier one (then that sample continues through this outage). Every such
   * cut is accounted for: recovered (a sample), or not, with how the run ended.
   */
  private runRecoveries(
    session: string,
    run: RunInfo,
    of: {
      counted: readonly ProviderEv[];
      events: readonly ProviderEv[];
      loads: readonly Load[];
      requests: readonly ModelRequest[];
    },
  ): void {
    const { counted, loads } = of;
    const completed = this.completed;
    const fate = run.run === null ? undefined : this.fates.get(run.run);
    let coveredUntil = Number.NEGATIVE_INFINITY;
    for (const restart of this.restarts) {
      if (restart.killAt <= run.createdAt || restart.killAt >= run.endedAt) continue;
      if (restart.killAt < coveredUntil) continue;
      const tally = this.count(run.adapter, restart.kind, restart);
      tally.bump('cut');
      const anchor = restart.readyAt;
      const next = anchor === null ? undefined : counted.find((e) => e.t >= anchor && e.t <= run.endedAt);
      if (anchor === null || !next) {
        // A run that kept working after the kill (a graceful drain lets its turn finish, a
        // surviving runner goes on) and then ended had nothing left to recover.
        const workedOn = counted.some((e) => e.t > restart.killAt && e.t <= run.endedAt);
        if (run.end !== 'open' && workedOn) tally.bump('finished');
        else this.notRecovered(session, run, restart, fate, tally);
        coveredUntil = Number.POSITIVE_INFINITY;
        continue;
      }
      tally.bump('recovered');
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
      const recoveryLabels = { adapter: run.adapter, kind: restart.kind };
      this.recovery.add(recoveryLabels, full);
      this.controlPlane.add(recoveryLabels, cp);
      if (loadMs !== null) this.providerLoad.add(recoveryLabels, loadMs);
      const toActivity = this.toFirstActivity(anchor, load?.start ?? next.t, run, of);
      if (toActivity) {
        this.toActivity.add(recoveryLabels, toActivity.toActivityMs);
        this.providerToActivity.add(recoveryLabels, toActivity.providerToActivityMs);
      }
      // The retry that brought it back: the first to start its agent after the kill.
      const retry = fate?.retries.find((x) => x.spawnedAt >= restart.killAt && x.spawnedAt <= next.t);
      this.recoveries.push({
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
        killAtMs: round3(restart.killAt),
        lostAtMs: lostAfter(fate, restart.killAt),
        retryFromAtMs: retry ? round3(retry.fromAt) : null,
        retryAtMs: retry ? round3(retry.spawnedAt) : null,
        retryDueAtMs: retry?.dueAt === undefined ? null : round3(retry.dueAt),
        activityAtMs: null,
        toActivityMs: null,
        providerToActivityMs: null,
        ...toActivity,
      });
    }
  }

  /**
   * A recovery measured to the recovered agent's first activity (report rows): ready → that
   * activity, and the provider's part from the agent's (re)start (`handoffAt`: where the control
   * plane's judged share ends) → it, with the model requests made in between (its prefill, its
   * retries of a provider fault). Undefined when the run showed no activity after ready.
   */
  private toFirstActivity(
    anchor: number,
    handoffAt: number,
    run: RunInfo,
    of: { events: readonly ProviderEv[]; requests: readonly ModelRequest[] },
  ):
    | {
        activityAtMs: number;
        toActivityMs: number;
        providerToActivityMs: number;
        modelRequests: NonNullable<SpeedAnalysis['recoveries'][number]['modelRequests']>;
      }
    | undefined {
    const activity = of.events.find((e) => e.t >= anchor && e.t <= run.endedAt && isActivity(e));
    if (!activity) return undefined;
    const from = Math.min(handoffAt, activity.t);
    const made = of.requests.filter((r) => r.t >= from && r.t <= activity.t);
    const faults: Record<string, number> = {};
    for (const r of made) if (r.fault !== undefined) faults[r.fault] = (faults[r.fault] ?? 0) + 1;
    const outage = (a: number, b: number) => outageWithin(this.completed, a, b);
    return {
      activityAtMs: round3(activity.t),
      toActivityMs: round3(Math.max(0, activity.t - anchor - outage(anchor, activity.t))),
      providerToActivityMs: round3(Math.max(0, activity.t - from - outage(from, activity.t))),
      modelRequests: {
        count: made.length,
        retries: made.filter((r) => r.retry).length,
        faults,
        waitMs: round3(made.reduce((sum, r) => sum + Math.min(r.dur, activity.t - r.t), 0)),
      },
    };
  }

  /** A cut run with no provider event after it: how it ended, or how long it has waited so far. */
  private notRecovered(
    session: string,
    run: RunInfo,
    restart: Restart,
    fate: RunFate | undefined,
    tally: CutTally,
  ): void {
    tally.bump('unrecovered');
    const open = run.end === 'open';
    if (open) tally.bump('open');
    const anchor = restart.readyAt;
    const atLeast =
      open && anchor !== null
        ? round3(Math.max(0, this.endMs - anchor - outageWithin(this.completed, anchor, this.endMs)))
        : null;
    this.unrecovered.push({
      session,
      run: run.run,
      adapter: run.adapter,
      kind: restart.kind,
      readyAtMs: anchor === null ? null : round3(anchor),
      killAtMs: round3(restart.killAt),
      status: open ? 'running' : (run.status ?? fate?.status ?? run.end),
      errorCode: run.errorCode ?? fate?.errorCode ?? null,
      open,
      atLeastMs: atLeast,
      lostAtMs: lostAfter(fate, restart.killAt),
    });
  }

  result(input: SpeedRecords): SpeedAnalysis {
    const notes: string[] = [];
    if (input.unattributed > 0)
      notes.push(`${input.unattributed} provider events carry no session: left out of the joins`);
    if (this.runCounts.interrupted > 0) {
      notes.push(
        `${this.runCounts.interrupted} runs had a restart before their first activity: left out of time_to_first_activity (their wait is a recovery)`,
      );
    }
    notes.push(...this.edgeNotes);
    notes.push(...unrecoveredNotes(this.unrecovered));
    if (input.skipped.length > 0) {
      notes.push(
        `${input.skipped.length} input${input.skipped.length === 1 ? ' was' : 's were'} answered without a run (run.skipped): no run, no sample`,
      );
    }
    if (this.restarts.some((r) => r.readyAt === null)) {
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
    this.runCounts.skipped = input.skipped.length;
    return {
      metrics: {
        time_to_first_activity: metric('time_to_first_activity', this.firstActivity),
        time_to_first_text: metric('time_to_first_text', this.firstText),
        input_wait: metric('input_wait', this.inputWait),
        agent_boot: metric('agent_boot', input.boots),
        agent_launch: metric('agent_launch', input.launches),
        restart_recovery: metric('restart_recovery', this.recovery),
        restart_recovery_control_plane: metric('restart_recovery_control_plane', this.controlPlane),
        restart_provider_load: metric('restart_provider_load', this.providerLoad),
        controlplane_boot: metric('controlplane_boot', input.controlPlaneBoots),
        lost_run_detection: metric('lost_run_detection', input.lostRuns),
        restart_recovery_to_activity: metric('restart_recovery_to_activity', this.toActivity),
        restart_provider_to_activity: metric('restart_provider_to_activity', this.providerToActivity),
      },
      runs: this.runCounts,
      restarts: this.restarts.map((r) => ({
        kind: r.kind,
        killAtMs: round3(r.killAt),
        readyAtMs: r.readyAt === null ? null : round3(r.readyAt),
        outageMs: r.readyAt === null ? null : round3(r.readyAt - r.killAt),
        runs: this.byRestart.get(r) ?? { cut: 0, recovered: 0, finished: 0, unrecovered: 0, open: 0 },
      })),
      recoveries: this.recoveries,
      unrecovered: this.unrecovered,
      recoveryCounts: [...this.counts.values()].sort((a, b) =>
        a.adapter === b.adapter ? (a.kind < b.kind ? -1 : 1) : a.adapter < b.adapter ? -1 : 1,
      ),
      timeline: {
        runs: this.timeline.sort((a, b) => a.createdAtMs - b.createdAtMs),
        skipped: input.skipped.slice(0, MAX_TIMELINE_RUNS),
        leftOut: this.leftOut,
      },
      notes,
    };
  }
}

/** The end of the run's `run.lost` span, when it was found lost after this kill. */
function lostAfter(fate: RunFate | undefined, killAt: number): number | null {
  return fate?.lostAt !== undefined && fate.lostAt >= killAt ? round3(fate.lostAt) : null;
}

/** What is said of cut runs that were not recovered: each one named, closed ones first. */
export function unrecoveredNotes(unrecovered: SpeedAnalysis['unrecovered']): string[] {
  const closed = unrecovered.filter((u) => !u.open);
  const open = unrecovered.filter((u) => u.open);
  const name = (u: SpeedAnalysis['unrecovered'][number]) =>
    `${u.session} (${u.adapter}, ${u.kind} restart${u.open ? '' : `: ${u.status ?? 'ended'}${u.errorCode ? `, ${u.errorCode}` : ''}`})`;
  const notes: string[] = [];
  if (closed.length > 0) {
    notes.push(
      `${closed.length} run${closed.length === 1 ? '' : 's'} cut by a restart ended without being recovered: ${closed.map(name).join('; ')}`,
    );
  }
  if (open.length > 0) {
    notes.push(
      `${open.length} run${open.length === 1 ? '' : 's'} cut by a restart still not recovered when the trace ended: ${open
        .map(
          (u) =>
            `${name(u)}${u.atLeastMs === null || u.atLeastMs === undefined ? ' (the control plane never came back)' : ` waiting ≥ ${fmtSeconds(u.atLeastMs)}`}`,
        )
        .join('; ')}`,
    );
  }
  return notes;
}

const fmtSeconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

export const speedFinisher = {
  key: 'speed' as const,
  retains: (name: string) => SPEED_RECORD_NAMES.has(name) || EDGE_RECORD_NAMES.has(name),
  finish: computeSpeed,
};
