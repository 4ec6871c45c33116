/**
 * The `paperclip` target: the real Paperclip server as the system under test
 * (docs/paperclip.md). Each session is a Paperclip agent whose adapter runs a fleetbench stand-in
 * (standin.mjs) in place of a coding agent; each run is an on-demand wake of that agent, which
 * Paperclip queues, starts, spawns, and (for its local adapters) retries after a lost process.
 * What happened is read back from Paperclip's own records (run rows, run logs) and written as
 * fleetbench's speed records with Paperclip's timestamps (records.ts). Restarts are real: kill -9
 * or SIGTERM of the server process, then a new one on the same home and database.
 *
 * Real clock only, at time scale 1: Paperclip's own timers (its 60 s run leases, the 5 min
 * staleness of its orphan reaper, 30 s retry delays) run on the wall clock.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetbenchError } from '../../base/errors.ts';
import type { ProcessCpu } from '../../base/process-cpu.ts';
import type { Rng } from '../../base/rng.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import type { Clock } from '../../clock/clock.ts';
import type { PaperclipAdapter, TargetRef } from '../../contract/target-ref.ts';
import type {
  ProviderFault,
  RestartKind,
  RunNotice,
  RunStartSpec,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
} from '../../contract/types.ts';
import type { TraceSink } from '../../trace/writer.ts';
import type { Scenario, StandinDelays } from '../../workload/scenario.ts';
import { countSessionStates } from '../session-counts.ts';
import { type HeartbeatRun, PaperclipApi, type PaperclipApiError } from './api.ts';
import {
  type PaperclipInstall,
  type PaperclipUser,
  paperclipUser,
  resolvePaperclipInstall,
} from './install.ts';
import { REAL_AGENT_OF, RealAgents } from './real-agents.ts';
import { type RecordContext, type RunChain, writeRunChain, writeRunCreated } from './records.ts';
import { BOOT_TIMEOUT_MS, chownTree, PaperclipServer, type ServerBoot } from './server.ts';

/** fleetbench's provider adapter names → Paperclip's local adapter that runs that CLI. */
const LOCAL_ADAPTER_OF: Record<string, PaperclipAdapter | undefined> = { codex: 'codex_local' };

type PaperclipTargetRef = Extract<TargetRef, { kind: 'paperclip' }>;

/**
 * The stand-in's delays (ms ranges), the provider's share of every figure. Modelled on a codex
 * CLI (docs/paperclip.md#the-stand-in-agents): a quick start, a session load when it resumes one,
 * a turn of a few tool calls that lasts 10-30 s, so restarts land in the middle of runs.
 */
export const STANDIN_DELAYS: StandinSettings = {
  bootMs: [300, 900],
  sessionLoadMs: [800, 2_500],
  firstEventMs: [200, 800],
  itemGapMs: [1_500, 4_000],
  items: [3, 6],
};

type StandinSettings = StandinDelays;

/** When a boot was ready: Paperclip's own time of its ready phase, else when fleetbench saw it. */
const readyAtOf = (boot: ServerBoot) => boot.paperclipReadyAt ?? boot.readyAt;

const POLL_MS = 1_000;
/** A run that failed waits this long for the retry Paperclip may queue for it. */
const RETRY_WAIT_MS = 15_000;

export interface PaperclipTargetOptions {
  scenario: Scenario;
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  /** The run's directory: paperclip.log (the server's own output) goes there. */
  outDir: string;
  ref: PaperclipTargetRef;
  /** Where the server's process tree, PostgreSQL's and the agents' are registered (src/base/process-cpu.ts). */
  processes?: ProcessCpu;
}

interface SessionInfo {
  agentId: string;
  /** Paperclip's adapter type: codex_local, claude_local (real agents) or process. */
  adapter: string;
  /** The chain in flight, if any. */
  chain?: Chain;
}

