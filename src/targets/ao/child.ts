/**
 * The child process of the `ao` target: agent-orchestrator's own code (config loader, plugin
 * registry, session manager, one lifecycle manager per project with its real `start(interval)`
 * loop, the real scm-github and tracker-github plugins calling the real `gh`), with fleetbench's
 * stand-ins in the runtime, agent and workspace slots, or, with `agents: real`, AO's own tmux
 * runtime, Claude Code agent and worktree workspace plugins (real-agent-plugins.ts). It is a
 * process of its own so that AO's `gh` subprocesses, its files and a crash are AO's, not the
 * run's, and so that a restart of the control plane is a real one (a new process that reads AO's
 * metadata back from disk).
 *
 * What AO's loop does is read from AO itself, not guessed:
 * - a cycle starts when the lifecycle manager lists its sessions (the first thing `pollAll` does
 *   once past its re-entrancy guard), and ends when AO logs `lifecycle.poll` (its structured
 *   logs, AO_LOG_LEVEL=info, on stderr);
 * - a tick that finds the previous cycle still running is skipped by AO: a timer of the same
 *   period, started right after AO's, sees that no cycle began since its last tick;
 * - status changes are AO's `lifecycle.transition` log entries.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { makeDirectories } from '../../base/safe-write.ts';
import type { AoChildConfig, AoChildMessage, AoRequest } from './protocol.ts';
import { realAgentPlugins, sessionEnvKey } from './real-agent-plugins.ts';
import { type AgentMessageListener, standinPlugins } from './standins.ts';

// biome-ignore lint/suspicious/noExplicitAny: AO's API is loaded at run time from the user's choice of install
type Any = any;

const send = (message: AoChildMessage) => {
  // The parent may be gone (its channel closed): `disconnect` ends this process; a failed send
  // must not throw first.
  if (process.connected) process.send?.(message, undefined, undefined, () => undefined);
};

// Ctrl-C in a terminal signals the whole process group: this process leaves when fleetbench asks
// (`stop`, after the run's last poll) or when fleetbench is gone (`disconnect`), never in the
// middle of fleetbench's own shutdown, which would find its channel closed under a request.
process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => undefined);

const configPath = process.env.FLEETBENCH_AO_CONFIG;
if (!configPath) {
  send({ type: 'fatal', message: 'FLEETBENCH_AO_CONFIG is not set' });
  process.exit(2);
}
const config = JSON.parse(readFileSync(configPath, 'utf8')) as AoChildConfig;

/** Per project: the running lifecycle manager, its tick watcher, and the cycle under way. */
interface Loop {
  projectId: string;
  manager: Any;
  watcher: NodeJS.Timeout;
  cycle: number | undefined;
  startedSinceTick: boolean;
}

const aoToFleet = new Map<string, string>();
/** `projectId#issue` → fleetbench session, for spawns under way. */
const fleetOfSpawn = new Map<string, string>();
const loops = new Map<string, Loop>();
let nextCycle = 1;

