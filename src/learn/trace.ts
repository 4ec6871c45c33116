/**
 * One trace read into the learner (docs/model.md): its records, then each part of the model in
 * turn (cycles and sessions, the calls of each session-cycle, events' extra calls, shared calls,
 * spawns, reviews, transitions, parallelism, the cycle-time fit's data). The whole trace is read
 * into memory (its api records as small tuples), bounded by MODEL_LEARN_LIMITS.
 */
import { availableParallelism } from 'node:os';
import { FleetbenchError } from '../base/errors.ts';
import { MODEL_LEARN_LIMITS } from '../base/limits.ts';
import type { ModelState, ModelTrigger } from '../model/format.ts';
import { type ReadStats, readTrace } from '../trace/reader.ts';
import type { ApiRecord, BodyRecord, EventRecord, RunHeader, SpanRecord } from '../trace/schema.ts';
import { type Chain, type SimCycle, spreadOf } from './cycle-time.ts';
import {
  asState,
  type Call,
  CYCLE_END_SLACK_MS,
  type Cycle,
  EVENT_CYCLES,
  EXCESS_TRIGGERS,
  type Learner,
  profileKey,
  round,
  type Session,
  sha256Of,
  stateAt,
  Tally,
  TERMINAL,
  WORLD_TRIGGERS,
} from './learner.ts';
import { overrunVotes } from './overrun.ts';

/** A trace's records by kind, with what its control plane said of the machine. */
interface TraceRecords {
  file: string;
  header: RunHeader;
  stats: ReadStats;
  apis: ApiRecord[];
  spans: SpanRecord[];
  events: EventRecord[];
  endMs: number;
  /** agent-orchestrator's run says what ran and the machine's load and cores at its start and end. */
  started?: EventRecord;
  stopping?: EventRecord;
}

/** One session in one cycle: the calls it made, the states around it, the events before it. */
interface Unit {
  session: Session;
  cycle: Cycle;
  from: ModelState;
  to: ModelState;
  counts: Map<string, number>;
  /** Per excess trigger: which of the session's cycles after it this is (1-based), if ≤ EVENT_CYCLES. */
  offsets: Map<ModelTrigger, number>;
}

const machine = (e?: EventRecord) =>
  (e?.data as { machine?: { loadavg?: number[]; cpus?: number } } | undefined)?.machine;

export async function learnTrace(file: string, learner: Learner): Promise<void> {
  const trace = await readRecords(file, learner);
  const pollCycles = trace.spans.filter((s) => s.name === 'poll.cycle').sort((a, b) => a.t - b.t);
  if (pollCycles.length === 0 || !trace.apis.some((r) => r.cycle !== undefined && r.session !== undefined)) {
    learner.notes.add(
      `${file}: no poll cycles with attributed calls (poll.cycle spans, api records with a session and a cycle): its cost was not learned`,
    );
    await addProvenance(learner, trace, pollCycles.length);
    return;
  }
  learner.costTraces++;
  new CostReading(trace, learner, pollCycles).learn();
  await addProvenance(learner, trace, pollCycles.length);
}

/** The records by kind; the parts learned from spans and events alone (outages, speed). */
async function readRecords(file: string, learner: Learner): Promise<TraceRecords> {
  const { records, stats } = await readTrace(file);
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
  const started = events.find((e) => e.name === 'ao.started');
  const stopping = events.find((e) => e.name === 'ao.stopping');
  return {
    file,
    header: stats.header!,
    stats,
    apis,
    spans,
    events,
    endMs,
    ...(started ? { started } : {}),
    ...(stopping ? { stopping } : {}),
  };
}

async function addProvenance(learner: Learner, trace: TraceRecords, cycleCount: number): Promise<void> {
  const { file, header, stats, apis, started, stopping } = trace;
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
    durationMs: round(stats.footer?.t ?? trace.endMs, 0),
    sessions: new Set(apis.flatMap((r) => (r.session ? [r.session] : []))).size,
    cycles: cycleCount,
    calls: apis.length,
    load:
      startLoad?.loadavg && startLoad.cpus
        ? { start: startLoad.loadavg, end: machine(stopping)?.loadavg ?? null, cpus: startLoad.cpus }
        : null,
  });
}

