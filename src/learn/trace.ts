/**
 * One trace read into the learner (docs/model.md): one streaming pass over its records (api lines
 * through the analyzer's scanner), then each part of the model in turn (cycles and sessions, the
 * calls of each session-cycle, events' extra calls, shared calls, spawns, reviews, transitions,
 * parallelism, the cycle-time fit's data), each linear in the trace (or n log n: sorted lookups).
 * Its api records are kept in memory column by column (a CallTable), bounded by MODEL_LEARN_LIMITS.
 */
import { createHash } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { InputFileError } from '../base/errors.ts';
import { MODEL_LEARN_LIMITS } from '../base/limits.ts';
import type { ModelState, ModelTrigger } from '../model/format.ts';
import type { RawBytesHandler } from '../trace/lines.ts';
import { type ReadStats, scanTrace } from '../trace/reader.ts';
import type { BodyRecord, EventRecord, RunHeader, SpanRecord } from '../trace/schema.ts';
import { type Chain, type SimCycle, spreadOf } from './cycle-time.ts';
import { inferCycles } from './infer-cycles.ts';
import {
  asState,
  CallTable,
  CYCLE_END_SLACK_MS,
  type Cycle,
  EVENT_CYCLES,
  EXCESS_TRIGGERS,
  type Learner,
  profileKey,
  round,
  type Session,
  stateAt,
  Tally,
  TERMINAL,
  WORLD_TRIGGERS,
} from './learner.ts';
import { overrunVotes } from './overrun.ts';

/** A trace read for learning: its calls (a CallTable), spans and events, and what its control plane said of the machine. */
interface TraceRecords {
  file: string;
  /** The file's sha256 (hex), hashed as it was read. */
  sha256: string;
  header: RunHeader;
  stats: ReadStats;
  /** Its api records, in file order. */
  calls: CallTable;
  spans: SpanRecord[];
  events: EventRecord[];
  endMs: number;
  /** agent-orchestrator's run says what ran and the machine's load and cores at its start and end. */
  started?: EventRecord;
  stopping?: EventRecord;
}

/** One session in one cycle: the calls it made, the states around it, the events before it. */
interface Unit {
  /** Its place in CostReading's units. */
  order: number;
  session: Session;
  cycle: Cycle;
  from: ModelState;
  to: ModelState;
  /**
   * Its calls by operation, in the order of their first call: operation ids (the CallTable's `op`)
   * and counts at [countFrom, countTo) of CostReading's unitOps and unitCounts (no Map per unit:
   * a trace has one unit per session per cycle, 23,000 in the bench's 4 h trace).
   */
  countFrom: number;
  countTo: number;
  /** Per excess trigger: which of the session's cycles after it this is (1-based), if ≤ EVENT_CYCLES. */
  offsets: Map<ModelTrigger, number> | undefined;
}

const machine = (e?: EventRecord) =>
  (e?.data as { machine?: { loadavg?: number[]; cpus?: number } } | undefined)?.machine;

/** A `world.review.posted` this close to a review burst's `fault.start` marks that burst. */
const BURST_MARK_SLACK_MS = 10_000;

/** How far a trace's read has come: bytes of the file read, of its size. */
export type LearnProgress = (bytesRead: number, bytesTotal: number) => void;

export async function learnTrace(file: string, learner: Learner, onProgress?: LearnProgress): Promise<void> {
  const trace = await readRecords(file, learner, onProgress);
  statesFromWorld(trace, learner);
  let pollCycles = trace.spans.filter((s) => s.name === 'poll.cycle').sort((a, b) => a.t - b.t);
  let whyNoCycles: string | undefined;
  if (pollCycles.length === 0) {
    const inferred = cyclesFromTraffic(trace, learner);
    if (inferred.found) pollCycles = inferred.spans;
    else whyNoCycles = inferred.why;
  }
  if (pollCycles.length === 0 || !hasAttributedCall(trace.calls)) {
    const why =
      whyNoCycles ??
      (pollCycles.length === 0 ? 'no poll cycles' : 'no call attributed to both a session and a poll cycle');
    const keys = learner.operations.resolve(true, trace.calls);
    trace.calls.name(keys);
    const tasks = learnTasks(trace, learner);
    learner.whyNothing.push(
      `${file}: no poll cycles to learn from (${why})${tasks > 0 ? '' : '; no call attributed to a session, so no cost per task either'}`,
    );
    learner.notes.add(
      `${file}: ${why}: ${tasks > 0 ? `learned as work done one task after another: the cost of each of its ${tasks} tasks` : 'its cost was not learned'}`,
    );
    addProvenance(learner, trace, 0);
    return;
  }
  learner.costTraces++;
  trace.calls.name(learner.operations.resolve(true, trace.calls));
  new CostReading(trace, learner, pollCycles).learn();
  addProvenance(learner, trace, pollCycles.length);
}

/**
 * A trace without the control plane's own session states (one measured from outside: no
 * `session.state` changes) is read with the world's: a session is created at its start (its
 * `session.start` span), its PR opened, reviewed or merged when the world did it. The states a
 * model is keyed by are then its PR's, not the control plane's idea of them.
 */
function statesFromWorld(trace: TraceRecords, learner: Learner): void {
  const changes = trace.events.filter((e) => e.name === 'session.state' && e.session);
  if (changes.some((e) => e.labels?.from !== 'none')) return;
  const created = new Set(changes.map((e) => e.session!));
  const state = new Map<string, string>();
  const synthesized: EventRecord[] = [];
  const change = (session: string, t: number, to: string) => {
    const from = state.get(session) ?? 'none';
    if (from === to) return;
    state.set(session, to);
    synthesized.push({ kind: 'event', name: 'session.state', t, session, labels: { from, to } });
  };
  const starts = trace.spans.filter(
    (s) => s.name === 'session.start' && s.session && !created.has(s.session),
  );
  const worlds = trace.events.filter((e) => e.session && WORLD_STATES[e.name]);
  if (starts.length === 0 && worlds.length === 0) return;
  for (const s of starts) change(s.session!, s.t, 'spawning');
  for (const session of created) state.set(session, 'spawning');
  for (const e of worlds) {
    if (!state.has(e.session!)) change(e.session!, e.t, 'spawning');
    change(e.session!, e.t, WORLD_STATES[e.name]!);
  }
  trace.events.push(...synthesized);
  trace.events.sort((a, b) => a.t - b.t);
  learner.notes.add(
    `${trace.file}: no session.state changes (a control plane measured from outside): a session's state is its PR's in the world (${starts.length > 0 ? 'created at its session.start, ' : ''}a PR opened: pr_open, a review posted: review, merged: merged)`,
  );
}

/** The state a world event leaves a session's PR in (statesFromWorld). */
const WORLD_STATES: Record<string, ModelState> = {
  'world.pr.opened': 'pr_open',
  'world.review.posted': 'review',
  'world.pr.merged': 'merged',
};

