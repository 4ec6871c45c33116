/**
 * Native runs in the reference control plane (docs/reference-control-plane.md#native-runs-and-providers). A run on a session goes
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
 *
 * This file is the run manager (inputs, the control plane's stages, launch, reattach, recovery
 * order); the runner is runner.ts, what a restart does to runners restarts.ts, the provider
 * process provider-simulation.ts, the durable state durable-state.ts, the settings config.ts.
 */

import { sample } from '../../base/distribution.ts';
import type { Rng } from '../../base/rng.ts';
import type { Clock } from '../../clock/clock.ts';
import { ADAPTERS, type Adapter, isAdapter, type RestartKind, type RunNotice } from '../../contract/types.ts';
import type { Labels } from '../../trace/schema.ts';
import type { TraceSink } from '../../trace/writer.ts';
import { Limiter } from '../limiter.ts';
import { profileFor, type StartKind } from '../providers.ts';
import type { LaunchReason, NativeRunConfig, ProviderFaultSpec } from './config.ts';
import {
  type NativeRun,
  type RunStore,
  type RunsSnapshot,
  runsFromSnapshot,
  snapshotOf,
} from './durable-state.ts';
import { ProviderSimulation } from './provider-simulation.ts';
import { stopRunners } from './restarts.ts';
import { guard, Runner } from './runner.ts';

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
  /** The provider side: boots, loads, turns; saved sessions and slowdowns (provider-simulation.ts). */
  private readonly providers: ProviderSimulation;
  private readonly listeners: Array<(notice: RunNotice) => void> = [];
  private counter = 0;
  private epoch = 0;
  private up = true;
  private upWaiters: Array<() => void> = [];
  private cpAbort = new AbortController();
  private recoveryLimiter: Limiter;
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
    this.providers = new ProviderSimulation({
      clock: deps.clock,
      trace: deps.trace,
      providers: deps.config.providers,
      persist: () => this.persist(),
      notify: (notice) => this.notify(notice),
    });
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
      profile: profileFor(adapter, this.config.providers[adapter].learned),
      start: this.providers.saved.has(session) ? 'warm' : 'cold',
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
      this.providers.startPump(run, runner);
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
      this.providers.slowdowns.push({
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
    await stopRunners(runs, kind, this.clock, this.config.controlPlane.drainTimeoutMs);
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
   * (before its `controlplane.ready`; `ready(kind)` then recovers the runs as in-process; see
   * runsFromSnapshot for what a hard or hot restart leaves).
   */
  restore(kind: RestartKind): void {
    const snapshot = this.store?.loadRuns();
    if (!snapshot) return;
    this.incarnation = snapshot.incarnation + 1;
    this.counter = snapshot.counter;
    this.providers.saved.clear();
    for (const [session, bytes] of snapshot.saved) this.providers.saved.set(session, bytes);
    this.providers.slowdowns.splice(0);
    for (const s of snapshot.slowdowns)
      this.providers.slowdowns.push({ ...s, until: s.until ?? Number.POSITIVE_INFINITY });
    this.active.clear();
    const { runs, handedOver } = runsFromSnapshot(snapshot, kind, this.rng, this.incarnation, (adapter) =>
      profileFor(adapter, this.config.providers[adapter].learned),
    );
    for (const run of handedOver) this.handedOver.add(run);
    for (const run of runs) this.active.set(run.session, run);
    this.persist();
  }

  /** The durable state as it is now. */
  snapshot(): RunsSnapshot {
    return snapshotOf({
      counter: this.counter,
      incarnation: this.incarnation,
      saved: this.providers.saved,
      slowdowns: this.providers.slowdowns,
      active: this.active,
    });
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
      const launch = run.start === 'cold' && cp.stages.launchCold ? cp.stages.launchCold : cp.stages.launch;
      return this.stage(run, 'run.runner.launch', sample(launch, run.cpRng), labels, signal);
    };
    const ok = reason === 'recovery' ? await this.recoveryLimiter.run(work) : await work();
    if (epoch !== this.epoch) return;
    run.launching = false;
    if (!ok || run.ended) return;
    const runner = new Runner(this.clock);
    run.runner = runner;
    run.runnerPhase = 'booting';
    this.persist();
    guard(runner, this.providers.boot(run, runner, reason));
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
    this.providers.writeProviderEvent(run, 'session.resumed');
    runner.attach();
    if (handedOver) this.providers.startPump(run, runner);
  }

  private notify(notice: RunNotice): void {
    for (const listener of this.listeners) listener(notice);
  }
}
