/**
 * `agents: real` on the ao target (docs/agent-orchestrator.md#real-agents-agents-real): AO's own tmux runtime
 * and Claude Code agent plugins start the real Claude Code (fleetbench's pinned install) in a
 * terminal, as AO does for its users; the model behind it is a provider emulator this run
 * serves on 127.0.0.1, whose agent script makes the agent run `gh` against the run's GitHub
 * emulator. What fleetbench writes, and why each piece is needed:
 *
 * - Claude Code's configuration, in AO's home (AO's plugin reads the agent's session files under
 *   `~/.claude/projects`): first-run onboarding done and each project's clone trusted, which
 *   covers its worktrees (the interactive CLI otherwise stops at a dialog, and its onboarding
 *   checks api.anthropic.com), Bash allowed
 *   in its settings (as root, AO's default `--dangerously-skip-permissions` is refused by Claude
 *   Code, so AO is configured with `permissions: default` and the permission comes from there);
 * - a tmux server of the run's own (TMUX_TMPDIR) whose shells are not login shells: a login
 *   shell's /etc/profile resets PATH, and AO's launch command is a bare `claude`;
 * - per session: a provider key (its model requests are the session's) and a GitHub token minted
 *   for the session with source `agent` (its `gh` calls are the session's, as source agent),
 *   added to the environment AO gives the runtime (child side: real-agent-plugins.ts);
 * - per project, a git remote (a bare repository on disk) and AO's clone of it, from which AO's
 *   worktree plugin makes each session's workspace: the emulator serves GitHub's API, not git,
 *   so an agent's `git push` lands in that remote, whose post-receive hook tells the run, which
 *   pushes the new head through the world (new head commit on the PR, CI runs again).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, symlinkSync, unwatchFile, watchFile, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_PACKAGES, type AgentBinary, claudeEnv, resolveAgentsInstall } from '../../agents/index.ts';
import { FleetbenchError } from '../../base/errors.ts';
import type { Rng } from '../../base/rng.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import type { Clock } from '../../clock/clock.ts';
import type { GitHubEmulator } from '../../github/emulator.ts';
import type { ScriptsFile } from '../../provider/index.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { ProviderSettings, Scenario } from '../../workload/scenario.ts';
import { RunProvider } from '../run-provider.ts';

/**
 * Real agents one run starts at most: each is an interactive Claude Code of about 280 MB (measured
 * in AO's tmux, docs/agent-orchestrator.md#real-agents-agents-real), so 40 take about 11 GB of this machine's
 * memory beside AO's own gh processes.
 */
export const MAX_REAL_AGENTS = 40;

/** Sessions a scenario's executors start in all (those the ao target runs: fixed, batch, arrival). */
export function plannedSessions(scenario: Scenario): number {
  let total = 0;
  for (const executor of scenario.executors)
    if (executor.type === 'fixed' || executor.type === 'batch-spawn') total += executor.count;
    else if (executor.type === 'arrival-rate') total += executor.maxSessions;
  return total;
}

/** The scripted model of an AO worker: the scenario's default script (`coding`) means this one. */
export const AO_AGENT_SCRIPT = 'ao-agent';

/**
 * Unanswered top-level review comments of the PR: ids of comments that are not replies and have
 * no reply (gh's built-in jq).
 */
const UNANSWERED =
  '[.[] | select(.in_reply_to_id) | .in_reply_to_id] as $done | .[] | select(.in_reply_to_id == null and ([.id] | inside($done) | not)) | .id';

/**
 * What an AO worker's model says, turn by turn. Turn 1 answers AO's spawn prompt (read the
 * issue); every later turn answers one of AO's reactions (CI failed, review comments, …): look at
 * the PR, its checks and its review comments, and when some are unanswered commit, push and reply
 * to each. The commands read the PR from the workspace (a git checkout of the session's branch,
 * GH_REPO set), as an agent in AO's worktree would. The PR itself is opened by the run's world on
 * the scenario's schedule, as for every target (docs/agent-orchestrator.md#real-agents-agents-real).
 */
