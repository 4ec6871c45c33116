/**
 * Native runs in the reference control plane (SPEC §4). A run on a session goes
 *
 *   input.received → run.created → run.claim → run.prepare → run.runtime → run.runner.launch
 *     → provider.boot (cold; warm boots contain a provider.session.load) → first activity
 *
 * and then executes turns: the provider emits `provider.event`s (turn submitted/accepted/
 * started, item started/delta/completed, tool execution started/progressed/completed, session
 * resumed, diagnostics). The control plane's stages are spans written when they end; the
 * runner's spans (`provider.boot`, `provider.session.load`) too. A detached runner (hot restart)
 * pauses its output (events) until it is reattached.
 *
 * Restarts (ReferenceControlPlane.restart calls `kill` at the kill and `ready` at
 * `controlplane.ready`): `hard` kills the runners, `graceful` drains them to an item boundary
 * first, `hot` detaches them. At `controlplane.ready` every active run is
 * reclaimed: hard/graceful relaunch a runner that reloads the provider session
 * (`provider.session.load`, then `session.resumed`), hot reattaches the runner (no reload).
 *
 * Durable state (survives restarts): the run table, queued inputs, turn progress and the
 * provider's saved sessions (their sizes). Everything random comes from per-run forks of the
 * run manager's Rng (control-plane draws and provider draws apart), so slowing the control plane
 * does not change what the providers draw.
 */
import type { Clock } from '../clock/clock.ts';
import { type Distribution, sample } from '../distribution.ts';
import type { Rng } from '../rng.ts';
import { ADAPTERS, type Adapter, isAdapter, type RestartKind, type RunNotice } from '../targets/types.ts';
import type { Labels } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import { Limiter } from './limiter.ts';
import {
  draw,
  firstItemKind,
  type ItemKind,
  laterItemKind,
  loadDuration,
  PROVIDER_PROFILES,
  type ProviderProfile,
  type StartKind,
} from './providers.ts';

export type LaunchReason = 'start' | 'recovery' | 'crash';

export interface NativeRunConfig {
  /** Per adapter: a factor on boot, session load and first-activity latency (1: as profiled). */
  providers: Record<Adapter, { slowdown: number }>;
  controlPlane: {
    /** The control plane's own stages of a run start. */
    stages: { claim: Distribution; prepare: Distribution; runtime: Distribution; launch: Distribution };
    /** Input received → the run exists. */
    dispatch: Distribution;
    /** Recovery: reading one run back from durable state before it is claimed again. */
    reclaim: Distribution;
    /** Extra control-plane recovery work per run (the `control-plane.recovery-delay` knob). */
    recoveryDelay: Distribution;
    /** Runs recovered at once after a restart. */
    recoveryConcurrency: number;
    /** Hot restart: reattaching a surviving runner. */
    reattach: Distribution;
    /** A provider process died → the control plane notices. */
    crashDetect: Distribution;
    /** Graceful restart: how long runners get to reach an item boundary. */
    drainTimeoutMs: number;
  };
}

const lognormal = (median: number, p95: number): Distribution => ({ kind: 'lognormal', median, p95 });

export function defaultNativeRunConfig(): NativeRunConfig {
  return {
    providers: { claude: { slowdown: 1 }, codex: { slowdown: 1 }, opencode: { slowdown: 1 } },
    controlPlane: {
      stages: {
        claim: lognormal(100, 250),
        prepare: lognormal(220, 500),
        runtime: lognormal(300, 700),
        launch: lognormal(180, 400),
      },
      dispatch: lognormal(60, 300),
      reclaim: lognormal(100, 250),
      recoveryDelay: { kind: 'fixed', ms: 0 },
      recoveryConcurrency: 4,
      reattach: lognormal(250, 700),
      crashDetect: lognormal(1_000, 3_000),
      drainTimeoutMs: 10_000,
    },
  };
}

export type ProviderFaultSpec =
  | { type: 'slowdown'; adapter?: string; factor: number; durationMs?: number }
  | { type: 'crash'; adapter?: string; count: number };

interface TurnState {
  index: number;
  items: ItemKind[];
  done: number;
  startedAt: number;
  /** The run's first turn: its first item is the run's first activity. */
  first: boolean;
}

