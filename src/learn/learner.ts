/**
 * What `model learn` accumulates over its traces (learn.ts reads each trace into it, trace.ts's
 * parts; learnModel turns it into the model): the per-unit tallies, the catalogue of operations,
 * and the small types a trace's reading is made of (docs/model.md).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type {
  ModelCalls,
  ModelOperation,
  ModelState,
  ModelTraceProvenance,
  ModelTrigger,
} from '../model/format.ts';
import { modelStates } from '../model/format.ts';
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

/**
 * One api call as `model learn` keeps it: the scanner reuses its record (src/trace/scanner.ts), so
 * the fields are copied into this small fixed-shape object as the trace is read. `op` is the
 * operation's key in the model, named once the trace is read (Operations.resolve).
 */
export class Call {
  op = '';
  constructor(
    readonly t: number,
    readonly dur: number,
    /** The call's kind (operation, protocol, method, route) as Operations numbered it. */
    readonly kind: number,
    readonly cost: number,
    readonly session: string | undefined,
    readonly cycle: number | undefined,
    readonly repo: string | undefined,
    readonly source: string | undefined,
  ) {}
}

export interface Cycle {
  index: number;
  id: number;
  t: number;
  end: number;
  project?: string;
  repo?: string;
  calls: Call[];
}

export interface Session {
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

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function percentiles(values: number[]): { p50: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: round(percentile(sorted, 50)), p95: round(percentile(sorted, 95)) };
}

export async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
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
  durs: number[];
}

/**
 * The catalogue of operations: one key per (op, protocol, method, route) the traces recorded, an
 * op name alone when it went with one route only. Built as a trace streams by (`add`, one record at
 * a time); the keys are settled once the trace is read, when every route of each op name is known
 * (`resolve`).
 */
export class Operations {
  private readonly byKey = new Map<string, { op: ModelOperation; durs: number[]; cost: number }>();
  private readonly keyOf = new Map<string, string>();
  private readonly opRoutes = new Map<string, Set<string>>();
  /** The trace being read: its kinds of call, numbered in the order first seen. */
  private kinds: CallKind[] = [];
  private kindIds = new Map<string, number>();
  private last: { op?: string; protocol: string; method: string; route: string; id: number } | undefined;

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
          durs: [],
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
    kind.durs.push(r.dur);
    return id;
  }

  /**
   * The trace is read: each kind's key (by its number), its calls in the catalogue. Without
   * `keep` (a trace whose cost is not learned) only its op names' routes stay, as seen.
   */
  resolve(keep: boolean): string[] {
    const kinds = keep ? this.kinds : [];
    this.kinds = [];
    this.kindIds = new Map();
    this.last = undefined;
    return kinds.map((kind) => {
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
      entry.op.calls += kind.calls;
      entry.cost += kind.cost;
      for (const dur of kind.durs) entry.durs.push(dur);
      return key;
    });
  }

  finish(): Record<string, ModelOperation> {
    const out: Record<string, ModelOperation> = {};
    for (const [key, { op, durs, cost }] of [...this.byKey].sort(([a], [b]) => (a < b ? -1 : 1)))
      out[key] = { ...op, points: round(cost / Math.max(1, op.calls), 3), latencyMs: percentiles(durs) };
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
