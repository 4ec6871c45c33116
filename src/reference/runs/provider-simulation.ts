/**
 * The provider side of native runs: what a claude/codex/opencode process does once the control
 * plane has launched its runner. It boots (cold, or warm with a `provider.session.load` of the
 * saved session), then runs turns item by item, emitting `provider.event`s (turn submitted/
 * accepted/started, item started/delta/completed, tool execution, session resumed,
 * diagnostics). Timings come from the provider profiles (providers.ts), scaled by the scenario's
 * per-adapter slowdown and any injected slowdown fault. The saved sessions' sizes grow with
 * every item and are durable.
 */
import type { Clock } from '../../clock/clock.ts';
import type { Adapter, RunNotice } from '../../contract/types.ts';
import type { Labels } from '../../trace/schema.ts';
import type { TraceSink } from '../../trace/writer.ts';
import {
  draw,
  firstItemKind,
  type ItemKind,
  laterItemKind,
  loadDuration,
  type StartKind,
} from '../providers.ts';
import type { LaunchReason, NativeRunConfig } from './config.ts';
import type { NativeRun } from './durable-state.ts';
import { guard, type Runner } from './runner.ts';

export interface ProviderSimulationDeps {
  clock: Clock;
  trace: TraceSink;
  /** The scenario's per-adapter knobs. */
  providers: NativeRunConfig['providers'];
  /** The durable state changed. */
  persist(): void;
  notify(notice: RunNotice): void;
}

export class ProviderSimulation {
  /** The providers' saved sessions: bytes by fleet session (durable). */
  readonly saved = new Map<string, number>();
  /** Injected slowdowns (provider faults), until a time (durable). */
  readonly slowdowns: Array<{ adapter?: Adapter; factor: number; until: number }> = [];
  private readonly clock: Clock;
  private readonly trace: TraceSink;
  private readonly knobs: NativeRunConfig['providers'];
  private loadsInFlight = 0;

  constructor(private readonly deps: ProviderSimulationDeps) {
    this.clock = deps.clock;
    this.trace = deps.trace;
    this.knobs = deps.providers;
  }

  private slowdown(adapter: Adapter): number {
    const now = this.clock.now();
    let factor = this.knobs[adapter].slowdown;
    for (const s of this.slowdowns) {
      if (s.until > now && (s.adapter === undefined || s.adapter === adapter)) factor *= s.factor;
    }
    return factor;
  }

  /** A runner's provider comes up (a boot, warm ones with a session load; or only a load), then runs its turns. */
  async boot(run: NativeRun, runner: Runner, reason: LaunchReason): Promise<void> {
    const profile = run.profile;
    const rng = run.providerRng;
    const hasSession = this.saved.has(run.session);
    if (reason === 'start' || !hasSession) {
      // A boot: a new provider process (a cold one, or one that resumes the saved session).
      const t0 = this.clock.now();
      const start: StartKind = hasSession ? 'warm' : 'cold';
      const process = draw(start === 'cold' ? profile.bootCold : profile.bootWarmProcess, rng);
      await runner.sleep(process * this.slowdown(run.adapter));
      if (start === 'warm' && profile.warmBootHoldsLoad) {
        // A provider whose warm boot loads the session itself (Paperclip's): no load of its own.
        run.cleanSave = true;
        await this.providerEvent(run, runner, 'session.resumed');
      } else if (start === 'warm') await this.load(run, runner, reason);
      this.runnerSpan({
        name: 'provider.boot',
        t: t0,
        session: run.session,
        labels: { adapter: run.adapter, start, reason },
        data: { run: run.id },
      });
      if (!hasSession) this.saved.set(run.session, 0);
      this.deps.persist();
      if (rng.chance(0.3)) await this.providerEvent(run, runner, 'diagnostic');
    } else {
      await this.load(run, runner, reason);
    }
    run.runnerPhase = 'running';
    this.deps.persist();
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

  /** Runs queued inputs' turns (again) on this runner. */
  startPump(run: NativeRun, runner: Runner): void {
    guard(runner, this.pump(run, runner));
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
        this.deps.persist();
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
        this.deps.persist();
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
      this.deps.persist();
      this.deps.notify({ type: 'turn.completed', session: run.session, run: run.id, turn: turn.index });
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

  /** A `provider.event`, written now (also while the runner is detached: for `session.resumed` at reattach). */
  writeProviderEvent(run: NativeRun, type: string, item?: ItemKind): void {
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
}