interface Chain extends RunChain {
  /** The attempt being followed (its heartbeat run id). */
  current: string;
  /** Rows seen so far, by heartbeat run id. */
  rows: Map<string, HeartbeatRun>;
  /** Wall ms when the current attempt was first seen finished. */
  finishedSeenAt?: number;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted', 'timed_out', 'error']);

export class PaperclipTarget implements Target {
  readonly name = 'paperclip';
  private readonly install: PaperclipInstall;
  private readonly user: PaperclipUser | undefined;
  private readonly api: PaperclipApi;
  private server?: PaperclipServer;
  private companyId = '';
  private readonly sessions = new Map<string, SessionInfo>();
  private readonly states = new Map<string, SessionState>();
  private readonly stateListeners: SessionStateListener[] = [];
  private readonly noticeListeners: Array<(notice: RunNotice) => void> = [];
  private readonly failureListeners: Array<(error: Error) => void> = [];
  private readonly restarts: Array<{ kind: string; killAt: number }> = [];
  private poller?: NodeJS.Timeout;
  private polling = false;
  private stopping = false;
  private restarting = false;
  /** Resolved while no restart is under way (calls wait on it). */
  private restarted: Promise<void> = Promise.resolve();
  private slowdownTimer?: NodeJS.Timeout;
  /** Agents with a codex session saved by a finished run: their next run starts warm. */
  private readonly savedSessions = new Set<string>();
  /** `agents: real`: the real CLIs and the run's provider emulator (docs/agents.md). */
  private readonly realAgents: RealAgents | undefined;
  /** The server's first boot (before the run, or at its start). */
  private firstBoot?: ServerBoot;
  /** The stand-ins' delays: the defaults, with what the scenario's `standin:` sets. */
  private readonly standin: StandinSettings;

  constructor(private readonly options: PaperclipTargetOptions) {
    if (options.clock.kind !== 'real')
      throw new FleetbenchError('E_TARGET', 'the paperclip target runs on the real clock only');
    if (options.scenario.timeScale !== 1) {
      throw new FleetbenchError(
        'E_TARGET',
        `the paperclip target runs at time scale 1 (asked: ${options.scenario.timeScale}): Paperclip's own timers (run leases, its orphan reaper, retry delays) run on the wall clock`,
        { hint: 'drop --time-scale' },
      );
    }
    checkScenario(options.scenario, options.ref);
    this.standin = { ...STANDIN_DELAYS, ...options.scenario.standin };
    // Refused before anything starts: the install and its Node are found and run (or the run stops here).
    this.user = paperclipUser();
    this.install = resolvePaperclipInstall(options.ref.dir, this.user);
    const agents = options.scenario.agents;
    this.realAgents = agents
      ? new RealAgents(agents.provider, providersOf(options.scenario), this.user)
      : undefined;
    this.api = new PaperclipApi(() => this.server?.apiUrl ?? 'http://127.0.0.1:0/api');
  }

  /** What the run header shows. */
  describe(): string[] {
    return [
      `Paperclip ${this.install.serverVersion} on Node ${this.install.nodeVersion} from ${this.install.origin}${this.user ? `, as the user ${this.user.name}` : ''}; runs at time scale 1, restarts are real (kill -9, SIGTERM; a hot restart is done as a graceful one)`,
      ...(this.realAgents ? [this.realAgents.describe()] : []),
    ];
  }

  private now(): number {
    return this.options.clock.now();
  }

  /** Wall-clock ms (Paperclip's timestamps, the boot's moments) → run time (scale 1). */
  private wallToRunTime(wallMs: number): number {
    return wallMs - this.options.clock.epochMs;
  }

  private toRunTime = (iso: string): number => this.wallToRunTime(Date.parse(iso));

