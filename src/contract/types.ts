/**
 * The target interface: what the workload engine drives. The reference control plane
 * (in-process), the `http` adapter (a real orchestrator behind a small JSON protocol) and
 * user `module` targets all implement it. Methods are async so a remote target fits.
 * Optional capabilities are optional methods: an executor or fault that needs one a target
 * lacks fails the run up front with a clear message.
 */
/** A session's lifecycle, in order: spawning → working → pr_open → review → merged | closed. */
export const sessionStates = ['spawning', 'working', 'pr_open', 'review', 'merged', 'closed'] as const;
export type SessionState = (typeof sessionStates)[number];
export const restartKinds = ['hard', 'graceful', 'hot'] as const;
export type RestartKind = (typeof restartKinds)[number];

export function isRestartKind(name: string): name is RestartKind {
  return (restartKinds as readonly string[]).includes(name);
}

/** How far along the lifecycle a state is, for "wait until every session reached X". */
export const stateRank: Record<SessionState, number> = {
  spawning: 0,
  working: 1,
  pr_open: 2,
  review: 3,
  merged: 4,
  closed: 4,
};

/** The provider adapters native runs name (the reference control plane models each). */
export const ADAPTERS = ['claude', 'codex', 'opencode'] as const;
export type Adapter = (typeof ADAPTERS)[number];

export function isAdapter(name: string): name is Adapter {
  return (ADAPTERS as readonly string[]).includes(name);
}

export interface SessionSpec {
  id: string;
  /** owner/name */
  repo: string;
  issue: number;
  /** The branch the session's agent pushes (its PR's head). */
  branch: string;
}

/** Native runs (docs/reference-control-plane.md#native-runs-and-providers): a run on a session, started by an input. */
export interface RunStartSpec {
  session: string;
  /** Provider adapter: claude, codex, opencode, ... */
  adapter: string;
  /** The input (prompt) that opens the run. */
  input: string;
}

/**
 * What a target reports about runs: a turn finished, a run ended, or an input the control plane
 * answered without making a run (`run.skipped`: the run's remaining turns are not sent).
 */
export interface RunNotice {
  type: 'turn.completed' | 'run.ended' | 'run.skipped';
  session: string;
  run: string;
  turn: number;
}

/** Provider faults (docs/scenarios.md#faults): slow a provider down, or crash provider processes. */
export type ProviderFault =
  | { type: 'slowdown'; adapter?: string; factor: number; durationMs?: number }
  | { type: 'crash'; adapter?: string; count: number };

export type SessionStateListener = (sessionId: string, from: SessionState | 'none', to: SessionState) => void;

