/**
 * What `model learn` accumulates over its traces (learn.ts reads each trace into it, trace.ts's
 * parts; learnModel turns it into the model): the per-unit tallies, the catalogue of operations,
 * and the small types a trace's reading is made of (docs/model.md).
 */
import type { ModelCalls, ModelOperation, ModelTraceProvenance } from '../model/format.ts';
import { type ModelState, type ModelTrigger, modelStates } from '../model/words.ts';
import type { ApiRecord } from '../trace/schema.ts';
import type { FitGroup } from './cycle-time.ts';
import type { OverrunVotes } from './overrun.ts';
import { SpeedLearner } from './speed.ts';

/** Cycles after an event whose extra calls are learned (and kept out of the cycle profiles). */
export const EVENT_CYCLES = 3;
/** A mean below this (calls per unit) is left out of a profile: noise, not behaviour. */
const MIN_MEAN = 0.02;
/** A state change logged this long after its cycle's end still belongs to it (IPC, log lines). */
export const CYCLE_END_SLACK_MS = 250;

export const TERMINAL: ReadonlySet<string> = new Set(['merged', 'closed']);
/** The events whose following cycles may cost more, beyond the state they leave the session in. */
export const EXCESS_TRIGGERS: readonly ModelTrigger[] = [
  'review-posted',
  'pushed',
  'ci-completed',
  'restart',
];
export const WORLD_TRIGGERS: Record<string, ModelTrigger> = {
  'world.pr.opened': 'pr-opened',
  'world.ci.completed': 'ci-completed',
  'world.review.posted': 'review-posted',
  'world.pushed': 'pushed',
  'world.pr.merged': 'merged',
};

/** Strings numbered in the order first seen (a column of a CallTable holds their numbers). */
class StringColumn {
  readonly values: string[] = [];
  private readonly ids = new Map<string, number>();
  private last: string | undefined;
  private lastId = -1;
  id(value: string | undefined): number {
    if (value === undefined) return -1;
    // The scanner hands the same string object for a repeated value: most lookups end here.
    if (value === this.last) return this.lastId;
    let id = this.ids.get(value);
    if (id === undefined) {
      id = this.values.length;
      this.values.push(value);
      this.ids.set(value, id);
    }
    this.last = value;
    this.lastId = id;
    return id;
  }
  /** The id of `value`, or -1 when it was never given one. */
  find(value: string): number {
    return this.ids.get(value) ?? -1;
  }
}

const grown = <T extends Float64Array | Int32Array>(array: T, size: number): T => {
  const next = new (array.constructor as { new (n: number): T })(size);
  next.set(array);
  return next;
};

/**
 * A trace's api calls as `model learn` keeps them, column by column: the scanner reuses its
 * record (src/trace/scanner.ts), and a long trace holds millions of calls, so each field is
 * copied into a typed array (no object per call, nothing for the garbage collector to move).
 * A call is its index; sessions, repositories and sources are numbers into their columns' strings
 * (-1: none); `op` is the operation's key in the model, numbered once the trace is read.
 */
export class CallTable {
  size = 0;
  t = new Float64Array(1024);
  dur = new Float64Array(1024);
  cost = new Float64Array(1024);
  /** The poll cycle id, NaN for none. */
  cycle = new Float64Array(1024);
  /** The call's kind (operation, protocol, method, route) as Operations numbered it. */
  kind = new Int32Array(1024);
  session = new Int32Array(1024);
  repo = new Int32Array(1024);
  source = new Int32Array(1024);
  /** The model's operation key, an index into `ops` (set by `name`). */
  op = new Int32Array(0);
  ops: string[] = [];
  readonly sessions = new StringColumn();
  readonly repos = new StringColumn();
  readonly sources = new StringColumn();

  push(r: ApiRecord, kind: number): void {
    if (this.size === this.t.length) {
      const next = this.size * 2;
      this.t = grown(this.t, next);
      this.dur = grown(this.dur, next);
      this.cost = grown(this.cost, next);
      this.cycle = grown(this.cycle, next);
      this.kind = grown(this.kind, next);
      this.session = grown(this.session, next);
      this.repo = grown(this.repo, next);
      this.source = grown(this.source, next);
    }
    const i = this.size++;
    this.t[i] = r.t;
    this.dur[i] = r.dur;
    this.cost[i] = r.cost;
    this.cycle[i] = r.cycle ?? Number.NaN;
    this.kind[i] = kind;
    this.session[i] = this.sessions.id(r.session);
    this.repo[i] = this.repos.id(r.repo);
    this.source[i] = this.sources.id(r.source);
  }

  /**
   * The calls put in `order` (a permutation of their indices): a trace whose records came out of
   * order is learned as the same trace in order (trace.ts, inTimeOrder).
   */
  reorder(order: ArrayLike<number>): void {
    const take = <T extends Float64Array | Int32Array>(column: T): T => {
      const next = new (column.constructor as { new (n: number): T })(this.size);
      for (let i = 0; i < this.size; i++) next[i] = column[order[i]!]!;
      return next;
    };
    this.t = take(this.t);
    this.dur = take(this.dur);
    this.cost = take(this.cost);
    this.cycle = take(this.cycle);
    this.kind = take(this.kind);
    this.session = take(this.session);
    this.repo = take(this.repo);
    this.source = take(this.source);
  }

