/**
 * The `ao` target: agent-orchestrator's real code as the system under test (docs/agent-orchestrator.md).
 *
 * The run's GitHub emulator is served over TLS on loopback (HTTP/1.1 or h2, as `github serve
 * --tls`), with web URLs on https://github.com as AO expects; a child process (child.ts) runs
 * AO's session manager and one lifecycle manager per project (one project per repository of
 * the topology) with fleetbench's stand-in runtime, agent and workspace, and AO's own
 * scm-github and tracker-github plugins, which shell out to the real `gh` pointed at the
 * emulator (GH_HOST, GH_ENTERPRISE_TOKEN, SSL_CERT_FILE, a private GH_CONFIG_DIR, HOME and TMPDIR).
 *
 * `gh` sends no attribution headers, so every session is registered with the emulator by
 * branch and issue (content attribution) and each project's poll cycle is announced while it
 * runs: api records carry the session, the cycle and the source (`lifecycle` inside a cycle,
 * `cli` for AO's spawn path) without AO knowing. AO runs on the real clock only.
 *
 * With `agents: real` (agents.ts) AO's own tmux runtime, claude-code agent and worktree
 * workspace plugins start the real Claude Code against a provider emulator of the run's own;
 * each agent's `gh` uses a token minted for its session (source `agent`), and its `git push`
 * reaches the PR through the world.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { sample } from '../../base/distribution.ts';
import { ExitCode, FleetbenchError } from '../../base/errors.ts';
import type { ProcessCpu } from '../../base/process-cpu.ts';
import type { Rng } from '../../base/rng.ts';
import type { Clock } from '../../clock/clock.ts';
import type {
  RestartKind,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
} from '../../contract/types.ts';
import type { GitHubEmulator } from '../../github/emulator.ts';
import { type RunningGitHubServer, startGitHubServer } from '../../github/http.ts';
import { generateSelfSignedCert } from '../../github/tls.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { GitHubSide } from '../../workload/github-side.ts';
import type { Scenario } from '../../workload/scenario.ts';
import type { World } from '../../workload/world.ts';
import { countSessionStates } from '../session-counts.ts';
import { AoRealAgents } from './agents.ts';
import { detectGh, type GhInfo, ghNote } from './gh.ts';
import { type AoPackages, resolveAoPackages } from './packages.ts';
import type { AoChildConfig, AoChildMessage, AoRequest, AoRequestBody } from './protocol.ts';
import { sessionEnvKey } from './real-agent-plugins.ts';
import { STANDIN_AGENT, STANDIN_RUNTIME, STANDIN_WORKSPACE } from './standins.ts';

const WORKER = fileURLToPath(new URL('../../../bin/ao-worker.js', import.meta.url));
/** The web origin AO 0.2.0 parses PR URLs against (`github.com/owner/repo/pull/N`). */
export const AO_WEB_URL = 'https://github.com';
const READY_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 120_000;

/** AO's session statuses, as the workload engine's states. */
export function stateOfAoStatus(status: string): SessionState | undefined {
  switch (status) {
    case 'spawning':
      return 'spawning';
    case 'working':
    case 'stuck':
    case 'needs_input':
      return 'working';
    case 'pr_open':
    case 'ci_failed':
    case 'review_pending':
      return 'pr_open';
    case 'changes_requested':
    case 'approved':
    case 'mergeable':
      return 'review';
    case 'merged':
      return 'merged';
    case 'killed':
    case 'done':
    case 'terminated':
    case 'errored':
    case 'cleanup':
      return 'closed';
    default:
      return undefined;
  }
}

/**
 * The machine's load when AO starts and stops: each gh is a process queued on the cores, so AO's
 * cycle durations depend on what else the machine runs (docs/calibration.md). Kept in the trace
 * so that a model learned from it says the load its cycle times were measured at (docs/model.md).
 */
export function machineLoad(): { loadavg: number[]; cpus: number } {
  return { loadavg: loadavg().map((l) => Math.round(l * 100) / 100), cpus: availableParallelism() };
}

