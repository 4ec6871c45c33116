/**
 * The child side of `agents: real` (docs/agent-orchestrator.md#real-agents-agents-real): AO's own tmux
 * runtime, Claude Code agent and git worktree workspace plugins, loaded from their packages and
 * registered as they are.
 * The one thing fleetbench adds is to the runtime's `create`: the session's own environment (its
 * provider key and GitHub token, agents.ts), merged into what AO passes, since AO has no setting
 * for per-session variables. Its `sendMessage` is also reported to the run (an `ao.agent.message`
 * event, as with the stand-in) before AO's tmux types the message into the agent's terminal.
 */
import { pathToFileURL } from 'node:url';
import type { AgentMessageListener, PluginModule } from './standins.ts';

// biome-ignore lint/suspicious/noExplicitAny: AO's plugin objects are loaded at run time
type Any = any;

/** The extra environment of AO session `aoSession`, spawned for `issue` of `projectId` (undefined: none). */
export type SessionEnvironment = (
  aoSession: string,
  projectId: string,
  issue: string,
) => Record<string, string> | undefined;

/** How a spawn's environment is keyed: AO passes the project and the issue to the runtime. */
export function sessionEnvKey(projectId: string, issue: string | number): string {
  return `${projectId}#${issue}`;
}

export async function realAgentPlugins(
  entries: { runtime: string; agent: string; workspace: string },
  envOf: SessionEnvironment,
  onMessage: AgentMessageListener,
): Promise<PluginModule[]> {
  const tmux: Any = await import(pathToFileURL(entries.runtime).href);
  const claude: Any = await import(pathToFileURL(entries.agent).href);
  const worktree: Any = await import(pathToFileURL(entries.workspace).href);
  const tmuxModule: PluginModule = tmux.default ?? tmux;
  const runtime: PluginModule = {
    manifest: tmuxModule.manifest,
    create(config?: unknown) {
      const inner: Any = tmuxModule.create(config);
      return {
        ...inner,
        create(runtimeConfig: Any) {
          const env = runtimeConfig.environment ?? {};
          return inner.create({
            ...runtimeConfig,
            environment: {
              ...env,
              ...envOf(String(env.AO_SESSION), String(env.AO_PROJECT_ID), String(env.AO_ISSUE_ID)),
            },
          });
        },
        sendMessage(handle: Any, message: string) {
          onMessage(aoSessionOf(handle), message);
          return inner.sendMessage(handle, message);
        },
      };
    },
  };
  return [runtime, claude.default ?? claude, worktree.default ?? worktree];
}

/**
 * AO names a tmux session `<hash>-<AO session id>` (or the id alone): the AO session is the
 * suffix after the hash, which AO writes as 12 hex digits.
 */
function aoSessionOf(handle: { id?: unknown }): string {
  const id = String(handle?.id ?? '');
  return /^[0-9a-f]{12}-(.+)$/.exec(id)?.[1] ?? id;
}