export interface Target {
  readonly name: string;
  /**
   * Optional: what must happen before the run's time starts (a real server's first boot, tens of
   * seconds). Under the real clock the engine awaits it, then starts run time at 0: the run's
   * duration is the workload's, and the boot is reported apart (its own records say how long).
   */
  boot?(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  createSession(spec: SessionSpec): Promise<void>;
  /** Sessions by state, for gauges and "wait until all reached X". */
  sessionCounts(): Promise<Partial<Record<SessionState, number>>>;
  onSessionState(listener: SessionStateListener): void;
  /**
   * The system under test failed for good (its process died outside a restart): the engine
   * ends the run as failed, keeping the trace with its footer.
   */
  onFailure?(listener: (error: Error) => void): void;
  /**
   * The run reached its end (not interrupted, not failed): the target's last records, and its
   * last word on whether the run did what it claims (a failure goes through onFailure).
   */
  atEnd?(): Promise<void>;
  restart?(kind: RestartKind): Promise<{ outageMs: number }>;
  flushCaches?(): Promise<void>;
  setDashboard?(open: boolean): Promise<void>;

  // Actors (park/wake, docs/reference-control-plane.md#actors-parkwake): what the `turnover` executor drives. See ActorTarget.
  createActor?(id: string, base: ActorFootprint, phase: ActorPhase): Promise<ActorReply>;
  parkActor?(id: string, phase: ActorPhase): Promise<ActorReply>;
  wakeActor?(id: string, phase: ActorPhase): Promise<ActorReply>;
  actorStep?(id: string, step: ActorStepRequest, phase: ActorPhase): Promise<ActorReply>;
  actorCounts?(): Promise<ActorCounts>;

  // Native runs (issue 5): all four together, or none.
  /** Resolves when the run exists; `start` is warm when the provider resumes a saved session. */
  startRun?(spec: RunStartSpec): Promise<{ run: string; start: 'cold' | 'warm' }>;
  /** The next turn's input for the session's active run. */
  sendInput?(session: string, input: string): Promise<void>;
  endRun?(session: string): Promise<void>;
  onRunNotice?(listener: (notice: RunNotice) => void): void;
  providerFault?(fault: ProviderFault): Promise<void>;
}

export type TargetCapability =
  | 'restart'
  | 'flushCaches'
  | 'setDashboard'
  | 'createActor'
  | 'parkActor'
  | 'wakeActor'
  | 'actorStep'
  | 'actorCounts'
  | 'startRun'
  | 'sendInput'
  | 'endRun'
  | 'onRunNotice'
  | 'providerFault';

export function hasCapability(target: Target, capability: TargetCapability): boolean {
  return typeof target[capability] === 'function';
}

// ── Actors (park/wake) ──────────────────────────────────────────────────────────────────────

/** How a parked actor is kept (docs/reference-control-plane.md#actors-parkwake): a snapshot (`suspend`), a paused process or not at all. */
export const lifecycleModes = ['suspend', 'pause', 'none'] as const;
export type LifecycleMode = (typeof lifecycleModes)[number];
export const resumeModes = ['implicit', 'explicit'] as const;
export type ResumeMode = (typeof resumeModes)[number];

/** Failure rates per attempt, by kind (docs/reference-control-plane.md#actors-parkwake). */
export interface FailureRates {
  busy: number;
  crashed: number;
  notFound: number;
}

/** Defaults per lifecycle mode: a node-local snapshot is lost more often than a durable one. */
export const defaultFailureRates: Record<Exclude<LifecycleMode, 'none'>, FailureRates> = {
  suspend: { busy: 0.005, crashed: 0.001, notFound: 0.0002 },
  pause: { busy: 0.005, crashed: 0.001, notFound: 0.002 },
};
// A session the control plane can park (snapshot, free its resources) and wake (restore). The
// target executes each step's operations, keeps the session's memory and disk footprint, and
// records the actor spans itself (it is the only one who knows when a restore ended):
// docs/reference-control-plane.md and docs/trace-format.md.

/** What a session holds: resident memory and disk, in bytes. */
export interface ActorFootprint {
  memoryBytes: number;
  diskBytes: number;
}

/** Which part of a turnover run an operation belongs to (a label on the actor spans). */
export type ActorPhase = 'register' | 'fill' | 'turnover';

/** The states the `actors` gauge counts; they always sum to the sessions registered so far. */
export const actorStates = ['awake', 'parked', 'waking', 'parking'] as const;
export type ActorState = (typeof actorStates)[number];
export type ActorCounts = Record<ActorState, number>;

/** One operation of a scripted step (a session profile's `ops`). */
export type ActorOp =
  | { op: 'ingest'; bytes: number }
  | { op: 'cpu'; ms: number }
  | { op: 'disk-write'; bytes: number }
  | { op: 'disk-read'; bytes: number }
  | { op: 'memory-fill'; bytes: number }
  | { op: 'memory-touch'; bytes: number }
  | { op: 'ping'; count: number };

export interface ActorStepRequest {
  /** Step name and 0-based index in its profile (for the trace). */
  name: string;
  index: number;
  ops: readonly ActorOp[];
  /** Footprint caps: growth stops there (a session's memory and disk do not grow forever). */
  max: ActorFootprint;
}

/**
 * What an actor call answers. `ok: false` means the operation failed for good (after the
 * control plane's own retries); `state` is where the session is now, so the caller knows which
 * pool it belongs to (a failed park leaves it `awake`, a failed wake leaves it `parked`).
 */
export interface ActorReply {
  ok: boolean;
  state: ActorState;
}
