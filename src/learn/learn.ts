/**
 * `fleetbench model learn`: a control plane's behaviour learned from its traces as data
 * (docs/model.md). Any trace whose API calls carry their session and poll cycle will do (the
 * reference's, agent-orchestrator's through `--target ao`, an `http` or `module` target's that
 * writes the same records); what each part is learned from is said beside it below and in the
 * docs. The whole trace is read into memory (its api records as small tuples), bounded by
 * MODEL_LEARN_LIMITS.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { availableParallelism } from 'node:os';
import { FleetbenchError } from '../base/errors.ts';
import { MODEL_LEARN_LIMITS } from '../base/limits.ts';
import { VERSION } from '../base/version.ts';
import {
  MODEL_FORMAT,
  type Model,
  type ModelCalls,
  type ModelEventProfile,
  type ModelHistogram,
  type ModelOperation,
  type ModelState,
  type ModelTraceProvenance,
  type ModelTransition,
  type ModelTrigger,
  modelStates,
} from '../model/format.ts';
import { readTrace } from '../trace/reader.ts';
import type { ApiRecord, BodyRecord, EventRecord, SpanRecord } from '../trace/schema.ts';
import { type Chain, fitClientTimes, type SimCycle, simulateCycles, spreadOf } from './cycle-time.ts';
import { decideOverrun, type OverrunVotes, overrunVotes } from './overrun.ts';
import { SpeedLearner } from './speed.ts';

/** Cycles after an event whose extra calls are learned (and kept out of the cycle profiles). */
export const EVENT_CYCLES = 3;
/** A mean below this (calls per unit) is left out of a profile: noise, not behaviour. */
const MIN_MEAN = 0.02;
/** A state change logged this long after its cycle's end still belongs to it (IPC, log lines). */
const CYCLE_END_SLACK_MS = 250;

const TERMINAL: ReadonlySet<string> = new Set(['merged', 'closed']);
/** The events whose following cycles may cost more, beyond the state they leave the session in. */
const EXCESS_TRIGGERS: readonly ModelTrigger[] = ['review-posted', 'pushed', 'ci-completed', 'restart'];
const WORLD_TRIGGERS: Record<string, ModelTrigger> = {
  'world.pr.opened': 'pr-opened',
  'world.ci.completed': 'ci-completed',
  'world.review.posted': 'review-posted',
  'world.pushed': 'pushed',
  'world.pr.merged': 'merged',
};

interface Call {
  t: number;
  dur: number;
  op: string;
  session?: string;
  cycle?: number;
  repo?: string;
  source?: string;
  cost: number;
}

interface Cycle {
  index: number;
  id: number;
  t: number;
  end: number;
  project?: string;
  repo?: string;
  calls: Call[];
}

interface Session {
  id: string;
  createdAt: number;
  /** When the control plane's spawn of it returned (`ao.spawned`), if the trace says. */
  spawnedAt?: number;
  repo?: string;
  /** State changes in time order: [t, to]. */
  states: Array<[number, ModelState]>;
  /** What happened to it: [t, trigger, data]. */
  triggers: Array<{ t: number; on: ModelTrigger; comments?: number }>;
  told: number[];
  /** Its cycles, in time order (filled while reading). */
  cycles: Cycle[];
}

/** Keeps the order operations are first seen in and sums per unit. */
class Tally {
  readonly sums = new Map<string, number>();
  samples = 0;
  add(op: string, n = 1): void {
    this.sums.set(op, (this.sums.get(op) ?? 0) + n);
  }
  means(min = MIN_MEAN): ModelCalls {
    if (this.samples === 0) return [];
    return [...this.sums]
      .map(([operation, sum]) => ({ operation, mean: round(sum / this.samples, 4) }))
      .filter((c) => Math.abs(c.mean) >= min);
  }
}

const round = (v: number, digits = 1) => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function percentiles(values: number[]): { p50: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50)), p95: round(percentile(sorted, 95)) };
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The catalogue of operations: one key per (op, protocol, method, route) the traces recorded. */
class Operations {
  private readonly byKey = new Map<string, { op: ModelOperation; durs: number[]; cost: number }>();
  private readonly keyOf = new Map<string, string>();
  private readonly opRoutes = new Map<string, Set<string>>();

  /** First pass: which op names go with more than one route (those keys then name the route). */
  see(r: ApiRecord): void {
    if (r.op === undefined) return;
    const routes = this.opRoutes.get(r.op) ?? new Set();
    routes.add(`${r.protocol} ${r.method} ${r.route}`);
    this.opRoutes.set(r.op, routes);
  }

  key(r: ApiRecord): string {
    const full = `${r.op ?? ''}|${r.protocol}|${r.method}|${r.route}`;
    let key = this.keyOf.get(full);
    if (key === undefined) {
      key =
        r.op === undefined
          ? `${r.method} ${r.route}`
          : (this.opRoutes.get(r.op)?.size ?? 1) > 1
            ? `${r.op} ${r.method} ${r.route}`
            : r.op;
      this.keyOf.set(full, key);
    }
    let entry = this.byKey.get(key);
    if (!entry) {
      entry = {
        op: {
          ...(r.op !== undefined ? { op: r.op } : {}),
          protocol: r.protocol,
          method: r.method,
          route: r.route,
          resource: r.resource,
          points: 0,
          latencyMs: null,
          calls: 0,
        },
        durs: [],
        cost: 0,
      };
      this.byKey.set(key, entry);
    }
    entry.op.calls++;
    entry.cost += r.cost;
    entry.durs.push(r.dur);
    return key;
  }