  /**
   * The server's first boot, before the run's time starts (the engine starts it at ready): its
   * 20-50 s are not the workload's. Its records are written by `start`, at run time 0.
   */
  async boot(): Promise<void> {
    if (this.server) return;
    const workDir = mkdtempSync(join(tmpdir(), 'fleetbench-paperclip-'));
    this.server = new PaperclipServer({
      install: this.install,
      user: this.user,
      workDir,
      logPath: join(this.options.outDir, 'paperclip.log'),
      onUnexpectedExit: (how) => this.onServerDied(how),
      // Its tree is the control plane's from its spawn: a restart's boot is not fleetbench's.
      onSpawned: (pid) => this.options.processes?.addRoot(pid, 'controlPlane'),
    });
    const server = this.server;
    // The agents Paperclip starts (stand-ins or the real CLIs) are told from Paperclip by their program.
    const agentPrograms = [join(server.standinDir, 'standin.mjs'), ...(this.realAgents?.programs() ?? [])];
    this.options.processes?.addCommand('agents', (line) =>
      agentPrograms.some((program) => line.includes(program)),
    );
    try {
      await this.server.prepare();
      this.firstBoot = await this.server.start().catch((error: Error) => {
        throw new FleetbenchError('E_TARGET', `Paperclip did not start: ${error.message}`, {
          hint: `its own output is in ${join(this.options.outDir, 'paperclip.log')}`,
        });
      });
      this.registerProcesses();
    } catch (error) {
      // Whatever started (PostgreSQL, a half-booted server) does not outlive a failed start.
      await this.closeAfterFailedStart();
      throw error;
    }
  }

  async start(): Promise<void> {
    // Booted already when the engine asked for it before the run; otherwise now, in run time.
    await this.boot();
    const boot = this.firstBoot!;
    try {
      this.writeBoot(boot, 'start');
      this.options.trace.write({
        kind: 'event',
        name: 'paperclip.started',
        t: this.now(),
        labels: { version: boot.version },
        data: {
          version: boot.version,
          node: this.install.nodeVersion,
          origin: this.install.origin,
          user: this.user?.name ?? null,
          pid: boot.pid,
          port: boot.port,
          bootMs: Math.round(readyAtOf(boot) - boot.spawnedAt),
          standin: this.standin,
        },
      });
      const company = await this.api.createCompany(`fleetbench ${this.options.scenario.name}`);
      this.companyId = company.id;
      await this.realAgents?.start(this.options.clock, this.options.rng.fork('provider'), this.options.trace);
    } catch (error) {
      await this.closeAfterFailedStart();
      throw error;
    }
    this.poller = setInterval(() => void this.poll(), POLL_MS);
  }

  private async closeAfterFailedStart(): Promise<void> {
    // Whatever started (PostgreSQL, a half-booted server, the provider emulator) does not outlive a failed start.
    this.stopping = true;
    await this.server?.close();
    await this.realAgents?.stop(this.options.trace, this.now());
  }

  /** Starts a server again (after a restart) and writes its boot. */
  private async startServer(reason: string): Promise<ServerBoot> {
    const boot = await this.server!.start();
    this.registerProcesses();
    this.writeBoot(boot, reason);
    return boot;
  }

  /** PostgreSQL's tree, which leaves the server's (found by its data directory), as the control plane's. */
  private registerProcesses(): void {
    const processes = this.options.processes;
    if (!processes || !this.server) return;
    for (const { pid, postmaster } of this.server.tiedPids())
      if (postmaster) processes.addRoot(pid, 'controlPlane');
  }

  /**
   * A boot's record: spawn → ready (Paperclip's own time of it), with listening and CPU. The
   * first boot, done before the run's time started, is written at 0 with `beforeRun` (its
   * duration is the boot's; it ended when the run began).
   */
  private writeBoot(boot: ServerBoot, reason: string): void {
    const spawned = this.wallToRunTime(boot.spawnedAt);
    const ready = this.wallToRunTime(readyAtOf(boot));
    const beforeRun = spawned < 0;
    this.options.trace.write({
      kind: 'span',
      name: 'controlplane.boot',
      t: Math.max(0, spawned),
      dur: Math.max(0, ready - spawned),
      labels: { reason },
      data: {
        pid: boot.pid,
        listeningMs: Math.round(boot.listeningAt - boot.spawnedAt),
        readyMs: Math.round(ready - spawned),
        cpuMs: Math.round(boot.cpuMs),
        ...(beforeRun ? { beforeRun: true } : {}),
      },
    });
  }

