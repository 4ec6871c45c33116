/**
 * The reference control plane (docs/reference-control-plane.md): a working model of an agent orchestrator, so that
 * fleetbench runs out of the box and every scenario has something real to measure. It sees
 * GitHub only through its client (the same request path a real client uses), keeps sessions in
 * durable state, polls on a schedule with a selectable strategy, serves a dashboard, and can be
 * restarted, which drops every in-process cache.
 */

import { sample } from '../base/distribution.ts';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { LruMap } from '../base/lru-map.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import { isRestartKind, type RestartKind, type SessionSpec, type SessionState } from '../contract/types.ts';
import type { GitHubTransport } from '../github/types.ts';
import type { TraceSink } from '../trace/writer.ts';
import { ActorHost } from './actors.ts';
import { TtlCache } from './cache.ts';
import { ClientTime } from './client-time.ts';
import { overrunRuleOf, type ReferenceConfig } from './config.ts';
import { Dashboard } from './dashboard.ts';
import { type CallAttribution, GitHubClient } from './github-client.ts';
import type { PrSummary } from './github-queries.ts';
import { Limiter } from './limiter.ts';
import { type PollCaches, type PollEnv, runGuardedCycle, runNaiveCycle } from './polling.ts';
import { aoSpawnCalls, runAoCycle } from './polling-ao.ts';
import { LearnedReplay, type ObservedWorldEvent } from './polling-learned.ts';
import { defaultNativeRunConfig } from './runs/config.ts';
import type { RunStore } from './runs/durable-state.ts';
import { NativeRuns } from './runs/native-runs.ts';
import { type DurableStore, MemoryStore, type SessionRecord, SessionTable } from './sessions.ts';

/** What the simulated agent does to the world when it addresses review comments. */
export interface AgentWorld {
  /** Push a fix commit to the session's PR; returns the new head SHA. */
  pushFix(sessionId: string): Promise<string | undefined>;
  /**
   * What the world does to sessions' PRs as it happens: the `learned` strategy's only view of
   * GitHub's state (docs/model.md). The run's World has it; without it that strategy cannot run.
   */
  onEvent?(listener: (event: ObservedWorldEvent) => void): void;
}

export interface ReferenceDeps {
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  transport: GitHubTransport;
  token: string;
  config: ReferenceConfig;
  store?: DurableStore;
  /** The native runs' durable state (a served control plane: its state directory). */
  runStore?: RunStore;
  agentWorld?: AgentWorld;
}

export class ReferenceControlPlane {
  readonly sessions: SessionTable;
  /** Sessions that park and wake (docs/reference-control-plane.md#actors-parkwake): see actors.ts. */
  readonly actors: ActorHost;
  /** Native runs on sessions: stages, providers, recovery (runs.ts). */
  readonly runs: NativeRuns;
  private readonly clock: Clock;
  private readonly trace: TraceSink;
  private readonly config: ReferenceConfig;
  private readonly client: GitHubClient;
  private readonly rng: { spawn: Rng; fix: Rng; outage: Rng };
  private readonly dashboard: Dashboard;
  private readonly agentWorld?: AgentWorld;
  private caches!: PollCaches;
  private generation = 0;
  private abort = new AbortController();
  private running = false;
  private cycleCounter = 0;
  /** Cycles under way (one per loop): a graceful restart lets them finish. */
  private readonly runningCycles = new Set<Promise<unknown>>();
  /** Repositories whose own loop runs in this generation (per-project strategies). */
  private loopRepos = new Set<string>();
  /** When this generation's loops started: every loop's cycles are due on the interval from here. */
  private loopAnchor = 0;
  /** Client time per call (gh processes), for ao-0.2 and learned; none for the others. */
  private readonly clientTime?: ClientTime;
  private readonly learned?: LearnedReplay;
  private botLogin?: string;
  private readonly failures = { calls: 0 };
  /** Restarts happen one at a time: a second one waits for the first to be ready. */
  private restarting: Promise<unknown> = Promise.resolve();