export function aoAgentScript(): ScriptsFile['scripts'][string] {
  const reaction = {
    text: 'Looking at the pull request.',
    commands: [
      'gh pr view --json number,state,reviewDecision,headRefOid',
      'gh pr checks',
      `gh api "repos/{owner}/{repo}/pulls/$(gh pr view --json number -q .number)/comments" --jq '${UNANSWERED}' | tee .fleetbench-unanswered`,
      [
        'if [ -s .fleetbench-unanswered ]; then',
        'git commit -q --allow-empty -m "Address the review comments" && git push -q origin HEAD &&',
        'n=$(gh pr view --json number -q .number) &&',
        'for id in $(cat .fleetbench-unanswered); do',
        'gh api -X POST "repos/{owner}/{repo}/pulls/$n/comments" -f body="Addressed." -F in_reply_to="$id" --silent;',
        'done; echo "replied to $(wc -w < .fleetbench-unanswered) comment(s)";',
        'else echo "no unanswered review comments"; fi',
      ].join(' '),
    ],
    final: 'I looked at the pull request; review comments, if any, are addressed and answered.',
  };
  return {
    turns: [
      {
        text: 'Reading the issue.',
        commands: ['gh issue view "$AO_ISSUE_ID"'],
        final: 'I read the issue and am working on it on this branch.',
      },
      // A script cycles when a conversation is longer: one spawn turn, then reactions.
      ...Array.from({ length: 99 }, () => reaction),
    ],
  };
}

/** The line of a post-receive hook: `<ref> <new sha>` per pushed ref, appended to `log`. */
function postReceiveHook(log: string): string {
  return `#!/bin/sh\n# Written by fleetbench: tells the run which branches an agent pushed.\nwhile read old new ref; do printf '%s %s\\n' "$ref" "$new" >> '${log}'; done\n`;
}

/** A system tool the real agents need, or a refusal naming its Debian package. */
function requireTool(command: string, args: string[], debianPackage: string, why: string): void {
  const probe = spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 });
  if (probe.status !== 0)
    throw new FleetbenchError(
      'E_TARGET',
      `agents: real on the ao target needs ${command} (${why}), and it is not on PATH`,
      {
        hint: `install it (Debian: apt-get install ${debianPackage})`,
      },
    );
}

