/**
 * The messages between the `ao` target (the run's process) and the child process that runs
 * agent-orchestrator's code (child.ts), over Node's IPC channel. One request, one reply (`id`);
 * everything else the child sends unasked: what AO's lifecycle loop did.
 */

/** What the child needs to build AO: written by the target, read once at the child's start. */
export interface AoChildConfig {
  /** ESM entry files of the packages (dist/index.js): AO's agent plugins with real agents. */
  packages: {
    core: string;
    scm: string;
    tracker: string;
    runtime?: string;
    agent?: string;
    workspace?: string;
  };
  /** agent-orchestrator.yaml written for this run. */
  configPath: string;
  /** Where the stand-in workspace plugin makes each session's directory. */
  workspacesDir: string;
  /** AO's poll interval in real milliseconds (the scenario's interval ÷ time scale). */
  intervalMs: number;
  /** AO project id → `owner/name`. */
  projects: Record<string, string>;
  /**
   * `agents: real` (docs/agent-orchestrator.md#real-agents-agents-real): the environment of every session
   * spawned so far by `projectId#issue` (a restarted process needs them when AO starts an agent
   * again), added to what AO gives its tmux runtime.
   */
  realAgents?: { sessionEnv: Record<string, Record<string, string>> };
}

export type AoRequest =
  | {
      id: number;
      type: 'spawn';
      projectId: string;
      issue: number;
      branch: string;
      session: string;
      /** With real agents: what AO's runtime adds to this session's environment. */
      env?: Record<string, string>;
    }
  | { id: number; type: 'restart-lifecycle' }
  | { id: number; type: 'stop' };

export type AoChildMessage =
  | { type: 'ready'; versions: Record<string, string> }
  | { type: 'reply'; id: number; ok: true; aoSession?: string }
  | { type: 'reply'; id: number; ok: false; message: string }
  /** A poll cycle began (AO listed its sessions) or ended (AO logged `lifecycle.poll`). */
  | { type: 'cycle-start'; project: string; cycle: number }
  | {
      type: 'cycle-end';
      project: string;
      cycle: number;
      durationMs: number;
      ok: boolean;
      sessions?: number;
      reason?: string;
    }
  /** A tick of AO's setInterval found the previous cycle still running (its re-entrancy guard). */
  | { type: 'tick-skipped'; project: string; cycle: number }
  /** AO moved a session between its statuses (`lifecycle.transition`). */
  | { type: 'transition'; session: string; from: string; to: string }
  /** AO sent text to a session's agent (a reaction): the stand-in runtime got it. */
  | { type: 'agent-message'; session: string; message: string }
  | { type: 'fatal'; message: string; stack?: string };

/** A request before the target numbers it. */
export type AoRequestBody = AoRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;