  finish(): Record<string, ModelOperation> {
    const out: Record<string, ModelOperation> = {};
    for (const [key, { op, durs, cost }] of [...this.byKey].sort(([a], [b]) => (a < b ? -1 : 1)))
      out[key] = { ...op, points: round(cost / Math.max(1, op.calls), 3), latencyMs: percentiles(durs) };
    return out;
  }
}

/** Everything learned, summed over the traces. */
class Learner {
  readonly operations = new Operations();
  readonly cycleProfiles = new Map<string, { clean: Tally; all: Tally; from: ModelState; to: ModelState }>();
  readonly spawn = new Tally();
  readonly perProject = new Tally();
  readonly perRepo = new Tally();
  readonly excess = new Map<string, { on: ModelTrigger; k: number; perSession: Tally; perProject: Tally }>();
  readonly transitionSamples: Array<{
    from: ModelState;
    to: ModelState;
    byKind: Map<ModelTrigger, { lag: number; ms: number }>;
  }> = [];
  readonly review = {
    samples: 0,
    told: new Map<number, number>(),
    perReaction: new Map<string, number[]>(),
    comments: [] as number[],
  };
  readonly outages = new Map<string, number[]>();
  readonly fitGroups: Array<{
    /** Spawn chains with how long the spawn took (creation → the control plane's word that it returned). */
    spawns: Array<{ chain: number; tookMs: number }>;
    cycles: SimCycle[];
    chains: Chain[];
    observed: number[];
    spreads: number[];
    cores: number;
  }> = [];
  readonly traces: ModelTraceProvenance[] = [];
  readonly notes = new Set<string>();
  readonly speed = new SpeedLearner();
  /** Traces with poll cycles and attributed calls: the cost part was learned from them. */
  costTraces = 0;
  scope: 'project' | 'global' = 'global';
  parallel = 0;
  intervals: number[] = [];
  /** How the loops' cycles after overruns started, over the traces (overrun.ts). */
  readonly overrun: OverrunVotes = { skip: 0, immediate: 0, unclear: 0 };
  apiRecords = 0;
  fit = { calls: 0, modelled: 0, sessionCycles: 0, sessionCycleCalls: 0, unmodelled: 0 };
  /** Per trace, the session-cycles with their keys (for the modelled side of the fit). */
  readonly fitUnits: Array<() => number> = [];
}

function profileKey(from: ModelState, to: ModelState): string {
  return `${from}→${to}`;
}

function asState(value: unknown): ModelState | undefined {
  return typeof value === 'string' && (modelStates as readonly string[]).includes(value)
    ? (value as ModelState)
    : undefined;
}

/** The state a session was in at `t` (the last change at or before it), or undefined before it existed. */
function stateAt(session: Session, t: number): ModelState | undefined {
  if (t < session.createdAt) return undefined;
  let state: ModelState = 'spawning';
  for (const [at, to] of session.states) {
    if (at > t) break;
    state = to;
  }
  return state;
}

