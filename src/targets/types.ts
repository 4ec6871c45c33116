/**
 * The target interface: what the workload engine drives. The reference control plane
 * (in-process), the `http` adapter (a real orchestrator behind a small JSON protocol) and
 * user `module` targets all implement it. Methods are async so a remote target fits.
 * Optional capabilities are optional methods: an executor or fault that needs one a target
 * lacks fails the run up front with a clear message.
 */
export type SessionState = 'spawning' | 'working' | 'pr_open' | 'review' | 'merged' | 'closed';
export type RestartKind = 'hard' | 'graceful' | 'hot';

export interface SessionSpec {
  id: string;
  /** owner/name */
  repo: string;
  issue: number;
  /** The branch the session's agent pushes (its PR's head). */
  branch: string;
}

/** Native runs (SPEC §4 providers): a run on a session, started by an input. */
export interface RunStartSpec {
  session: string;
  /** Provider adapter: claude, codex, opencode, ... */
  adapter: string;
  /** The input (prompt) that opens the run. */
  input: string;
}

/** What a target reports about runs: a turn finished, a run ended. */
export interface RunNotice {
  type: 'turn.completed' | 'run.ended';
  session: string;
  run: string;
  turn: number;
}

/** Provider faults (SPEC §5): slow a provider down, or crash provider processes. */
export type ProviderFault =
  | { type: 'slowdown'; adapter?: string; factor: number; durationMs?: number }
  | { type: 'crash'; adapter?: string; count: number };

export type SessionStateListener = (sessionId: string, from: SessionState | 'none', to: SessionState) => void;

export interface Target {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  createSession(spec: SessionSpec): Promise<void>;
  /** Sessions by state, for gauges and "wait until all reached X". */
  sessionCounts(): Promise<Partial<Record<SessionState, number>>>;
  onSessionState(listener: SessionStateListener): void;
  restart?(kind: RestartKind): Promise<{ outageMs: number }>;
  flushCaches?(): Promise<void>;
  setDashboard?(open: boolean): Promise<void>;
  // Native runs (issue 5): all four together, or none.
  /** Resolves when the run exists; `start` is warm when the provider resumes a saved session. */
  startRun?(spec: RunStartSpec): Promise<{ run: string; start: 'cold' | 'warm' }>;
  /** The next turn's input for the session's active run. */
  sendInput?(session: string, input: string): Promise<void>;
  endRun?(session: string): Promise<void>;
  onRunNotice?(listener: (notice: RunNotice) => void): void;
  providerFault?(fault: ProviderFault): Promise<void>;
}

export type TargetCapability = 'restart' | 'flushCaches' | 'setDashboard' | 'startRun' | 'providerFault';

export function hasCapability(target: Target, capability: TargetCapability): boolean {
  return typeof target[capability] === 'function';
}