  /** Each call's operation key, from its kind's (Operations.resolve). */
  name(keysByKind: readonly string[]): void {
    const ids = new Map<string, number>();
    const opOfKind = keysByKind.map((key) => {
      let id = ids.get(key);
      if (id === undefined) {
        id = this.ops.length;
        this.ops.push(key);
        ids.set(key, id);
      }
      return id;
    });
    this.op = new Int32Array(this.size);
    for (let i = 0; i < this.size; i++) this.op[i] = opOfKind[this.kind[i]!]!;
  }

  opOf(i: number): string {
    return this.ops[this.op[i]!]!;
  }
  sessionOf(i: number): string | undefined {
    const s = this.session[i]!;
    return s < 0 ? undefined : this.sessions.values[s];
  }
  repoOf(i: number): string | undefined {
    const r = this.repo[i]!;
    return r < 0 ? undefined : this.repos.values[r];
  }
  sourceOf(i: number): string | undefined {
    const s = this.source[i]!;
    return s < 0 ? undefined : this.sources.values[s];
  }
  hasCycle(i: number): boolean {
    return !Number.isNaN(this.cycle[i]!);
  }
}

export interface Cycle {
  index: number;
  id: number;
  t: number;
  end: number;
  project?: string;
  repo?: string;
  /** How many sessions the cycle's span says it polled (`data.sessions`), when it says. */
  declaredSessions?: number;
  /** Its calls: indices into the trace's CallTable, in file order. */
  calls: number[];
}

export interface Session {
  id: string;
  /** Its place among the trace's sessions, in the order first seen (the order a cycle's sessions are taken in). */
  index: number;
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
export class Tally {
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

export const round = (v: number, digits = 1) => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function percentiles(values: ArrayLike<number>): { p50: number; p95: number } {
  // A typed array sorts numbers natively (no comparator call per pair): operations hold millions.
  const sorted = Float64Array.from(values).sort();
  return { p50: round(percentile(sorted, 50)), p95: round(percentile(sorted, 95)) };
}

/** One kind of call in the trace being read: its first record's fields and its tallies. */
interface CallKind {
  full: string;
  op: string | undefined;
  protocol: ModelOperation['protocol'];
  method: string;
  route: string;
  resource: string;
  calls: number;
  cost: number;
}

/**
 * The catalogue of operations: one key per (op, protocol, method, route) the traces recorded, an
 * op name alone when it went with one route only. Built as a trace streams by (`add`, one record at
 * a time); the keys are settled once the trace is read, when every route of each op name is known
 * (`resolve`).
 */
export class Operations {
  /**
   * Per key, its operation, its calls' latencies (one array per kind of call of each trace that
   * taught cost: their percentiles do not depend on their order) and points.
   */
  private readonly byKey = new Map<string, { op: ModelOperation; durs: Float64Array[]; cost: number }>();
  private readonly keyOf = new Map<string, string>();
  private readonly opRoutes = new Map<string, Set<string>>();
  /** The trace being read: its kinds of call, numbered in the order first seen. */
  private kinds: CallKind[] = [];
  private kindIds = new Map<string, number>();
  private last: { op?: string; protocol: string; method: string; route: string; id: number } | undefined;

  /** The kind numbered `id` in the trace being read, as one string (operation, protocol, method, route). */
  kindKey(id: number): string {
    return this.kinds[id]!.full;
  }

  /** A record as it is read: the number of its kind (the scanner's strings repeat as one object). */
  add(r: ApiRecord): number {
    const last = this.last;
    let id: number;
    if (
      last !== undefined &&
      last.op === r.op &&
      last.protocol === r.protocol &&
      last.method === r.method &&
      last.route === r.route
    )
      id = last.id;
    else {
      const full = `${r.op ?? ''}|${r.protocol}|${r.method}|${r.route}`;
      let known = this.kindIds.get(full);
      if (known === undefined) {
        known = this.kinds.length;
        this.kindIds.set(full, known);
        this.kinds.push({
          full,
          op: r.op,
          protocol: r.protocol,
          method: r.method,
          route: r.route,
          resource: r.resource,
          calls: 0,
          cost: 0,
        });
        if (r.op !== undefined) {
          const routes = this.opRoutes.get(r.op) ?? new Set();
          routes.add(`${r.protocol} ${r.method} ${r.route}`);
          this.opRoutes.set(r.op, routes);
        }
      }
      id = known;
      this.last = {
        ...(r.op !== undefined ? { op: r.op } : {}),
        protocol: r.protocol,
        method: r.method,
        route: r.route,
        id,
      };
    }
    const kind = this.kinds[id]!;
    kind.calls++;
    kind.cost += r.cost;
    return id;
  }