/** Every process below `roots` (the panes' shells), from one `ps`: the agents and what they run. */
function processTree(roots: number[]): number[] {
  const out = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8', timeout: 10_000 }).stdout ?? '';
  const children = new Map<number, number[]>();
  for (const line of out.split('\n')) {
    const [pid, ppid] = line.trim().split(/\s+/).map(Number);
    if (pid && ppid !== undefined) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const tree: number[] = [];
  const queue = [...roots];
  while (queue.length > 0 && tree.length < 100_000) {
    const pid = queue.shift() as number;
    tree.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return tree;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Ends the run's tmux server and waits for its agents to be gone (a hung-up Claude Code still
 * writes its session files on the way out): up to 10 s, then SIGKILL for what is left.
 */
async function endTmuxServer(work: string): Promise<void> {
  const env = { ...process.env, TMUX_TMPDIR: work };
  const panes = spawnSync('tmux', ['list-panes', '-a', '-F', '#{pane_pid}'], {
    encoding: 'utf8',
    timeout: 10_000,
    env,
  });
  const roots = (panes.stdout ?? '')
    .split('\n')
    .map(Number)
    .filter((pid) => pid > 0);
  const tree = roots.length > 0 ? processTree(roots) : [];
  spawnSync('tmux', ['kill-server'], { stdio: 'ignore', timeout: 10_000, env });
  const deadline = performance.now() + 10_000;
  while (tree.some(alive) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  for (const pid of tree.filter(alive)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone in between.
    }
  }
}

export interface AoAgentPaths {
  /** AO's home (HOME of the AO process, the tmux server and the agents). */
  home: string;
  /** The run's work directory: bin/, remotes/, the tmux socket. */
  work: string;
  /** Each AO project's path, where its clone is made (AO's worktrees are taken from it). */
  projects: Record<string, string>;
}

export class AoRealAgents {
  readonly claude: AgentBinary;
  private readonly provider: RunProvider;
  private paths?: AoAgentPaths;
  private pushLogRead = 0;
  private readonly script: string;

  constructor(
    private readonly settings: ProviderSettings,
    scenario: Scenario,
  ) {
    const sessions = plannedSessions(scenario);
    if (sessions > MAX_REAL_AGENTS)
      throw new FleetbenchError(
        'E_SCENARIO',
        `agents: real on the ao target: the scenario starts ${sessions} sessions, at most ${MAX_REAL_AGENTS} (each is an interactive Claude Code of about 280 MB: docs/limits.md)`,
        {
          hint: 'run fewer sessions with real agents, or the stand-in agents (agents: standin) at this scale',
        },
      );
    requireTool('tmux', ['-V'], 'tmux', "AO's runtime for an interactive agent is a tmux session");
    requireTool('git', ['--version'], 'git', "each agent's workspace is a git checkout of its branch");
    this.claude = resolveAgentsInstall(undefined, ['claude']).clis.claude as AgentBinary;
    this.provider = new RunProvider(settings, AO_AGENT_SCRIPT, { [AO_AGENT_SCRIPT]: aoAgentScript() });
    this.script = this.provider.script;
  }

  describe(): string {
    return `agents: real (AO's claude-code plugin in tmux, Claude Code ${this.claude.version}), against a provider emulator (latency ${this.settings.latency}, script ${this.script})`;
  }

  /**
   * Writes each project's remote and clone, Claude Code's configuration, the tmux configuration
   * and the `claude` on PATH; returns what the AO process's environment gains (the tmux server,
   * and so every agent, inherits it).
   */
  prepare(paths: AoAgentPaths): Record<string, string> {
    this.paths = paths;
    writeFileSync(join(paths.work, 'pushes.log'), '');
    for (const [id, path] of Object.entries(paths.projects)) this.cloneProject(id, path);
    const configDir = join(paths.home, '.claude');
    makeDirectories(configDir, 0o700);
    writeFileSync(
      join(configDir, '.claude.json'),
      `${JSON.stringify(
        {
          hasCompletedOnboarding: true,
          theme: 'dark',
          // A clone's trust covers its worktrees: every workspace AO makes.
          projects: Object.fromEntries(
            Object.values(paths.projects).map((path) => [path, { hasTrustDialogAccepted: true }]),
          ),
        },
        null,
        2,
      )}\n`,
    );
    writeFileSync(
      join(configDir, 'settings.json'),
      `${JSON.stringify({ permissions: { allow: ['Bash'] } }, null, 2)}\n`,
    );
    writeFileSync(
      join(paths.home, '.tmux.conf'),
      [
        '# Written by fleetbench: not a login shell (its /etc/profile would reset PATH).',
        'set -g default-command "exec bash --noprofile --norc"',
        'set -g focus-events on',
        'set -g history-limit 5000',
        '',
      ].join('\n'),
    );
    const bin = join(paths.work, 'bin');
    makeDirectories(bin);
    // A link named `claude`: AO's launch command is `claude …`, and AO finds the agent's process
    // by that name on the pane's terminal (ps) and as the pane's foreground command.
    symlinkSync(this.claude.path, join(bin, 'claude'));
    return {
      PATH: `${bin}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'}`,
      TMUX_TMPDIR: paths.work,
      GIT_TERMINAL_PROMPT: '0',
    };
  }

  /**
   * A project's remote (a bare repository whose pushes are logged for the run) and AO's clone of
   * it at `path`, with one commit on `main`, the base AO's worktrees branch from.
   */
  private cloneProject(projectId: string, path: string): void {
    const work = this.paths!.work;
    const remote = join(work, 'remotes', `${projectId}.git`);
    const git = (...args: string[]) => execFileSync('git', args, { stdio: 'ignore', timeout: 30_000 });
    git('init', '-q', '--bare', '-b', 'main', remote);
    git('clone', '-q', remote, path);
    git('-C', path, 'config', 'user.name', 'fleetbench agent');
    git('-C', path, 'config', 'user.email', 'agent@fleetbench.invalid');
    git('-C', path, 'commit', '-q', '--allow-empty', '-m', 'fleetbench: the base of every session branch');
    git('-C', path, 'push', '-q', 'origin', 'HEAD:main');
    // Installed after the first push: only the agents' pushes are logged.
    const hook = join(remote, 'hooks', 'post-receive');
    writeFileSync(hook, postReceiveHook(join(work, 'pushes.log')));
    chmodSync(hook, 0o755);
  }

  /** Serves the provider emulator on 127.0.0.1 for the run. */
  start(clock: Clock, rng: Rng, trace: TraceSink): Promise<void> {
    return this.provider.start(clock, rng, trace, { claude: this.claude.version });
  }

  /**
   * What AO's runtime adds to one session's environment: Claude Code pointed at the emulator with
   * a key of the session's own, and `gh` with a token of the session's own (source agent) on the
   * session's repository. The key goes in ANTHROPIC_AUTH_TOKEN: the interactive CLI asks the user
   * to approve an ANTHROPIC_API_KEY it has not seen, and does not ask about a bearer token.
   */
  sessionEnv(session: string, repo: string, github: GitHubEmulator): Record<string, string> {
    const home = this.paths?.home;
    if (!home) throw new Error('start() first');
    const key = this.provider.mintKey(session);
    const { ANTHROPIC_API_KEY: _unused, ...env } = claudeEnv(
      { url: this.provider.url, key, model: AGENT_PACKAGES.claude.model },
      join(home, '.claude'),
    );
    return {
      ...env,
      ANTHROPIC_AUTH_TOKEN: key,
      NO_PROXY: '127.0.0.1,localhost',
      GH_ENTERPRISE_TOKEN: github.mintToken({ session, source: 'agent' }).token,
      GH_REPO: repo,
    };
  }

  /** Calls `onPush(branch)` for each branch an agent pushes (the remotes' post-receive hook). */
  watchPushes(onPush: (branch: string) => void): void {
    const work = this.paths?.work;
    if (!work) return;
    const log = join(work, 'pushes.log');
    watchFile(log, { interval: 250 }, () => {
      const text = readFileSync(log, 'utf8');
      const fresh = text.slice(this.pushLogRead);
      const complete = fresh.slice(0, fresh.lastIndexOf('\n') + 1);
      this.pushLogRead += complete.length;
      for (const line of complete.split('\n')) {
        const ref = line.split(' ')[0];
        if (ref?.startsWith('refs/heads/')) onPush(ref.slice('refs/heads/'.length));
      }
    });
  }

  /** The run's tmux server, whose panes are the agents (it leaves AO's process tree), once it runs. */
  tmuxServerPid(): number | undefined {
    if (!this.paths) return undefined;
    const out = spawnSync('tmux', ['display-message', '-p', '#{pid}'], {
      encoding: 'utf8',
      timeout: 5_000,
      env: { ...process.env, TMUX_TMPDIR: this.paths.work },
    });
    const pid = Number((out.stdout ?? '').trim());
    return out.status === 0 && Number.isInteger(pid) && pid > 0 ? pid : undefined;
  }

  /**
   * Ends every agent (the run's tmux server), stops the emulator and writes what it saw. The
   * agents outlive a restarted AO, as tmux sessions outlive an orchestrator; not the run.
   */
  async stop(trace: TraceSink, now: number): Promise<void> {
    const work = this.paths?.work;
    if (work) {
      unwatchFile(join(work, 'pushes.log'));
      await endTmuxServer(work);
    }
    await this.provider.stop(trace, now, { claude: this.claude.version });
  }
}
