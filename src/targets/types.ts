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
}

export type TargetCapability = 'restart' | 'flushCaches' | 'setDashboard';

export function hasCapability(target: Target, capability: TargetCapability): boolean {
  return typeof target[capability] === 'function';
}