/** The cost part of one trace with poll cycles: each step below adds its share to the learner. */
class CostReading {
  private readonly cycles: Cycle[];
  private readonly cyclesById = new Map<number, Cycle[]>();
  private readonly sessions = new Map<string, Session>();
  /** When the control plane came back from a restart (not its first start). */
  private readonly readies: number[] = [];
  private readonly calls: Call[] = [];
  /** Calls of a spawn path, though they fell in a cycle of their repository. */
  private readonly spawnCalls = new Set<Call>();
  private readonly units: Unit[] = [];
  private readonly cycleMembers = new Map<Cycle, Session[]>();
  private readonly agentCalls: Call[] = [];
  private readonly projectScoped: boolean;

  constructor(
    private readonly trace: TraceRecords,
    private readonly learner: Learner,
    private readonly pollCycles: SpanRecord[],
  ) {
    this.cycles = pollCycles.map((s, index) => ({
      index,
      id: Number((s.data as { cycle?: unknown } | undefined)?.cycle ?? -1),
      t: s.t,
      end: s.t + s.dur,
      ...(typeof s.labels?.project === 'string' ? { project: s.labels.project } : {}),
      calls: [],
    }));
    this.projectScoped = this.cycles.some((c) => c.project !== undefined);
  }

  learn(): void {
    this.readCycles();
    this.readEvents();
    this.voteOverrun();
    this.attributeCalls();
    this.sessionCycles();
    this.learnProfiles();
    this.learnEventExcess();
    this.learnShared();
    this.learnSpawns();
    this.learnReviews();
    this.learnTransitionSamples();
    this.learnParallelism();
    this.addFitGroup();
    this.addFitUnits();
  }

  private sessionOf(id: string, t: number): Session {
    let s = this.sessions.get(id);
    if (!s) {
      s = { id, createdAt: t, states: [], triggers: [], told: [], cycles: [] };
      this.sessions.set(id, s);
    }
    return s;
  }

  /** Cycles by id (a restarted process may reuse ids: each call then goes to the nearest in time). */
  private readCycles(): void {
    const { learner } = this;
    if (this.projectScoped) learner.scope = 'project';
    for (const s of this.pollCycles) {
      const interval = (s.data as { intervalMs?: unknown } | undefined)?.intervalMs;
      if (typeof interval === 'number') learner.intervals.push(interval);
    }
    for (const c of this.cycles) this.cyclesById.set(c.id, [...(this.cyclesById.get(c.id) ?? []), c]);
    if ([...this.cyclesById.values()].some((list) => list.length > 1))
      learner.notes.add(
        'cycle ids repeat in a trace (a restarted control plane numbering from 1): calls were matched to the cycle nearest in time',
      );
  }

  /** Sessions' states, what happened to them, when their agents were told, the restarts. */
  private readEvents(): void {
    for (const e of this.trace.events.sort((a, b) => a.t - b.t)) {
      if (e.name === 'session.state' && e.session) {
        const from = e.labels?.from;
        const s = this.sessionOf(e.session, e.t);
        if (from === 'none') {
          s.createdAt = e.t;
          s.triggers.push({ t: e.t, on: 'created' });
        } else {
          const to = asState(e.labels?.to);
          if (to) s.states.push([e.t, to]);
        }
      } else if (WORLD_TRIGGERS[e.name] && e.session) {
        const s = this.sessionOf(e.session, e.t);
        const comments = (e.data as { comments?: unknown } | undefined)?.comments;
        s.triggers.push({
          t: e.t,
          on: WORLD_TRIGGERS[e.name]!,
          ...(typeof comments === 'number' ? { comments } : {}),
        });
        if (e.name === 'world.pr.opened' && typeof e.labels?.repo === 'string') s.repo ??= e.labels.repo;
      } else if (e.name === 'ao.spawned' && e.session) {
        this.sessionOf(e.session, e.t).spawnedAt = e.t;
      } else if (e.name === 'controlplane.ready' && e.labels?.reason !== 'start') {
        this.readies.push(e.t);
      } else if (
        e.session &&
        (e.name === 'agent.review.received' ||
          (e.name === 'ao.agent.message' && e.labels?.reaction === 'review-comments'))
      ) {
        this.sessionOf(e.session, e.t).told.push(e.t);
      }
    }
  }