/** A review-comment reaction (AO's `changes-requested` and `bugbot-comments` messages). */
function isReviewMessage(message: string): boolean {
  return /review comments/i.test(message);
}

export interface AoTargetOptions {
  scenario: Scenario;
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  github: GitHubSide;
  world: World;
  /** Where ao.log (AO's own stderr) goes: the run's directory. */
  outDir: string;
  /** `ao:DIR`: a local install or checkout instead of the pinned packages. */
  dir?: string;
  /** Where AO's process and its agents' tmux server are registered (src/base/process-cpu.ts). */
  processes?: ProcessCpu;
}

interface Project {
  id: string;
  repo: string;
  cycle?: { id: number; startedAt: number };
  /** Run time when this project's loop (re)started: its ticks are due every interval from here. */
  loopStartedAt: number;
}

export class AoTarget implements Target {
  readonly name = 'ao';
  private readonly emulator: GitHubEmulator;
  private readonly packages: AoPackages;
  private readonly gh: GhInfo;
  private server?: RunningGitHubServer;
  private workDir?: string;
  /** Written anew at each start of AO's process (a restarted one needs the sessions' environments). */
  private childConfig?: { path: string; config: AoChildConfig };
  /** `agents: real`: AO's own agent plugins start the real Claude Code (agents.ts). */
  private readonly agents: AoRealAgents | undefined;
  /** The agents' tmux server is registered with the run's ProcessCpu (it starts with the first spawn). */
  private tmuxRegistered = false;
  private readonly sessionOfBranch = new Map<string, string>();
  /** Sessions whose spawn returned: a message to an agent before that is AO's spawn prompt. */
  private readonly spawned = new Set<string>();
  private child?: ChildProcess;
  private childEnv: NodeJS.ProcessEnv = {};
  private readonly projects = new Map<string, Project>();
  private readonly projectOfRepo = new Map<string, Project>();
  private readonly states = new Map<string, SessionState>();
  private readonly listeners: SessionStateListener[] = [];
  private readonly pending = new Map<
    number,
    { resolve: (m: AoChildMessage) => void; reject: (e: Error) => void }
  >();
  private nextRequest = 1;
  private stopping = false;
  /** The process a restart is replacing: its exit is expected. */
  private expectedExit: ChildProcess | undefined;
  /** The children that said `ready`: one that exits before it is a start that failed, not a death during the run. */
  private readonly readyChildren = new WeakSet<ChildProcess>();
  /** ao.log is the run's own: the first start of a run empties it, a restart's output follows. */
  private logOpened = false;
  private readonly failureListeners: Array<(error: Error) => void> = [];
  private readonly fixRng: Rng;
  private readonly intervalMs: number;
  /**
   * Each AO process numbers its cycles from 1; a restarted one would reuse the ids of the cycles
   * before it, merging them in the polling floor. Its ids are offset by the highest one seen.
   */
  private cycleBase = 0;
  private highestCycle = 0;

  constructor(private readonly options: AoTargetOptions) {
    if (!options.github.emulator) throw new Error('the ao target needs the run’s emulator');
    this.emulator = options.github.emulator;
    this.fixRng = options.rng.fork('ao-agent-fix');
    this.intervalMs = options.scenario.polling.intervalMs;
    // Refused before anything starts: AO's packages and gh are found (or the run stops here).
    const real = options.scenario.agents?.kind === 'real' ? options.scenario.agents.provider : undefined;
    this.packages = resolveAoPackages(options.dir, { agents: real !== undefined });
    this.gh = detectGh();
    this.agents = real ? new AoRealAgents(real, options.scenario) : undefined;
  }

  /** What the run header shows: where AO came from, gh, and what the time scale does not scale. */
  describe(): string[] {
    const lines = [
      `agent-orchestrator ${this.packages.versions.core} (${this.packages.origin}), poll interval ${this.intervalMs / 1000} s`,
    ];
    lines.push(ghNote(this.gh));
    if (this.agents) lines.push(this.agents.describe());
    if (this.options.scenario.timeScale !== 1)
      lines.push(
        `time scale ${this.options.scenario.timeScale}: AO's interval and the scenario's timeline are shortened, gh's process and network time are not (they read ${this.options.scenario.timeScale}× longer in run time)`,
      );
    return lines;
  }