interface NativeRun {
  id: string;
  session: string;
  adapter: Adapter;
  profile: ProviderProfile;
  start: StartKind;
  createdAt: number;
  /** Control-plane draws, provider draws, and knob draws: apart, so one never shifts another. */
  cpRng: Rng;
  providerRng: Rng;
  knobRng: Rng;
  inputs: string[];
  turns: number;
  turn?: TurnState;
  runner?: Runner;
  launching: boolean;
  ended: boolean;
  /** The provider's saved session was closed cleanly (a drained runner, or never opened). */
  cleanSave: boolean;
  /** The runner's phase, as durable state knows it: none, booting (boot or load), running. */
  runnerPhase: 'none' | 'booting' | 'running';
  /** The client's idempotency keys: the request that opened the run, the last input. */
  openKey?: string;
  inputKey?: string;
}

/**
 * The run manager's durable state (a served control plane writes it to its state directory
 * after every change, so a process started after a real kill recovers the runs: restore()).
 */
export interface RunsSnapshot {
  counter: number;
  /** How many processes restored this state before (forks fresh random streams each time). */
  incarnation: number;
  saved: Array<[string, number]>;
  slowdowns: Array<{ adapter?: Adapter; factor: number; until: number | null }>;
  runs: Array<{
    id: string;
    session: string;
    adapter: Adapter;
    start: StartKind;
    createdAt: number;
    inputs: string[];
    turns: number;
    turn?: TurnState;
    cleanSave: boolean;
    runnerPhase: 'none' | 'booting' | 'running';
    openKey?: string;
    inputKey?: string;
  }>;
}

/** Where a served control plane keeps the runs' durable state (file-store.ts). */
export interface RunStore {
  loadRuns(): RunsSnapshot | undefined;
  saveRuns(snapshot: RunsSnapshot): void;
}

/** The provider process of one run, as the control plane sees it. */
class Runner {
  alive = true;
  attached = true;
  draining = false;
  /** Waiting for input (a new input restarts the pump). */
  idle = false;
  /** Paused at an item boundary by a drain. */
  paused = false;
  readonly abort = new AbortController();
  private attachWaiters: Array<() => void> = [];
  private boundaryWaiters: Array<() => void> = [];

  constructor(private readonly clock: Clock) {}

  sleep(ms: number): Promise<void> {
    return this.clock.sleep(Math.max(0, ms), this.abort.signal);
  }

  kill(): void {
    if (!this.alive) return;
    this.alive = false;
    this.abort.abort();
    this.releaseAll();
  }

  detach(): void {
    this.attached = false;
  }

  attach(): void {
    this.attached = true;
    const waiters = this.attachWaiters.splice(0);
    for (const resolve of waiters) resolve();
  }

  /** Output waits while detached; a dead runner stops here. */
  async gate(): Promise<void> {
    while (this.alive && !this.attached)
      await new Promise<void>((resolve) => this.attachWaiters.push(resolve));
    if (!this.alive) throw new RunnerGone();
  }

  /** Between items: a draining runner stops here until it is killed. */
  async boundary(): Promise<void> {
    if (!this.draining) return;
    this.paused = true;
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
    await new Promise<void>((resolve) => this.attachWaiters.push(resolve));
    throw new RunnerGone();
  }

  /** Resolves when the runner is paused at a boundary, idle, or dead. */
  settled(): Promise<void> {
    if (!this.alive || this.paused || this.idle) return Promise.resolve();
    return new Promise<void>((resolve) => this.boundaryWaiters.push(resolve));
  }

  markIdle(): void {
    this.idle = true;
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
  }

  private releaseAll(): void {
    for (const resolve of this.attachWaiters.splice(0)) resolve();
    for (const resolve of this.boundaryWaiters.splice(0)) resolve();
  }
}

class RunnerGone extends Error {
  constructor() {
    super('runner gone');
  }
}

export interface NativeRunDeps {
  clock: Clock;
  trace: TraceSink;
  rng: Rng;
  config: NativeRunConfig;
  /** Durable state on disk (a served control plane); in memory only when absent. */
  store?: RunStore;
}