async function learnTrace(file: string, learner: Learner): Promise<void> {
  const { records, stats } = await readTrace(file);
  const header = stats.header!;
  const apis: ApiRecord[] = [];
  const spans: SpanRecord[] = [];
  const events: EventRecord[] = [];
  let endMs = 0;
  for (const r of records as BodyRecord[]) {
    if (r.kind === 'api') {
      apis.push(r);
      learner.operations.see(r);
      endMs = Math.max(endMs, r.t + r.dur);
    } else if (r.kind === 'span') {
      spans.push(r);
      endMs = Math.max(endMs, r.t + r.dur);
    } else if (r.kind === 'event') {
      events.push(r);
      endMs = Math.max(endMs, r.t);
    }
  }
  for (const s of spans)
    if (s.name === 'controlplane.outage' && typeof s.labels?.kind === 'string')
      learner.outages.set(s.labels.kind, [...(learner.outages.get(s.labels.kind) ?? []), s.dur]);
  learner.speed.add(
    [...spans].sort((a, b) => a.t - b.t),
    [...events].sort((a, b) => a.t - b.t),
  );
  learner.apiRecords += apis.length;
  if (learner.apiRecords > MODEL_LEARN_LIMITS.maxApiRecords)
    throw new FleetbenchError(
      'E_MODEL',
      `${file}: more than ${MODEL_LEARN_LIMITS.maxApiRecords.toLocaleString('en-US')} api records over the traces (docs/limits.md): learn from shorter runs`,
    );
  const pollCycles = spans.filter((s) => s.name === 'poll.cycle').sort((a, b) => a.t - b.t);
  // agent-orchestrator's run says what ran and the machine's load and cores at its start and end.
  const started = events.find((e) => e.name === 'ao.started');
  const stopping = events.find((e) => e.name === 'ao.stopping');
  const machine = (e?: EventRecord) =>
    (e?.data as { machine?: { loadavg?: number[]; cpus?: number } } | undefined)?.machine;
  const provenance = async (cycleCount: number): Promise<void> => {
    const startLoad = machine(started);
    learner.traces.push({
      file,
      sha256: await sha256Of(file),
      runId: header.runId,
      target: header.target ?? null,
      controlPlane: started
        ? `agent-orchestrator ${String(started.labels?.core ?? '?')}, gh ${String(started.labels?.gh ?? '?')}`
        : null,
      scenario: header.scenario.name,
      cell: header.scenario.cell ?? null,
      clock: header.clock,
      startedAt: header.startedAt,
      durationMs: round(stats.footer?.t ?? endMs, 0),
      sessions: new Set(apis.flatMap((r) => (r.session ? [r.session] : []))).size,
      cycles: cycleCount,
      calls: apis.length,
      load:
        startLoad?.loadavg && startLoad.cpus
          ? { start: startLoad.loadavg, end: machine(stopping)?.loadavg ?? null, cpus: startLoad.cpus }
          : null,
    });
  };
  if (pollCycles.length === 0 || !apis.some((r) => r.cycle !== undefined && r.session !== undefined)) {
    learner.notes.add(
      `${file}: no poll cycles with attributed calls (poll.cycle spans, api records with a session and a cycle): its cost was not learned`,
    );
    await provenance(pollCycles.length);
    return;
  }
  learner.costTraces++;

  // ── Cycles, and each call to its cycle (by id, the span nearest in time: a restarted process may reuse ids).
  const cycles: Cycle[] = pollCycles.map((s, index) => ({
    index,
    id: Number((s.data as { cycle?: unknown } | undefined)?.cycle ?? -1),
    t: s.t,
    end: s.t + s.dur,
    ...(typeof s.labels?.project === 'string' ? { project: s.labels.project } : {}),
    calls: [],
  }));
  if (cycles.some((c) => c.project !== undefined)) learner.scope = 'project';
  for (const s of pollCycles) {
    const interval = (s.data as { intervalMs?: unknown } | undefined)?.intervalMs;
    if (typeof interval === 'number') learner.intervals.push(interval);
  }
  const cyclesById = new Map<number, Cycle[]>();
  for (const c of cycles) cyclesById.set(c.id, [...(cyclesById.get(c.id) ?? []), c]);
  if ([...cyclesById.values()].some((list) => list.length > 1))
    learner.notes.add(
      'cycle ids repeat in a trace (a restarted control plane numbering from 1): calls were matched to the cycle nearest in time',
    );

  const sessions = new Map<string, Session>();
  const sessionOf = (id: string, t: number): Session => {
    let s = sessions.get(id);
    if (!s) {
      s = { id, createdAt: t, states: [], triggers: [], told: [], cycles: [] };
      sessions.set(id, s);
    }
    return s;
  };
  const readies: number[] = [];
  for (const e of events.sort((a, b) => a.t - b.t)) {
    if (e.name === 'session.state' && e.session) {
      const from = e.labels?.from;
      const s = sessionOf(e.session, e.t);
      if (from === 'none') {
        s.createdAt = e.t;
        s.triggers.push({ t: e.t, on: 'created' });
      } else {
        const to = asState(e.labels?.to);
        if (to) s.states.push([e.t, to]);
      }
    } else if (WORLD_TRIGGERS[e.name] && e.session) {
      const s = sessionOf(e.session, e.t);
      const comments = (e.data as { comments?: unknown } | undefined)?.comments;
      s.triggers.push({
        t: e.t,
        on: WORLD_TRIGGERS[e.name]!,
        ...(typeof comments === 'number' ? { comments } : {}),
      });
      if (e.name === 'world.pr.opened' && typeof e.labels?.repo === 'string') s.repo ??= e.labels.repo;
    } else if (e.name === 'ao.spawned' && e.session) {
      sessionOf(e.session, e.t).spawnedAt = e.t;
    } else if (e.name === 'controlplane.ready' && e.labels?.reason !== 'start') {
      readies.push(e.t);
    } else if (
      e.session &&
      (e.name === 'agent.review.received' ||
        (e.name === 'ao.agent.message' && e.labels?.reaction === 'review-comments'))
    ) {
      sessionOf(e.session, e.t).told.push(e.t);
    }
  }
  const votes = overrunVotes(
    pollCycles.map((s) => {
      const interval = (s.data as { intervalMs?: unknown } | undefined)?.intervalMs;
      return {
        loop: typeof s.labels?.project === 'string' ? s.labels.project : '',
        t: s.t,
        end: s.t + s.dur,
        intervalMs: typeof interval === 'number' ? interval : undefined,
      };
    }),
    readies,
  );
  for (const key of ['skip', 'immediate', 'unclear'] as const) learner.overrun[key] += votes[key];
  for (const s of sessions.values())
    for (const t of readies) if (t > s.createdAt) s.triggers.push({ t, on: 'restart' });
  for (const s of sessions.values()) s.triggers.sort((a, b) => a.t - b.t);

  const calls: Call[] = [];
  const spawnCalls = new Set<Call>();
  const repoVotes = new Map<string, Map<string, number>>();
  for (const r of apis) {
    const call: Call = {
      t: r.t,
      dur: r.dur,
      op: learner.operations.key(r),
      cost: r.cost,
      ...(r.session !== undefined ? { session: r.session } : {}),
      ...(r.cycle !== undefined ? { cycle: r.cycle } : {}),
      ...(r.repo !== undefined ? { repo: r.repo } : {}),
      ...(r.source !== undefined ? { source: r.source } : {}),
    };
    calls.push(call);
    if (r.session !== undefined && r.repo !== undefined) {
      const votes = repoVotes.get(r.session) ?? new Map<string, number>();
      votes.set(r.repo, (votes.get(r.repo) ?? 0) + 1);
      repoVotes.set(r.session, votes);
      sessionOf(r.session, r.t);
    }
    // A call of the spawn path, though it fell in a cycle of its repository (the cycle is announced per repo).
    const spawnedAt = r.session !== undefined ? sessions.get(r.session)?.spawnedAt : undefined;
    if (spawnedAt !== undefined && r.t < spawnedAt && r.source !== 'agent') {
      spawnCalls.add(call);
      continue;
    }
    if (r.cycle === undefined) continue;
    const candidates = cyclesById.get(r.cycle);
    if (!candidates) continue;
    let best = candidates[0]!;
    for (const c of candidates)
      if (Math.abs(r.t - (c.t + c.end) / 2) < Math.abs(r.t - (best.t + best.end) / 2)) best = c;
    best.calls.push(call);
  }
  for (const [id, votes] of repoVotes) {
    const s = sessions.get(id)!;
    s.repo ??= [...votes].sort((a, b) => b[1] - a[1])[0]![0];
  }
  for (const c of cycles) {
    const votes = new Map<string, number>();
    for (const call of c.calls) if (call.repo) votes.set(call.repo, (votes.get(call.repo) ?? 0) + 1);
    const top = [...votes].sort((a, b) => b[1] - a[1])[0];
    if (top) c.repo = top[0];
  }

  // ── Session-cycles: the sessions each cycle polled, with what it did to them.
  const projectScoped = cycles.some((c) => c.project !== undefined);
  const members = (c: Cycle): Session[] =>
    [...sessions.values()].filter((s) => {
      if ((s.spawnedAt ?? s.createdAt) > c.t) return false;
      const st = stateAt(s, c.t);
      if (st === undefined || TERMINAL.has(st)) return false;
      return !projectScoped || (c.repo !== undefined && s.repo === c.repo);
    });
  interface Unit {
    session: Session;
    cycle: Cycle;
    from: ModelState;
    to: ModelState;
    counts: Map<string, number>;
    /** Per excess trigger: which of the session's cycles after it this is (1-based), if ≤ EVENT_CYCLES. */
    offsets: Map<ModelTrigger, number>;
  }
  const units: Unit[] = [];
  const cycleMembers = new Map<Cycle, Session[]>();
  for (const c of cycles) {
    if (projectScoped && c.calls.length === 0) continue;
    const list = members(c);
    cycleMembers.set(c, list);
    for (const s of list) {
      s.cycles.push(c);
      const from = stateAt(s, c.t) ?? 'spawning';
      const to = stateAt(s, c.end + CYCLE_END_SLACK_MS) ?? from;
      const counts = new Map<string, number>();
      for (const call of c.calls)
        if (call.session === s.id) counts.set(call.op, (counts.get(call.op) ?? 0) + 1);
      units.push({ session: s, cycle: c, from, to, counts, offsets: new Map() });
    }
  }
  for (const s of sessions.values()) {
    const own = units.filter((u) => u.session === s);
    for (const trigger of s.triggers) {
      if (!EXCESS_TRIGGERS.includes(trigger.on)) continue;
      const after = own.filter((u) => u.cycle.t > trigger.t);
      after.slice(0, EVENT_CYCLES).forEach((u, k) => {
        const prev = u.offsets.get(trigger.on);
        if (prev === undefined || k + 1 < prev) u.offsets.set(trigger.on, k + 1);
      });
    }
  }

  // ── Cycle profiles: from clean session-cycles (no event in the cycles before), all of them when none is clean.
  for (const u of units) {
    const key = profileKey(u.from, u.to);
    let entry = learner.cycleProfiles.get(key);
    if (!entry) {
      entry = { clean: new Tally(), all: new Tally(), from: u.from, to: u.to };
      learner.cycleProfiles.set(key, entry);
    }
    const targets = u.offsets.size === 0 ? [entry.clean, entry.all] : [entry.all];
    for (const tally of targets) {
      tally.samples++;
      for (const [op, n] of u.counts) tally.add(op, n);
    }
  }
  const profileMean = (from: ModelState, to: ModelState, op: string): number => {
    const entry = learner.cycleProfiles.get(profileKey(from, to))!;
    const tally = entry.clean.samples > 0 ? entry.clean : entry.all;
    return (tally.sums.get(op) ?? 0) / tally.samples;
  };

  // ── Extra calls in the cycles after an event, beyond the profile.
  for (const u of units) {
    for (const [on, k] of u.offsets) {
      const key = `${on}#${k}`;
      let entry = learner.excess.get(key);
      if (!entry) {
        entry = { on, k, perSession: new Tally(), perProject: new Tally() };
        learner.excess.set(key, entry);
      }
      entry.perSession.samples++;
      const entryRef = entry;
      const profile = learner.cycleProfiles.get(profileKey(u.from, u.to))!;
      const tally = profile.clean.samples > 0 ? profile.clean : profile.all;
      const ops = new Set([...u.counts.keys(), ...tally.sums.keys()]);
      for (const op of ops)
        entryRef.perSession.add(op, (u.counts.get(op) ?? 0) - profileMean(u.from, u.to, op));
    }
  }

  // ── Shared calls (a cycle's calls of no session): per project loop, and per repository when they name one.
  const restartOffsetOf = (c: Cycle): number | undefined => {
    let best: number | undefined;
    for (const t of readies) {
      const loopCycles = cycles.filter(
        (o) => o.t > t && (o.project ?? '') === (c.project ?? '') && o.t <= c.t,
      );
      const k = loopCycles.length;
      if (k >= 1 && k <= EVENT_CYCLES && (best === undefined || k < best)) best = k;
    }
    return best;
  };
  const sharedOf = (c: Cycle) => {
    const perRepo = new Map<string, number>();
    const perProject = new Map<string, number>();
    for (const call of c.calls) {
      if (call.session !== undefined) continue;
      const tally = call.repo !== undefined ? perRepo : perProject;
      tally.set(call.op, (tally.get(call.op) ?? 0) + 1);
    }
    return { perRepo, perProject };
  };
  for (const [c, list] of cycleMembers) {
    if (list.length === 0) continue;
    const k = restartOffsetOf(c);
    const { perRepo, perProject } = sharedOf(c);
    const repos = new Set(list.map((s) => s.repo ?? '')).size;
    if (k === undefined) {
      learner.perProject.samples++;
      learner.perRepo.samples += repos;
      for (const [op, n] of perProject) learner.perProject.add(op, n);
      for (const [op, n] of perRepo) learner.perRepo.add(op, n);
    } else {
      const key = `restart#${k}`;
      let entry = learner.excess.get(key);
      if (!entry) {
        entry = { on: 'restart', k, perSession: new Tally(), perProject: new Tally() };
        learner.excess.set(key, entry);
      }
      entry.perProject.samples++;
      for (const [op, n] of [...perProject, ...perRepo]) entry.perProject.add(op, n);
    }
  }
  // ── Spawn: a session's calls outside any cycle before its first cycle (not its agent's).
  const agentCalls: Call[] = [];
  let modelledAgent = 0;
  for (const call of calls) {
    if (spawnCalls.has(call)) {
      learner.spawn.add(call.op);
      continue;
    }
    if (call.cycle !== undefined) continue;
    if (call.source === 'agent' && call.session !== undefined) {
      agentCalls.push(call);
      continue;
    }
    const s = call.session !== undefined ? sessions.get(call.session) : undefined;
    if (s && (s.cycles.length === 0 || call.t < s.cycles[0]!.t)) learner.spawn.add(call.op);
    else learner.fit.unmodelled++;
  }
  const created = [...sessions.values()].filter((s) => s.triggers.some((t) => t.on === 'created')).length;
  learner.spawn.samples += created;

  // ── Reviews: when the agent was told, and what it then did, per review and per comment.
  for (const s of sessions.values()) {
    const reviews = s.triggers.filter((t) => t.on === 'review-posted');
    for (const [i, review] of reviews.entries()) {
      const next = reviews[i + 1]?.t ?? Number.POSITIVE_INFINITY;
      learner.review.samples++;
      learner.review.comments.push(review.comments ?? 1);
      const told = s.told.find((t) => t >= review.t && t < next);
      if (told !== undefined) {
        const k = s.cycles.filter((c) => c.t > review.t && c.t <= told).length;
        learner.review.told.set(k, (learner.review.told.get(k) ?? 0) + 1);
      }
      const own = agentCalls.filter((c) => c.session === s.id && c.t >= review.t && c.t < next);
      const counts = new Map<string, number>();
      for (const c of own) counts.set(c.op, (counts.get(c.op) ?? 0) + 1);
      for (const op of new Set([...counts.keys(), ...learner.review.perReaction.keys()])) {
        const list = learner.review.perReaction.get(op) ?? new Array(learner.review.samples - 1).fill(0);
        list.push(counts.get(op) ?? 0);
        learner.review.perReaction.set(op, list);
      }
      modelledAgent += own.length;
    }
  }
  learner.fit.unmodelled += agentCalls.length - modelledAgent;

  // ── Transitions: each change, with every kind of thing that happened to the session before it
  // (the latest of each kind) and how many of its cycles later; which kind caused it is decided
  // over all the changes between the same two states (learnModel).
  for (const s of sessions.values()) {
    let prev: ModelState = 'spawning';
    for (const [t, to] of s.states) {
      const from = prev;
      prev = to;
      if (from === to) continue;
      const inCycle = s.cycles.find((c) => c.t <= t && t <= c.end + CYCLE_END_SLACK_MS);
      const byKind = new Map<ModelTrigger, { lag: number; ms: number }>();
      for (const trigger of s.triggers) {
        if (trigger.t > t) break;
        const lag = inCycle
          ? Math.max(1, s.cycles.filter((c) => c.t >= trigger.t && c.t <= inCycle.t).length)
          : 0;
        byKind.set(trigger.on, { lag, ms: t - trigger.t });
      }
      if (byKind.size > 0) learner.transitionSamples.push({ from, to, byKind });
    }
  }

  // ── Parallelism: how many of a cycle's sessions had calls in flight together.
  let widest = { sessions: 0, overlap: 0 };
  for (const [c, list] of cycleMembers) {
    const spans: Array<[number, number]> = [];
    for (const s of list) {
      const own = c.calls.filter((call) => call.session === s.id);
      if (own.length === 0) continue;
      spans.push([Math.min(...own.map((x) => x.t)), Math.max(...own.map((x) => x.t + x.dur))]);
    }
    let overlap = 0;
    for (const [a] of spans) overlap = Math.max(overlap, spans.filter(([x, y]) => x <= a && a < y).length);
    if (spans.length > widest.sessions || (spans.length === widest.sessions && overlap > widest.overlap))
      widest = { sessions: spans.length, overlap };
  }
  if (widest.sessions >= 3 && widest.overlap < 0.8 * widest.sessions)
    learner.parallel = Math.max(learner.parallel, widest.overlap);

  // ── Cycle time: the recorded cycles with their calls, fitted with the client times (cycle-time.ts).
  const cores = machine(started)?.cpus ?? availableParallelism();
  if (!machine(started)?.cpus)
    learner.notes.add(
      `the traces do not say their machine's cores: the cycle time is fitted for this machine's ${cores}`,
    );
  const fitCycles = cycles.filter((c) => c.calls.length > 0);
  const simCycles: SimCycle[] = fitCycles.map((c) => ({ startMs: c.t, parallel: learner.parallel }));
  const chains: Chain[] = [];
  fitCycles.forEach((c, i) => {
    const bySession = new Map<string, Call[]>();
    for (const call of c.calls) {
      const key = call.session ?? '';
      bySession.set(key, [...(bySession.get(key) ?? []), call]);
    }
    for (const list of bySession.values())
      chains.push({ cycle: i, startMs: c.t, latenciesMs: list.sort((a, b) => a.t - b.t).map((x) => x.dur) });
  });
  const spawnBySession = new Map<string, Call[]>();
  for (const call of calls)
    if (
      (spawnCalls.has(call) || call.cycle === undefined) &&
      call.source !== 'agent' &&
      call.session !== undefined
    )
      spawnBySession.set(call.session, [...(spawnBySession.get(call.session) ?? []), call]);
  // A spawn starts when the session is created; when the control plane says its spawn returned,
  // what its calls do not account for is the spawn's own work (below).
  const spawns: Array<{ chain: number; tookMs: number }> = [];
  for (const [id, list] of spawnBySession) {
    list.sort((a, b) => a.t - b.t);
    const s = sessions.get(id);
    const from = s && s.createdAt <= list[0]!.t ? s.createdAt : list[0]!.t;
    if (s?.spawnedAt !== undefined) spawns.push({ chain: chains.length, tookMs: s.spawnedAt - from });
    chains.push({ cycle: -1, startMs: from, latenciesMs: list.map((x) => x.dur) });
  }
  learner.fitGroups.push({
    spawns,
    cycles: simCycles,
    chains,
    observed: fitCycles.map((c) => c.end - c.t),
    spreads: fitCycles.map((c) => {
      const first = new Map<string, number>();
      for (const call of c.calls) {
        const key = call.session ?? '';
        first.set(key, Math.min(first.get(key) ?? Number.POSITIVE_INFINITY, call.t));
      }
      return spreadOf([...first.values()]);
    }),
    cores,
  });

  // ── The fit's observed side; the modelled side is computed once the profiles are final.
  learner.fit.calls += apis.length;
  learner.fit.sessionCycles += units.length;
  for (const u of units) for (const n of u.counts.values()) learner.fit.sessionCycleCalls += n;
  learner.fitUnits.push(() => {
    let total = 0;
    for (const u of units) {
      const profile = learner.cycleProfiles.get(profileKey(u.from, u.to))!;
      const tally = profile.clean.samples > 0 ? profile.clean : profile.all;
      for (const sum of tally.sums.values()) total += sum / tally.samples;
      for (const [on, k] of u.offsets) {
        const excess = learner.excess.get(`${on}#${k}`);
        if (excess)
          for (const sum of excess.perSession.sums.values()) total += sum / excess.perSession.samples;
      }
    }
    return total;
  });

  await provenance(cycles.length);
}