  async start(): Promise<void> {
    const work = mkdtempSync(join(tmpdir(), 'fleetbench-ao-'));
    this.workDir = work;
    for (const sub of ['home', 'gh-config', 'tmp', 'projects', 'workspaces'])
      mkdirSync(join(work, sub), { mode: 0o700 });
    const cert = generateSelfSignedCert(join(work, 'tls'));
    this.server = await startGitHubServer({ emulator: this.emulator, tls: cert });
    // API URLs stay on the emulator; web URLs are github.com's, which AO parses PR URLs against.
    this.emulator.state.setUrls(this.server.url, AO_WEB_URL);
    this.emulator.attribution.sources = { inCycle: 'lifecycle', outside: 'cli' };

    const aoProjects: Record<string, unknown> = {};
    this.options.github.repos.forEach(({ repo }, i) => {
      const id = `p${i + 1}-${repo.split('/')[1]!.replace(/[^a-zA-Z0-9_-]/g, '-')}`;
      const project: Project = { id, repo, loopStartedAt: 0 };
      this.projects.set(id, project);
      this.projectOfRepo.set(repo, project);
      aoProjects[id] = {
        repo,
        path: join(work, 'projects', id),
        defaultBranch: 'main',
        sessionPrefix: `fb${i + 1}`,
        scm: { plugin: 'github' },
        tracker: { plugin: 'github' },
        // As root, Claude Code refuses AO's default (permissionless: --dangerously-skip-permissions);
        // the agent's Bash is allowed in Claude Code's own settings instead (agents.ts).
        ...(this.agents ? { agentConfig: { permissions: 'default' } } : {}),
      };
    });
    const agentEnv = this.agents?.prepare({
      home: join(work, 'home'),
      work,
      projects: Object.fromEntries(
        Object.entries(aoProjects).map(([id, p]) => [id, (p as { path: string }).path]),
      ),
    });
    await this.agents?.start(this.options.clock, this.options.rng.fork('provider'), this.options.trace);
    this.agents?.watchPushes((branch) => this.onAgentPush(branch));
    const aoConfigPath = join(work, 'agent-orchestrator.yaml');
    writeFileSync(
      aoConfigPath,
      stringify({
        defaults: {
          runtime: this.agents ? 'tmux' : STANDIN_RUNTIME,
          agent: this.agents ? 'claude-code' : STANDIN_AGENT,
          workspace: this.agents ? 'worktree' : STANDIN_WORKSPACE,
          notifiers: [],
        },
        notificationRouting: {},
        projects: aoProjects,
      }),
    );
    const childConfig: AoChildConfig = {
      packages: this.packages.entries,
      configPath: aoConfigPath,
      workspacesDir: join(work, 'workspaces'),
      intervalMs: Math.max(1, Math.round(this.intervalMs / this.options.scenario.timeScale)),
      projects: Object.fromEntries([...this.projects.values()].map((p) => [p.id, p.repo])),
      ...(this.agents ? { realAgents: { sessionEnv: {} } } : {}),
    };
    const childConfigPath = join(work, 'child.json');
    this.childConfig = { path: childConfigPath, config: childConfig };
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of [
      'GH_TOKEN',
      'GITHUB_TOKEN',
      'GH_REPO',
      'GITHUB_ENTERPRISE_TOKEN',
      'GH_DEBUG',
      'AO_CONFIG_PATH',
    ])
      delete env[name];
    this.childEnv = Object.assign(env, {
      HOME: join(work, 'home'),
      GH_HOST: `127.0.0.1:${this.server.port}`,
      GH_ENTERPRISE_TOKEN: this.options.github.token,
      SSL_CERT_FILE: cert.certPath,
      GH_CONFIG_DIR: join(work, 'gh-config'),
      // gh caches some answers (feature detection, 24 h) under $TMPDIR/gh-cli-cache, keyed by
      // URL and token: a later run on a reused port would skip those calls and count less.
      TMPDIR: join(work, 'tmp'),
      GH_PROMPT_DISABLED: '1',
      GH_NO_UPDATE_NOTIFIER: '1',
      GH_PAGER: 'cat',
      NO_COLOR: '1',
      AO_LOG_LEVEL: 'info',
      FLEETBENCH_AO_CONFIG: childConfigPath,
      ...agentEnv,
    });
    const ready = await this.startChild();
    this.options.trace.write({
      kind: 'event',
      name: 'ao.started',
      t: this.options.clock.now(),
      labels: { core: ready.core ?? '?', gh: this.gh.version },
      data: {
        versions: ready,
        origin: this.packages.origin,
        gh: this.gh.version,
        ghPrChecksJson: this.gh.prChecksJson,
        intervalMs: this.intervalMs,
        projects: this.projects.size,
        machine: machineLoad(),
      },
    });
  }

  /** Starts the child and waits for `ready` (or its failure, with AO's own words). */
  private startChild(): Promise<Record<string, string>> {
    if (this.childConfig) writeFileSync(this.childConfig.path, JSON.stringify(this.childConfig.config));
    const log = openSync(join(this.options.outDir, 'ao.log'), this.logOpened ? 'a' : 'w');
    this.logOpened = true;
    const child = spawn(process.execPath, [WORKER], {
      env: this.childEnv,
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log);
    // Errors of the IPC channel (EPIPE once the child died) are answered where a send fails;
    // its exit is reported by onChildExit.
    child.on('error', () => undefined);
    this.child = child;
    if (child.pid !== undefined) this.options.processes?.addRoot(child.pid, 'controlPlane');
    this.cycleBase = this.highestCycle;
    const now = this.options.clock.now();
    for (const project of this.projects.values()) {
      project.loopStartedAt = now;
      project.cycle = undefined;
      this.emulator.attribution.setCycle(project.repo, undefined);
    }
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (message: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(
          // The run failed (exit 3), as a command target that never gets ready: the ao:DIR and
          // the scenario were checked before (exit 2), so what is left is AO itself.
          new FleetbenchError('E_TARGET', `agent-orchestrator did not start: ${message}`, {
            hint: `its own output is in ${join(this.options.outDir, 'ao.log')}`,
            exitCode: ExitCode.runFailed,
          }),
        );
      };
      const timer = setTimeout(() => fail(`no answer in ${READY_TIMEOUT_MS / 1000} s`), READY_TIMEOUT_MS);
      child.on('message', (message: AoChildMessage) => {
        if (!settled && message.type === 'ready') {
          settled = true;
          clearTimeout(timer);
          this.readyChildren.add(child);
          resolve(message.versions);
        } else if (!settled && message.type === 'fatal') fail(message.message);
        else this.onMessage(message);
      });
      child.on('exit', (code, signal) => {
        fail(`the process exited (${signal ?? `code ${code}`})`);
        this.onChildExit(child, code, signal);
      });
    });
  }

  private onChildExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child !== child) return;
    this.child = undefined;
    const how = signal ?? `code ${code}`;
    for (const { reject } of this.pending.values()) reject(new Error(`agent-orchestrator exited (${how})`));
    this.pending.clear();
    // Before it was ready: its start failed, and startChild's rejection says so (with AO's words).
    if (this.stopping || this.expectedExit === child || !this.readyChildren.has(child)) return;
    // AO died on its own: the run measured a dead control plane from here on, so it fails.
    this.options.trace.write({
      kind: 'event',
      name: 'ao.exited',
      t: this.options.clock.now(),
      labels: { reason: how },
    });
    const error = new FleetbenchError(
      'E_TARGET',
      `agent-orchestrator exited during the run (${how}); its own output is in ${join(this.options.outDir, 'ao.log')}`,
    );
    for (const listener of this.failureListeners) listener(error);
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  private onMessage(message: AoChildMessage): void {
    const { trace, clock } = this.options;
    switch (message.type) {
      case 'reply': {
        const waiter = this.pending.get(message.id);
        this.pending.delete(message.id);
        waiter?.resolve(message);
        return;
      }
      case 'cycle-start': {
        const project = this.projects.get(message.project);
        if (!project) return;
        const id = this.cycleBase + message.cycle;
        this.highestCycle = Math.max(this.highestCycle, id);
        project.cycle = { id, startedAt: clock.now() };
        this.emulator.attribution.setCycle(project.repo, id);
        return;
      }
      case 'cycle-end': {
        const project = this.projects.get(message.project);
        const cycle = project?.cycle;
        if (!project || cycle?.id !== this.cycleBase + message.cycle) return;
        project.cycle = undefined;
        this.emulator.attribution.setCycle(project.repo, undefined);
        const ended = clock.now();
        const interval = this.intervalMs;
        const due =
          project.loopStartedAt + Math.floor((cycle.startedAt - project.loopStartedAt) / interval) * interval;
        trace.write({
          kind: 'span',
          name: 'poll.cycle',
          t: cycle.startedAt,
          dur: ended - cycle.startedAt,
          ...(message.ok ? {} : { outcome: 'error' as const }),
          labels: { strategy: 'ao', project: project.id },
          data: {
            cycle: cycle.id,
            ...(message.sessions !== undefined ? { sessions: message.sessions } : {}),
            lagMs: Math.round(cycle.startedAt - due),
            intervalMs: interval,
            aoDurationMs: message.durationMs,
            ...(message.reason ? { reason: message.reason } : {}),
          },
        });
        return;
      }
      case 'tick-skipped':
        trace.write({
          kind: 'event',
          name: 'poll.cycle.skipped',
          t: clock.now(),
          labels: { count: 1, project: message.project },
          data: { runningCycle: this.cycleBase + message.cycle },
        });
        return;
      case 'transition':
        this.setState(message.session, message.to, message.from);
        return;
      case 'agent-message':
        this.onAgentMessage(message.session, message.message);
        return;
      case 'fatal':
        trace.write({
          kind: 'event',
          name: 'ao.error',
          t: clock.now(),
          data: { message: message.message },
        });
        return;
      default:
        return;
    }
  }

  private setState(session: string, aoStatus: string, aoFrom?: string): void {
    const to = stateOfAoStatus(aoStatus);
    const from = this.states.get(session);
    if (to === undefined || !this.states.has(session)) return;
    this.options.trace.write({
      kind: 'event',
      name: 'ao.status',
      t: this.options.clock.now(),
      session,
      labels: { from: aoFrom ?? '', to: aoStatus },
    });
    if (from === to) return;
    this.states.set(session, to);
    this.options.trace.write({
      kind: 'event',
      name: 'session.state',
      t: this.options.clock.now(),
      session,
      labels: { from: from ?? 'none', to },
    });
    for (const listener of this.listeners) listener(session, from ?? 'none', to);
  }

  /**
   * AO sent text to a session's agent (a reaction). The stand-in agent of a review reaction does
   * what AO's message asks, after the scenario's fix-after: reads the inline comments, pushes a
   * fix (a new head commit: CI runs again) and replies to each comment, as source `agent`.
   */
  private onAgentMessage(session: string, message: string): void {
    const { trace, clock, world, scenario } = this.options;
    const review = isReviewMessage(message);
    // A real agent's prompt is typed into its terminal during AO's spawn (the stand-in gets it inline).
    const reaction = !this.spawned.has(session) ? 'prompt' : review ? 'review-comments' : 'other';
    trace.write({
      kind: 'event',
      name: 'ao.agent.message',
      t: clock.now(),
      session,
      labels: { reaction },
      data: { message: message.slice(0, 200) },
    });
    // A real agent got the message in its terminal and answers it itself.
    if (!review || this.agents) return;
    const delay = sample(scenario.sessions.fixAfter, this.fixRng);
    clock.setTimeout(() => {
      if (this.stopping) return;
      void this.addressReview(session).catch(() => undefined);
    }, delay);
    void world;
  }

  private async addressReview(session: string): Promise<void> {
    const { world, github, clock, trace } = this.options;
    const pr = world.sessionsWithPr().find((s) => s.id === session);
    if (!pr) return;
    const started = clock.now();
    const headers = {
      authorization: `token ${github.token}`,
      'x-fleetbench-session': session,
      'x-fleetbench-source': 'agent',
    };
    const listed = await github.transport.request({
      method: 'GET',
      path: `/repos/${pr.repo}/pulls/${pr.number}/comments?per_page=100`,
      headers: { ...headers, 'x-fleetbench-op': 'agent-read-comments' },
    });
    const comments = (
      JSON.parse(listed.body || '[]') as Array<{
        id: number;
        in_reply_to_id?: number;
        user?: { login?: string };
      }>
    ).filter((c) => c.in_reply_to_id === undefined);
    const sha = await world.pushFix(session);
    for (const comment of comments) {
      await github.transport.request({
        method: 'POST',
        path: `/repos/${pr.repo}/pulls/${pr.number}/comments`,
        headers: {
          ...headers,
          'x-fleetbench-op': 'reply-review-comment',
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          body: sha ? `Addressed in ${sha.slice(0, 7)}.` : 'Addressed.',
          in_reply_to: comment.id,
        }),
      });
    }
    trace.write({
      kind: 'span',
      name: 'agent.review.addressed',
      t: started,
      dur: clock.now() - started,
      session,
      data: { comments: comments.length },
    });
  }

  private request(body: AoRequestBody, timeoutMs = REQUEST_TIMEOUT_MS): Promise<AoChildMessage> {
    const child = this.child;
    if (!child?.connected) return Promise.reject(new Error('agent-orchestrator is not running'));
    const id = this.nextRequest++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`agent-orchestrator did not answer ${body.type} in ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      // A child that is dying (Ctrl-C reached it first) fails the request, not the process.
      child.send({ ...body, id } as AoRequest, (error) => {
        if (!error) return;
        this.pending.delete(id);
        clearTimeout(timer);
        reject(new Error(`agent-orchestrator did not take ${body.type}: ${error.message}`));
      });
    });
  }

  /**
   * A real agent pushed its branch (`git push` to the project's remote): the push reaches the
   * emulator through the world, as a new head commit on the session's PR, and CI runs again.
   */
  private onAgentPush(branch: string): void {
    const session = this.sessionOfBranch.get(branch);
    if (session === undefined || this.stopping) return;
    const { world, trace, clock } = this.options;
    void world
      .pushFix(session)
      .then((sha) =>
        trace.write({
          kind: 'event',
          name: 'agent.pushed',
          t: clock.now(),
          session,
          labels: { pr: sha !== undefined },
          data: { branch, ...(sha ? { sha: sha.slice(0, 7) } : {}) },
        }),
      )
      .catch(() => undefined);
  }

  async createSession(spec: SessionSpec): Promise<void> {
    const project = this.projectOfRepo.get(spec.repo);
    if (!project) throw new Error(`no AO project for ${spec.repo}`);
    this.sessionOfBranch.set(spec.branch, spec.id);
    const env = this.agents?.sessionEnv(spec.id, spec.repo, this.emulator);
    const realAgents = this.childConfig?.config.realAgents;
    if (env && realAgents) realAgents.sessionEnv[sessionEnvKey(project.id, spec.issue)] = env;
    this.emulator.attribution.register({
      session: spec.id,
      repo: spec.repo,
      branch: spec.branch,
      issue: spec.issue,
    });
    this.states.set(spec.id, 'spawning');
    this.options.trace.write({
      kind: 'event',
      name: 'session.state',
      t: this.options.clock.now(),
      session: spec.id,
      labels: { from: 'none', to: 'spawning' },
    });
    for (const listener of this.listeners) listener(spec.id, 'none', 'spawning');
    const reply = await this.request({
      type: 'spawn',
      projectId: project.id,
      issue: spec.issue,
      branch: spec.branch,
      session: spec.id,
      ...(env ? { env } : {}),
    });
    if (reply.type === 'reply' && !reply.ok) throw new Error(`ao spawn: ${reply.message}`);
    this.spawned.add(spec.id);
    if (this.agents && this.options.processes && !this.tmuxRegistered) {
      const pid = this.agents.tmuxServerPid();
      if (pid !== undefined) {
        this.options.processes.addRoot(pid, 'agents');
        this.tmuxRegistered = true;
      }
    }
    if (this.agents && reply.type === 'reply' && reply.ok)
      this.options.trace.write({
        kind: 'event',
        name: 'ao.agent.launched',
        t: this.options.clock.now(),
        session: spec.id,
        labels: { cli: this.agents.claude.cli, version: this.agents.claude.version },
        data: { binary: this.agents.claude.path, aoSession: reply.aoSession ?? '', runtime: 'tmux' },
      });
    // AO's spawn path is over (its tracker's calls are made): a learned model tells spawn calls
    // from the first poll's by this (docs/model.md).
    this.options.trace.write({
      kind: 'event',
      name: 'ao.spawned',
      t: this.options.clock.now(),
      session: spec.id,
    });
  }

  async sessionCounts(): Promise<Partial<Record<SessionState, number>>> {
    return countSessionStates(this.states.values());
  }

  onSessionState(listener: SessionStateListener): void {
    this.listeners.push(listener);
  }

  /** S5's cache flush: AO's lifecycle managers stopped and created anew (their state is in memory). */
  async flushCaches(): Promise<void> {
    this.options.trace.write({
      kind: 'event',
      name: 'controlplane.cache.flush',
      t: this.options.clock.now(),
    });
    const reply = await this.request({ type: 'restart-lifecycle' });
    if (reply.type === 'reply' && !reply.ok) throw new Error(`ao restart-lifecycle: ${reply.message}`);
    const now = this.options.clock.now();
    for (const project of this.projects.values()) project.loopStartedAt = now;
  }

  /**
   * A real restart of the AO process: `hard` kills it (SIGKILL), `graceful` and `hot` ask it to
   * stop its loops and exit (AO 0.2.0 has no runner handover: hot is graceful). The new process
   * reads AO's session metadata back from disk, as `ao start` after a crash would.
   */
  async restart(kind: RestartKind): Promise<{ outageMs: number }> {
    const { trace, clock } = this.options;
    const killedAt = clock.now();
    trace.write({ kind: 'event', name: 'controlplane.restart', t: killedAt, labels: { kind } });
    const old = this.child;
    this.expectedExit = old;
    if (old) {
      const exited = new Promise<void>((resolve) => old.once('exit', () => resolve()));
      if (kind === 'hard') old.kill('SIGKILL');
      else await this.request({ type: 'stop' }, 30_000).catch(() => old.kill('SIGKILL'));
      await exited;
    }
    await this.startChild();
    trace.write({ kind: 'event', name: 'controlplane.ready', t: clock.now(), labels: { reason: kind } });
    trace.write({
      kind: 'span',
      name: 'controlplane.outage',
      t: killedAt,
      dur: clock.now() - killedAt,
      labels: { kind },
    });
    return { outageMs: clock.now() - killedAt };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.options.trace.write({
      kind: 'event',
      name: 'ao.stopping',
      t: this.options.clock.now(),
      data: { machine: machineLoad() },
    });
    const child = this.child;
    if (child) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      await this.request({ type: 'stop' }, 15_000).catch(() => child.kill('SIGKILL'));
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await this.agents?.stop(this.options.trace, this.options.clock.now());
    await this.server?.close();
    if (this.workDir) rmSync(this.workDir, { recursive: true, force: true, maxRetries: 3 });
  }
}