  private onServerDied(how: string): void {
    if (this.stopping) return;
    this.options.trace.write({
      kind: 'event',
      name: 'paperclip.exited',
      t: this.now(),
      labels: { reason: how },
    });
    const error = new FleetbenchError(
      'E_TARGET',
      `the Paperclip server exited during the run (${how}); its own output is in ${join(this.options.outDir, 'paperclip.log')}`,
    );
    for (const listener of this.failureListeners) listener(error);
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  // ── Sessions: one Paperclip agent each ─────────────────────────────────────────────────────

  async createSession(spec: SessionSpec): Promise<void> {
    this.setState(spec.id, 'spawning');
    // The adapter is known when the session's first run starts; the agent is made then.
  }

  private async agentFor(session: string, provider: string): Promise<SessionInfo> {
    const known = this.sessions.get(session);
    if (known) return known;
    const server = this.server!;
    const cwd = join(server.agentsDir, session);
    if (this.realAgents) {
      const real = this.realAgents.adapterConfig(session, provider, cwd, this.install.node);
      if (this.user) chownTree(cwd, this.user);
      const agent = await this.api.createAgent(this.companyId, {
        name: session,
        adapterType: real.adapter,
        adapterConfig: real.config,
      });
      const info: SessionInfo = { agentId: agent.id, adapter: real.adapter };
      this.sessions.set(session, info);
      this.setState(session, 'working');
      return info;
    }
    const adapter = this.options.ref.adapter ?? LOCAL_ADAPTER_OF[provider];
    if (adapter === undefined) throw new Error(`no Paperclip adapter for provider '${provider}'`);
    makeDirectories(join(cwd, 'codex-home'), 0o755);
    if (this.user) await chownDirs([cwd, join(cwd, 'codex-home')], this.user);
    const standin = JSON.stringify({ ...this.standin, control: server.controlFile });
    const adapterConfig: Record<string, unknown> =
      adapter === 'codex_local'
        ? {
            engine: 'cli',
            command: join(server.standinDir, 'codex'),
            cwd,
            timeoutSec: 600,
            env: {
              // The stand-in calls no model: the key only satisfies the adapter's credential check.
              OPENAI_API_KEY: 'fleetbench-stand-in',
              CODEX_HOME: join(cwd, 'codex-home'),
              FLEETBENCH_STANDIN: standin,
            },
          }
        : {
            command: join(server.standinDir, 'process'),
            args: [],
            cwd,
            timeoutSec: 600,
            env: { FLEETBENCH_STANDIN: standin },
          };
    const agent = await this.api.createAgent(this.companyId, {
      name: session,
      adapterType: adapter,
      adapterConfig,
    });
    const info: SessionInfo = { agentId: agent.id, adapter };
    this.sessions.set(session, info);
    this.setState(session, 'working');
    return info;
  }

  private setState(session: string, to: SessionState): void {
    const from = this.states.get(session) ?? 'none';
    if (from === to) return;
    this.states.set(session, to);
    this.options.trace.write({
      kind: 'event',
      name: 'session.state',
      t: this.now(),
      session,
      labels: { from, to },
    });
    for (const listener of this.stateListeners) listener(session, from, to);
  }

  async sessionCounts(): Promise<Partial<Record<SessionState, number>>> {
    return countSessionStates(this.states.values());
  }

  onSessionState(listener: SessionStateListener): void {
    this.stateListeners.push(listener);
  }

  // ── Runs: one wake each ────────────────────────────────────────────────────────────────────

  async startRun(spec: RunStartSpec): Promise<{ run: string; start: 'cold' | 'warm' }> {
    const info = await this.agentFor(spec.session, spec.adapter);
    return this.wake(spec.session, info);
  }

  /** The next turn is the agent's next wake: a heartbeat run of its own (warm when codex resumes). */
  async sendInput(session: string): Promise<void> {
    const info = this.sessions.get(session);
    if (!info) throw new Error(`no Paperclip agent for session ${session}`);
    await this.wake(session, info);
  }

  async endRun(): Promise<void> {
    // A wake is one heartbeat run, ended by Paperclip: nothing to end.
  }

  private async wake(session: string, info: SessionInfo): Promise<{ run: string; start: 'cold' | 'warm' }> {
    if (info.chain) throw new Error(`session ${session} already has a run in flight`);
    this.options.trace.write({
      kind: 'event',
      name: 'input.received',
      t: this.now(),
      session,
      labels: { adapter: info.adapter },
    });
    const answer = await this.whenUp(() => this.api.wake(info.agentId));
    // The agent resumes its codex session when it has one saved (Paperclip hands it back).
    const warm =
      (info.adapter === 'codex_local' || info.adapter === 'claude_local') &&
      this.savedSessions.has(info.agentId);
    if ('skipped' in answer) {
      // No run: recorded and counted as such, never a run without time; the session goes on.
      this.options.trace.write({
        kind: 'event',
        name: 'run.skipped',
        t: this.now(),
        session,
        labels: { adapter: info.adapter },
        data: { status: answer.skipped, httpStatus: 202 },
      });
      for (const listener of this.noticeListeners)
        listener({ type: 'run.skipped', session, run: '', turn: 1 });
      return { run: '', start: warm ? 'warm' : 'cold' };
    }
    const row = answer;
    writeRunCreated(
      this.options.trace,
      { id: row.id, session, adapter: info.adapter, createdAt: row.createdAt, warm },
      this.toRunTime,
    );
    const agent = this.realAgents?.identity(info.adapter);
    info.chain = {
      id: row.id,
      session,
      adapter: info.adapter,
      ...(agent ? { agent } : {}),
      start: warm ? 'warm' : 'cold',
      attempts: [],
      current: row.id,
      rows: new Map([[row.id, row]]),
    };
    return { run: row.id, start: warm ? 'warm' : 'cold' };
  }

  /**
   * A call that must reach the server: while a restart is under way, or the server does not
   * answer (it is starting) or answers 5xx, it waits and tries again, as a client of a restarting
   * server would, for as long as a boot may take. A 4xx is an answer, and is thrown.
   */
  private async whenUp<T>(call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + BOOT_TIMEOUT_MS + 60_000;
    for (;;) {
      await this.restarted;
      try {
        return await call();
      } catch (error) {
        const status = (error as PaperclipApiError).status;
        if ((status !== undefined && status < 500) || this.stopping || Date.now() > deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  onRunNotice(listener: (notice: RunNotice) => void): void {
    this.noticeListeners.push(listener);
  }

  /** Follows every run in flight: one list of each busy agent's latest runs a second. */
  private async poll(): Promise<void> {
    if (this.polling || this.stopping || this.restarting) return;
    this.polling = true;
    try {
      for (const info of this.sessions.values()) {
        const chain = info.chain;
        if (!chain) continue;
        let rows: HeartbeatRun[];
        try {
          rows = await this.api.agentRuns(this.companyId, info.agentId);
        } catch {
          continue; // The server is down or busy: the next tick asks again.
        }
        for (const row of rows)
          if (row.id === chain.current || chain.rows.has(row.id) || row.retryOfRunId === chain.current)
            chain.rows.set(row.id, row);
        await this.advance(info, chain);
      }
    } finally {
      this.polling = false;
    }
  }

  /** Moves a chain on: to Paperclip's retry of its attempt, or to its end. */
  private async advance(info: SessionInfo, chain: Chain): Promise<void> {
    const current = chain.rows.get(chain.current);
    if (!current || !TERMINAL.has(current.status)) return;
    const retry = [...chain.rows.values()].find((row) => row.retryOfRunId === chain.current);
    if (!retry) {
      chain.finishedSeenAt ??= Date.now();
      if (current.status !== 'succeeded' && Date.now() - chain.finishedSeenAt < RETRY_WAIT_MS) return;
    }
    // The attempt's log, once: when the server does not answer, the next tick asks again.
    const log = await this.api.log(current.id).catch(() => undefined);
    if (log === undefined) return;
    chain.attempts.push({ run: current, log });
    if (!retry) {
      this.conclude(info, chain);
      return;
    }
    chain.current = retry.id;
    chain.finishedSeenAt = undefined;
  }

  /** What a run chain's records are timed with (records.ts). */
  private recordContext(): Omit<RecordContext, 'toRunTime'> {
    const agents = this.realAgents;
    return {
      restarts: this.restarts,
      now: this.now(),
      ...(agents
        ? { firstModelRequest: (session, from, until) => agents.firstRequest(session, from, until) }
        : {}),
    };
  }

  private conclude(info: SessionInfo, chain: Chain): void {
    info.chain = undefined;
    const last = chain.attempts[chain.attempts.length - 1]?.run;
    if (last?.sessionIdAfter) this.savedSessions.add(info.agentId);
    writeRunChain(this.options.trace, chain, {
      toRunTime: this.toRunTime,
      ...this.recordContext(),
    });
    for (const listener of this.noticeListeners)
      listener({ type: 'turn.completed', session: chain.session, run: chain.id, turn: 1 });
  }

  // ── Faults ────────────────────────────────────────────────────────────────────────────────

  /**
   * A real restart of the server process: `hard` is kill -9 of the server alone, `graceful` is
   * SIGTERM (Paperclip drains: it interrupts its runs and stops PostgreSQL). A new server then
   * starts on the same home and database. Ready is Paperclip's own time of its ready phase.
   */
  async restart(kind: RestartKind): Promise<{ outageMs: number }> {
    if (kind === 'hot')
      throw new Error("the paperclip target has no hot restart (Paperclip's needs its native runner)");
    const { trace } = this.options;
    const killAt = this.now();
    this.restarts.push({ kind, killAt });
    trace.write({ kind: 'event', name: 'controlplane.restart', t: killAt, labels: { kind } });
    this.restarting = true;
    let done = () => {};
    this.restarted = new Promise<void>((resolve) => {
      done = resolve;
    });
    try {
      await this.server!.kill(kind);
      trace.write({ kind: 'event', name: 'paperclip.server.exited', t: this.now(), labels: { kind } });
      const boot = await this.startServer(kind).catch((error: Error) => {
        throw new FleetbenchError(
          'E_TARGET',
          `Paperclip did not come back after a ${kind} restart: ${error.message}`,
          {
            hint: `its own output is in ${join(this.options.outDir, 'paperclip.log')}`,
          },
        );
      });
      const readyAt = this.wallToRunTime(readyAtOf(boot));
      trace.write({ kind: 'event', name: 'controlplane.ready', t: readyAt, labels: { reason: kind } });
      trace.write({
        kind: 'span',
        name: 'controlplane.outage',
        t: killAt,
        dur: Math.max(0, readyAt - killAt),
        labels: { kind },
        data: { pidAfter: boot.pid, listeningMs: Math.round(boot.listeningAt - boot.spawnedAt) },
      });
      return { outageMs: readyAt - killAt };
    } finally {
      this.restarting = false;
      done();
    }
  }

  /**
   * Provider faults on the stand-ins: `crash` kills the agent process of runs in flight (kill -9,
   * as an OOM kill would), `slowdown` stretches the delays of stand-ins started while it lasts.
   */
  async providerFault(fault: ProviderFault): Promise<void> {
    if (fault.type === 'slowdown' && this.realAgents) {
      this.realAgents.slowdown(fault.factor, this.now(), fault.durationMs ?? 30_000);
      return;
    }
    if (fault.type === 'slowdown') {
      writeFileSync(this.server!.controlFile, `${JSON.stringify({ slowdown: fault.factor })}\n`);
      clearTimeout(this.slowdownTimer);
      this.slowdownTimer = setTimeout(() => {
        if (this.server) writeFileSync(this.server.controlFile, '{}\n');
      }, fault.durationMs ?? 30_000);
      this.slowdownTimer.unref();
      return;
    }
    let killed = 0;
    for (const info of this.sessions.values()) {
      if (killed >= fault.count || !info.chain) continue;
      const row = await this.api.run(info.chain.current).catch(() => undefined);
      if (row?.status !== 'running' || !row.processPid) continue;
      try {
        process.kill(row.processPid, 'SIGKILL');
        killed++;
        this.options.trace.write({
          kind: 'event',
          name: 'provider.crash',
          t: this.now(),
          session: info.chain.session,
          labels: { adapter: info.adapter },
          data: { run: info.chain.id, pid: row.processPid },
        });
      } catch {
        // The process ended meanwhile.
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.poller);
    clearTimeout(this.slowdownTimer);
    // Runs in flight keep what is known of them: their attempts so far, with their logs.
    for (const info of this.sessions.values()) {
      const chain = info.chain;
      if (!chain) continue;
      info.chain = undefined;
      const current = chain.rows.get(chain.current);
      // Briefly: a run that is being stopped does not wait on a server that does not answer.
      if (current)
        chain.attempts.push({ run: current, log: await this.api.log(current.id, 5_000).catch(() => []) });
      if (chain.attempts.length > 0)
        writeRunChain(this.options.trace, chain, {
          toRunTime: this.toRunTime,
          ...this.recordContext(),
        });
    }
    await this.server?.close();
    await this.realAgents?.stop(this.options.trace, this.now());
  }
}

/** The providers a scenario's agent runs use (its executors' adapters). */
function providersOf(scenario: Scenario): string[] {
  return scenario.executors.flatMap((e) =>
    e.type === 'chaos-wave' || e.type === 'native-runs' ? [e.adapter] : [],
  );
}

/** What a scenario asks of the target that Paperclip cannot do, refused before anything starts. */
function checkScenario(scenario: Scenario, ref: PaperclipTargetRef): void {
  if (!scenario.executors.some((e) => e.type === 'chaos-wave' || e.type === 'native-runs')) {
    throw new FleetbenchError(
      'E_TARGET',
      `scenario ${scenario.name}: the paperclip target drives agent runs (chaos-wave and native-runs executors), and it has none: Paperclip's agents here make no GitHub calls to measure`,
      { hint: 'fleetbench run paperclip-chaos-c4 (or paperclip-wakes); docs/paperclip.md' },
    );
  }
  if (scenario.agents && ref.adapter !== undefined)
    throw new FleetbenchError(
      'E_TARGET',
      `agents: real runs the real CLIs under Paperclip's codex_local and claude_local adapters, not under paperclip/${ref.adapter}`,
      { hint: 'drop the adapter from --target, or the agents setting' },
    );
  for (const executor of scenario.executors) {
    if ((executor.type === 'chaos-wave' || executor.type === 'native-runs') && scenario.agents) {
      if (REAL_AGENT_OF[executor.adapter] === undefined)
        throw new FleetbenchError(
          'E_TARGET',
          `executor ${executor.type}: real agents under Paperclip are codex (codex_local) and claude (claude_local), not ${executor.adapter}`,
          { hint: 'adapter: codex or claude (opencode runs with fleetbench agents try: docs/agents.md)' },
        );
      continue;
    }
    if ((executor.type === 'chaos-wave' || executor.type === 'native-runs') && ref.adapter === undefined) {
      if (LOCAL_ADAPTER_OF[executor.adapter] === undefined) {
        throw new FleetbenchError(
          'E_TARGET',
          `executor ${executor.type}: the paperclip target has a stand-in for codex (Paperclip's codex_local adapter), not for ${executor.adapter}`,
          { hint: 'adapter: codex, or --target paperclip/process for the process adapter' },
        );
      }
    }
  }
}

async function chownDirs(dirs: string[], user: PaperclipUser): Promise<void> {
  const { chown } = await import('node:fs/promises');
  for (const dir of dirs) await chown(dir, user.uid, user.gid);
}