/**
 * Poll cycles inferred from the traffic of a trace that declares none (src/learn/infer-cycles.ts):
 * each call gets its cycle's id, and each cycle a `poll.cycle` span as a control plane would have
 * written it (`labels.inferred`), so the rest of the reading is the declared cycles'.
 */
function cyclesFromTraffic(
  trace: TraceRecords,
  learner: Learner,
): { found: true; spans: SpanRecord[] } | { found: false; why: string } {
  const T = trace.calls;
  const agent = T.sources.id('agent');
  const own = new Uint8Array(T.size);
  for (let i = 0; i < T.size; i++) own[i] = agent >= 0 && T.source[i] === agent ? 0 : 1;
  const readies = trace.events
    .filter((e) => e.name === 'controlplane.ready' && e.labels?.reason !== 'start')
    .map((e) => e.t);
  const inferred = inferCycles({ size: T.size, t: T.t, dur: T.dur, own }, readies);
  if (!inferred.found) return inferred;
  const spans: SpanRecord[] = inferred.cycles.map((c, k) => {
    for (const i of c.calls) T.cycle[i] = k + 1;
    return {
      kind: 'span',
      name: 'poll.cycle',
      t: c.t,
      dur: c.end - c.t,
      outcome: 'ok',
      labels: { inferred: true },
      data: { cycle: k + 1, intervalMs: Math.round(inferred.periodMs), calls: c.calls.length },
    };
  });
  learner.notes.add(
    `${trace.file}: no poll cycles declared: ${spans.length} inferred from its traffic, every ${Math.round(inferred.periodMs / 100) / 10} s (${inferred.bursts} bursts of calls, ${inferred.offCycleCalls} calls outside them)`,
  );
  return { found: true, spans };
}

/**
 * Work done one task after another (no poll cycles): each session's calls are a task's cost, by
 * operation, with its points and how long its calls took from the first to the last; the calls of
 * no session are the control plane's own, per task. An agent's calls are left out.
 */
function learnTasks(trace: TraceRecords, learner: Learner): number {
  const T = trace.calls;
  const agent = T.sources.id('agent');
  const first = new Map<number, number>();
  const lastEnd = new Map<number, number>();
  const perTask = new Map<string, number>();
  const unattributed = new Map<string, number>();
  let points = 0;
  const count = (tally: Map<string, number>, op: string) => tally.set(op, (tally.get(op) ?? 0) + 1);
  for (let i = 0; i < T.size; i++) {
    if (agent >= 0 && T.source[i] === agent) continue;
    const s = T.session[i]!;
    if (s < 0) {
      count(unattributed, T.opOf(i));
      continue;
    }
    count(perTask, T.opOf(i));
    points += T.cost[i]!;
    if (!first.has(s)) first.set(s, T.t[i]!);
    lastEnd.set(s, Math.max(lastEnd.get(s) ?? 0, T.t[i]! + T.dur[i]!));
  }
  if (first.size === 0) return 0;
  const { tasks } = learner;
  for (const [op, n] of perTask) tasks.perTask.add(op, n);
  for (const [op, n] of unattributed) tasks.unattributed.add(op, n);
  for (const [s, t] of first) tasks.durations.push(lastEnd.get(s)! - t);
  tasks.perTask.samples += first.size;
  tasks.unattributed.samples += first.size;
  tasks.points += points;
  return first.size;
}

/**
 * One streaming pass over the file: canonical api lines through the analyzer's scanner into small
 * calls (the record is reused), spans and events kept whole; then the parts learned from spans
 * and events alone (outages, speed).
 */
async function readRecords(
  file: string,
  learner: Learner,
  onProgress?: LearnProgress,
): Promise<TraceRecords> {
  const calls = new CallTable();
  const spans: SpanRecord[] = [];
  const events: EventRecord[] = [];
  let endMs = 0;
  // A trace is written in order: api records as their answers end, events as they happen.
  let lastApiEnd = Number.NEGATIVE_INFINITY;
  let lastEvent = Number.NEGATIVE_INFINITY;
  let outOfOrder = 0;
  const { maxApiRecords } = MODEL_LEARN_LIMITS;
  const hash = createHash('sha256');
  const stats = await readLearnable(
    file,
    learner,
    (r) => {
      if (r.kind === 'api') {
        if (r.t + r.dur < lastApiEnd - WRITE_ORDER_SLACK_MS) outOfOrder++;
        else lastApiEnd = Math.max(lastApiEnd, r.t + r.dur);
        if (++learner.apiRecords > maxApiRecords)
          throw new InputFileError(
            'E_MODEL',
            file,
            undefined,
            `more than ${maxApiRecords.toLocaleString('en-US')} api records over the traces (docs/limits.md): learn from shorter runs`,
          );
        const kind = learner.operations.add(r);
        calls.push(r, kind);
        endMs = Math.max(endMs, r.t + r.dur);
      } else if (r.kind === 'span') {
        spans.push(r);
        endMs = Math.max(endMs, r.t + r.dur);
      } else if (r.kind === 'event') {
        if (r.t < lastEvent - WRITE_ORDER_SLACK_MS) outOfOrder++;
        else lastEvent = r.t;
        events.push(r);
        endMs = Math.max(endMs, r.t);
      }
    },
    (bytes) => hash.update(bytes),
    onProgress,
  );
  if (outOfOrder > 0)
    learner.notes.add(
      `${file}: ${outOfOrder.toLocaleString('en-US')} records out of the order a trace is written in (shuffled or merged by hand): read in time order, as the trace in order`,
    );
  inTimeOrder(calls, spans, events, learner);
  for (const s of spans)
    if (s.name === 'controlplane.outage' && typeof s.labels?.kind === 'string') {
      const list = learner.outages.get(s.labels.kind) ?? [];
      list.push(s.dur);
      learner.outages.set(s.labels.kind, list);
    }
  learner.speed.add(
    [...spans].sort((a, b) => a.t - b.t),
    [...events].sort((a, b) => a.t - b.t),
  );
  const started = events.find((e) => e.name === 'ao.started');
  const stopping = events.find((e) => e.name === 'ao.stopping');
  return {
    file,
    sha256: hash.digest('hex'),
    header: stats.header!,
    stats,
    calls,
    spans,
    events,
    endMs,
    ...(started ? { started } : {}),
    ...(stopping ? { stopping } : {}),
  };
}

/** A record written this much out of order still counts as in order (the writer's buffers, clocks). */
const WRITE_ORDER_SLACK_MS = 1_000;

/**
 * The file read as a trace to learn from. A run cut short is learned from what it has, with a
 * note: a footer that says `interrupted` or `failed`, or no footer at all (the writer was killed:
 * its last line may be cut in the middle, and is left out). Any other bad line is refused as a
 * strict read refuses it.
 */
