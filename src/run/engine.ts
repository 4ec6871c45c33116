/**
 * The workload engine: one run of one scenario. It builds the clock, the trace, the GitHub side
 * (the emulator, in-process for the embedded target), the world script and the target; starts
 * the executors, schedules faults and markers, samples gauges, brackets the run with
 * `/rate_limit` snapshots, and closes the trace, with reason `interrupted` if the signal fired.
 */
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { MAX_EVENTS_AT_ONE_INSTANT, TARGET_STOP_BOUND_MS } from '../base/limits.ts';
import { HARNESS_CPU_EVENT, HARNESS_SHARE_BOUND_PCT, ProcessCpu } from '../base/process-cpu.ts';
import { createRng, type Rng } from '../base/rng.ts';
import { VERSION } from '../base/version.ts';
import { withTimeout } from '../base/with-timeout.ts';
import type { Clock } from '../clock/clock.ts';
import { RealClock } from '../clock/real.ts';
import { VirtualClock } from '../clock/virtual.ts';
import { targetInfo } from '../contract/target-ref.ts';
import type { Target } from '../contract/types.ts';
import type { Verdict } from '../judge/judge.ts';
import type { RunEndReason, RunFailure } from '../results/run-summary.ts';
import { openTarget } from '../targets/index.ts';
import { type TraceSink, TraceWriter } from '../trace/writer.ts';
import { checkExecutors, runExecutor, startsOf } from '../workload/executors/index.ts';
import { checkFaults, scheduleFaults } from '../workload/faults.ts';
import { createInProcessGitHub, type GitHubSide } from '../workload/github-side.ts';
import { scenarioHash } from '../workload/load.ts';
import { MarkerBus } from '../workload/markers.ts';
import type { Scenario } from '../workload/scenario.ts';
import { type GlobalSessions, SessionSpawner } from '../workload/spawner.ts';
import { World } from '../workload/world.ts';
import { prepareRunJudge, type RunJudge } from './judge.ts';
import type { RunPlan } from './plan.ts';
import { sharedGitHubSide } from './shared-github.ts';

/** How the caller watches and steers a run (what the run is comes in its RunPlan). */
export interface RunHooks {
  signal?: AbortSignal;
  /** Called every `progressEveryMs` of run time. */
  onProgress?: (progress: RunProgress) => void;
  progressEveryMs?: number;
  /**
   * Watches the run once the target is open (live telemetry, src/live/); closed before the
   * target stops and the trace closes, whether the run completes, is interrupted or fails.
   */
  attach?: (run: RunHandle) => Promise<RunAttachment> | RunAttachment;
  /** The progress guard (virtual clock): events or records at one instant before the run stops. */
  maxEventsAtOneInstant?: number;
  /** Real ms the target's stop is given before the run fails without it (TARGET_STOP_BOUND_MS). */
  targetStopBoundMs?: number;
}

export interface RunHandle {
  scenario: Scenario;
  clock: Clock;
  trace: TraceWriter;
  target: Target;
  github: GitHubSide;
  signal: AbortSignal;
}

export interface RunAttachment {
  close(): Promise<void>;
}

export interface RunProgress {
  t: number;
  durationMs: number;
  sessions: Partial<Record<string, number>>;
  apiCalls: number;
}

export interface RunResult {
  scenario: Scenario;
  tracePath: string;
  /** `failed`: partial, never judged (`failure` says why). */
  reason: RunEndReason;
  failure?: RunFailure;
  endedAt: number;
  sessionsStarted: number;
  sessionsDropped: number;
  /** Virtual runs: timer events processed (a measure of simulation work). */
  events?: number;
  /** The scenario's budgets, judged before the footer (absent without budgets or when interrupted). */
  verdicts?: Verdict[];
}

const GAUGE_EVERY_MS = 10_000;

/**
 * Runs a plan's scenario to its end, its interruption or its failure, and closes its trace:
 * open (the GitHub side, the world, the target), schedule (the script, gauges, progress),
 * drive (the clock), close (stop the target, bracket, judge, footer).
 */
export async function runScenario(plan: RunPlan, hooks: RunHooks = {}): Promise<RunResult> {
  const run = new ActiveRun(plan, hooks);
  try {
    const parts = await run.open();
    run.schedule(parts);
    const events = await run.drive();
    return await run.close(parts, events);
  } catch (error) {
    await run.abandon();
    throw error;
  } finally {
    run.release();
  }
}

/** What a run opened, for its script and its close. */
interface RunParts {
  github: GitHubSide;
  markers: MarkerBus;
  world: World;
  target: Target;
  spawner: SessionSpawner;
  /** A segment numbers each executor's sessions after all the starts of those before it. */
  offsets: number[];
}