export class NativeRuns {
  private readonly clock: Clock;
  private readonly trace: TraceSink;
  private readonly rng: Rng;
  private readonly faultRng: Rng;
  private readonly config: NativeRunConfig;
  /** Active runs by session (a session runs one at a time). */
  private readonly active = new Map<string, NativeRun>();
  /** The providers' saved sessions: bytes by fleet session (durable). */
  private readonly saved = new Map<string, number>();
  private readonly listeners: Array<(notice: RunNotice) => void> = [];
  private readonly slowdowns: Array<{ adapter?: Adapter; factor: number; until: number }> = [];
  private counter = 0;
  private epoch = 0;
  private up = true;
  private upWaiters: Array<() => void> = [];
  private cpAbort = new AbortController();
  private recoveryLimiter: Limiter;
  private loadsInFlight = 0;
  private stopped = false;
  private readonly store?: RunStore;
  private incarnation = 0;
  /** Runs restored with a runner that survives a hot restart (reattached, pump started anew). */
  private readonly handedOver = new Set<NativeRun>();

  constructor(deps: NativeRunDeps) {
    this.clock = deps.clock;
    this.trace = deps.trace;
    this.rng = deps.rng;
    this.faultRng = deps.rng.fork('provider-faults');
    this.config = deps.config;
    this.recoveryLimiter = new Limiter(deps.config.controlPlane.recoveryConcurrency);
    this.store = deps.store;
  }

  onNotice(listener: (notice: RunNotice) => void): void {
    this.listeners.push(listener);
  }

  /** Runs in progress (for gauges and tests). */
  get activeCount(): number {
    return this.active.size;
  }

  /**
   * An input that starts a run on `session`. Resolves when the run exists (`run.created`); its
   * start is `warm` when the provider has a saved session for it, else `cold`.
   */
  async startRun(
    session: string,
    adapterName: string,
    input: string,
    key?: string,
  ): Promise<{ run: string; start: StartKind }> {
    const existing = this.active.get(session);
    // A client retrying a request whose answer a restart lost gets the run it opened.
    if (existing && key !== undefined && existing.openKey === key)
      return { run: existing.id, start: existing.start };
    if (!isAdapter(adapterName)) {
      throw new Error(`unknown provider adapter '${adapterName}' (known: ${ADAPTERS.join(', ')})`);
    }
    const adapter: Adapter = adapterName;
    this.trace.write({
      kind: 'event',
      name: 'input.received',
      t: this.clock.now(),
      session,
      labels: { adapter },
      data: { opens: 'run' },
    });
    const dispatchRng = this.rng.fork(`dispatch:${session}:${this.counter}`);
    // The input waits for a live control plane that dispatches it (a restart can come between).
    for (;;) {
      await this.whenUp();
      const signal = this.cpAbort.signal;
      try {
        await this.clock.sleep(sample(this.config.controlPlane.dispatch, dispatchRng), signal);
        break;
      } catch {
        if (this.stopped) throw new Error('control plane stopped');
      }
    }
    if (this.active.has(session)) throw new Error(`session ${session} already has an active run`);
    const id = `r-${String(++this.counter).padStart(4, '0')}`;
    const base = this.rng.fork(`run:${id}`);
    const run: NativeRun = {
      id,
      session,
      adapter,
      profile: PROVIDER_PROFILES[adapter],
      start: this.saved.has(session) ? 'warm' : 'cold',
      createdAt: this.clock.now(),
      cpRng: base.fork('control-plane'),
      providerRng: base.fork('provider'),
      knobRng: base.fork('knobs'),
      inputs: [input],
      turns: 0,
      launching: false,
      ended: false,
      cleanSave: true,
      runnerPhase: 'none',
      ...(key !== undefined ? { openKey: key } : {}),
    };
    this.active.set(session, run);
    this.persist();
    this.trace.write({
      kind: 'event',
      name: 'run.created',
      t: run.createdAt,
      session,
      labels: { adapter, start: run.start },
      data: { run: id },
    });
    void this.launch(run, 'start');
    return { run: id, start: run.start };
  }

