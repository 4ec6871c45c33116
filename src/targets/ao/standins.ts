/**
 * fleetbench's stand-ins for the plugin slots of agent-orchestrator that start real things:
 * the runtime (tmux), the agent (a coding agent) and the workspace (a git worktree). AO's own
 * code runs as it is around them: its session manager spawns through them, its lifecycle loop
 * asks them whether the agent is alive and active, its reactions send text to the agent through
 * the runtime. What the scenario's agents do on GitHub (open the PR, push, answer reviews) is
 * done by the run's world through the emulator, as for every other target; the stand-ins only
 * report what AO asked of them (docs/agent-orchestrator.md).
 *
 * The shapes follow AO 0.2.0's plugin interfaces (`Runtime`, `Agent`, `Workspace` in
 * @composio/ao-core's types), written here structurally: the package is loaded at run time
 * from wherever the user points, so its types are not imported.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { makeDirectories } from '../../base/safe-write.ts';

export const STANDIN_RUNTIME = 'fleetbench';
export const STANDIN_AGENT = 'fleetbench-agent';
export const STANDIN_WORKSPACE = 'fleetbench';

interface RuntimeHandle {
  id: string;
  runtimeName: string;
  data: Record<string, unknown>;
}

export interface PluginModule {
  manifest: { name: string; slot: string; description: string; version: string };
  create(config?: unknown): unknown;
}

/** AO sent `message` to the agent of AO session `aoSession` (a reaction). */
export type AgentMessageListener = (aoSession: string, message: string) => void;

export function standinPlugins(workspacesDir: string, onMessage: AgentMessageListener): PluginModule[] {
  // Messages received per runtime handle: the runtime's "terminal output" changes with each one,
  // which is what AO's send() waits for to confirm delivery.
  const received = new Map<string, number>();
  const alive = new Set<string>();
  const runtime = {
    name: STANDIN_RUNTIME,
    async create(config: { sessionId: string; environment: Record<string, string> }): Promise<RuntimeHandle> {
      alive.add(config.sessionId);
      return {
        id: config.sessionId,
        runtimeName: STANDIN_RUNTIME,
        data: { aoSession: config.environment.AO_SESSION ?? config.sessionId },
      };
    },
    async destroy(handle: RuntimeHandle): Promise<void> {
      alive.delete(handle.id);
    },
    async sendMessage(handle: RuntimeHandle, message: string): Promise<void> {
      received.set(handle.id, (received.get(handle.id) ?? 0) + 1);
      onMessage(String(handle.data?.aoSession ?? handle.id), message);
    },
    async getOutput(handle: RuntimeHandle): Promise<string> {
      return `fleetbench stand-in agent: ${received.get(handle.id) ?? 0} message(s) received\n> `;
    },
    // A restarted AO finds runtimes of an earlier process: the stand-in agents live as long as
    // the run, like tmux sessions outlive a restarted orchestrator.
    async isAlive(): Promise<boolean> {
      return true;
    },
  };
  const agent = {
    name: STANDIN_AGENT,
    processName: STANDIN_AGENT,
    promptDelivery: 'inline' as const,
    getLaunchCommand(): string {
      return 'true';
    },
    getEnvironment(): Record<string, string> {
      return {};
    },
    detectActivity(): string {
      return 'active';
    },
    async getActivityState(): Promise<{ state: string; timestamp: Date }> {
      return { state: 'active', timestamp: new Date() };
    },
    async isProcessRunning(): Promise<boolean> {
      return true;
    },
    async getSessionInfo(): Promise<null> {
      return null;
    },
  };
  const workspace = {
    name: STANDIN_WORKSPACE,
    async create(config: { projectId: string; sessionId: string; branch: string }) {
      const path = join(workspacesDir, config.projectId, config.sessionId);
      makeDirectories(path);
      return { path, branch: config.branch, sessionId: config.sessionId, projectId: config.projectId };
    },
    async destroy(path: string): Promise<void> {
      rmSync(path, { recursive: true, force: true });
    },
    async list(): Promise<never[]> {
      return [];
    },
    async exists(): Promise<boolean> {
      return true;
    },
  };
  const module = (slot: string, name: string, instance: unknown): PluginModule => ({
    manifest: { name, slot, description: `fleetbench stand-in ${slot}`, version: '0.0.0' },
    create: () => instance,
  });
  return [
    module('runtime', STANDIN_RUNTIME, runtime),
    module('agent', STANDIN_AGENT, agent),
    module('workspace', STANDIN_WORKSPACE, workspace),
  ];
}
