/**
 * The `command` target (docs/command-target.md): any control plane, run as it is inside the
 * run's world (src/world/), and measured from what crosses the world's edges — its GitHub calls,
 * its model requests, the agents it spawns and the destinations it was refused. fleetbench writes
 * what only it knows: when the work was created, when the control plane was started, ready,
 * killed and ready again, and which session an agent or a branch belongs to (sessions.ts); the
 * analysis derives every figure from those records and the emulators' own.
 *
 * Lifecycle: the command starts in its own process group with its state directory; ready is an
 * HTTP probe inside the world, a line of its output, its first GitHub call, or a delay. A restart
 * fault kills the whole group (`hard`: SIGKILL; `graceful` and `hot`: the configured signal, then
 * SIGKILL after the grace) and starts it again with the same state directory. A control plane
 * that exits outside a planned restart fails the run (exit 3). The run's end stops it and, with
 * the world, everything it started.
 */
import { closeSync, openSync, readSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { type AgentsInstall, resolveAgentsInstall } from '../../agents/install.ts';
import { ExitCode, FleetbenchError } from '../../base/errors.ts';
import type { ProcessCpu } from '../../base/process-cpu.ts';
import type { Rng } from '../../base/rng.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import type { Clock } from '../../clock/clock.ts';
import type { TargetRef } from '../../contract/target-ref.ts';
import {
  type RestartKind,
  type SessionSpec,
  type SessionState,
  type SessionStateListener,
  stateRank,
  type Target,
} from '../../contract/types.ts';
import type { GitHubEmulator } from '../../github/emulator.ts';
import {
  defaultScriptName,
  LATENCY_PROFILES,
  loadScriptsFile,
  ProviderEmulator,
} from '../../provider/index.ts';
import type { TraceSink } from '../../trace/writer.ts';
import { COMMAND_TARGET_BOUNDS, type CommandTargetConfig } from '../../workload/command-target.ts';
import type { GitHubSide } from '../../workload/github-side.ts';
import type { Scenario } from '../../workload/scenario.ts';
import type { World as ScriptedWorld } from '../../workload/world.ts';
import { childPids, processFacts, startTicks } from '../../world/procfs.ts';
import { openWorld, type World, type WorldProcess } from '../../world/world.ts';
import { countSessionStates } from '../session-counts.ts';
import { type CommandSession, checkoutOf, SessionBook } from './sessions.ts';
import { checkTemplates, createWork, requestOver, taskText } from './work.ts';

/** How long past SIGKILL a control plane's exit may take to be reported before the run goes on. */
const EXIT_REPORT_GRACE_MS = 5_000;

/** How often sessions' GitHub state and live agents' checkouts are read (docs/command-target.md). */
const WATCH_MS = 500;
/** Branches that are everybody's, never one session's. */
const DEFAULT_BRANCHES = new Set(['main', 'master', 'trunk', 'develop']);
/** How often a readiness probe is tried. */
const PROBE_MS = 200;
/** How much new output one `ready: {log}` probe reads (the rest at the next probe): 16 MiB. */
const LOG_SCAN_PER_PROBE = 16 << 20;

export interface CommandTargetOptions {
  scenario: Scenario;
  ref: Extract<TargetRef, { kind: 'command' }>;
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  github: GitHubSide;
  world: ScriptedWorld;
  outDir: string;
  /** Who spends the machine's CPU (src/base/process-cpu.ts): the run's, under the real clock. */
  processes?: ProcessCpu;
}

export class CommandTarget implements Target {
  readonly name = 'command';
  private readonly config: CommandTargetConfig;
  private readonly emulator: GitHubEmulator;
  private readonly agents: AgentsInstall | undefined;
  private readonly book: SessionBook;
  private readonly listeners: SessionStateListener[] = [];
  private readonly failureListeners: Array<(error: Error) => void> = [];
  private readonly workRng: Rng;
  private world: World | undefined;
  private process: WorldProcess | undefined;
  /** The control plane's exit that a restart or the run's end asked for. */
  private expected = new Set<WorldProcess>();
  /** The start that became ready last, and where the output of the latest start begins in command.log. */
  private readyProcess: WorldProcess | undefined;
  private startLogOffset = 0;
  private stopping = false;
  private watchTimer: NodeJS.Timeout | undefined;
  private index = 0;
  /** GitHub calls answered that were not an agent's (no spawn's token): `ready: {github: true}`. */
  private ownCalls = 0;
  /**
   * The GitHub token work and setup commands get (the world's user, so its quota): their calls are
   * the handover's (`source: harness`), neither a session's nor the control plane's.
   */
  private workToken: string | undefined;
  private readonly spawnSessions = new Map<string, string>();
  private readonly dirs: { root: string; cwd: string; state: string; log: string };
  /** The world's records until run time starts (boot), then the run's trace. */
  private readonly held = new HeldTrace();

  constructor(private readonly options: CommandTargetOptions) {
    const config = options.scenario.command;
    if (!config)
      throw new FleetbenchError('E_TARGET', 'target command: no configuration (docs/command-target.md)');
    if (!options.github.emulator)
      throw new FleetbenchError(
        'E_TARGET',
        'target command needs the run’s own GitHub emulator, not a shared one',
      );
    this.config = config;
    this.emulator = options.github.emulator;
    checkTemplates(config.work, config.source);
    // Refused before anything starts: the agents the launchers exec must be installed.
    this.agents =
      config.agents === 'real'
        ? resolveAgentsInstall(undefined, undefined, process.env, { quick: true })
        : undefined;
    const agentsDir = this.agents?.dir;
    if (agentsDir !== undefined) options.processes?.addCommand('agents', (line) => line.includes(agentsDir));
    this.book = new SessionBook(this.emulator.state);
    this.workRng = options.rng.fork('work');
    // Absolute: {{state}} and {{cwd}} are handed to a command that runs in another directory.
    const root = resolve(options.outDir, 'command');
    this.dirs = {
      root,
      cwd: resolve(config.cwd ?? join(root, 'work')),
      state: resolve(config.state ?? join(root, 'state')),
      log: join(options.outDir, 'command.log'),
    };
  }

  describe(): string[] {
    return [
      `command ${this.config.argv
        .map((arg) => this.fillDirs(arg))
        .join(' ')
        .slice(0, 120)} (${this.config.source}), work: ${this.config.work.kind}, done at ${this.config.done}`,
      ...(this.config.webhook
        ? [`webhook ${this.config.webhook.url} on every repository: ${this.config.webhook.events.join(', ')}`]
        : []),
    ];
  }

  /**
   * Before run time starts (the engine awaits it under the real clock): the world, its CA, its
   * sandbox and emulators' front, which take seconds on a busy machine and are not the control
   * plane's time. Nothing is written to the trace yet (run time starts over after this); the
   * world's own start record is written at start, at t = 0.
   */
  async boot(): Promise<void> {
    if (this.world) return;
    const { scenario, clock, rng } = this.options;
    for (const [field, dir] of [
      ['the run directory', this.dirs.root],
      ['target.cwd', this.dirs.cwd],
      ['target.state', this.dirs.state],
    ] as const)
      try {
        makeDirectories(dir);
      } catch (error) {
        throw new FleetbenchError(
          'E_USAGE',
          `${field}: cannot make the directory ${dir}: ${(error as Error).message} (${this.config.source})`,
        );
      }
    // command.log is this run's alone, as trace.jsonl is (docs/command-target.md): a run in an
    // --out used before starts it empty; its own starts and restarts append to it.
    writeFileSync(this.dirs.log, '');
    const settings = scenario.agents?.provider;
    const scriptsFile = settings?.scripts ? loadScriptsFile(settings.scripts) : undefined;
    const trace = this.options.trace;
    this.world = await openWorld({
      dir: join(this.dirs.root, 'world'),
      mode: this.config.world.mode,
      hosts: this.config.world.hosts,
      clock,
      trace: this.held,
      github: this.emulator,
      provider: (resolveKey) => {
        const provider = new ProviderEmulator({
          clock,
          rng: rng.fork('provider'),
          trace,
          scripts: {
            scripts: scriptsFile?.scripts ?? {},
            default: defaultScriptName(settings?.script, scriptsFile),
          },
          latency: LATENCY_PROFILES[settings?.latency ?? 'fast'],
          ...(settings?.limits ? { limits: settings.limits } : {}),
          models: settings?.models,
          resolveKey,
        });
        for (const fault of settings?.faults ?? []) provider.addFault(fault);
        return provider;
      },
      agents: this.agents,
      token: this.options.github.token,
      user: this.config.user,
    });
  }

  async start(): Promise<void> {
    await this.boot();
    this.held.release(this.options.trace);
    this.emulator.attribution.inferBranch = (repo, branch) => this.book.fromBranch(repo, branch);
    // An agent's own GitHub calls (its token is its spawn's) belong to its spawn's session.
    this.emulator.tokenSession = (token) => {
      const spawn = this.world?.spawnOfToken(token);
      return spawn ? this.spawnSessions.get(spawn.id) : undefined;
    };
    // `ready: {github: true}` is the control plane's first call: an agent's (its spawn's token)
    // is not, such as one an earlier start left running, calling GitHub during the outage.
    // Nor is a work command's (the handover's token), run while the control plane is down.
    this.workToken = this.mintWorkToken();
    // Held by work commands alone: the control plane sending it is still the control plane.
    if (this.workToken !== undefined) this.world?.vouch(this.workToken);
    this.emulator.onRequest = (token) => {
      if (token === undefined) this.ownCalls++;
      else if (token.token !== this.workToken && this.world?.spawnOfToken(token.token) === undefined)
        this.ownCalls++;
    };
    this.world?.spawns?.onChange((spawn, what) => {
      if (what === 'spawn') this.attributeSpawn(spawn.id, spawn.argv.join(' '), spawn.cwd);
    });
    this.registerWebhook();
    await this.launch('start');
    this.watchTimer = setInterval(() => this.watch(), WATCH_MS);
    this.watchTimer.unref();
  }

  /** `{{state}}` and `{{cwd}}` in a start argument or a variable: the run's directories. */
  private fillDirs(text: string): string {
    return text.replaceAll('{{state}}', this.dirs.state).replaceAll('{{cwd}}', this.dirs.cwd);
  }

  /**
   * The configuration's `webhook` on every world repository, before the command starts, as a
   * GitHub App's installation would (no ping); deliveries reach its port inside the world the way
   * `ready: {http}` and `work: {http}` do (docs/command-target.md, "Webhooks").
   */
  private registerWebhook(): void {
    const webhook = this.config.webhook;
    const world = this.world;
    if (webhook === undefined || world === undefined) return;
    const hooks = this.emulator.webhooks;
    hooks.dialer = (url) => world.dial(Number(url.port || 80));
    const config = {
      url: webhook.url,
      contentType: webhook.contentType,
      secret: webhook.secret,
      insecureSsl: '0' as const,
    };
    for (const repo of this.emulator.state.repos.values())
      if (hooks.hooksOf(repo).length === 0)
        hooks.create(repo, { config, events: webhook.events, active: true }, repo.owner, { ping: false });
  }

  /** The environment of the control plane and of work commands: the user's, the config's, the world's. */
  private env(): Record<string, string> {
    const fill = (text: string) => this.fillDirs(text);
    const own = Object.fromEntries(Object.entries(this.config.env).map(([k, v]) => [k, fill(v)]));
    return (this.world as World).env({ ...process.env, ...own });
  }

  /**
   * A token of the world's token's user for work and setup commands, recorded as `source: harness`:
   * what a user's tool does to hand work over is not the control plane's traffic
   * (docs/command-target.md, "Attribution with no adapter").
   */
  private mintWorkToken(): string | undefined {
    const own = this.emulator.tokenOf(this.options.github.token);
    if (own === undefined || own.kind === 'installation') return undefined;
    return this.emulator.mintToken({
      user: own.user.login,
      kind: own.kind,
      ...(own.repo !== undefined ? { repo: own.repo } : {}),
      source: 'harness',
      token: `${this.options.github.token}_work`,
    }).token;
  }

  /**
   * A work or setup command's environment: the control plane's, with the handover's token where
   * it would get the world's (a token the configuration set is kept).
   */
  private workEnv(): Record<string, string> {
    const env = this.env();
    const worldToken = env.FLEETBENCH_WORLD_TOKEN;
    if (this.workToken !== undefined && env.GH_TOKEN === worldToken && env.GITHUB_TOKEN === worldToken) {
      env.GH_TOKEN = this.workToken;
      env.GITHUB_TOKEN = this.workToken;
    }
    return env;
  }

  /** Starts the control plane and waits until it is ready; writes controlplane.boot and .ready. */
  private async launch(reason: 'start' | RestartKind): Promise<void> {
    const { clock, trace } = this.options;
    const world = this.world as World;
    const ownCallsBefore = this.ownCalls;
    const logOffset = fileSize(this.dirs.log);
    this.startLogOffset = logOffset;
    const spawnedAt = clock.now();
    const fill = (text: string) => this.fillDirs(text);
    const child = await world.spawn({
      argv: this.config.argv.map(fill),
      cwd: this.dirs.cwd,
      env: this.env(),
      detached: true,
      stdin: 'ignore',
      stdout: this.dirs.log,
      stderr: this.dirs.log,
      outputCap: COMMAND_TARGET_BOUNDS.maxOutputBytes,
    });
    this.process = child;
    // Its tree is the control plane's from its spawn (a restart's boot is not fleetbench's); the
    // agent CLIs it starts are told from it by their install's path.
    if (child.pid !== undefined) this.options.processes?.addRoot(child.pid, 'controlPlane');
    let exited: Awaited<WorldProcess['exited']> | undefined;
    void child.exited.then((status) => {
      exited = status;
      this.onExit(child, status);
    });
    trace.write({
      kind: 'event',
      name: 'controlplane.start',
      t: spawnedAt,
      labels: { reason },
      data: { pid: child.pid ?? null, argv: this.config.argv.map(fill).slice(0, 32) },
    });
    const deadline = spawnedAt + this.config.readyTimeoutMs * clock.timeScale;
    const ready = this.config.ready;
    for (;;) {
      if (exited)
        throw new FleetbenchError(
          'E_TARGET',
          `the control plane exited before it was ready (${exited.signal ?? `exit ${exited.code}`}): ${exited.error ?? lastLines(this.dirs.log, logOffset)}`,
          { hint: `its output is in ${this.dirs.log}`, exitCode: ExitCode.runFailed },
        );
      if (clock.now() > deadline) {
        child.kill('SIGKILL');
        throw new FleetbenchError(
          'E_TARGET',
          `the control plane was not ready within ${this.config.readyTimeoutMs / 1000} s (${describeReady(ready)})`,
          { hint: `its output is in ${this.dirs.log}`, exitCode: ExitCode.runFailed },
        );
      }
      if (await this.isReady(ownCallsBefore, logOffset, spawnedAt)) break;
      await new Promise((resolve) => setTimeout(resolve, PROBE_MS));
    }
    const readyAt = clock.now();
    this.readyProcess = child;
    trace.write({
      kind: 'span',
      name: 'controlplane.boot',
      t: spawnedAt,
      dur: readyAt - spawnedAt,
      labels: { reason, ready: ready.kind },
    });
    trace.write({ kind: 'event', name: 'controlplane.ready', t: readyAt, labels: { reason } });
  }

  /** How far `ready: {log}` has read the output of this start, and the line it has not seen end. */
  private logScan = { from: -1, offset: 0, carry: '', decoder: new StringDecoder('utf8') };

  /**
   * Whether the output written since `from` (this start's) has a line that matches: read on from
   * where the last probe stopped, 1 MiB at a time, so a control plane that writes megabytes before
   * its ready line is still seen ready (only its first MiB was ever read before).
   */
  private logSays(pattern: RegExp, from: number): boolean {
    const scan = this.logScan;
    if (scan.from !== from) {
      scan.from = from;
      scan.offset = from;
      scan.carry = '';
      scan.decoder = new StringDecoder('utf8');
    }
    const size = fileSize(this.dirs.log);
    for (let read = 0; scan.offset < size && read < LOG_SCAN_PER_PROBE; ) {
      const chunk = readChunk(this.dirs.log, scan.offset, Math.min(size - scan.offset, 1 << 20));
      if (chunk.length === 0) break;
      scan.offset += chunk.length;
      read += chunk.length;
      const text = scan.carry + scan.decoder.write(chunk);
      if (pattern.test(text)) return true;
      // The line still being written is tested again with what follows it (its last 64 KiB).
      scan.carry = text.slice(Math.max(text.lastIndexOf('\n') + 1, text.length - 65_536));
    }
    return false;
  }

  private async isReady(ownCallsBefore: number, logOffset: number, spawnedAt: number): Promise<boolean> {
    const ready = this.config.ready;
    switch (ready.kind) {
      case 'delay':
        return this.options.clock.now() - spawnedAt >= ready.ms * this.options.clock.timeScale;
      case 'github':
        return this.ownCalls > ownCallsBefore;
      case 'log':
        return this.logSays(new RegExp(ready.pattern), logOffset);
      case 'http': {
        const url = new URL(ready.url);
        try {
          const socket = await (this.world as World).dial(Number(url.port || 80));
          const answer = await requestOver(
            socket,
            { method: 'GET', path: `${url.pathname}${url.search}`, host: url.host },
            2_000,
          );
          return answer.status >= 200 && answer.status < 300;
        } catch {
          return false;
        }
      }
    }
  }

  private onExit(child: WorldProcess, status: Awaited<WorldProcess['exited']>): void {
    if (this.expected.has(child) || this.stopping || this.process !== child) return;
    const how = status.signal ?? `exit ${status.code}`;
    // A start that never got ready (its first, or one after a restart) died booting, not working.
    const ready = this.readyProcess === child;
    this.options.trace.write({
      kind: 'event',
      name: 'controlplane.exited',
      t: this.options.clock.now(),
      labels: { reason: how },
      data: { code: status.code, signal: status.signal, ready },
    });
    const error = new FleetbenchError(
      'E_TARGET',
      `the control plane exited ${ready ? 'during the run' : 'before it was ready'} (${how}): ${status.error ?? lastLines(this.dirs.log, this.startLogOffset)}`,
      { hint: `its output is in ${this.dirs.log}`, exitCode: ExitCode.runFailed },
    );
    for (const listener of this.failureListeners) listener(error);
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  async createSession(spec: SessionSpec): Promise<void> {
    const { clock, trace } = this.options;
    const world = this.world as World;
    this.index += 1;
    const text = taskText(this.workRng.fork(spec.id), this.index);
    const session: CommandSession = {
      id: spec.id,
      repo: spec.repo,
      title: text.title,
      aliases: [],
      state: 'spawning',
    };
    const created = await createWork(
      this.config.work,
      { id: spec.id, index: this.index, repo: spec.repo, ...text },
      {
        emulator: this.emulator,
        world,
        env: this.workEnv(),
        vouch: this.workToken,
        cwd: this.dirs.cwd,
        now: () => clock.now(),
        // The user's work and setup commands are neither fleetbench's nor the control plane's.
        onSpawned: (pid) => this.options.processes?.addRoot(pid, 'other'),
      },
    );
    session.issue = created.issue;
    if (created.alias) session.aliases.push(created.alias);
    this.book.add(session);
    if (created.issue !== undefined)
      this.emulator.attribution.register({ session: spec.id, repo: spec.repo, issue: created.issue });
    trace.write({
      kind: 'event',
      name: 'work.created',
      // The handover's start: the work exists by its end, and first activity counts from here.
      t: created.handedOverAt,
      session: spec.id,
      labels: { kind: this.config.work.kind, repo: spec.repo },
      data: {
        handoverMs: Math.max(0, clock.now() - created.handedOverAt),
        ...(created.issue !== undefined ? { issue: created.issue } : {}),
        ...(created.url ? { url: created.url } : {}),
        ...(created.alias ? { alias: created.alias } : {}),
        title: text.title,
        done: this.config.done,
      },
    });
    this.setState(session, 'spawning');
    // Agents already running may have been waiting for this work.
    for (const spawn of world.spawns?.alive ?? [])
      if (!this.spawnSessions.has(spawn.id)) this.attributeSpawn(spawn.id, spawn.argv.join(' '), spawn.cwd);
  }

  private setState(session: CommandSession, to: SessionState): void {
    const from = session.state;
    const first = to === 'spawning' && from === 'spawning';
    if (!first && (from === to || stateRank[to] < stateRank[from])) return;
    session.state = to;
    this.options.trace.write({
      kind: 'event',
      name: 'session.state',
      t: this.options.clock.now(),
      session: session.id,
      labels: { from: first ? 'none' : from, to },
    });
    for (const listener of this.listeners) listener(session.id, first ? 'none' : from, to);
  }

  /** An agent's session: from its command line, else from its checkout's branch. */
  private attributeSpawn(spawnId: string, argv: string, cwd: string | undefined): void {
    if (this.spawnSessions.has(spawnId)) return;
    let session = this.book.fromText(argv);
    let how = 'argv';
    const checkout = cwd ? checkoutOf(cwd) : {};
    if (!session && cwd) {
      if (checkout.branch) {
        const repos = checkout.repo
          ? [checkout.repo]
          : [...new Set([...this.book.sessions.values()].map((s) => s.repo))];
        const found = new Set(
          repos.map((repo) => this.book.fromBranch(repo, checkout.branch as string)).filter(Boolean),
        );
        if (found.size === 1) {
          session = [...found][0];
          how = 'branch';
        }
      }
      if (!session) {
        session = this.book.fromText(cwd);
        how = 'cwd';
      }
    }
    if (!session) return;
    this.spawnSessions.set(spawnId, session);
    // The branch its agent works on is the session's: the pull request it opens from there too,
    // whatever it is called (a worktree named after a task id).
    const repo = checkout.repo ?? this.book.sessions.get(session)?.repo;
    if (checkout.branch && repo && !DEFAULT_BRANCHES.has(checkout.branch)) {
      this.book.claimBranch(repo, checkout.branch, session);
      this.emulator.attribution.register({ session, repo, branch: checkout.branch });
    }
    this.options.trace.write({
      kind: 'event',
      name: 'agent.session',
      t: this.options.clock.now(),
      session,
      labels: { spawn: spawnId, session },
      data: { how },
    });
    const state = this.book.sessions.get(session);
    if (state) this.setState(state, 'working');
  }

  /** Sessions' pull requests and issues as GitHub has them; agents' checkouts as they move on. */
  private watch(): void {
    for (const session of this.book.sessions.values()) {
      const repo = this.emulator.state.repos.get(session.repo);
      if (!repo) continue;
      for (const [number, pull] of repo.pulls) {
        const owner =
          (pull.linkedIssue != null && pull.linkedIssue === session.issue ? session.id : undefined) ??
          this.book.fromBranch(session.repo, pull.head);
        if (owner !== session.id) continue;
        if (session.pr?.number !== number || session.pr.headSha !== pull.headSha) {
          session.pr = { number, headSha: pull.headSha };
          this.emulator.attribution.register({ session: session.id, repo: session.repo, branch: pull.head });
          void this.options.world.adoptPullRequest(session.id, session.pr).catch(() => undefined);
        }
        if (pull.merged) this.setState(session, 'merged');
        else if (pull.issue.state === 'open') this.setState(session, 'pr_open');
      }
      const issue = session.issue !== undefined ? repo.issues.get(session.issue) : undefined;
      if (issue?.state === 'closed' && session.state !== 'merged') this.setState(session, 'closed');
    }
    for (const spawn of this.world?.spawns?.alive ?? [])
      if (!this.spawnSessions.has(spawn.id)) this.attributeSpawn(spawn.id, spawn.argv.join(' '), spawn.cwd);
  }

  async sessionCounts(): Promise<Partial<Record<SessionState, number>>> {
    return countSessionStates([...this.book.sessions.values()].map((s) => s.state));
  }

  onSessionState(listener: SessionStateListener): void {
    this.listeners.push(listener);
  }

  /**
   * A restart as the scenario's fault: the whole process group is killed (`hard`) or signalled
   * and given its grace (`graceful`, `hot`: a command has no handover), then started again with
   * the same state directory. The outage runs from the kill to ready.
   */
  async restart(kind: RestartKind): Promise<{ outageMs: number }> {
    const { clock, trace } = this.options;
    const old = this.process;
    const killedAt = clock.now();
    trace.write({
      kind: 'event',
      name: 'controlplane.restart',
      t: killedAt,
      labels: { kind, kills: this.config.kill },
    });
    if (old) {
      this.expected.add(old);
      await this.end(old, kind === 'hard' ? 'SIGKILL' : this.config.stop.signal);
    }
    await this.launch(kind);
    const outageMs = clock.now() - killedAt;
    trace.write({ kind: 'span', name: 'controlplane.outage', t: killedAt, dur: outageMs, labels: { kind } });
    return { outageMs };
  }

  /**
   * Signals the control plane (its group, or its first process only: `kill: process`); SIGKILL
   * after the grace when it is still there. The run's end always takes the whole group.
   */
  private async end(
    child: WorldProcess,
    signal: NodeJS.Signals,
    group = this.config.kill === 'group',
  ): Promise<void> {
    const signalledAt = Date.now();
    // `kill: process` means the control plane, and a `start` line's first process is the
    // `sh -c` it runs in: dash (Debian's sh) forks even a single command instead of becoming it,
    // so the shell alone died and the control plane ran on beside its next start. The shell's
    // own children die with it; what they started runs on, as after a crash.
    // Only while it is still that shell: one that became the command (`exec`, or a sh that is
    // bash, which execs a single command) is the control plane, and its children its agents.
    const line =
      !group &&
      isShellLine(this.config.argv) &&
      child.pid !== undefined &&
      isShellLine(processFacts(child.pid)?.argv ?? [])
        ? childPids(child.pid).map((pid) => ({ pid, started: startTicks(pid) }))
        : [];
    const signalAll = (sig: NodeJS.Signals) => {
      child.kill(sig, group);
      // The same processes: a pid reused since (its start time differs) is not signalled.
      for (const { pid, started } of line) if (startTicks(pid) === started) signalProcess(pid, sig);
    };
    signalAll(signal);
    const grace = signal === 'SIGKILL' ? 5_000 : this.config.stop.graceMs;
    const timer = setTimeout(() => signalAll('SIGKILL'), grace);
    // Its exit is reported from inside the world; should that report never come, the run still
    // ends (SIGKILL was sent at the grace; the world's end takes whatever is left).
    let giveUp: NodeJS.Timeout | undefined;
    const gone = await Promise.race([
      child.exited.then(() => true),
      new Promise<false>((resolve) => {
        giveUp = setTimeout(() => resolve(false), grace + EXIT_REPORT_GRACE_MS);
      }),
    ]);
    clearTimeout(giveUp);
    // Its first process gone is not the group gone: a child that ignores the signal (or that
    // the first process, a `sh -c`, left behind) ran on beside the next start, or past the run's
    // end. What is left of the group has the rest of the grace, then SIGKILL.
    if (gone && group) {
      const deadline = signalledAt + grace;
      while (child.groupAlive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (child.groupAlive()) {
        child.kill('SIGKILL', true);
        for (let i = 0; i < 40 && child.groupAlive(); i++) await new Promise((r) => setTimeout(r, 50));
      }
    }
    clearTimeout(timer);
    if (!gone)
      this.options.trace.write({
        kind: 'event',
        name: 'controlplane.exit_unreported',
        t: this.options.clock.now(),
        data: { signal, graceMs: grace },
      });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.watchTimer) clearInterval(this.watchTimer);
    const child = this.process;
    if (child) {
      this.expected.add(child);
      await this.end(child, this.config.stop.signal, true);
      this.options.trace.write({ kind: 'event', name: 'controlplane.stopped', t: this.options.clock.now() });
    }
    this.emulator.attribution.inferBranch = undefined;
    this.emulator.tokenSession = undefined;
    await this.world?.close();
  }
}

/**
 * A trace sink that holds what is written before run time starts and writes it at t = 0 once
 * released (the run's trace starts over after a boot, and takes no record before that).
 */
class HeldTrace implements TraceSink {
  private held: Parameters<TraceSink['write']>[0][] = [];
  private target: TraceSink | undefined;

  write(record: Parameters<TraceSink['write']>[0]): void {
    if (this.target) this.target.write(record);
    else this.held.push(record);
  }

  release(target: TraceSink): void {
    this.target = target;
    for (const record of this.held) target.write('t' in record ? { ...record, t: 0 } : record);
    this.held = [];
  }
}

function describeReady(ready: CommandTargetConfig['ready']): string {
  switch (ready.kind) {
    case 'http':
      return `GET ${ready.url} never answered 2xx`;
    case 'log':
      return `no output line matched /${ready.pattern}/`;
    case 'github':
      return 'it made no GitHub call';
    case 'delay':
      return `a delay of ${ready.ms} ms`;
  }
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** At most `length` bytes of a file from `offset` (fewer when it is shorter). */
function readChunk(path: string, offset: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const fd = openSync(path, 'r');
  try {
    return buffer.subarray(0, readSync(fd, buffer, 0, length, offset));
  } finally {
    closeSync(fd);
  }
}

/** What a file holds from `offset` (at most 1 MiB of it). */
function readFrom(path: string, offset: number): string {
  const size = fileSize(path);
  if (size <= offset) return '';
  return readChunk(path, offset, Math.min(size - offset, 1 << 20)).toString('utf8');
}

/**
 * The end of the control plane's output, for a failure's message: printed on the user's terminal
 * and kept in the summary, so its control characters (a terminal escape that clears the screen or
 * sets the title, a carriage return that hides what came before) are shown escaped, not obeyed.
 */
export function lastLines(path: string, offset: number): string {
  const text = readFrom(path, Math.max(offset, fileSize(path) - 2_000)).trim();
  if (text === '') return '(no output)';
  return text
    .split('\n')
    .slice(-5)
    .join(' | ')
    .replace(
      /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g,
      (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
    );
}

/** A `start` given as a line: run as `sh -c LINE` (docs/command-target.md, "The configuration"). */
const isShellLine = (argv: readonly string[]): boolean =>
  argv.length === 3 && (argv[0] === 'sh' || argv[0]?.endsWith('/sh') === true) && argv[1] === '-c';

function signalProcess(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}