async function readLearnable(
  file: string,
  learner: Learner,
  onRecord: (r: BodyRecord) => void,
  onRaw: RawBytesHandler,
  onProgress?: LearnProgress,
): Promise<ReadStats> {
  const stats = await scanTrace(file, onRecord, {
    transientApi: true,
    // The model is made of calls, spans and events: gauges are checked and counted, not kept.
    skipGauges: true,
    lenient: true,
    onRaw,
    ...(onProgress ? { onProgress } : {}),
  });
  const cutLastLine =
    stats.truncated && stats.skipped === 1 && stats.skippedReasons[0]?.startsWith(`line ${stats.lines}:`);
  if (stats.skipped > 0 && !cutLastLine) {
    const first = stats.skippedReasons[0] ?? 'a bad line';
    const line = /^line (\d+): /.exec(first);
    throw new InputFileError(
      'E_TRACE',
      file,
      line ? Number(line[1]) : undefined,
      line ? first.slice(line[0].length) : first,
    );
  }
  if (stats.truncated)
    learner.notes.add(
      `${file}: cut: no end footer after line ${stats.lines}${cutLastLine ? ' (its last line, cut in the middle, left out)' : ''}: learned from the records it has`,
    );
  else if (stats.footer && stats.footer.reason !== 'completed')
    learner.notes.add(
      `${file}: the run ${stats.footer.reason === 'interrupted' ? 'was interrupted' : 'failed'} (footer reason ${stats.footer.reason}) at ${Math.round(stats.footer.t / 1000)} s: learned from what it ran`,
    );
  return stats;
}

/**
 * The records in the order a trace is written in, whatever order the file had them in: calls by
 * their end (a writer records a call when its answer ends), spans and events by time, ties by
 * what they are. Every step after reads them in this order, so a shuffled trace gives the model of
 * the same trace in order; a written trace is in this order already, or nearly (the sort does
 * little work on it).
 */
function inTimeOrder(calls: CallTable, spans: SpanRecord[], events: EventRecord[], learner: Learner): void {
  const { t, dur, cost, cycle, session, repo, source, kind } = calls;
  const text = (column: { values: string[] }, id: number) => (id < 0 ? '' : column.values[id]!);
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const compare = (a: number, b: number) =>
    t[a]! + dur[a]! - (t[b]! + dur[b]!) ||
    t[a]! - t[b]! ||
    byText(text(calls.sessions, session[a]!), text(calls.sessions, session[b]!)) ||
    byText(learner.operations.kindKey(kind[a]!), learner.operations.kindKey(kind[b]!)) ||
    byText(text(calls.repos, repo[a]!), text(calls.repos, repo[b]!)) ||
    cost[a]! - cost[b]! ||
    (cycle[a]! || 0) - (cycle[b]! || 0) ||
    byText(text(calls.sources, source[a]!), text(calls.sources, source[b]!));
  // Calls already in order (each no later than the next) stay as they are: the stable sort would
  // give them back unchanged. Only a trace out of order pays for the sort.
  let inOrder = true;
  for (let i = 1; i < calls.size && inOrder; i++) inOrder = compare(i - 1, i) <= 0;
  if (!inOrder) {
    const order = Array.from({ length: calls.size }, (_, i) => i);
    order.sort(compare);
    if (order.some((v, i) => v !== i)) calls.reorder(order);
  }
  const key = (r: SpanRecord | EventRecord) =>
    `${r.name}|${r.session ?? ''}|${'dur' in r ? r.dur : ''}|${JSON.stringify(r.labels ?? {})}|${JSON.stringify(r.data ?? {})}`;
  const byTime = <R extends SpanRecord | EventRecord>(list: R[]) =>
    list.sort((a, b) => a.t - b.t || byText(key(a), key(b)));
  byTime(spans);
  byTime(events);
}

function addProvenance(learner: Learner, trace: TraceRecords, cycleCount: number): void {
  const { file, header, stats, calls, started, stopping } = trace;
  const startLoad = machine(started);
  learner.traces.push({
    file,
    sha256: trace.sha256,
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
    sessions: calls.sessions.values.filter((s) => s !== '').length,
    cycles: cycleCount,
    calls: calls.size,
    load:
      startLoad?.loadavg && startLoad.cpus
        ? { start: startLoad.loadavg, end: machine(stopping)?.loadavg ?? null, cpus: startLoad.cpus }
        : null,
  });
}

/** Whether a call carries both its session and its poll cycle. */
function hasAttributedCall(calls: CallTable): boolean {
  for (let i = 0; i < calls.size; i++) if (calls.hasCycle(i) && calls.session[i]! >= 0) return true;
  return false;
}

/**
 * The first index of `sorted` (ascending) whose value is above `value` (`upper`), or at least
 * `value` (lower): how many values are at most, or below, it.
 */
function bound(sorted: ArrayLike<number>, value: number, upper: boolean): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value || (upper && sorted[mid] === value)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
const upperBound = (sorted: ArrayLike<number>, value: number) => bound(sorted, value, true);
const lowerBound = (sorted: ArrayLike<number>, value: number) => bound(sorted, value, false);

/**
 * Counts of calls by operation id (the CallTable's `op`), in the order each was first counted: what
 * a `Map` from operation name to count gave, without a map or a string per call.
 */
export class OpCounts {
  readonly counts: Int32Array;
  /** The operation ids counted, in the order first counted. */
  readonly order: number[] = [];
  constructor(opCount: number) {
    this.counts = new Int32Array(opCount);
  }
  count(op: number): void {
    if (this.counts[op]! === 0) this.order.push(op);
    this.counts[op]!++;
  }
  /** Adds each count to `tally` under its operation's name, in the order first counted. */
  addTo(tally: Tally, ops: readonly string[]): void {
    for (const op of this.order) tally.add(ops[op]!, this.counts[op]!);
  }
  clear(): void {
    for (const op of this.order) this.counts[op] = 0;
    this.order.length = 0;
  }
}

/**
 * A cycle's shared calls (of no session) by operation: those naming a repository to `perRepo`, the
 * others to `perProject`. A small function of its own: it is the only loop over every call of
 * learnShared, and V8 compiles it alone rather than the whole step on stack replacement.
 */
export function countShared(
  T: CallTable,
  calls: readonly number[],
  perRepo: OpCounts,
  perProject: OpCounts,
): void {
  const { session, repo, op } = T;
  for (let n = 0; n < calls.length; n++) {
    const i = calls[n]!;
    if (session[i]! >= 0) continue;
    (repo[i]! >= 0 ? perRepo : perProject).count(op[i]!);
  }
}

/**
 * A cycle's calls by session, flat: group g holds the calls at [starts[g], starts[g + 1]) of
 * `calls`, in the cycle's order, and is of the session keyed `keys[g]` (sessionKeys: the calls of
 * no session, and of a session named '', are one group, keyed -1); the groups in the order of
 * their first call. What a `Map` from session name to a list of calls gave, without a map and a
 * list for each session of each cycle (a trace has one per session per cycle: 23,000 in the
 * bench's 4 h trace).
 */