// AO's structured log lines are JSON objects, one per write. They still go to stderr (the
// target keeps them in ao.log beside the trace).
const writeStderr = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
  const text = typeof chunk === 'string' ? chunk : Buffer.isBuffer(chunk) ? chunk.toString('utf8') : '';
  if (text.startsWith('{')) {
    for (const line of text.split('\n')) if (line.startsWith('{')) onAoLog(line);
  }
  return (writeStderr as (...args: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stderr.write;

function onAoLog(line: string): void {
  let entry: Any;
  try {
    entry = JSON.parse(line);
  } catch {
    return;
  }
  if (entry.operation === 'lifecycle.poll' && typeof entry.projectId === 'string') {
    const loop = loops.get(entry.projectId);
    if (loop?.cycle === undefined) return;
    send({
      type: 'cycle-end',
      project: loop.projectId,
      cycle: loop.cycle,
      durationMs: typeof entry.durationMs === 'number' ? entry.durationMs : 0,
      ok: entry.outcome === 'success',
      ...(typeof entry.data?.activeSessionCount === 'number'
        ? { sessions: entry.data.activeSessionCount }
        : {}),
      ...(entry.reason ? { reason: String(entry.reason) } : {}),
    });
    loop.cycle = undefined;
  } else if (entry.operation === 'lifecycle.transition' && typeof entry.sessionId === 'string') {
    const session = aoToFleet.get(entry.sessionId) ?? entry.sessionId;
    send({
      type: 'transition',
      session,
      from: String(entry.data?.oldStatus ?? ''),
      to: String(entry.data?.newStatus ?? ''),
    });
  }
}

async function main(): Promise<void> {
  const core: Any = await import(pathToFileURL(config.packages.core).href);
  const scm: Any = await import(pathToFileURL(config.packages.scm).href);
  const tracker: Any = await import(pathToFileURL(config.packages.tracker).href);
  const aoConfig = core.loadConfig(config.configPath);
  for (const project of Object.values(aoConfig.projects) as Any[]) makeDirectories(project.path);
  const registry = core.createPluginRegistry();
  registry.register(scm.default ?? scm);
  registry.register(tracker.default ?? tracker);
  const onMessage: AgentMessageListener = (aoSession, message) => {
    send({ type: 'agent-message', session: aoToFleet.get(aoSession) ?? aoSession, message });
  };
  const real = config.realAgents;
  const { runtime, agent, workspace } = config.packages;
  const plugins =
    real && runtime && agent && workspace
      ? await realAgentPlugins(
          { runtime, agent, workspace },
          (aoSession, projectId, issue) => {
            // The spawn's first message (AO's prompt) is sent before spawn returns: name its session now.
            const key = sessionEnvKey(projectId, issue);
            const fleet = fleetOfSpawn.get(key);
            if (fleet) aoToFleet.set(aoSession, fleet);
            return real.sessionEnv[key];
          },
          onMessage,
        )
      : standinPlugins(config.workspacesDir, onMessage);
  for (const plugin of plugins) registry.register(plugin);
  const sessionManager = core.createSessionManager({ config: aoConfig, registry });
  // A restarted process finds its sessions on disk: learn their fleetbench ids from the branch.
  for (const session of (await sessionManager.list()) as Any[]) {
    const fleet = fleetIdOfBranch(session.branch);
    if (fleet) aoToFleet.set(session.id, fleet);
  }

  const startLoops = () => {
    for (const projectId of Object.keys(config.projects)) {
      const loop: Loop = {
        projectId,
        manager: undefined,
        watcher: undefined as Any,
        cycle: undefined,
        startedSinceTick: false,
      };
      // The lifecycle manager's only view of the sessions: wrapping list() marks a cycle's start.
      const watched = {
        ...sessionManager,
        list: (scope?: string) => {
          loop.cycle = nextCycle++;
          loop.startedSinceTick = true;
          send({ type: 'cycle-start', project: projectId, cycle: loop.cycle });
          return sessionManager.list(scope);
        },
      };
      loop.manager = core.createLifecycleManager({
        config: aoConfig,
        registry,
        sessionManager: watched,
        projectId,
      });
      loops.set(projectId, loop);
      loop.manager.start(config.intervalMs);
      loop.watcher = setInterval(() => {
        if (!loop.startedSinceTick && loop.cycle !== undefined)
          send({ type: 'tick-skipped', project: projectId, cycle: loop.cycle });
        loop.startedSinceTick = false;
      }, config.intervalMs);
    }
  };
  const stopLoops = () => {
    for (const loop of loops.values()) {
      loop.manager.stop();
      clearInterval(loop.watcher);
    }
    loops.clear();
  };

  process.on('message', (request: AoRequest) => {
    void (async () => {
      try {
        if (request.type === 'spawn') {
          const key = sessionEnvKey(request.projectId, request.issue);
          fleetOfSpawn.set(key, request.session);
          if (request.env && real) real.sessionEnv[key] = request.env;
          const session = await sessionManager.spawn({
            projectId: request.projectId,
            issueId: String(request.issue),
            branch: request.branch,
          });
          aoToFleet.set(session.id, request.session);
          send({ type: 'reply', id: request.id, ok: true, aoSession: session.id });
        } else if (request.type === 'restart-lifecycle') {
          stopLoops();
          startLoops();
          send({ type: 'reply', id: request.id, ok: true });
        } else if (request.type === 'stop') {
          stopLoops();
          send({ type: 'reply', id: request.id, ok: true });
          // Let the reply leave before the channel closes.
          setTimeout(() => process.exit(0), 20);
        }
      } catch (error) {
        send({
          type: 'reply',
          id: request.id,
          ok: false,
          message: (error as Error)?.message ?? String(error),
        });
      }
    })();
  });
  process.on('disconnect', () => process.exit(0));

  startLoops();
  send({
    type: 'ready',
    versions: Object.fromEntries(
      Object.entries(config.packages).map(([key, entry]) => [key, packageVersion(entry)]),
    ),
  });
}

/** Sessions are spawned on `fleet/<id>` branches (the run's world opens their PRs there). */
function fleetIdOfBranch(branch: unknown): string | undefined {
  return typeof branch === 'string' && branch.startsWith('fleet/') ? branch.slice(6) : undefined;
}

function packageVersion(entry: string): string {
  // dist/index.js → package.json two levels up.
  try {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', pathToFileURL(entry)), 'utf8'));
    return String(pkg.version);
  } catch {
    return 'unknown';
  }
}

main().catch((error: unknown) => {
  send({
    type: 'fatal',
    message: (error as Error)?.message ?? String(error),
    stack: (error as Error)?.stack,
  });
  setTimeout(() => process.exit(1), 20);
});
process.on('uncaughtException', (error) => {
  send({ type: 'fatal', message: error.message, stack: error.stack });
  setTimeout(() => process.exit(1), 20);
});