  /** The next turn's input for the session's run (queued while the run is busy or recovering). */
  async sendInput(session: string, input: string, key?: string): Promise<void> {
    const run = this.active.get(session);
    if (!run) throw new Error(`session ${session} has no active run`);
    if (key !== undefined && run.inputKey === key) return; // a retry of an input already taken
    if (key !== undefined) run.inputKey = key;
    this.trace.write({
      kind: 'event',
      name: 'input.received',
      t: this.clock.now(),
      session,
      labels: { adapter: run.adapter },
      data: { run: run.id },
    });
    run.inputs.push(input);
    this.persist();
    const runner = run.runner;
    if (runner?.alive && runner.idle) {
      runner.idle = false;
      this.startPump(run, runner);
    }
  }

  /** Ends the session's run: its runner exits; the provider's saved session stays. */
  async endRun(session: string): Promise<void> {
    const run = this.active.get(session);
    if (!run) return;
    await this.whenUp();
    run.ended = true;
    run.runner?.kill();
    run.runner = undefined;
    this.active.delete(session);
    this.persist();
    this.trace.write({
      kind: 'event',
      name: 'run.ended',
      t: this.clock.now(),
      session,
      labels: { adapter: run.adapter },
      data: { run: run.id, turns: run.turns },
    });
    this.notify({ type: 'run.ended', session, run: run.id, turn: run.turns });
  }

  providerFault(fault: ProviderFaultSpec): void {
    const adapter = fault.adapter === undefined ? undefined : (fault.adapter as Adapter);
    if (adapter !== undefined && !isAdapter(adapter)) {
      throw new Error(`unknown provider adapter '${fault.adapter}' (known: ${ADAPTERS.join(', ')})`);
    }
    const now = this.clock.now();
    if (fault.type === 'slowdown') {
      this.slowdowns.push({
        adapter,
        factor: fault.factor,
        until: fault.durationMs === undefined ? Number.POSITIVE_INFINITY : now + fault.durationMs,
      });
      this.persist();
      return;
    }
    const candidates = [...this.active.values()]
      .filter((run) => run.runner?.alive && (adapter === undefined || run.adapter === adapter))
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    for (let i = 0; i < fault.count && candidates.length > 0; i++) {
      const run = candidates.splice(Math.floor(this.faultRng.next() * candidates.length), 1)[0]!;
      const runner = run.runner!;
      runner.kill();
      run.runner = undefined;
      run.cleanSave = false;
      run.runnerPhase = 'none';
      this.persist();
      this.trace.write({
        kind: 'event',
        name: 'provider.crash',
        t: now,
        session: run.session,
        labels: { adapter: run.adapter },
        data: { run: run.id },
      });
      const detect = sample(this.config.controlPlane.crashDetect, run.knobRng);
      this.clock.setTimeout(() => {
        if (!this.up || run.ended || run.runner || run.launching || this.active.get(run.session) !== run)
          return;
        this.trace.write({
          kind: 'event',
          name: 'runner.crashed',
          t: this.clock.now(),
          session: run.session,
          labels: { adapter: run.adapter },
          data: { run: run.id, detectMs: Math.round(detect) },
        });
        void this.launch(run, 'crash');
      }, detect);
    }
  }

  // ── restarts (called by ReferenceControlPlane.restart) ──────────────────────────────────

  /**
   * The control-plane process goes away. hard: runners are killed with it; graceful: runners
   * first finish the item they are in (up to the drain timeout); hot: runners survive,
   * detached, holding their output. In every case the control plane's own in-flight work
   * (dispatches, stages) is lost and redone by recovery.
   */
  async kill(kind: RestartKind): Promise<void> {
    this.up = false;
    this.epoch++;
    this.cpAbort.abort();
    this.cpAbort = new AbortController();
    const runs = [...this.active.values()];
    for (const run of runs) run.launching = false;
    if (kind === 'hot') {
      for (const run of runs) run.runner?.detach();
      this.persist();
      return;
    }
    if (kind === 'graceful') {
      const runners = runs.map((r) => r.runner).filter((r): r is Runner => r?.alive === true);
      for (const runner of runners) runner.draining = true;
      const timeout = new AbortController();
      await Promise.race([
        Promise.all(runners.map((r) => r.settled())),
        this.clock.sleep(this.config.controlPlane.drainTimeoutMs, timeout.signal).catch(() => undefined),
      ]);
      timeout.abort();
    }
    for (const run of runs) {
      const runner = run.runner;
      if (!runner) continue;
      // A drained runner saved its session cleanly; a killed busy one did not.
      run.cleanSave = kind === 'graceful' && (runner.paused || runner.idle);
      runner.kill();
      run.runner = undefined;
      run.runnerPhase = 'none';
    }
    this.persist();
  }