  constructor(deps: ReferenceDeps) {
    this.clock = deps.clock;
    this.trace = deps.trace;
    this.config = deps.config;
    this.agentWorld = deps.agentWorld;
    // A modelled control plane (ao-0.2, learned) paces itself as what it models does: not at all.
    const modelled = deps.config.polling.strategy === 'ao-0.2' || deps.config.polling.strategy === 'learned';
    this.client = new GitHubClient(deps.transport, deps.token, deps.clock, {
      maxRps: modelled ? 0 : deps.config.polling.maxRps,
    });
    this.rng = {
      spawn: deps.rng.fork('spawn'),
      fix: deps.rng.fork('agent-fix'),
      outage: deps.rng.fork('outage'),
    };
    this.sessions = new SessionTable(deps.store ?? new MemoryStore(), deps.clock, deps.trace);
    this.dashboard = new Dashboard(
      deps.clock,
      this.client,
      deps.trace,
      { ...deps.config.dashboard, concurrency: deps.config.polling.concurrency },
      () => this.sessions.active(),
    );
    this.resetCaches();
    this.actors = new ActorHost({
      clock: deps.clock,
      rng: deps.rng.fork('actors'),
      trace: deps.trace,
      config: deps.config.actors ?? { lifecycle: 'suspend', resume: 'implicit' },
    });
    this.runs = new NativeRuns({
      clock: deps.clock,
      trace: deps.trace,
      rng: deps.rng.fork('runs'),
      config: deps.config.runs ?? defaultNativeRunConfig(),
      ...(deps.runStore ? { store: deps.runStore } : {}),
    });
    const { polling } = deps.config;
    if (polling.strategy === 'ao-0.2')
      this.clientTime = new ClientTime(deps.clock, {
        cores: polling.aoCpus ?? 2,
        cpuMs: polling.aoGhProcessMs ?? 0,
        waitMs: 0,
        load: polling.hostLoad ?? 0,
      });
    if (polling.strategy === 'learned') {
      const model = polling.learned;
      if (!model) throw new Error('polling.strategy learned needs its model (polling.learned)');
      if (!deps.agentWorld?.onEvent)
        throw new Error(
          "polling.strategy learned replays a model against the run's world, which this control plane does not see (it runs embedded only: docs/model.md)",
        );
      this.clientTime = new ClientTime(deps.clock, {
        cores: polling.modelCores ?? model.cycleTime.cores,
        cpuMs: model.cycleTime.cpuMsPerCall,
        waitMs: model.cycleTime.waitMsPerCall,
        launchMs: model.cycleTime.launchMsPerCall,
        load: polling.hostLoad ?? model.cycleTime.load ?? 0,
      });
      const wholeRun = polling.extrapolated?.find((g) => g.wholeRun)?.part;
      const learned = new LearnedReplay(model, deps.rng.fork('learned'), deps.clock, {
        setState: (session, to) => this.sessions.setState(session, to),
        setPr: (session, pr) => {
          session.pr = pr;
          this.sessions.save(session);
        },
        reviewTold: (session, commentIds) => this.learnedReviewTold(session, commentIds),
        sessionById: (id) => this.sessions.get(id),
        ...(wholeRun !== undefined ? { wholeRunGap: wholeRun } : {}),
      });
      this.learned = learned;
      deps.agentWorld.onEvent((event) => learned.world(event));
    }
  }

  /** The trace says what a modelled strategy is a model of (the run header says it too). */
  private traceModel(): void {
    const { strategy, aoGh, aoGhVersion, learned } = this.config.polling;
    if (strategy !== 'ao-0.2' && strategy !== 'learned') return;
    this.trace.write({
      kind: 'event',
      name: 'controlplane.model',
      t: this.clock.now(),
      labels: { strategy },
      data:
        strategy === 'ao-0.2'
          ? { aoGh: aoGh ?? 'current', ...(aoGhVersion ? { ghVersion: aoGhVersion } : {}) }
          : {
              name: learned?.name,
              traces: learned?.provenance.traces.map((t) => ({
                runId: t.runId,
                sha256: t.sha256,
                scenario: t.scenario,
              })),
              cycleTime: learned?.cycleTime,
              cores: this.config.polling.modelCores ?? learned?.cycleTime.cores,
              load: this.config.polling.hostLoad ?? learned?.cycleTime.load ?? 0,
              ...(this.config.polling.extrapolated
                ? { extrapolated: this.config.polling.extrapolated.map((g) => g.part) }
                : {}),
            },
    });
  }

  /** One poll loop per project (repository), as agent-orchestrator runs them; one for all otherwise. */
  private get loopsPerProject(): boolean {
    const { strategy, learned } = this.config.polling;
    return strategy === 'ao-0.2' || (strategy === 'learned' && learned?.loop.scope === 'project');
  }