export interface SessionGroups {
  keys: Int32Array;
  starts: Int32Array;
  calls: Int32Array;
}

/**
 * Each CallTable session id's key in SessionGroups: the id itself, or -1 for a session named ''
 * (grouped with the calls of no session, as a `Map` keyed by `sessionOf(i) ?? ''` grouped them).
 */
export function sessionKeys(T: CallTable): Int32Array {
  return Int32Array.from(T.sessions.values, (name, id) => (name === '' ? -1 : id));
}

/**
 * Groups a cycle's calls by session (SessionGroups). `slots` and `stamps` are scratch arrays of
 * one more entry than there are sessions, shared from one cycle to the next: `stamps[key + 1]`
 * is `stamp` once the key has a group in this cycle, its index then in `slots[key + 1]`; each
 * cycle takes a stamp of its own (never 0), so nothing is cleared between cycles.
 */
export function groupBySession(
  calls: readonly number[],
  session: Int32Array,
  keys: Int32Array,
  slots: Int32Array,
  stamps: Int32Array,
  stamp: number,
): SessionGroups {
  const groupKeys: number[] = [];
  const counts: number[] = [];
  const groupOfCall = new Int32Array(calls.length);
  for (let n = 0; n < calls.length; n++) {
    const s = session[calls[n]!]!;
    const slot = (s < 0 ? -1 : keys[s]!) + 1;
    let g: number;
    if (stamps[slot] === stamp) g = slots[slot]!;
    else {
      stamps[slot] = stamp;
      g = groupKeys.length;
      slots[slot] = g;
      groupKeys.push(slot - 1);
      counts.push(0);
    }
    counts[g]!++;
    groupOfCall[n] = g;
  }
  const starts = new Int32Array(groupKeys.length + 1);
  for (let g = 0; g < groupKeys.length; g++) starts[g + 1] = starts[g]! + counts[g]!;
  const next = starts.slice(0, groupKeys.length);
  const grouped = new Int32Array(calls.length);
  for (let n = 0; n < calls.length; n++) grouped[next[groupOfCall[n]!]!++] = calls[n]!;
  return { keys: Int32Array.from(groupKeys), starts, calls: grouped };
}

/**
 * Per session id (in the order of their first such call), its calls outside any cycle or of its
 * spawn (`spawnCalls`), not its agent's. A function of its own: its loop over every call is
 * compiled alone, not with the whole of addFitGroup.
 */
function spawnCallsBySession(T: CallTable, spawnCalls: Uint8Array): Map<number, number[]> {
  const bySession = new Map<number, number[]>();
  const agent = T.sources.id('agent');
  const { session, source, cycle } = T;
  for (let i = 0; i < T.size; i++) {
    const s = session[i]!;
    if ((spawnCalls[i] || Number.isNaN(cycle[i]!)) && source[i] !== agent && s >= 0) {
      const list = bySession.get(s);
      if (list) list.push(i);
      else bySession.set(s, [i]);
    }
  }
  return bySession;
}

/**
 * `start` plus each of `values` in turn (the same additions, in the same order, as a loop adding
 * them to a field); a function of its own so that V8 compiles this loop, not its caller, on stack
 * replacement.
 */
export function sumFrom(start: number, values: readonly number[]): number {
  let total = start;
  for (let k = 0; k < values.length; k++) total += values[k]!;
  return total;
}

/**
 * The repository (its id) most of `calls` name, ties to the first named, or -1 for none: what
 * sorting a `Map` of votes by count (a stable sort) put first. `named` says which ids count (a
 * repository named '' does not); `votes` is scratch, left cleared.
 */
export function topRepo(
  calls: readonly number[],
  repo: Int32Array,
  named: Uint8Array,
  votes: OpCounts,
): number {
  for (let n = 0; n < calls.length; n++) {
    const r = repo[calls[n]!]!;
    if (r >= 0 && named[r] === 1) votes.count(r);
  }
  let top = -1;
  for (const r of votes.order) if (top < 0 || votes.counts[r]! > votes.counts[top]!) top = r;
  votes.clear();
  return top;
}