/** One run in progress: its clock, trace and judge, and how it fails or stops. */
class ActiveRun {
  readonly scenario: Scenario;
  readonly clock: Clock;
  readonly trace: TraceWriter;
  private readonly tracePath: string;
  private readonly runId: string;
  private readonly rng: Rng;
  private readonly judge: RunJudge | undefined;
  /** Run-wide work (faults, gauges, markers, records of no session) is done once: in segment 0. */
  private readonly runWide: boolean;
  private readonly abort = new AbortController();
  /** Records may go in until the footer (a shared emulator's late answers are dropped after). */
  private traceOpen = true;
  /**
   * A part of the run that fails (a restart that never came back, an executor that cannot go
   * on) fails the run: it stops, the trace says why, and nothing judges what was left.
   */
  private failure: RunResult['failure'];
  private scriptError: unknown;
  /** The target's start() returned (under the real clock, a control plane it had to wait for is ready). */
  private targetStarted = false;
  private readonly guardLimit: number;
  /**
   * The progress guard: under the virtual clock, a loop that writes record after record without
   * time passing (a zero interval) would fill the disk and starve signals (no macrotask ever
   * runs). Past the limit every record at that instant throws in its producer, which breaks the
   * loop, and the run fails. Off for the engine's own records and once the clock has stopped.
   */
  private guardOn: boolean;
  private opened: Target | undefined;
  private attachment: RunAttachment | undefined;
  /**
   * Who spends the machine's CPU while a target with local processes runs (src/base/process-cpu.ts):
   * this process is fleetbench's, the target registers its own trees. Real clock only.
   */
  private readonly processes: ProcessCpu | undefined;
  private readonly onAbort = () => this.abort.abort();