  /** How the loop went on after its overruns; then each restart as a trigger of every session before it. */
  private voteOverrun(): void {
    const votes = overrunVotes(
      this.pollCycles.map((s) => {
        const interval = (s.data as { intervalMs?: unknown } | undefined)?.intervalMs;
        return {
          loop: typeof s.labels?.project === 'string' ? s.labels.project : '',
          t: s.t,
          end: s.t + s.dur,
          intervalMs: typeof interval === 'number' ? interval : undefined,
        };
      }),
      this.readies,
    );
    for (const key of ['skip', 'immediate', 'unclear'] as const) this.learner.overrun[key] += votes[key];
    for (const s of this.sessions.values())
      for (const t of this.readies) if (t > s.createdAt) s.triggers.push({ t, on: 'restart' });
    for (const s of this.sessions.values()) s.triggers.sort((a, b) => a.t - b.t);
  }

  /** Each call to its cycle, or to its session's spawn; sessions and cycles get the repository most of their calls name. */
  private attributeCalls(): void {
    const repoVotes = new Map<string, Map<string, number>>();
    for (const r of this.trace.apis) {
      const call: Call = {
        t: r.t,
        dur: r.dur,
        op: this.learner.operations.key(r),
        cost: r.cost,
        ...(r.session !== undefined ? { session: r.session } : {}),
        ...(r.cycle !== undefined ? { cycle: r.cycle } : {}),
        ...(r.repo !== undefined ? { repo: r.repo } : {}),
        ...(r.source !== undefined ? { source: r.source } : {}),
      };
      this.calls.push(call);
      if (r.session !== undefined && r.repo !== undefined) {
        const votes = repoVotes.get(r.session) ?? new Map<string, number>();
        votes.set(r.repo, (votes.get(r.repo) ?? 0) + 1);
        repoVotes.set(r.session, votes);
        this.sessionOf(r.session, r.t);
      }
      // A call of the spawn path, though it fell in a cycle of its repository (the cycle is announced per repo).
      const spawnedAt = r.session !== undefined ? this.sessions.get(r.session)?.spawnedAt : undefined;
      if (spawnedAt !== undefined && r.t < spawnedAt && r.source !== 'agent') {
        this.spawnCalls.add(call);
        continue;
      }
      if (r.cycle === undefined) continue;
      const candidates = this.cyclesById.get(r.cycle);
      if (!candidates) continue;
      let best = candidates[0]!;
      for (const c of candidates)
        if (Math.abs(r.t - (c.t + c.end) / 2) < Math.abs(r.t - (best.t + best.end) / 2)) best = c;
      best.calls.push(call);
    }
    for (const [id, votes] of repoVotes) {
      const s = this.sessions.get(id)!;
      s.repo ??= [...votes].sort((a, b) => b[1] - a[1])[0]![0];
    }
    for (const c of this.cycles) {
      const votes = new Map<string, number>();
      for (const call of c.calls) if (call.repo) votes.set(call.repo, (votes.get(call.repo) ?? 0) + 1);
      const top = [...votes].sort((a, b) => b[1] - a[1])[0];
      if (top) c.repo = top[0];
    }
  }

  /** The sessions a cycle polled: created (spawned) before it, not merged or closed, of its project. */
  private members(c: Cycle): Session[] {
    return [...this.sessions.values()].filter((s) => {
      if ((s.spawnedAt ?? s.createdAt) > c.t) return false;
      const st = stateAt(s, c.t);
      if (st === undefined || TERMINAL.has(st)) return false;
      return !this.projectScoped || (c.repo !== undefined && s.repo === c.repo);
    });
  }

  /** Session-cycles: the sessions each cycle polled, with what it did to them and the events before. */
  private sessionCycles(): void {
    for (const c of this.cycles) {
      if (this.projectScoped && c.calls.length === 0) continue;
      const list = this.members(c);
      this.cycleMembers.set(c, list);
      for (const s of list) {
        s.cycles.push(c);
        const from = stateAt(s, c.t) ?? 'spawning';
        const to = stateAt(s, c.end + CYCLE_END_SLACK_MS) ?? from;
        const counts = new Map<string, number>();
        for (const call of c.calls)
          if (call.session === s.id) counts.set(call.op, (counts.get(call.op) ?? 0) + 1);
        this.units.push({ session: s, cycle: c, from, to, counts, offsets: new Map() });
      }
    }
    for (const s of this.sessions.values()) {
      const own = this.units.filter((u) => u.session === s);
      for (const trigger of s.triggers) {
        if (!EXCESS_TRIGGERS.includes(trigger.on)) continue;
        const after = own.filter((u) => u.cycle.t > trigger.t);
        after.slice(0, EVENT_CYCLES).forEach((u, k) => {
          const prev = u.offsets.get(trigger.on);
          if (prev === undefined || k + 1 < prev) u.offsets.set(trigger.on, k + 1);
        });
      }
    }
  }