  /** `controlplane.ready` after a restart: reclaim and recover every active run, in run order. */
  ready(kind: RestartKind): void {
    this.up = true;
    this.recoveryLimiter = new Limiter(this.config.controlPlane.recoveryConcurrency);
    for (const resolve of this.upWaiters.splice(0)) resolve();
    const runs = [...this.active.values()].sort((a, b) => (a.id < b.id ? -1 : 1));
    for (const run of runs) {
      if (kind === 'hot' && (run.runner?.alive || this.handedOver.has(run))) void this.reattach(run);
      else void this.launch(run, 'recovery');
    }
  }

  /**
   * A new process of a served control plane takes over the durable state a previous one left
   * (before its `controlplane.ready`; `ready(kind)` then recovers the runs as in-process). A
   * hard kill left busy runners' saved sessions unclean; after a hot restart, runners that were
   * running are handed over (reattached without a reload, their pump started again from the
   * last item boundary); runners still booting are launched again.
   */
  restore(kind: RestartKind): void {
    const snapshot = this.store?.loadRuns();
    if (!snapshot) return;
    this.incarnation = snapshot.incarnation + 1;
    this.counter = snapshot.counter;
    this.saved.clear();
    for (const [session, bytes] of snapshot.saved) this.saved.set(session, bytes);
    this.slowdowns.splice(0);
    for (const s of snapshot.slowdowns)
      this.slowdowns.push({ ...s, until: s.until ?? Number.POSITIVE_INFINITY });
    this.active.clear();
    for (const r of snapshot.runs) {
      const base = this.rng.fork(`run:${r.id}:incarnation:${this.incarnation}`);
      const run: NativeRun = {
        ...r,
        profile: PROVIDER_PROFILES[r.adapter],
        cpRng: base.fork('control-plane'),
        providerRng: base.fork('provider'),
        knobRng: base.fork('knobs'),
        launching: false,
        ended: false,
      };
      if (kind === 'hot' && r.runnerPhase === 'running') this.handedOver.add(run);
      else if (r.runnerPhase !== 'none') run.cleanSave = false;
      if (!this.handedOver.has(run)) run.runnerPhase = 'none';
      this.active.set(run.session, run);
    }
    this.persist();
  }

  /** The durable state as it is now. */
  snapshot(): RunsSnapshot {
    return {
      counter: this.counter,
      incarnation: this.incarnation,
      saved: [...this.saved],
      slowdowns: this.slowdowns.map((s) => ({
        ...s,
        until: Number.isFinite(s.until) ? s.until : null,
      })),
      runs: [...this.active.values()].map((run) => ({
        id: run.id,
        session: run.session,
        adapter: run.adapter,
        start: run.start,
        createdAt: run.createdAt,
        inputs: [...run.inputs],
        turns: run.turns,
        ...(run.turn ? { turn: { ...run.turn, items: [...run.turn.items] } } : {}),
        cleanSave: run.cleanSave,
        runnerPhase: run.runnerPhase,
        ...(run.openKey !== undefined ? { openKey: run.openKey } : {}),
        ...(run.inputKey !== undefined ? { inputKey: run.inputKey } : {}),
      })),
    };
  }

  private persist(): void {
    if (this.store && !this.stopped) this.store.saveRuns(this.snapshot());
  }

  /** End of the run: everything stops where it is, nothing more is written. */
  stop(): void {
    this.stopped = true;
    this.up = false;
    this.epoch++;
    this.cpAbort.abort();
    for (const run of this.active.values()) run.runner?.kill();
  }