  get failedCalls(): number {
    return this.failures.calls;
  }

  private readonly failureListeners: Array<(error: Error) => void> = [];

  /** The control plane found that its run failed for good (a learned replay that made no call). */
  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * The run's end: a learned replay says what it replayed from profiles its model never saw
   * (`controlplane.model.coverage`, docs/model.md#coverage), and fails the run if it made no call
   * where its model planned some: a model whose client times keep every call from starting (or
   * one that cannot be replayed) must not pass for a control plane that costs nothing.
   */
  async atEnd(): Promise<void> {
    if (!this.learned) return;
    const coverage = this.learned.coverage();
    const extrapolated = Object.values(coverage.extrapolated).reduce((a, n) => a + n, 0);
    const share =
      coverage.sessionCycles === 0 ? 1 : (coverage.sessionCycles - extrapolated) / coverage.sessionCycles;
    this.trace.write({
      kind: 'event',
      name: 'controlplane.model.coverage',
      t: this.clock.now(),
      labels: { strategy: 'learned' },
      data: {
        coverage: Math.round(share * 10_000) / 10_000,
        sessionCycles: coverage.sessionCycles,
        extrapolated: coverage.extrapolated,
        plannedCalls: coverage.plannedCalls,
        madeCalls: coverage.madeCalls,
      },
    });
    if (coverage.plannedCalls > 0 && coverage.madeCalls === 0) {
      const { cycleTime, name } = this.learned.model;
      const error = new FleetbenchError(
        'E_MODEL',
        `the learned model's replay made no API call in ${Math.round(this.clock.now() / 1000)} s of run time, where its model (${name}) planned ${coverage.plannedCalls}: each call waits for ${cycleTime.launchMsPerCall} ms to start, ${cycleTime.cpuMsPerCall} ms of CPU and ${cycleTime.waitMsPerCall} ms more (cycleTime) before its request; a replay that makes no call cannot pass for one (docs/model.md#the-replay-polling-strategy-learned)`,
        { exitCode: ExitCode.runFailed },
      );
      for (const listener of this.failureListeners) listener(error);
    }
  }

  /**
   * Load durable state, learn who we are, start polling, and say we are ready. `reason` labels
   * the `controlplane.ready` event: a served control plane started again after a real kill
   * passes the restart kind, as the in-process restart does.
   */
  async start(reason = 'start'): Promise<void> {
    this.sessions.reload();
    this.traceModel();
    const restart = isRestartKind(reason) ? reason : undefined;
    // A served process started after a real restart takes the native runs over from disk.
    if (restart) this.runs.restore(restart);
    this.running = true;
    await this.boot(reason);
    // ...and recovers them at its ready, as restartNow does in-process.
    if (restart && this.running) this.runs.ready(restart);
  }

  /**
   * The old process's side of a served graceful or hot restart: the running poll cycle
   * finishes, runners drain to an item boundary (graceful) or are detached and handed over
   * through the durable state (hot), then everything stops and the process can exit.
   */
  async drain(kind: 'graceful' | 'hot' = 'graceful'): Promise<void> {
    await Promise.allSettled([...this.runningCycles]);
    await this.runs.kill(kind);
    await this.stop();
  }

  /** Stops at once: in-flight calls finish in the emulator but their results are dropped. */
  async stop(): Promise<void> {
    this.running = false;
    this.generation++;
    this.abort.abort();
    this.dashboard.reset();
    this.runs.stop();
  }

  createSession(spec: SessionSpec): SessionRecord {
    const record: SessionRecord = { ...spec, state: 'spawning', createdAt: this.clock.now() };
    this.sessions.add(record);
    if (this.loopsPerProject && this.running) this.ensureLoop(record.repo);
    if (this.learned) {
      // The model moves the session from here (its first cycles), not the spawn timer.
      const learned = this.learned;
      void learned.spawn(record, this.clientTime!, async (operation) => {
        await this.clientTime?.beforeCall();
        return learned.call(
          this.client,
          operation,
          { source: 'cli', session: spec.id },
          { repo: spec.repo, session: record },
        );
      });
      return record;
    }
    if (this.config.polling.strategy === 'ao-0.2') void aoSpawnCalls(this.client, this.clientTime, spec);
    const delay = sample(this.config.spawnTime, this.rng.spawn);
    this.clock.setTimeout(() => {
      const current = this.sessions.get(spec.id);
      if (current?.state === 'spawning') {
        this.trace.write({
          kind: 'span',
          name: 'session.spawn',
          t: record.createdAt,
          dur: delay,
          session: spec.id,
        });
        this.sessions.setState(current, 'working');
      }
    }, delay);
    return record;
  }

  counts(): Record<SessionState, number> {
    return this.sessions.counts();
  }

  setDashboard(open: boolean): void {
    this.dashboard.setOpen(open);
  }

  /** Client-side cache loss without a restart (the `cache-flush` fault, docs/scenarios.md#faults). */
  flushCaches(): void {
    this.resetCaches();
    this.trace.write({ kind: 'event', name: 'controlplane.cache.flush', t: this.clock.now() });
  }

  /**
   * hard: killed at once, in-flight work lost; graceful: the running cycle finishes and runners
   * drain to an item boundary first; hot: like graceful for polling, and runners survive to be
   * reattached. In every case the process is new: caches are gone, state is rebuilt from the
   * durable store, and at `controlplane.ready` every active native run is recovered (runs.ts).
   * The outage (the `controlplane.outage` span) runs from the kill to `ready`.
   */
  restart(kind: RestartKind): Promise<{ outageMs: number }> {
    const next = this.restarting.then(() => this.restartNow(kind));
    this.restarting = next.catch(() => undefined);
    return next;
  }

  private async restartNow(kind: RestartKind): Promise<{ outageMs: number }> {
    const killedAt = this.clock.now();
    this.trace.write({ kind: 'event', name: 'controlplane.restart', t: killedAt, labels: { kind } });
    if (kind !== 'hard') await Promise.allSettled([...this.runningCycles]);
    await this.runs.kill(kind);
    const dashboardWasOpen = this.dashboard.isOpen;
    this.generation++;
    this.abort.abort();
    this.dashboard.reset();
    this.resetCaches();
    const down = this.clock.now();
    await this.clock.sleep(sample(this.config.restartOutage[kind], this.rng.outage));
    this.sessions.reload();
    await this.boot(kind);
    this.trace.write({
      kind: 'span',
      name: 'controlplane.outage',
      t: killedAt,
      dur: this.clock.now() - killedAt,
      labels: { kind },
      data: { drainMs: down - killedAt },
    });
    if (this.running) this.runs.ready(kind);
    if (dashboardWasOpen) this.dashboard.setOpen(true);
    return { outageMs: this.clock.now() - killedAt };
  }

  private resetCaches(): void {
    const { repos, commits, prs } = this.config.cacheSizes;
    this.caches = {
      repoEtags: new LruMap(repos),
      commitEtags: new LruMap(commits),
      prEtags: new LruMap(prs),
      lastReviewCheck: new Map(),
      issueLists: new TtlCache(this.clock, 300_000),
      prSummaries: new TtlCache(this.clock, 5_000),
    };
  }

  private async boot(reason: string): Promise<void> {
    this.abort = new AbortController();
    const generation = this.generation;
    // agent-orchestrator 0.2.0 never asks who it is: the ao-0.2 model does not either, and a
    // learned model makes only the calls it learned.
    const { strategy } = this.config.polling;
    if (strategy !== 'ao-0.2' && strategy !== 'learned') {
      const user = await this.client.get('/user', { source: 'lifecycle', op: 'whoami' });
      if (generation !== this.generation) return;
      this.botLogin = (user.json as { login?: string } | undefined)?.login;
    }
    this.trace.write({ kind: 'event', name: 'controlplane.ready', t: this.clock.now(), labels: { reason } });
    if (reason !== 'start') this.learned?.restarted();
    this.loopAnchor = this.clock.now();
    this.loopRepos = new Set();
    if (!this.loopsPerProject) {
      void this.pollLoop(generation, this.abort.signal);
      return;
    }
    const repos = new Set(
      this.sessions
        .all()
        .filter((s) => s.state !== 'merged' && s.state !== 'closed')
        .map((s) => s.repo),
    );
    for (const repo of [...repos].sort()) this.ensureLoop(repo);
  }

  /** Starts the repository's own loop if it has none yet, on the same schedule as the others. */
  private ensureLoop(repo: string): void {
    if (this.loopRepos.has(repo)) return;
    this.loopRepos.add(repo);
    void this.pollLoop(this.generation, this.abort.signal, repo);
  }

  private env(generation: number): PollEnv {
    return {
      clock: this.clock,
      client: this.client,
      limiter: new Limiter(this.config.polling.concurrency),
      caches: this.caches,
      reviewThrottleMs: this.config.polling.reviewThrottleMs,
      botLogin: this.botLogin,
      alive: () => generation === this.generation && this.running,
      attr: (op, session, cycle): CallAttribution => ({
        source: 'lifecycle',
        op,
        session: session?.id,
        cycle,
        phase: session?.state,
        project: this.config.project,
      }),
      prDetected: (session, pr) => {
        session.pr = pr;
        this.sessions.save(session);
        if (session.state === 'working' || session.state === 'spawning')
          this.sessions.setState(session, 'pr_open');
      },
      applySummary: (session, summary) => this.applySummary(session, summary),
      newReviewComments: (session, ids, newest, keepState) =>
        this.reviewComments(session, ids, newest, keepState),
      failed: () => {
        this.failures.calls++;
      },
    };
  }

  /**
   * Cycles are due every interval from the loop's start. What a cycle that overruns does to the
   * next is the overrun rule (docs/reference-control-plane.md#the-poll-loop): `immediate` starts
   * it as soon as the overrun ends (the lag is recorded on the `poll.cycle` span) and skips only
   * the ticks missed entirely; `skip` drops every tick that came during the cycle, as a
   * setInterval with a busy guard does, and starts on the next tick. Skipped ticks are counted.
   */
  private async pollLoop(generation: number, signal: AbortSignal, repo?: string): Promise<void> {
    const { intervalMs, strategy } = this.config.polling;
    const overrun = overrunRuleOf(this.config.polling);
    // A loop started after the others (its repository's first session) keeps their schedule.
    let due = this.loopAnchor + Math.ceil((this.clock.now() - this.loopAnchor) / intervalMs) * intervalMs;
    try {
      while (generation === this.generation && this.running) {
        const wait = due - this.clock.now();
        if (wait > 0) await this.clock.sleep(wait, signal);
        if (generation !== this.generation) return;
        const started = this.clock.now();
        const cycle = this.cycleCounter++;
        const env = this.env(generation);
        const polled = this.learned ? this.learned.pollable(this.sessions.all()) : this.sessions.active();
        const sessions = repo === undefined ? polled : polled.filter((s) => s.repo === repo);
        const run = this.runCycle(env, sessions, cycle, repo);
        this.runningCycles.add(run);
        const stats = await run.finally(() => this.runningCycles.delete(run));
        if (generation !== this.generation) return;
        const ended = this.clock.now();
        this.trace.write({
          kind: 'span',
          name: 'poll.cycle',
          t: started,
          dur: ended - started,
          labels: repo === undefined ? { strategy } : { strategy, project: repo },
          data: {
            cycle,
            sessions: sessions.length,
            calls: stats.calls,
            lagMs: Math.round(started - due),
            intervalMs,
          },
        });
        due += intervalMs;
        if (ended > due) {
          const late = (ended - due) / intervalMs;
          const missed = overrun === 'skip' ? Math.ceil(late) : Math.floor(late);
          if (missed > 0) {
            this.trace.write({
              kind: 'event',
              name: 'poll.cycle.skipped',
              t: ended,
              labels: repo === undefined ? { count: missed } : { count: missed, project: repo },
            });
            due += missed * intervalMs;
          }
        }
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  }

  private runCycle(
    env: PollEnv,
    sessions: SessionRecord[],
    cycle: number,
    repo?: string,
  ): Promise<{ calls: number }> {
    const { strategy } = this.config.polling;
    if (strategy === 'naive') return runNaiveCycle(env, sessions, cycle);
    if (strategy === 'ao-0.2')
      return runAoCycle(env, sessions, cycle, this.config.polling.aoGh ?? 'current', this.clientTime!);
    if (this.learned)
      return this.learned.runCycle(env, sessions, cycle, repo ?? '', this.clientTime!, (n) => new Limiter(n));
    return runGuardedCycle(env, sessions, cycle);
  }

  /**
   * A learned model's agent reaction: the control plane tells the agent of the review; after
   * `sessions.fix-after` the agent makes the calls the model learned per review, pushes a fix and
   * makes those it learned per comment (a reply to each, when that is what they were).
   */
  private learnedReviewTold(session: SessionRecord, commentIds: number[]): void {
    const learned = this.learned!;
    const delay = this.tellAgent(session, commentIds.length);
    this.clock.setTimeout(() => {
      void (async () => {
        const current = this.sessions.get(session.id);
        if (!current?.pr || !this.running) return;
        const started = this.clock.now();
        const attr = (op?: string): CallAttribution => ({
          source: 'agent',
          ...(op !== undefined ? { op } : {}),
          session: session.id,
          phase: current.state,
          project: this.config.project,
        });
        const { perReaction, perComment } = learned.agentCalls();
        for (const c of perReaction)
          for (let i = learned.countOf(c.mean); i > 0; i--)
            await learned.call(this.client, c.operation, attr(), { repo: current.repo, session: current });
        const sha = await this.agentWorld?.pushFix(session.id);
        for (const c of perComment) {
          const op = learned.operation(c.operation);
          for (const id of commentIds)
            for (let i = learned.countOf(c.mean); i > 0; i--) {
              if (op?.method === 'POST' && current.pr)
                await this.client.request(
                  'POST',
                  `/repos/${current.repo}/pulls/${current.pr.number}/comments`,
                  attr(op.op),
                  {
                    body: {
                      body: sha ? `Addressed in ${sha.slice(0, 7)}.` : 'Addressed.',
                      in_reply_to: id,
                    },
                  },
                );
              else
                await learned.call(this.client, c.operation, attr(), {
                  repo: current.repo,
                  session: current,
                });
            }
        }
        this.trace.write({
          kind: 'span',
          name: 'agent.review.addressed',
          t: started,
          dur: this.clock.now() - started,
          session: session.id,
          data: { comments: commentIds.length },
        });
      })();
    }, delay);
  }

  /** The agent is told of review comments (`agent.review.received`); returns when it has fixed them. */
  private tellAgent(session: SessionRecord, comments: number): number {
    this.trace.write({
      kind: 'event',
      name: 'agent.review.received',
      t: this.clock.now(),
      session: session.id,
      data: { comments },
    });
    return sample(this.config.fixAfter, this.rng.fix);
  }

  private applySummary(session: SessionRecord, summary: PrSummary): void {
    if (summary.headSha && session.pr && summary.headSha !== session.pr.headSha)
      session.pr.headSha = summary.headSha;
    if (summary.ci) session.ci = summary.ci;
    if (summary.reviewDecision !== undefined) session.reviewDecision = summary.reviewDecision ?? undefined;
    this.sessions.save(session);
    if (summary.state === 'MERGED') this.sessions.setState(session, 'merged');
    else if (summary.state === 'CLOSED') this.sessions.setState(session, 'closed');
    else if (summary.reviewDecision === 'CHANGES_REQUESTED') this.sessions.setState(session, 'review');
  }

  /** New review comments go to the session's agent, which pushes a fix and replies to each. */
  private reviewComments(session: SessionRecord, ids: number[], newest: number, keepState = false): void {
    session.lastCommentId = newest;
    this.sessions.save(session);
    if (ids.length === 0) return;
    if (!keepState) this.sessions.setState(session, 'review');
    const delay = this.tellAgent(session, ids.length);
    this.clock.setTimeout(() => void this.addressComments(session.id, ids), delay);
  }

  private async addressComments(sessionId: string, ids: number[]): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session?.pr || !this.running) return;
    const started = this.clock.now();
    const sha = await this.agentWorld?.pushFix(sessionId);
    const attr: CallAttribution = {
      source: 'agent',
      op: 'reply-review-comment',
      session: sessionId,
      phase: session.state,
      project: this.config.project,
    };
    for (const id of ids) {
      await this.client.request('POST', `/repos/${session.repo}/pulls/${session.pr.number}/comments`, attr, {
        body: { body: sha ? `Addressed in ${sha.slice(0, 7)}.` : 'Addressed.', in_reply_to: id },
      });
    }
    this.trace.write({
      kind: 'span',
      name: 'agent.review.addressed',
      t: started,
      dur: this.clock.now() - started,
      session: sessionId,
      data: { comments: ids.length },
    });
  }
}