  /** Cycle profiles: from clean session-cycles (no event in the cycles before), all of them when none is clean. */
  private learnProfiles(): void {
    for (const u of this.units) {
      const key = profileKey(u.from, u.to);
      let entry = this.learner.cycleProfiles.get(key);
      if (!entry) {
        entry = { clean: new Tally(), all: new Tally(), from: u.from, to: u.to };
        this.learner.cycleProfiles.set(key, entry);
      }
      const targets = u.offsets.size === 0 ? [entry.clean, entry.all] : [entry.all];
      for (const tally of targets) {
        tally.samples++;
        for (const [op, n] of u.counts) tally.add(op, n);
      }
    }
  }

  /** The profile's tally a session-cycle between two states is predicted by. */
  private profileTally(from: ModelState, to: ModelState): Tally {
    const entry = this.learner.cycleProfiles.get(profileKey(from, to))!;
    return entry.clean.samples > 0 ? entry.clean : entry.all;
  }

  /** Extra calls in the cycles after an event, beyond the profile. */
  private learnEventExcess(): void {
    for (const u of this.units) {
      for (const [on, k] of u.offsets) {
        const entry = this.excessEntry(on, k);
        entry.perSession.samples++;
        const tally = this.profileTally(u.from, u.to);
        const ops = new Set([...u.counts.keys(), ...tally.sums.keys()]);
        for (const op of ops)
          entry.perSession.add(op, (u.counts.get(op) ?? 0) - (tally.sums.get(op) ?? 0) / tally.samples);
      }
    }
  }

  private excessEntry(on: ModelTrigger, k: number) {
    const key = `${on}#${k}`;
    let entry = this.learner.excess.get(key);
    if (!entry) {
      entry = { on, k, perSession: new Tally(), perProject: new Tally() };
      this.learner.excess.set(key, entry);
    }
    return entry;
  }

  /** Which of its loop's cycles since a restart this is (1-based), if within EVENT_CYCLES. */
  private restartOffsetOf(c: Cycle): number | undefined {
    let best: number | undefined;
    for (const t of this.readies) {
      const loopCycles = this.cycles.filter(
        (o) => o.t > t && (o.project ?? '') === (c.project ?? '') && o.t <= c.t,
      );
      const k = loopCycles.length;
      if (k >= 1 && k <= EVENT_CYCLES && (best === undefined || k < best)) best = k;
    }
    return best;
  }

  /** Shared calls (a cycle's calls of no session): per project loop, and per repository when they name one. */
  private learnShared(): void {
    const { learner } = this;
    for (const [c, list] of this.cycleMembers) {
      if (list.length === 0) continue;
      const k = this.restartOffsetOf(c);
      const perRepo = new Map<string, number>();
      const perProject = new Map<string, number>();
      for (const call of c.calls) {
        if (call.session !== undefined) continue;
        const tally = call.repo !== undefined ? perRepo : perProject;
        tally.set(call.op, (tally.get(call.op) ?? 0) + 1);
      }
      const repos = new Set(list.map((s) => s.repo ?? '')).size;
      if (k === undefined) {
        learner.perProject.samples++;
        learner.perRepo.samples += repos;
        for (const [op, n] of perProject) learner.perProject.add(op, n);
        for (const [op, n] of perRepo) learner.perRepo.add(op, n);
      } else {
        const entry = this.excessEntry('restart', k);
        entry.perProject.samples++;
        for (const [op, n] of [...perProject, ...perRepo]) entry.perProject.add(op, n);
      }
    }
  }

  /** Spawn: a session's calls outside any cycle before its first cycle (not its agent's). */
  private learnSpawns(): void {
    const { learner } = this;
    for (const call of this.calls) {
      if (this.spawnCalls.has(call)) {
        learner.spawn.add(call.op);
        continue;
      }
      if (call.cycle !== undefined) continue;
      if (call.source === 'agent' && call.session !== undefined) {
        this.agentCalls.push(call);
        continue;
      }
      const s = call.session !== undefined ? this.sessions.get(call.session) : undefined;
      if (s && (s.cycles.length === 0 || call.t < s.cycles[0]!.t)) learner.spawn.add(call.op);
      else learner.fit.unmodelled++;
    }
    learner.spawn.samples += [...this.sessions.values()].filter((s) =>
      s.triggers.some((t) => t.on === 'created'),
    ).length;
  }