  // ── the control plane's stages ───────────────────────────────────────────────────────

  private whenUp(): Promise<void> {
    if (this.up) return Promise.resolve();
    return new Promise<void>((resolve) => this.upWaiters.push(resolve));
  }

  private async stage(
    run: NativeRun,
    name: string,
    durationMs: number,
    labels: Labels,
    signal: AbortSignal,
  ): Promise<boolean> {
    const t0 = this.clock.now();
    try {
      await this.clock.sleep(durationMs, signal);
    } catch {
      return false;
    }
    this.trace.write({
      kind: 'span',
      name,
      t: t0,
      dur: this.clock.now() - t0,
      session: run.session,
      labels,
      data: { run: run.id },
    });
    return true;
  }

  /** Claim → prepare → runtime → runner launch (start and recovery), or launch only (crash). */
  private async launch(run: NativeRun, reason: LaunchReason): Promise<void> {
    if (run.launching || run.ended) return;
    run.launching = true;
    const epoch = this.epoch;
    const signal = this.cpAbort.signal;
    const cp = this.config.controlPlane;
    const labels = { adapter: run.adapter, start: run.start, reason };
    const work = async (): Promise<boolean> => {
      if (reason !== 'crash') {
        let claim = sample(cp.stages.claim, run.cpRng);
        if (reason === 'recovery') {
          claim += sample(cp.reclaim, run.cpRng) + sample(cp.recoveryDelay, run.knobRng);
        }
        if (!(await this.stage(run, 'run.claim', claim, labels, signal))) return false;
        if (!(await this.stage(run, 'run.prepare', sample(cp.stages.prepare, run.cpRng), labels, signal)))
          return false;
        if (!(await this.stage(run, 'run.runtime', sample(cp.stages.runtime, run.cpRng), labels, signal)))
          return false;
      }
      return this.stage(run, 'run.runner.launch', sample(cp.stages.launch, run.cpRng), labels, signal);
    };
    const ok = reason === 'recovery' ? await this.recoveryLimiter.run(work) : await work();
    if (epoch !== this.epoch) return;
    run.launching = false;
    if (!ok || run.ended) return;
    const runner = new Runner(this.clock);
    run.runner = runner;
    run.runnerPhase = 'booting';
    this.persist();
    this.guard(runner, this.provider(run, runner, reason));
  }

  /** Hot restart: the surviving runner is reclaimed and reattached; it says `session.resumed`. */
  private async reattach(run: NativeRun): Promise<void> {
    const handedOver = this.handedOver.delete(run);
    if (handedOver) {
      // Restored from durable state by a new process: the runner's state was handed over.
      const runner = new Runner(this.clock);
      runner.detach();
      run.runner = runner;
    }
    const runner = run.runner!;
    run.launching = true;
    const epoch = this.epoch;
    const signal = this.cpAbort.signal;
    const cp = this.config.controlPlane;
    const labels = { adapter: run.adapter, start: run.start, reason: 'reattach' };
    const claim =
      sample(cp.stages.claim, run.cpRng) +
      sample(cp.reclaim, run.cpRng) +
      sample(cp.recoveryDelay, run.knobRng);
    const ok = await this.recoveryLimiter.run(
      async () =>
        (await this.stage(run, 'run.claim', claim, labels, signal)) &&
        this.stage(run, 'run.runner.attach', sample(cp.reattach, run.cpRng), labels, signal),
    );
    if (epoch !== this.epoch) return;
    run.launching = false;
    if (!ok || !runner.alive || run.runner !== runner) return;
    // The provider acknowledges the new subscription, then its paused output goes on.
    this.writeProviderEvent(run, 'session.resumed');
    runner.attach();
    if (handedOver) this.startPump(run, runner);
  }

  // ── the provider side (the runner) ─────────────────────────────────────────────────────

  private guard(runner: Runner, work: Promise<void>): void {
    work.catch((error: unknown) => {
      // A killed runner's work ends in an abort: expected. Anything else is a bug.
      if (runner.alive || !(error instanceof RunnerGone || (error as Error)?.name === 'AbortError'))
        throw error;
    });
  }