/**
 * The rule of each change between two states: its cause is the kind of trigger that came before
 * every one of them (or, failing that, before most) and is nearest in the session's cycles; a
 * restart only when nothing else came before. A change made outside any cycle has lag 0 and the
 * time from its cause.
 */
function learnTransitions(samples: Learner['transitionSamples'], notes: Set<string>): ModelTransition[] {
  const groups = new Map<string, Learner['transitionSamples']>();
  for (const sample of samples) {
    const key = `${sample.from}→${sample.to}`;
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  const out: ModelTransition[] = [];
  for (const group of groups.values()) {
    const kinds = new Set(group.flatMap((g) => [...g.byKind.keys()]));
    const ranked = [...kinds]
      .map((kind) => {
        const present = group.filter((g) => g.byKind.has(kind));
        const meanLag =
          present.reduce((a, g) => a + g.byKind.get(kind)!.lag, 0) / Math.max(1, present.length);
        const meanMs = present.reduce((a, g) => a + g.byKind.get(kind)!.ms, 0) / Math.max(1, present.length);
        return { kind, share: present.length / group.length, meanLag, meanMs };
      })
      .sort(
        (a, b) =>
          Number(b.share === 1) - Number(a.share === 1) ||
          Number(b.share >= 0.8) - Number(a.share >= 0.8) ||
          Number(a.kind === 'restart') - Number(b.kind === 'restart') ||
          a.meanLag - b.meanLag ||
          a.meanMs - b.meanMs,
      );
    const cause = ranked[0]!.kind;
    const used = group.filter((g) => g.byKind.has(cause));
    if (used.length < group.length)
      notes.add(
        `${group[0]!.from} → ${group[0]!.to}: ${group.length - used.length} of ${group.length} changes had no ${cause} before them and were left out`,
      );
    const afterCycles: ModelHistogram = {};
    const ms: number[] = [];
    for (const g of used) {
      const { lag, ms: after } = g.byKind.get(cause)!;
      afterCycles[String(lag)] = (afterCycles[String(lag)] ?? 0) + 1;
      if (lag === 0) ms.push(after);
    }
    out.push({
      from: group[0]!.from,
      on: cause,
      to: group[0]!.to,
      samples: used.length,
      afterCycles: Object.fromEntries(Object.entries(afterCycles).sort(([a], [b]) => Number(a) - Number(b))),
      afterMs: ms.length > 0 ? percentiles(ms) : null,
    });
  }
  return out.sort((a, b) => b.samples - a.samples);
}

function histogram(map: Map<number, number>): ModelHistogram {
  const out: ModelHistogram = {};
  for (const [k, n] of [...map].sort((a, b) => a[0] - b[0])) out[String(k)] = n;
  return out;
}

function cycleMeanError(observed: readonly number[], modelled: readonly number[]): number | null {
  const pairs = observed.map((o, i) => [o, modelled[i] ?? 0] as const).filter(([o]) => o > 0);
  if (pairs.length === 0) return null;
  return round((pairs.reduce((a, [o, m]) => a + Math.abs(m - o) / o, 0) / pairs.length) * 100, 1);
}

const pctError = (model: number, trace: number) =>
  trace === 0 ? (model === 0 ? 0 : null) : round(((model - trace) / trace) * 100, 1);

export interface LearnOptions {
  /** What the model is called (default: what the first trace says ran). */
  name?: string;
}

export async function learnModel(files: readonly string[], options: LearnOptions = {}): Promise<Model> {
  if (files.length === 0) throw new FleetbenchError('E_USAGE', 'model learn needs at least one trace');
  if (files.length > MODEL_LEARN_LIMITS.maxTraces)
    throw new FleetbenchError(
      'E_USAGE',
      `model learn reads at most ${MODEL_LEARN_LIMITS.maxTraces} traces (docs/limits.md), got ${files.length}`,
    );
  const learner = new Learner();
  for (const file of files) await learnTrace(file, learner);

  const operations = learner.operations.finish();
  // The restart rows' shared calls, relative to the steady shared calls of a cycle.
  const steadyShared = new Map<string, number>();
  for (const [op, sum] of learner.perProject.sums)
    steadyShared.set(op, sum / Math.max(1, learner.perProject.samples));
  for (const [op, sum] of learner.perRepo.sums)
    steadyShared.set(op, (steadyShared.get(op) ?? 0) + sum / Math.max(1, learner.perRepo.samples));
  for (const entry of learner.excess.values())
    if (entry.perProject.samples > 0)
      for (const [op, mean] of steadyShared) entry.perProject.add(op, -mean * entry.perProject.samples);
  const cycles = [...learner.cycleProfiles.values()]
    .map((e) => ({
      from: e.from,
      to: e.to,
      samples: e.all.samples,
      calls: (e.clean.samples > 0 ? e.clean : e.all).means(),
    }))
    .sort((a, b) => b.samples - a.samples);
  const transitions = learnTransitions(learner.transitionSamples, learner.notes);
  const events: ModelEventProfile[] = [...learner.excess.values()]
    .map((e) => ({
      on: e.on,
      afterCycle: e.k,
      samples: Math.max(e.perSession.samples, e.perProject.samples),
      perSession: e.perSession.means(0.05),
      perProject: e.perProject.means(0.05),
    }))
    .filter((e) => e.perSession.length > 0 || e.perProject.length > 0)
    .sort((a, b) => (a.on === b.on ? a.afterCycle - b.afterCycle : a.on < b.on ? -1 : 1));

  // The agent's calls after a review: per review, or per comment when they follow the comments.
  const perReaction: ModelCalls = [];
  const perComment: ModelCalls = [];
  const comments = learner.review.comments;
  for (const [op, list] of learner.review.perReaction) {
    const total = list.reduce((a, b) => a + b, 0);
    const totalComments = comments.reduce((a, b) => a + b, 0);
    const perReview = total / list.length;
    const ratio = total / Math.max(1, totalComments);
    const errReview = list.reduce((a, n) => a + Math.abs(n - perReview), 0);
    const errComment = list.reduce((a, n, i) => a + Math.abs(n - ratio * (comments[i] ?? 1)), 0);
    if (errComment < errReview) perComment.push({ operation: op, mean: round(ratio, 4) });
    else perReaction.push({ operation: op, mean: round(perReview, 4) });
  }

  const speed = learner.speed.finish();
  if (learner.costTraces === 0 && speed === null)
    throw new FleetbenchError(
      'E_MODEL',
      `${files.join(', ')}: nothing to learn: no poll cycles with attributed calls and no native-run records (docs/model.md)`,
    );
  const fit =
    learner.fitGroups.length > 0
      ? fitGroups(learner.fitGroups)
      : {
          cpuMsPerCall: 0,
          waitMsPerCall: 0,
          launchMsPerCall: 0,
          modelled: { durations: [], bursts: [], spreads: [] },
        };
  const { spawnCpuMs, cycleSpread } = fitSpawnAndSpread(learner.fitGroups, fit);
  const modelledSessionCycleCalls = learner.fitUnits.reduce((a, f) => a + f(), 0);
  const sharedCycles = learner.perProject.samples;
  const modelledShared =
    learner.perProject.means(0).reduce((a, c) => a + c.mean, 0) * sharedCycles +
    learner.perRepo.means(0).reduce((a, c) => a + c.mean, 0) * learner.perRepo.samples;
  const modelledSpawn = learner.spawn.means(0).reduce((a, c) => a + c.mean, 0) * learner.spawn.samples;
  const agentTotal = [...learner.review.perReaction.values()].flat().reduce((a, b) => a + b, 0);
  const restartShared = [...learner.excess.values()].reduce(
    (a, e) => a + [...e.perProject.sums.values()].reduce((x, y) => x + y, 0),
    0,
  );
  const modelledCalls =
    modelledSessionCycleCalls + modelledShared + modelledSpawn + agentTotal + restartShared;
  const observedCycles = learner.fitGroups.flatMap((g) => g.observed).sort((a, b) => a - b);
  const modelledCycles = [...fit.modelled.durations].sort((a, b) => a - b);
  const figure = (trace: number | null, model: number | null) => ({
    trace: trace === null ? null : round(trace, 2),
    model: model === null ? null : round(model, 2),
    errorPct: trace === null || model === null ? null : pctError(model, trace),
  });
  const outage: Model['restartOutageMs'] = {};
  for (const [kind, list] of learner.outages)
    if (kind === 'hard' || kind === 'graceful' || kind === 'hot')
      outage[kind] = { ...percentiles(list), samples: list.length };

  const first = learner.traces[0]!;
  const intervals = learner.intervals.sort((a, b) => a - b);
  if (learner.review.samples === 0)
    learner.notes.add('no review burst in the traces: the agent’s reaction to reviews is not modelled');
  const overrun = decideOverrun(
    learner.overrun,
    learner.traces.map((t) => t.target),
  );
  learner.notes.add(overrun.note);
  return {
    format: MODEL_FORMAT,
    name: options.name ?? first.controlPlane ?? first.target ?? first.scenario,
    provenance: { tool: { name: 'fleetbench', version: VERSION }, traces: learner.traces },
    loop: {
      scope: learner.scope,
      parallel: learner.parallel,
      intervalMs: intervals.length > 0 ? percentile(intervals, 50) : null,
      overrun: overrun.rule,
    },
    cycleTime: {
      cores: learner.fitGroups[0]?.cores ?? 1,
      cpuMsPerCall: fit.cpuMsPerCall,
      waitMsPerCall: fit.waitMsPerCall,
      launchMsPerCall: fit.launchMsPerCall,
      spawnCpuMs,
      cycleSpread,
      cycles: observedCycles.length,
    },
    operations,
    sessions: {
      spawn: { samples: learner.spawn.samples, calls: learner.spawn.means() },
      cycles,
      transitions,
      review:
        learner.review.samples === 0
          ? null
          : {
              samples: learner.review.samples,
              toldAfterCycles: histogram(learner.review.told),
              perReaction,
              perComment,
            },
    },
    shared: { perProject: learner.perProject.means(), perRepo: learner.perRepo.means() },
    events,
    speed,
    restartOutageMs: outage,
    fit: {
      calls: figure(learner.fit.calls, modelledCalls),
      callsPerSessionCycle: figure(
        learner.fit.sessionCycles > 0 ? learner.fit.sessionCycleCalls / learner.fit.sessionCycles : null,
        learner.fit.sessionCycles > 0 ? modelledSessionCycleCalls / learner.fit.sessionCycles : null,
      ),
      cycleP50Ms: figure(percentile(observedCycles, 50), percentile(modelledCycles, 50)),
      cycleP95Ms: figure(percentile(observedCycles, 95), percentile(modelledCycles, 95)),
      cycleMeanErrorPct: cycleMeanError(
        learner.fitGroups.flatMap((g) => g.observed),
        fit.modelled.durations,
      ),
      unmodelledCalls: learner.fit.unmodelled,
      notes: [...learner.notes],
    },
  };
}

/**
 * What the fitted client times leave over: the spawn's own work (the median of each spawn's time
 * beyond its calls', taken as CPU on the shared cores), and how much a cycle's length varies around
 * the model's (the p95 over the p50 of recorded ÷ modelled: what the machine's other load does).
 */
function fitSpawnAndSpread(
  groups: Learner['fitGroups'],
  fit: { cpuMsPerCall: number; waitMsPerCall: number; launchMsPerCall: number },
): { spawnCpuMs: number; cycleSpread: number } {
  const extra: number[] = [];
  const ratios: number[] = [];
  for (const g of groups) {
    const sim = simulateCycles(g.cycles, g.chains, { cores: g.cores, ...fit });
    for (const spawn of g.spawns) {
      const simulated = sim.chainEnds[spawn.chain]! - g.chains[spawn.chain]!.startMs;
      extra.push(Math.max(0, spawn.tookMs - simulated));
    }
    g.observed.forEach((o, i) => {
      const m = sim.durations[i]!;
      if (o > 0 && m > 0) ratios.push(o / m);
    });
  }
  const sorted = (v: number[]) => [...v].sort((a, b) => a - b);
  const r = sorted(ratios);
  return {
    spawnCpuMs: extra.length > 0 ? round(percentile(sorted(extra), 50), 0) : 0,
    cycleSpread: r.length > 1 ? round(Math.max(1, percentile(r, 95) / percentile(r, 50)), 3) : 1,
  };
}

/** The client times fitted over every trace's cycles at once (each on its own machine's cores). */
function fitGroups(groups: Learner['fitGroups']): ReturnType<typeof fitClientTimes> {
  if (groups.length === 1) {
    const g = groups[0]!;
    return fitClientTimes(g.cycles, g.chains, g.observed, g.spreads, g.cores);
  }
  // Several traces: one timeline per trace, offset so they never overlap.
  let offset = 0;
  const cycles: SimCycle[] = [];
  const chains: Chain[] = [];
  const observed: number[] = [];
  const spreads: number[] = [];
  for (const g of groups) {
    const base = cycles.length;
    const span = Math.max(0, ...g.cycles.map((c) => c.startMs), ...g.chains.map((c) => c.startMs)) + 1;
    cycles.push(...g.cycles.map((c) => ({ ...c, startMs: c.startMs + offset })));
    chains.push(
      ...g.chains.map((c) => ({
        ...c,
        cycle: c.cycle < 0 ? -1 : c.cycle + base,
        startMs: c.startMs + offset,
      })),
    );
    observed.push(...g.observed);
    spreads.push(...g.spreads);
    offset += span + 86_400_000;
  }
  return fitClientTimes(cycles, chains, observed, spreads, groups[0]!.cores);
}