  /** Reviews: when the agent was told, and what it then did, per review and per comment. */
  private learnReviews(): void {
    const { review } = this.learner;
    let modelledAgent = 0;
    for (const s of this.sessions.values()) {
      const reviews = s.triggers.filter((t) => t.on === 'review-posted');
      for (const [i, posted] of reviews.entries()) {
        const next = reviews[i + 1]?.t ?? Number.POSITIVE_INFINITY;
        review.samples++;
        review.comments.push(posted.comments ?? 1);
        const told = s.told.find((t) => t >= posted.t && t < next);
        if (told !== undefined) {
          const k = s.cycles.filter((c) => c.t > posted.t && c.t <= told).length;
          review.told.set(k, (review.told.get(k) ?? 0) + 1);
        }
        const own = this.agentCalls.filter((c) => c.session === s.id && c.t >= posted.t && c.t < next);
        const counts = new Map<string, number>();
        for (const c of own) counts.set(c.op, (counts.get(c.op) ?? 0) + 1);
        for (const op of new Set([...counts.keys(), ...review.perReaction.keys()])) {
          const list = review.perReaction.get(op) ?? new Array(review.samples - 1).fill(0);
          list.push(counts.get(op) ?? 0);
          review.perReaction.set(op, list);
        }
        modelledAgent += own.length;
      }
    }
    this.learner.fit.unmodelled += this.agentCalls.length - modelledAgent;
  }

  /**
   * Transitions: each change, with every kind of thing that happened to the session before it
   * (the latest of each kind) and how many of its cycles later; which kind caused it is decided
   * over all the changes between the same two states (learnModel).
   */
  private learnTransitionSamples(): void {
    for (const s of this.sessions.values()) {
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
        if (byKind.size > 0) this.learner.transitionSamples.push({ from, to, byKind });
      }
    }
  }

  /** Parallelism: how many of a cycle's sessions had calls in flight together. */
  private learnParallelism(): void {
    let widest = { sessions: 0, overlap: 0 };
    for (const [c, list] of this.cycleMembers) {
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
      this.learner.parallel = Math.max(this.learner.parallel, widest.overlap);
  }

  /** Cycle time: the recorded cycles with their calls, for the client times' fit (cycle-time.ts). */
  private addFitGroup(): void {
    const { learner, sessions } = this;
    const recorded = machine(this.trace.started)?.cpus;
    const cores = recorded ?? availableParallelism();
    if (!recorded)
      learner.notes.add(
        `the traces do not say their machine's cores: the cycle time is fitted for this machine's ${cores}`,
      );
    const fitCycles = this.cycles.filter((c) => c.calls.length > 0);
    const simCycles: SimCycle[] = fitCycles.map((c) => ({ startMs: c.t, parallel: learner.parallel }));
    const chains: Chain[] = [];
    fitCycles.forEach((c, i) => {
      const bySession = new Map<string, Call[]>();
      for (const call of c.calls) {
        const key = call.session ?? '';
        bySession.set(key, [...(bySession.get(key) ?? []), call]);
      }
      for (const list of bySession.values())
        chains.push({
          cycle: i,
          startMs: c.t,
          latenciesMs: list.sort((a, b) => a.t - b.t).map((x) => x.dur),
        });
    });
    const spawnBySession = new Map<string, Call[]>();
    for (const call of this.calls)
      if (
        (this.spawnCalls.has(call) || call.cycle === undefined) &&
        call.source !== 'agent' &&
        call.session !== undefined
      )
        spawnBySession.set(call.session, [...(spawnBySession.get(call.session) ?? []), call]);
    // A spawn starts when the session is created; when the control plane says its spawn returned,
    // what its calls do not account for is the spawn's own work (learn.ts, fitSpawnAndSpread).
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
  }

  /** The fit's observed side; the modelled side is computed once the profiles are final. */
  private addFitUnits(): void {
    const { learner, units } = this;
    learner.fit.calls += this.trace.apis.length;
    learner.fit.sessionCycles += units.length;
    for (const u of units) for (const n of u.counts.values()) learner.fit.sessionCycleCalls += n;
    learner.fitUnits.push(() => {
      let total = 0;
      for (const u of units) {
        const tally = this.profileTally(u.from, u.to);
        for (const sum of tally.sums.values()) total += sum / tally.samples;
        for (const [on, k] of u.offsets) {
          const excess = learner.excess.get(`${on}#${k}`);
          if (excess)
            for (const sum of excess.perSession.sums.values()) total += sum / excess.perSession.samples;
        }
      }
      return total;
    });
  }
}