  private slowdown(adapter: Adapter): number {
    const now = this.clock.now();
    let factor = this.config.providers[adapter].slowdown;
    for (const s of this.slowdowns) {
      if (s.until > now && (s.adapter === undefined || s.adapter === adapter)) factor *= s.factor;
    }
    return factor;
  }

  private async provider(run: NativeRun, runner: Runner, reason: LaunchReason): Promise<void> {
    const profile = run.profile;
    const rng = run.providerRng;
    const hasSession = this.saved.has(run.session);
    if (reason === 'start' || !hasSession) {
      // A boot: a new provider process (a cold one, or one that resumes the saved session).
      const t0 = this.clock.now();
      const start: StartKind = hasSession ? 'warm' : 'cold';
      const process = draw(start === 'cold' ? profile.bootCold : profile.bootWarmProcess, rng);
      await runner.sleep(process * this.slowdown(run.adapter));
      if (start === 'warm') await this.load(run, runner, reason);
      this.runnerSpan({
        name: 'provider.boot',
        t: t0,
        session: run.session,
        labels: { adapter: run.adapter, start, reason },
        data: { run: run.id },
      });
      if (!hasSession) this.saved.set(run.session, 0);
      this.persist();
      if (rng.chance(0.3)) await this.providerEvent(run, runner, 'diagnostic');
    } else {
      await this.load(run, runner, reason);
    }
    run.runnerPhase = 'running';
    this.persist();
    this.startPump(run, runner);
  }

  /** `provider.session.load`; the provider says `session.resumed`, sometimes before the span ends. */
  private async load(run: NativeRun, runner: Runner, reason: LaunchReason): Promise<void> {
    const rng = run.providerRng;
    const bytes = this.saved.get(run.session) ?? 0;
    const t0 = this.clock.now();
    const concurrent = ++this.loadsInFlight;
    try {
      const replay = reason !== 'start' && !run.cleanSave ? draw(run.profile.replay, rng) : 0;
      const duration =
        (loadDuration(run.profile, bytes, concurrent, rng) + replay) * this.slowdown(run.adapter);
      run.cleanSave = true;
      const early = rng.chance(run.profile.resumeBeforeLoadEnd) && reason !== 'start';
      const resumedAt = early ? duration * rng.uniform(0.7, 0.95) : duration;
      if (reason !== 'start') await this.providerEvent(run, runner, 'diagnostic');
      await runner.sleep(resumedAt);
      if (early) {
        await this.providerEvent(run, runner, 'session.resumed');
        await runner.sleep(t0 + duration - this.clock.now());
      }
      this.runnerSpan({
        name: 'provider.session.load',
        t: t0,
        session: run.session,
        labels: { adapter: run.adapter, start: run.start, reason },
        data: { run: run.id, sessionBytes: bytes, concurrentLoads: concurrent },
      });
      if (!early) await this.providerEvent(run, runner, 'session.resumed');
    } finally {
      this.loadsInFlight--;
    }
  }

  private startPump(run: NativeRun, runner: Runner): void {
    this.guard(runner, this.pump(run, runner));
  }