  /**
   * The trace is read: each kind's key (by its number), its calls in the catalogue. Without
   * `keep` (a trace whose cost is not learned) only its op names' routes stay, as seen. Each
   * kind's latencies are taken from the trace's calls (`calls`, whose `kind` column holds these
   * numbers) in one pass, not kept a record at a time.
   */
  resolve(keep: boolean, calls: CallTable): string[] {
    const kinds = keep ? this.kinds : [];
    this.kinds = [];
    this.kindIds = new Map();
    this.last = undefined;
    const durs = kinds.map((kind) => new Float64Array(kind.calls));
    if (kinds.length > 0) {
      const filled = new Int32Array(kinds.length);
      const { kind: kindOf, dur } = calls;
      for (let i = 0; i < calls.size; i++) {
        const k = kindOf[i]!;
        durs[k]![filled[k]!++] = dur[i]!;
      }
    }
    return kinds.map((kind, k) => {
      let key = this.keyOf.get(kind.full);
      if (key === undefined) {
        key =
          kind.op === undefined
            ? `${kind.method} ${kind.route}`
            : (this.opRoutes.get(kind.op)?.size ?? 1) > 1
              ? `${kind.op} ${kind.method} ${kind.route}`
              : kind.op;
        this.keyOf.set(kind.full, key);
      }
      let entry = this.byKey.get(key);
      if (!entry) {
        entry = {
          op: {
            ...(kind.op !== undefined ? { op: kind.op } : {}),
            protocol: kind.protocol,
            method: kind.method,
            route: kind.route,
            resource: kind.resource,
            points: 0,
            latencyMs: null,
            calls: 0,
          },
          durs: [],
          cost: 0,
        };
        this.byKey.set(key, entry);
      }
      entry.durs.push(durs[k]!);
      entry.op.calls += kind.calls;
      entry.cost += kind.cost;
      return key;
    });
  }

  finish(): Record<string, ModelOperation> {
    const out: Record<string, ModelOperation> = {};
    for (const [key, { op, durs, cost }] of [...this.byKey].sort(([a], [b]) => (a < b ? -1 : 1))) {
      // A key of one kind of one trace (the usual case) is read as it is.
      let all = durs[0] ?? new Float64Array(0);
      if (durs.length > 1) {
        all = new Float64Array(durs.reduce((n, list) => n + list.length, 0));
        let at = 0;
        for (const list of durs) {
          all.set(list, at);
          at += list.length;
        }
      }
      out[key] = { ...op, points: round(cost / Math.max(1, op.calls), 3), latencyMs: percentiles(all) };
    }
    return out;
  }
}

/** Everything learned, summed over the traces. */
export class Learner {
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
  readonly fitGroups: Array<
    FitGroup & {
      /** Spawn chains with how long the spawn took (creation → the control plane's word that it returned). */
      spawns: Array<{ chain: number; tookMs: number }>;
    }
  > = [];
  readonly traces: ModelTraceProvenance[] = [];
  readonly notes = new Set<string>();
  readonly speed = new SpeedLearner();
  /** Traces with poll cycles and attributed calls: the cost part was learned from them. */
  costTraces = 0;
  /** Work done one task after another (traces without poll cycles): calls per task, and the control plane's own. */
  readonly tasks = { perTask: new Tally(), unattributed: new Tally(), points: 0, durations: [] as number[] };
  /** Per trace that taught nothing of cost, why (for the error when no trace did). */
  readonly whyNothing: string[] = [];
  scope: 'project' | 'global' = 'global';
  parallel = 0;
  intervals: number[] = [];
  /** How the loops' cycles after overruns started, over the traces (overrun.ts). */
  readonly overrun: OverrunVotes = { skip: 0, immediate: 0, unclear: 0 };
  apiRecords = 0;
  /** What the traces showed (docs/model.md#coverage): events by kind, restarts by kind, the largest cycle. */
  readonly coverage = {
    events: new Map<ModelTrigger, number>(),
    restarts: new Map<string, number>(),
    sessions: 0,
    callsPerCycle: 0,
    repos: 0,
  };
  fit = { calls: 0, modelled: 0, sessionCycles: 0, sessionCycleCalls: 0, unmodelled: 0 };
  /** Per trace, the session-cycles with their keys (for the modelled side of the fit). */
  readonly fitUnits: Array<() => number> = [];
}

export function profileKey(from: ModelState, to: ModelState): string {
  return `${from}→${to}`;
}

export function asState(value: unknown): ModelState | undefined {
  return typeof value === 'string' && (modelStates as readonly string[]).includes(value)
    ? (value as ModelState)
    : undefined;
}

/** The state a session was in at `t` (the last change at or before it), or undefined before it existed. */
export function stateAt(session: Session, t: number): ModelState | undefined {
  if (t < session.createdAt) return undefined;
  let state: ModelState = 'spawning';
  for (const [at, to] of session.states) {
    if (at > t) break;
    state = to;
  }
  return state;
}