/** The cost part of one trace with poll cycles: each step below adds its share to the learner. */
class CostReading {
  private readonly cycles: Cycle[];
  private readonly cyclesById = new Map<number, Cycle[]>();
  private readonly sessions = new Map<string, Session>();
  /** When the control plane came back from a restart (not its first start). */
  private readonly readies: number[] = [];
  /** Calls of a spawn path, though they fell in a cycle of their repository (1 per such call). */
  private readonly spawnCalls: Uint8Array;
  private readonly units: Unit[] = [];
  /** The units that follow an event (their `offsets` set): a few among many. */
  private readonly afterEvents: Unit[] = [];
  /** The units' calls by operation (Unit.countFrom): operation ids and their counts. */
  private readonly unitOps: number[] = [];
  private readonly unitCounts: number[] = [];
  /** Each session's units, in its cycles' order. */
  private readonly unitsOf = new Map<Session, Unit[]>();
  private readonly cycleMembers = new Map<Cycle, Session[]>();
  /** Per cycle (by its index), its calls by session, made when first asked for (bySession). */
  private readonly callsBySession: Array<SessionGroups | undefined> = [];
  /** bySession's keys and scratch arrays (groupBySession), made with the first cycle's groups. */
  private groupKeys: Int32Array | undefined;
  private groupSlots: Int32Array | undefined;
  private groupStamps: Int32Array | undefined;
  private readonly agentCalls: number[] = [];
  private readonly T: CallTable;
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
      ...(typeof (s.data as { sessions?: unknown } | undefined)?.sessions === 'number'
        ? { declaredSessions: (s.data as { sessions: number }).sessions }
        : {}),
      calls: [],
    }));
    this.projectScoped = this.cycles.some((c) => c.project !== undefined);
    this.T = trace.calls;
    this.spawnCalls = new Uint8Array(trace.calls.size);
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
      s = { id, index: this.sessions.size, createdAt: t, states: [], triggers: [], told: [], cycles: [] };
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
    let repeated = false;
    for (const c of this.cycles) {
      const list = this.cyclesById.get(c.id);
      if (list) {
        list.push(c);
        repeated = true;
      } else this.cyclesById.set(c.id, [c]);
    }
    if (repeated)
      learner.notes.add(
        'cycle ids repeat in a trace (a restarted control plane numbering from 1): calls were matched to the cycle nearest in time',
      );
  }

  /** Sessions' states, what happened to them, when their agents were told, the restarts. */
  private readEvents(): void {
    const bursts: Array<{ t: number; prs: number; comments: number }> = [];
    const posted: number[] = [];
    for (const e of this.trace.events.sort((a, b) => a.t - b.t)) {
      if (e.name === 'fault.start' && e.labels?.type === 'review-burst')
        bursts.push({ t: e.t, prs: Number(e.labels.prs ?? 0), comments: Number(e.labels.comments ?? 0) });
      if (e.name === 'world.review.posted') posted.push(e.t);
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
        const kind = String(e.labels?.reason ?? 'unknown');
        const { restarts } = this.learner.coverage;
        restarts.set(kind, (restarts.get(kind) ?? 0) + 1);
      } else if (
        e.session &&
        (e.name === 'agent.review.received' ||
          (e.name === 'ao.agent.message' && e.labels?.reaction === 'review-comments'))
      ) {
        this.sessionOf(e.session, e.t).told.push(e.t);
      }
    }
    this.reviewsFromBursts(bursts, posted);
  }

  /**
   * A review burst the trace marks only by its `fault.start` (no `world.review.posted` near it: a
   * trace whose world events were not recorded): the reviewed sessions are those whose agents
   * were told of a review, or made calls of their own, after it and before the next burst, the
   * first `prs` of them; its comments are shared among them in proportion to their agents' calls
   * (an agent answers each comment), at least one each.
   */
  private reviewsFromBursts(
    bursts: ReadonlyArray<{ t: number; prs: number; comments: number }>,
    posted: readonly number[],
  ): void {
    bursts.forEach((burst, i) => {
      if (posted.some((t) => Math.abs(t - burst.t) <= BURST_MARK_SLACK_MS)) return;
      const next = bursts[i + 1]?.t ?? Number.POSITIVE_INFINITY;
      const within = (t: number) => t >= burst.t && t < next;
      const first = new Map<string, number>();
      const agentCalls = new Map<string, number>();
      const note = (session: string, t: number) => {
        if (within(t) && !first.has(session)) first.set(session, t);
      };
      for (const s of this.sessions.values()) for (const t of s.told) note(s.id, t);
      const T = this.T;
      for (let i = 0; i < T.size; i++) {
        const session = T.sessionOf(i);
        if (T.sourceOf(i) === 'agent' && session !== undefined && within(T.t[i]!)) {
          note(session, T.t[i]!);
          agentCalls.set(session, (agentCalls.get(session) ?? 0) + 1);
        }
      }
      const reviewed = [...first]
        .sort((a, b) => a[1] - b[1])
        .slice(0, burst.prs > 0 ? burst.prs : undefined)
        .map(([id]) => id);
      if (reviewed.length === 0) return;
      // Largest remainders, so that the shares add up to the burst's comments.
      const weights = reviewed.map((id) => agentCalls.get(id) ?? 0);
      const total = weights.reduce((a, b) => a + b, 0);
      const exact = reviewed.map((_, k) =>
        total > 0 ? (burst.comments * weights[k]!) / total : burst.comments / reviewed.length,
      );
      const shares = exact.map(Math.floor);
      const left = burst.comments - shares.reduce((a, b) => a + b, 0);
      [...exact.keys()]
        .sort((a, b) => exact[b]! - shares[b]! - (exact[a]! - shares[a]!) || a - b)
        .slice(0, Math.max(0, left))
        .forEach((k) => {
          shares[k]!++;
        });
      reviewed.forEach((id, k) => {
        this.sessions
          .get(id)
          ?.triggers.push({ t: burst.t, on: 'review-posted', comments: Math.max(1, shares[k]!) });
      });
      this.learner.notes.add(
        `${this.trace.file}: the review burst at ${Math.round(burst.t / 1000)} s is marked only by its fault.start (no world.review.posted): its ${reviewed.length} reviewed sessions are those whose agents were told or made calls after it`,
      );
    });
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
    const { events } = this.learner.coverage;
    for (const s of this.sessions.values()) {
      s.triggers.sort((a, b) => a.t - b.t);
      for (const trigger of s.triggers)
        if (trigger.on !== 'restart') events.set(trigger.on, (events.get(trigger.on) ?? 0) + 1);
    }
    events.set('restart', (events.get('restart') ?? 0) + this.readies.length);
  }

  /**
   * Each call to its cycle, or to its session's spawn; sessions and cycles get the repository most
   * of their calls name. Sessions and repositories by the CallTable's ids through the loops over
   * the calls (the names only at the end), ties between repositories to the one named first.
   */
  private attributeCalls(): void {
    const T = this.T;
    /** Per session id, its repositories' votes by id, in the order first named. */
    const repoVotes = new Map<number, Map<number, number>>();
    /** Per session id, its Session once there is one (sessionOf makes it at its first call with a repository). */
    const sessionById: Array<Session | undefined> = [];
    const known = (id: number) => {
      let s = sessionById[id];
      if (s === undefined) {
        s = this.sessions.get(T.sessions.values[id]!);
        sessionById[id] = s;
      }
      return s;
    };
    const agent = T.sources.id('agent');
    let lastCycleId = Number.NaN;
    let lastCandidates: Cycle[] | undefined;
    for (let i = 0; i < T.size; i++) {
      const session = T.session[i]!;
      const repo = T.repo[i]!;
      const t = T.t[i]!;
      if (session >= 0 && repo >= 0) {
        let votes = repoVotes.get(session);
        if (votes === undefined) {
          votes = new Map();
          repoVotes.set(session, votes);
        }
        votes.set(repo, (votes.get(repo) ?? 0) + 1);
        if (known(session) === undefined)
          sessionById[session] = this.sessionOf(T.sessions.values[session]!, t);
      }
      // A call of the spawn path, though it fell in a cycle of its repository (the cycle is announced per repo).
      const spawnedAt = session >= 0 ? known(session)?.spawnedAt : undefined;
      if (spawnedAt !== undefined && t < spawnedAt && T.source[i] !== agent) {
        this.spawnCalls[i] = 1;
        continue;
      }
      if (!T.hasCycle(i)) continue;
      const cycleId = T.cycle[i]!;
      if (cycleId !== lastCycleId) {
        lastCycleId = cycleId;
        lastCandidates = this.cyclesById.get(cycleId);
      }
      const candidates = lastCandidates;
      if (!candidates) continue;
      let best = candidates[0]!;
      for (const c of candidates)
        if (Math.abs(t - (c.t + c.end) / 2) < Math.abs(t - (best.t + best.end) / 2)) best = c;
      best.calls.push(i);
    }
    for (const [id, votes] of repoVotes) {
      const s = this.sessions.get(T.sessions.values[id]!)!;
      s.repo ??= T.repos.values[[...votes].sort((a, b) => b[1] - a[1])[0]![0]]!;
    }
    const repos = new Set([...this.sessions.values()].flatMap((s) => (s.repo ? [s.repo] : [])));
    this.learner.coverage.repos = Math.max(this.learner.coverage.repos, repos.size);
    this.cycleRepos();
  }

  /**
   * Each cycle's repository: the one most of its calls name (ties to the first named). A step of
   * its own: its loop over every call is compiled on its own, not attributeCalls a second time.
   */
  private cycleRepos(): void {
    const T = this.T;
    const votes = new OpCounts(T.repos.values.length);
    // A repository named '' is no repository here.
    const named = Uint8Array.from(T.repos.values, (name) => (name === '' ? 0 : 1));
    for (const c of this.cycles) {
      const top = topRepo(c.calls, T.repo, named, votes);
      if (top >= 0) c.repo = T.repos.values[top]!;
    }
  }

  /** Whether a cycle at `t` polled the session: created (spawned) before it, not merged or closed. */
  private polledAt(s: Session, t: number): boolean {
    if ((s.spawnedAt ?? s.createdAt) > t) return false;
    const st = stateAt(s, t);
    return st !== undefined && !TERMINAL.has(st);
  }

  /**
   * The sessions each cycle polled (created, or spawned, before it, not merged or closed, of its
   * project), in the order the sessions were first seen. One sweep in time order: whether a
   * session is polled changes only when it is created or spawned and when its state changes.
   */
  private sweepMembers(visit: (c: Cycle, members: Session[]) => void): void {
    const changes: Array<[number, Session]> = [];
    for (const s of this.sessions.values()) {
      changes.push([Math.max(s.createdAt, s.spawnedAt ?? s.createdAt), s]);
      for (const [t] of s.states) changes.push([t, s]);
    }
    changes.sort((a, b) => a[0] - b[0]);
    /** Polled sessions by repository ('' for one loop for all). */
    const active = new Map<string, Set<Session>>();
    const bucket = (s: Session) => (this.projectScoped ? (s.repo ?? '\u0000none') : '');
    let next = 0;
    for (const c of this.cycles) {
      const dirty = new Set<Session>();
      while (next < changes.length && changes[next]![0] <= c.t) dirty.add(changes[next++]![1]);
      for (const s of dirty) {
        const key = bucket(s);
        let set = active.get(key);
        if (!set) {
          set = new Set();
          active.set(key, set);
        }
        if (this.polledAt(s, c.t)) set.add(s);
        else set.delete(s);
      }
      const key = this.projectScoped ? c.repo : '';
      // A cycle that says it polled no session polled none (the first tick, at the spawns' moment).
      const members = key === undefined || c.declaredSessions === 0 ? [] : [...(active.get(key) ?? [])];
      members.sort((a, b) => a.index - b.index);
      visit(c, members);
    }
  }

  /** A cycle's calls by session (those of no session as one), each session's in the cycle's order. */
  private bySession(c: Cycle): SessionGroups {
    let out = this.callsBySession[c.index];
    if (out === undefined) {
      const T = this.T;
      this.groupKeys ??= sessionKeys(T);
      this.groupSlots ??= new Int32Array(T.sessions.values.length + 1);
      this.groupStamps ??= new Int32Array(T.sessions.values.length + 1);
      out = groupBySession(
        c.calls,
        T.session,
        this.groupKeys,
        this.groupSlots,
        this.groupStamps,
        c.index + 1,
      );
      this.callsBySession[c.index] = out;
    }
    return out;
  }

  /**
   * bySession's groups of a cycle it has grouped already, as every cycle with calls is by the time
   * the fit's data is gathered (sessionCycles): read from the cache without a call that V8 would
   * compile the grouping into.
   */
  private groupsMade(c: Cycle): SessionGroups {
    return this.callsBySession[c.index] ?? this.bySession(c);
  }

  /** The group of `s`'s calls in `groups` (bySession), or -1 when it made none. */
  private groupOf(groups: SessionGroups, s: Session): number {
    const key = s.id === '' ? -1 : this.T.sessions.find(s.id);
    if (key === -1 && s.id !== '') return -1;
    return groups.keys.indexOf(key);
  }

  /** Session-cycles: the sessions each cycle polled, with what it did to them and the events before. */
  private sessionCycles(): void {
    this.sweepMembers((c, list) => {
      if (this.projectScoped && c.calls.length === 0) return;
      this.cycleMembers.set(c, list);
      const { coverage } = this.learner;
      coverage.sessions = Math.max(coverage.sessions, list.length);
      coverage.callsPerCycle = Math.max(coverage.callsPerCycle, c.calls.length);
      const own = this.bySession(c);
      const T = this.T;
      // Each member's first call and the end of its last, for the parallelism (below).
      const starts: number[] = [];
      const ends: number[] = [];
      for (const s of list) {
        s.cycles.push(c);
        const from = stateAt(s, c.t) ?? 'spawning';
        const to = stateAt(s, c.end + CYCLE_END_SLACK_MS) ?? from;
        const { unitOps, unitCounts } = this;
        const countFrom = unitOps.length;
        const g = this.groupOf(own, s);
        if (g >= 0) {
          let start = Number.POSITIVE_INFINITY;
          let end = Number.NEGATIVE_INFINITY;
          for (let n = own.starts[g]!; n < own.starts[g + 1]!; n++) {
            const i = own.calls[n]!;
            start = Math.min(start, T.t[i]!);
            end = Math.max(end, T.t[i]! + T.dur[i]!);
            const op = T.op[i]!;
            // A session's calls in one cycle are of a few operations: a scan finds its place.
            let k = countFrom;
            while (k < unitOps.length && unitOps[k] !== op) k++;
            if (k === unitOps.length) {
              unitOps.push(op);
              unitCounts.push(1);
            } else unitCounts[k]!++;
          }
          starts.push(start);
          ends.push(end);
        }
        // Most session-cycles follow no event: their offsets are made only when one does.
        const unit: Unit = {
          order: this.units.length,
          session: s,
          cycle: c,
          from,
          to,
          countFrom,
          countTo: unitOps.length,
          offsets: undefined,
        };
        this.units.push(unit);
        const units = this.unitsOf.get(s);
        if (units) units.push(unit);
        else this.unitsOf.set(s, [unit]);
      }
      this.addParallelism(starts, ends);
    });
    for (const s of this.sessions.values()) {
      const own = this.unitsOf.get(s) ?? [];
      const starts = own.map((u) => u.cycle.t);
      for (const trigger of s.triggers) {
        if (!EXCESS_TRIGGERS.includes(trigger.on)) continue;
        const first = upperBound(starts, trigger.t);
        own.slice(first, first + EVENT_CYCLES).forEach((u, k) => {
          if (u.offsets === undefined) {
            u.offsets = new Map();
            this.afterEvents.push(u);
          }
          const prev = u.offsets.get(trigger.on);
          if (prev === undefined || k + 1 < prev) u.offsets.set(trigger.on, k + 1);
        });
      }
    }
  }

  /** A unit's calls by operation name, in the order of their first call. */
  private countsOf(u: Unit): Map<string, number> {
    const counts = new Map<string, number>();
    for (let k = u.countFrom; k < u.countTo; k++)
      counts.set(this.T.ops[this.unitOps[k]!]!, this.unitCounts[k]!);
    return counts;
  }

  /**
   * Cycle profiles: from clean session-cycles (no event in the cycles before), all of them when
   * none is clean. Each tally's sums are gathered by operation id over the trace, then added to it
   * in the order each operation was first counted: the sums and the order a unit-by-unit `add`
   * gave (whole counts: their sums are exact in any order).
   */
  private learnProfiles(): void {
    type Gathered = { tally: Tally; samples: number; sums: Float64Array; order: number[] };
    const opCount = this.T.ops.length;
    const gathered = new Map<Tally, Gathered>();
    const gather = (tally: Tally) => {
      let g = gathered.get(tally);
      if (!g) {
        g = { tally, samples: 0, sums: new Float64Array(opCount).fill(Number.NaN), order: [] };
        gathered.set(tally, g);
      }
      return g;
    };
    const { unitOps, unitCounts } = this;
    let last: { from: ModelState; to: ModelState; clean: Gathered; all: Gathered } | undefined;
    for (const u of this.units) {
      if (last === undefined || last.from !== u.from || last.to !== u.to) {
        const key = profileKey(u.from, u.to);
        let entry = this.learner.cycleProfiles.get(key);
        if (!entry) {
          entry = { clean: new Tally(), all: new Tally(), from: u.from, to: u.to };
          this.learner.cycleProfiles.set(key, entry);
        }
        last = { from: u.from, to: u.to, clean: gather(entry.clean), all: gather(entry.all) };
      }
      const clean = u.offsets === undefined;
      for (let pass = clean ? 0 : 1; pass < 2; pass++) {
        const g = pass === 0 ? last.clean : last.all;
        g.samples++;
        for (let k = u.countFrom; k < u.countTo; k++) {
          const op = unitOps[k]!;
          if (Number.isNaN(g.sums[op]!)) {
            g.sums[op] = unitCounts[k]!;
            g.order.push(op);
          } else g.sums[op]! += unitCounts[k]!;
        }
      }
    }
    for (const g of gathered.values()) {
      g.tally.samples += g.samples;
      for (const op of g.order) g.tally.add(this.T.ops[op]!, g.sums[op]!);
    }
  }

  /** The profile's tally a session-cycle between two states is predicted by. */
  private profileTally(from: ModelState, to: ModelState): Tally {
    const entry = this.learner.cycleProfiles.get(profileKey(from, to))!;
    return entry.clean.samples > 0 ? entry.clean : entry.all;
  }

  /** Extra calls in the cycles after an event, beyond the profile. */
  private learnEventExcess(): void {
    // In the units' order, as a pass over every unit took them.
    this.afterEvents.sort((a, b) => a.order - b.order);
    for (const u of this.afterEvents) {
      for (const [on, k] of u.offsets!) {
        const entry = this.excessEntry(on, k);
        entry.perSession.samples++;
        const tally = this.profileTally(u.from, u.to);
        const counts = this.countsOf(u);
        const ops = new Set([...counts.keys(), ...tally.sums.keys()]);
        for (const op of ops)
          entry.perSession.add(op, (counts.get(op) ?? 0) - (tally.sums.get(op) ?? 0) / tally.samples);
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

  /** Each loop's cycle starts, in time order ('' for one loop for all). */
  private loopStarts: Map<string, number[]> | undefined;

  /** Which of its loop's cycles since a restart this is (1-based), if within EVENT_CYCLES. */
  private restartOffsetOf(c: Cycle): number | undefined {
    if (this.loopStarts === undefined) {
      this.loopStarts = new Map();
      for (const o of this.cycles) {
        const list = this.loopStarts.get(o.project ?? '');
        if (list) list.push(o.t);
        else this.loopStarts.set(o.project ?? '', [o.t]);
      }
    }
    const starts = this.loopStarts.get(c.project ?? '')!;
    const upTo = upperBound(starts, c.t);
    let best: number | undefined;
    for (const t of this.readies) {
      // The loop's cycles that started after the restart, up to this one.
      const k = upTo - upperBound(starts, t);
      if (k >= 1 && k <= EVENT_CYCLES && (best === undefined || k < best)) best = k;
    }
    return best;
  }

  /** Shared calls (a cycle's calls of no session): per project loop, and per repository when they name one. */
  private learnShared(): void {
    const { learner } = this;
    const T = this.T;
    const perRepo = new OpCounts(T.ops.length);
    const perProject = new OpCounts(T.ops.length);
    for (const [c, list] of this.cycleMembers) {
      if (list.length === 0) continue;
      const k = this.restartOffsetOf(c);
      countShared(T, c.calls, perRepo, perProject);
      const repos = new Set(list.map((s) => s.repo ?? '')).size;
      if (k === undefined) {
        learner.perProject.samples++;
        learner.perRepo.samples += repos;
        perProject.addTo(learner.perProject, T.ops);
        perRepo.addTo(learner.perRepo, T.ops);
      } else {
        const entry = this.excessEntry('restart', k);
        entry.perProject.samples++;
        perProject.addTo(entry.perProject, T.ops);
        perRepo.addTo(entry.perProject, T.ops);
      }
      perRepo.clear();
      perProject.clear();
    }
  }

  /** Spawn: a session's calls outside any cycle before its first cycle (not its agent's). */
  private learnSpawns(): void {
    const { learner } = this;
    const T = this.T;
    const agent = T.sources.id('agent');
    for (let i = 0; i < T.size; i++) {
      if (this.spawnCalls[i]) {
        learner.spawn.add(T.opOf(i));
        continue;
      }
      if (T.hasCycle(i)) continue;
      const session = T.sessionOf(i);
      if (T.source[i] === agent && session !== undefined) {
        this.agentCalls.push(i);
        continue;
      }
      const s = session !== undefined ? this.sessions.get(session) : undefined;
      if (s && (s.cycles.length === 0 || T.t[i]! < s.cycles[0]!.t)) learner.spawn.add(T.opOf(i));
      else learner.fit.unmodelled++;
    }
    learner.spawn.samples += [...this.sessions.values()].filter((s) =>
      s.triggers.some((t) => t.on === 'created'),
    ).length;
  }

  /** Reviews: when the agent was told, and what it then did, per review and per comment. */
  private learnReviews(): void {
    const { review } = this.learner;
    const T = this.T;
    const agentCallsOf = new Map<string, number[]>();
    for (const i of this.agentCalls) {
      const session = T.sessionOf(i)!;
      const list = agentCallsOf.get(session);
      if (list) list.push(i);
      else agentCallsOf.set(session, [i]);
    }
    let modelledAgent = 0;
    for (const s of this.sessions.values()) {
      const reviews = s.triggers.filter((t) => t.on === 'review-posted');
      const starts = reviews.length > 0 ? s.cycles.map((c) => c.t) : [];
      for (const [i, posted] of reviews.entries()) {
        const next = reviews[i + 1]?.t ?? Number.POSITIVE_INFINITY;
        review.samples++;
        review.comments.push(posted.comments ?? 1);
        const told = s.told.find((t) => t >= posted.t && t < next);
        if (told !== undefined) {
          const k = upperBound(starts, told) - upperBound(starts, posted.t);
          review.told.set(k, (review.told.get(k) ?? 0) + 1);
        }
        const own = (agentCallsOf.get(s.id) ?? []).filter((i) => T.t[i]! >= posted.t && T.t[i]! < next);
        const counts = new Map<string, number>();
        for (const i of own) counts.set(T.opOf(i), (counts.get(T.opOf(i)) ?? 0) + 1);
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
      const starts = s.cycles.map((c) => c.t);
      for (const [t, to] of s.states) {
        const from = prev;
        prev = to;
        if (from === to) continue;
        const inCycle = s.cycles.find((c) => c.t <= t && t <= c.end + CYCLE_END_SLACK_MS);
        const byKind = new Map<ModelTrigger, { lag: number; ms: number }>();
        const upToCycle = inCycle ? upperBound(starts, inCycle.t) : 0;
        for (const trigger of s.triggers) {
          if (trigger.t > t) break;
          // The session's cycles from the trigger to the one that made the change.
          const lag = inCycle ? Math.max(1, upToCycle - lowerBound(starts, trigger.t)) : 0;
          byKind.set(trigger.on, { lag, ms: t - trigger.t });
        }
        if (byKind.size > 0) this.learner.transitionSamples.push({ from, to, byKind });
      }
    }
  }

  /** The cycle with the most sessions that made calls (the most in flight together among equals). */
  private widest = { sessions: 0, overlap: 0 };

  /**
   * One cycle's share of the parallelism: its members' first calls and the ends of their last
   * (sessionCycles gathers them as it counts their calls: one pass over them, not two).
   */
  private addParallelism(starts: readonly number[], ends: readonly number[]): void {
    // The most sessions in flight at any session's first call: started by then, not yet done.
    const sortedStarts = Float64Array.from(starts).sort();
    const sortedEnds = Float64Array.from(ends).sort();
    let overlap = 0;
    for (const a of starts)
      overlap = Math.max(overlap, upperBound(sortedStarts, a) - upperBound(sortedEnds, a));
    const { widest } = this;
    if (starts.length > widest.sessions || (starts.length === widest.sessions && overlap > widest.overlap))
      this.widest = { sessions: starts.length, overlap };
  }

  /** Parallelism: how many of a cycle's sessions had calls in flight together (the widest cycle's). */
  private learnParallelism(): void {
    const { widest } = this;
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
    // The machine's other work while the trace ran: its 1-minute load average when the run started
    // (before the control plane's own processes), as runnable tasks sharing the cores.
    const load = machine(this.trace.started)?.loadavg?.[0];
    if (load === undefined)
      learner.notes.add(
        "the traces do not say their machine's load: the cycle time is fitted as if nothing else ran on it",
      );
    const fitCycles = this.cycles.filter((c) => c.calls.length > 0);
    const simCycles: SimCycle[] = fitCycles.map((c) => ({ startMs: c.t, parallel: learner.parallel }));
    const chains: Chain[] = [];
    const T = this.T;
    const byTime = (a: number, b: number) => T.t[a]! - T.t[b]!;
    /** Calls' latencies by their start (a stable sort: calls already in order, as most are, are kept as they are). */
    const latencies = (list: Int32Array) => {
      let sorted = true;
      for (let k = 1; k < list.length && sorted; k++) sorted = T.t[list[k - 1]!]! <= T.t[list[k]!]!;
      const ordered = sorted ? list : Array.from(list).sort(byTime);
      const out: number[] = new Array(ordered.length);
      for (let k = 0; k < ordered.length; k++) out[k] = T.dur[ordered[k]!]!;
      return out;
    };
    fitCycles.forEach((c, i) => {
      const { starts, calls } = this.groupsMade(c);
      for (let g = 0; g + 1 < starts.length; g++)
        chains.push({
          cycle: i,
          startMs: c.t,
          latenciesMs: latencies(calls.subarray(starts[g]!, starts[g + 1]!)),
        });
    });
    const spawnBySession = spawnCallsBySession(T, this.spawnCalls);
    // A spawn starts when the session is created; when the control plane says its spawn returned,
    // what its calls do not account for is the spawn's own work (learn.ts, fitSpawnAndSpread).
    const spawns: Array<{ chain: number; tookMs: number }> = [];
    for (const [id, list] of spawnBySession) {
      list.sort(byTime);
      const firstAt = T.t[list[0]!]!;
      const s = sessions.get(T.sessions.values[id]!);
      const from = s && s.createdAt <= firstAt ? s.createdAt : firstAt;
      if (s?.spawnedAt !== undefined) spawns.push({ chain: chains.length, tookMs: s.spawnedAt - from });
      chains.push({ cycle: -1, startMs: from, latenciesMs: list.map((x) => T.dur[x]!) });
    }
    learner.fitGroups.push({
      spawns,
      cycles: simCycles,
      chains,
      observed: fitCycles.map((c) => c.end - c.t),
      // Each session's first call (those of no session as one), from the cycle's calls by session.
      spreads: fitCycles.map((c) => {
        const firsts: number[] = [];
        const { starts, calls } = this.groupsMade(c);
        for (let g = 0; g + 1 < starts.length; g++) {
          let first = Number.POSITIVE_INFINITY;
          for (let n = starts[g]!; n < starts[g + 1]!; n++) first = Math.min(first, T.t[calls[n]!]!);
          firsts.push(first);
        }
        return spreadOf(firsts);
      }),
      cores,
      load: load ?? 0,
    });
  }

  /** The fit's observed side; the modelled side is computed once the profiles are final. */
  private addFitUnits(): void {
    const { learner, units } = this;
    learner.fit.calls += this.trace.calls.size;
    learner.fit.sessionCycles += units.length;
    // Every unit's counts, one after another (Unit.countFrom).
    learner.fit.sessionCycleCalls = sumFrom(learner.fit.sessionCycleCalls, this.unitCounts);
    learner.fitUnits.push(() => {
      let total = 0;
      // The means of the profile a unit is predicted by, made once per profile (the tallies are
      // final here) and added unit by unit, in the same order as ever.
      let last: { from: ModelState; to: ModelState; means: number[] } | undefined;
      for (const u of units) {
        if (last === undefined || last.from !== u.from || last.to !== u.to) {
          const tally = this.profileTally(u.from, u.to);
          const means: number[] = [];
          for (const sum of tally.sums.values()) means.push(sum / tally.samples);
          last = { from: u.from, to: u.to, means };
        }
        for (const mean of last.means) total += mean;
        if (u.offsets !== undefined)
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