  /** Turns, one after another, while inputs are queued; idle when there are none. */
  private async pump(run: NativeRun, runner: Runner): Promise<void> {
    const profile = run.profile;
    const rng = run.providerRng;
    for (;;) {
      if (!runner.alive) return;
      if (!run.turn) {
        if (run.inputs.length === 0) {
          runner.markIdle();
          return;
        }
        await runner.boundary();
        run.inputs.shift();
        const count = rng.int(profile.itemsPerTurn[0], profile.itemsPerTurn[1]);
        const items: ItemKind[] = [firstItemKind(profile, rng)];
        while (items.length < count) items.push(laterItemKind(rng));
        run.turns++;
        run.turn = { index: run.turns, items, done: 0, startedAt: this.clock.now(), first: run.turns === 1 };
        this.persist();
        await this.providerEvent(run, runner, 'turn.submitted');
        await runner.sleep(rng.uniform(10, 60));
        await this.providerEvent(run, runner, 'turn.accepted');
        await runner.sleep(rng.uniform(5, 40));
        await this.providerEvent(run, runner, 'turn.started');
      }
      const turn = run.turn;
      while (turn.done < turn.items.length) {
        await runner.boundary();
        await this.item(run, runner, turn.items[turn.done]!, turn.first && turn.done === 0);
        turn.done++;
        const [lo, hi] = profile.bytesPerTurn;
        const grown = (this.saved.get(run.session) ?? 0) + rng.uniform(lo, hi) / turn.items.length;
        this.saved.set(run.session, Math.round(grown));
        this.persist();
      }
      run.turn = undefined;
      // The span (what a remote client's notice comes from) goes out before the durable state
      // says the turn is over: a kill between the two redoes the notice, never loses it.
      this.trace.write({
        kind: 'span',
        name: 'run.turn',
        t: turn.startedAt,
        dur: this.clock.now() - turn.startedAt,
        session: run.session,
        labels: { adapter: run.adapter },
        data: { run: run.id, turn: turn.index, items: turn.items.length },
      });
      this.persist();
      this.notify({ type: 'turn.completed', session: run.session, run: run.id, turn: turn.index });
    }
  }

  /**
   * One item's events. The first item of a run's first turn shows the first activity after the
   * profile's first-activity latency: a tool-call start, a reasoning indicator, or (a little
   * after its item started) a text delta. Deltas are coalesced: a few per item, not per token.
   */
  private async item(run: NativeRun, runner: Runner, kind: ItemKind, first: boolean): Promise<void> {
    const profile = run.profile;
    const rng = run.providerRng;
    const gap = () => draw(profile.eventGap, rng);
    const lead = first ? draw(profile.firstActivity[run.start], rng) * this.slowdown(run.adapter) : gap();
    const ev = (type: string, item?: ItemKind) => this.providerEvent(run, runner, type, item);
    if (kind === 'text') {
      await runner.sleep(lead * 0.9);
      await ev('item.started', 'text');
      await runner.sleep(lead * 0.1);
      const deltas = rng.int(2, 6);
      for (let i = 0; i < deltas; i++) {
        if (i > 0) await runner.sleep(gap());
        await ev('item.delta', 'text');
      }
      await runner.sleep(gap());
      await ev('item.completed', 'text');
      return;
    }
    await runner.sleep(lead);
    await ev('item.started', kind);
    if (kind === 'reasoning') {
      const deltas = rng.int(1, 3);
      for (let i = 0; i < deltas; i++) {
        await runner.sleep(gap());
        await ev('item.delta', 'reasoning');
      }
      await runner.sleep(gap());
      await ev('item.completed', 'reasoning');
      return;
    }
    await runner.sleep(gap());
    await ev('item.completed', 'tool_call');
    await ev('tool.execution.started');
    const run_ = draw(profile.toolRun, rng);
    const progress = rng.int(0, 2);
    for (let i = 0; i < progress; i++) {
      await runner.sleep(run_ / (progress + 1));
      await ev('tool.execution.progressed');
    }
    await runner.sleep(run_ / (progress + 1));
    await ev('tool.execution.completed');
  }

  private async providerEvent(run: NativeRun, runner: Runner, type: string, item?: ItemKind): Promise<void> {
    await runner.gate();
    this.writeProviderEvent(run, type, item);
  }

  private writeProviderEvent(run: NativeRun, type: string, item?: ItemKind): void {
    this.trace.write({
      kind: 'event',
      name: 'provider.event',
      t: this.clock.now(),
      session: run.session,
      labels: { adapter: run.adapter, type, ...(item ? { item } : {}) },
      data: { run: run.id, ...(run.turn ? { turn: run.turn.index } : {}) },
    });
  }

  /**
   * A runner's span, written when it ends, also while the runner is detached: the provider
   * exports its own telemetry, only its events flow through the control plane's stream.
   */
  private runnerSpan(span: {
    name: string;
    t: number;
    session: string;
    labels: Labels;
    data: Record<string, unknown>;
  }): void {
    this.trace.write({ kind: 'span', ...span, dur: this.clock.now() - span.t });
  }

  private notify(notice: RunNotice): void {
    for (const listener of this.listeners) listener(notice);
  }
}