  constructor(
    private readonly plan: RunPlan,
    private readonly hooks: RunHooks,
  ) {
    const { scenario, segment } = plan;
    this.scenario = scenario;
    this.clock =
      scenario.clock === 'virtual'
        ? new VirtualClock()
        : new RealClock({ timeScale: scenario.timeScale, epochMs: plan.epochMs });
    this.runWide = segment === undefined || segment.index === 0;
    // Budget sets load before anything runs: a bad one fails at once (exit 104).
    this.judge = segment
      ? undefined
      : prepareRunJudge(scenario.budgets, { requireSamples: plan.requireSamples === true }, scenario);
    this.rng = createRng(scenario.seed);
    const hash = scenarioHash(scenario);
    this.tracePath = join(plan.outDir, 'trace.jsonl');
    this.runId =
      scenario.clock === 'virtual'
        ? `${scenario.name}-seed${scenario.seed}-${hash.slice(0, 8)}`
        : `${scenario.name}-${new Date(this.clock.epochMs).toISOString()}`;
    this.trace = new TraceWriter(
      this.tracePath,
      {
        runId: this.runId,
        tool: { name: 'fleetbench', version: VERSION },
        clock: scenario.clock,
        ...(scenario.clock === 'real' ? { timeScale: scenario.timeScale } : {}),
        seed: scenario.seed,
        scenario: { name: scenario.name, hash, ...(plan.cell ? { cell: plan.cell } : {}) },
        target: scenario.target,
        ...(segment ? { labels: { segment: segment.index, segments: segment.count } } : {}),
        epochMs: this.clock.epochMs,
        startedAt: new Date(this.clock.epochMs).toISOString(),
      },
      { flushIntervalMs: scenario.clock === 'virtual' ? 0 : 250 },
    );
    this.judge?.observe(this.trace);
    if (scenario.clock === 'real' && targetInfo(plan.target).localProcesses && ProcessCpu.available()) {
      this.processes = new ProcessCpu();
      this.processes.addRoot(process.pid, 'harness');
    }
    this.guardLimit = hooks.maxEventsAtOneInstant ?? MAX_EVENTS_AT_ONE_INSTANT;
    this.guardOn = this.clock instanceof VirtualClock;
    this.installGuard();
    hooks.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** A handler that fails the run, naming what failed. */
  fail = (source: string) => (error: unknown) => {
    if (this.abort.signal.aborted) return;
    this.recordFailure(source, error);
    this.abort.abort();
  };

  /** What failed and why, as the run's failure and a `run.failed` event. */
  private recordFailure(source: string, error: unknown): void {
    this.failure = { source, message: (error as Error)?.message ?? String(error) };
    const guarding = this.guardOn;
    this.guardOn = false;
    try {
      this.trace.write({
        kind: 'event',
        name: 'run.failed',
        t: this.clock.now(),
        labels: { source },
        data: { message: this.failure.message },
      });
    } finally {
      this.guardOn = guarding;
    }
  }

  private installGuard(): void {
    let instant = -1;
    let atInstant = 0;
    this.trace.tap(() => {
      if (!this.guardOn) return;
      const now = this.clock.now();
      if (now !== instant) {
        instant = now;
        atInstant = 0;
        return;
      }
      if (++atInstant < this.guardLimit) return;
      const error = stalled(now, this.guardLimit, 'trace records');
      this.fail('progress-guard')(error);
      throw error;
    });
  }

  /** The GitHub side, the world script and the target, watched by the caller's attachment. */
  async open(): Promise<RunParts> {
    const { scenario, clock, trace, plan, runWide } = this;
    const { segment } = plan;
    const github = plan.github
      ? await sharedGitHubSide(plan.github)
      : createInProcessGitHub(scenario, clock, this.rng.fork('github'), trace);
    // Segments other than 0 still hear their markers (executors wait on them) but do not record
    // them: the merged trace has each once.
    const markers = new MarkerBus(clock, runWide ? trace : { write: () => undefined });
    const global: GlobalSessions | undefined = segment ? { own: new Set() } : undefined;
    // A shared emulator's admin API answers over the network: the world's last step (CI done, a
    // PR opened) can land after the run closed its trace; it is not the run's any more.
    const worldTrace: TraceSink = plan.github
      ? { write: (record) => (this.traceOpen ? trace.write(record) : undefined) }
      : trace;
    const world = new World(github.admin, clock, this.rng.fork('world'), worldTrace, {
      // A command target's real agents open their own pull requests (docs/command-target.md).
      opensPrs: plan.target.kind !== 'command',
      prAfter: scenario.sessions.prAfter,
      ciAfter: scenario.sessions.ciAfter,
      checks: scenario.sessions.checks,
      mergeAfter: scenario.sessions.mergeAfter,
    });
    const target = await openTarget({
      scenario,
      target: plan.target,
      clock,
      rng: this.rng.fork('target'),
      trace,
      github,
      runId: this.runId,
      world,
      outDir: plan.outDir,
      ...(this.processes ? { processes: this.processes } : {}),
      ...(segment && global
        ? {
            httpOptions: {
              segment,
              // The shared stream: this segment's sessions, and (segment 0) what has none.
              keep: (record) => {
                const session = 'session' in record ? record.session : undefined;
                return session === undefined ? runWide : global.own.has(session);
              },
            },
          }
        : {}),
    });
    this.opened = target;
    // The system under test failed for good (e.g. agent-orchestrator's process died).
    target.onFailure?.(this.fail('target'));
    // A target that boots before the run (a real server's first boot): run time starts when it is
    // ready, so the run's duration is the workload's; the boot's own records say how long it took.
    if (target.boot && clock instanceof RealClock && !segment && plan.epochMs === undefined) {
      await target.boot();
      clock.restartNow();
      trace.restartAt(clock.epochMs);
    }
    // The harness's share is the run's: from its time 0, the boot left out.
    this.processes?.start();
    checkFaults(scenario.faults, target);
    checkExecutors(scenario.executors, target);
    if (this.hooks.attach)
      this.attachment = await this.hooks.attach({
        scenario,
        clock,
        trace,
        target,
        github,
        signal: this.abort.signal,
      });
    const spawner = new SessionSpawner(clock, trace, target, world, github.repos, global);
    const offsets: number[] = [];
    if (segment)
      scenario.executors.reduce((n, executor) => {
        offsets.push(n);
        return n + startsOf(executor);
      }, 0);
    return { github, markers, world, target, spawner, offsets };
  }

  /** The script at time 0 (executors, faults), the gauges, progress and the steady marker. */
  schedule(parts: RunParts): void {
    const { scenario, clock, hooks, runWide } = this;
    const { target } = parts;
    clock.setTimeout(() => {
      this.script(parts).catch((error: unknown) => {
        this.scriptError = error;
        this.abort.abort();
      });
    }, 0);

    // Gauges: sessions by state, every 10 s of run time; the target's counts are the whole
    // run's, so sampled once, by segment 0.
    const sampleGauges = async () => {
      await this.writeSessionGauges(target);
      if (!this.abort.signal.aborted) clock.setTimeout(() => void sampleGauges(), GAUGE_EVERY_MS);
    };
    if (runWide) clock.setTimeout(() => void sampleGauges(), 0);

    if (hooks.onProgress) {
      const every = hooks.progressEveryMs ?? 60_000;
      const report = async () => {
        hooks.onProgress?.({
          t: clock.now(),
          durationMs: scenario.durationMs,
          sessions: await target.sessionCounts(),
          apiCalls: this.trace.counts.api,
        });
        if (!this.abort.signal.aborted) clock.setTimeout(() => void report(), every);
      };
      clock.setTimeout(() => void report(), every);
    }

    if (scenario.markers.steadyStartMs !== undefined) {
      clock.setTimeout(() => parts.markers.emit('steady.start'), scenario.markers.steadyStartMs);
    }
  }

  /**
   * Everything that talks to the target runs on the run's clock: under the virtual clock a
   * request only completes while the clock is running.
   */
  private async script(parts: RunParts): Promise<void> {
    const { scenario, clock, trace, runWide } = this;
    const { segment } = this.plan;
    const { github, target, world, markers, spawner, offsets } = parts;
    if (runWide) await github.snapshot('before');
    await target.start();
    this.targetStarted = true;
    if (runWide)
      scheduleFaults(scenario.faults, {
        onFailure: (index, error) => this.fail(`fault ${index + 1} (${scenario.faults[index]?.type})`)(error),
        clock,
        trace,
        target,
        world,
        github,
        markers,
        sessionCount: scenario.sessions.count,
      });
    scenario.executors.forEach((executor, i) => {
      const name = scenario.executors.length > 1 ? `${executor.type}#${i + 1}` : executor.type;
      // When it was due: a segment's schedule counts from there, not from when its timer ran.
      const dueAt = () =>
        executor.afterMarker !== undefined
          ? (markers.timeOf(executor.afterMarker) ?? clock.now()) + executor.delayMs
          : (executor.atMs ?? 0) + (executor.atMs === undefined ? executor.delayMs : 0);
      markers.schedule(
        executor,
        () =>
          void runExecutor(executor, {
            ...(segment ? { segment: { ...segment, offset: offsets[i]!, startAt: dueAt() } } : {}),
            clock,
            trace,
            target,
            spawner,
            markers,
            signal: this.abort.signal,
            name,
            rng: this.rng.fork(`executor:${name}`),
            endRun: () => this.abort.abort(),
            durationMs: scenario.durationMs,
          }).catch(this.fail(`executor ${name}`)),
      );
    });
  }

  private async writeSessionGauges(target: Target): Promise<void> {
    const counts = await target.sessionCounts();
    // A remote target may answer after the run ended (and the trace closed): drop it.
    if (this.abort.signal.aborted) return;
    // One sample, one time: under the real clock now() moves between writes.
    const t = this.clock.now();
    for (const [state, value] of Object.entries(counts)) {
      this.trace.write({ kind: 'gauge', name: 'sessions', t, value: value ?? 0, labels: { state } });
    }
  }

  /** Lets the run's time pass to its end (or its stop); virtual runs say how many events. */
  async drive(): Promise<number | undefined> {
    const { clock, scenario } = this;
    let events: number | undefined;
    if (clock instanceof VirtualClock) {
      let result: Awaited<ReturnType<VirtualClock['run']>>;
      try {
        result = await clock.run({
          until: scenario.durationMs,
          signal: this.abort.signal,
          maxEventsAtOneInstant: this.guardLimit,
        });
      } catch (error) {
        // The guard's error thrown inside a timer callback: the run failed, said above.
        if (this.failure === undefined) throw error;
        result = { events: clock.events, endedAt: clock.now(), reason: 'aborted' };
      }
      events = result.events;
      this.guardOn = false;
      if (result.reason === 'stalled')
        this.fail('progress-guard')(stalled(result.endedAt, this.guardLimit, 'clock events'));
    } else {
      // A segment ends at the run's end on the shared timeline (it may have started late).
      const remaining = this.plan.segment
        ? Math.max(0, scenario.durationMs - clock.now())
        : scenario.durationMs;
      await clock.sleep(remaining, this.abort.signal).catch(() => undefined);
      // The run's time is over and the target never became ready (a control plane whose
      // ready-timeout is longer than the run): nothing was measured, so the run failed (exit 3,
      // docs/limits.md "A failed run is a failed run") rather than completing with no work done.
      if (!this.targetStarted && !this.abort.signal.aborted)
        this.fail('target')(
          new Error(
            `the target was still starting when the run's ${scenario.durationMs / 1000} s ended: it never became ready, so no work was given`,
          ),
        );
    }
    if (this.scriptError !== undefined && this.failure === undefined) throw this.scriptError;
    return events;
  }

  /** Stops the target, brackets and judges the run, and writes the trace's footer. */
  async close(parts: RunParts, events: number | undefined): Promise<RunResult> {
    const { target, github, spawner } = parts;
    // The run's end reached: the target's last records and its last check (a learned replay
    // that made none of the calls its model plans fails here).
    if (this.failure === undefined && !this.abort.signal.aborted && target.atEnd) {
      const guarding = this.guardOn;
      this.guardOn = false;
      try {
        await target.atEnd();
      } finally {
        this.guardOn = guarding;
      }
    }
    const { clock, trace, runWide } = this;
    // Under the real clock the last 10 s sample can be up to 10 s old: one more at the end, so
    // the final states are the target's at the end (virtual time already samples at the end).
    if (!(clock instanceof VirtualClock) && runWide)
      await this.writeSessionGauges(target).catch(() => undefined);
    const interrupted = this.failure === undefined && (this.hooks.signal?.aborted ?? false);
    this.abort.abort();
    this.opened = undefined;
    this.writeProcessCpu();
    // A lost target may not answer its stop: that must not hide why the run failed. A target
    // that turns out to be gone at the stop (it stopped answering near the end) fails the run:
    // it did not see the run to its end, so nothing it measured is judged.
    const before = this.failure;
    await this.stopTarget(target).catch((error: unknown) => {
      if (before === undefined) this.recordFailure('target', error);
    });
    const failure = this.failure;
    const reason: RunResult['reason'] = failure ? 'failed' : interrupted ? 'interrupted' : 'completed';
    if (runWide) await github.snapshot('after');
    // Live telemetry sees every record the trace gets: calls still in flight at the planned end
    // (answered while the target stops) and the closing /rate_limit bracket included.
    await this.detach();
    const endedAt = clock.now();
    // Only a completed run is judged: a partial one would pass budgets it never faced.
    const verdicts =
      this.judge && reason === 'completed' ? this.judge.finish(trace, endedAt, spawner.count) : undefined;
    if (clock instanceof RealClock) clock.dispose();
    this.traceOpen = false;
    trace.close(reason, endedAt);
    return {
      scenario: this.scenario,
      tracePath: this.tracePath,
      reason,
      ...(failure ? { failure } : {}),
      endedAt,
      sessionsStarted: spawner.count,
      sessionsDropped: spawner.droppedCount,
      events,
      ...(verdicts ? { verdicts } : {}),
    };
  }

  /** What each role's processes spent from the run's start to now, as one event (the last sample). */
  private writeProcessCpu(): void {
    if (!this.processes) return;
    const share = this.processes.stop();
    if (share.samples === 0) return;
    this.trace.write({
      kind: 'event',
      name: HARNESS_CPU_EVENT,
      t: this.clock.now(),
      labels: { over: share.harnessSharePct !== null && share.harnessSharePct > HARNESS_SHARE_BOUND_PCT },
      data: {
        windowMs: share.windowMs,
        samples: share.samples,
        intervalMs: share.intervalMs,
        cpuMs: share.cpuMs,
        harnessSharePct: share.harnessSharePct,
        boundPct: HARNESS_SHARE_BOUND_PCT,
      },
    });
  }

  private async detach(): Promise<void> {
    const current = this.attachment;
    this.attachment = undefined;
    await current?.close();
  }

  /** After an error nothing handled: close what is open, and the trace as failed. */
  async abandon(): Promise<void> {
    this.processes?.stop();
    await this.detach().catch(() => undefined);
    if (this.opened) await this.stopTarget(this.opened).catch(() => undefined);
    if (this.clock instanceof RealClock) this.clock.dispose();
    this.traceOpen = false;
    this.trace.close('failed');
  }

  /**
   * The target's stop, bounded in real time: a stop that hangs (a connection nobody closes, a
   * child that ignores its signals) must not hang the run, whose trace and summary come after it.
   */
  private stopTarget(target: Target): Promise<void> {
    const boundMs = this.hooks.targetStopBoundMs ?? TARGET_STOP_BOUND_MS;
    return withTimeout(target.stop(), boundMs, `the target did not stop within ${boundMs / 1000} s`);
  }

  release(): void {
    this.hooks.signal?.removeEventListener('abort', this.onAbort);
  }
}

function stalled(at: number, limit: number, what: string): FleetbenchError {
  return new FleetbenchError(
    'E_STALLED',
    `the run's clock stopped advancing: ${limit} ${what} at run time ${Math.round(at * 1000) / 1000} ms; a loop schedules itself with no delay`,
    {
      hint: 'check intervals and rates in the scenario, or the target module (limits: docs/limits.md)',
    },
  );
}
