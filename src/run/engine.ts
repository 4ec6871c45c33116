/**
 * The workload engine: one run of one scenario. It builds the clock, the trace, the GitHub side
 * (the emulator, in-process for the embedded target), the world script and the target; starts
 * the executors, schedules faults and markers, samples gauges, brackets the run with
 * `/rate_limit` snapshots, and closes the trace, with reason `interrupted` if the signal fired.
 */
import { join } from 'node:path';
import type { Clock } from '../clock/clock.ts';
import { RealClock } from '../clock/real.ts';
import { VirtualClock } from '../clock/virtual.ts';
import { FleetbenchError } from '../errors.ts';
import type { Verdict } from '../judge/judge.ts';
import { MAX_EVENTS_AT_ONE_INSTANT } from '../limits.ts';
import { createRng } from '../rng.ts';
import { openTarget, targetKind } from '../targets/index.ts';
import type { Target } from '../targets/types.ts';
import { TraceWriter } from '../trace/writer.ts';
import { VERSION } from '../version.ts';
import { checkExecutors, runExecutor } from '../workload/executors/index.ts';
import { checkFaults, scheduleFaults } from '../workload/faults.ts';
import { createInProcessGitHub, type GitHubSide } from '../workload/github-side.ts';
import { scenarioHash } from '../workload/load.ts';
import { MarkerBus } from '../workload/markers.ts';
import type { Scenario } from '../workload/scenario.ts';
import { SessionSpawner } from '../workload/spawner.ts';
import { World } from '../workload/world.ts';
import { prepareRunJudge } from './judge.ts';

export interface RunOptions {
  /** Directory for trace.jsonl (and, written by the caller, summary.json). */
  outDir: string;
  signal?: AbortSignal;
  /** Matrix cell id, recorded in the trace header. */
  cell?: string;
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
  /**
   * `failed`: the run did not complete (its target failed or was lost, or its clock stopped
   * advancing): partial, never judged (`failure` says why).
   */
  reason: 'completed' | 'interrupted' | 'failed';
  /** Why a `failed` run stopped, and what failed. */
  failure?: { source: string; message: string };
  endedAt: number;
  sessionsStarted: number;
  sessionsDropped: number;
  /** Virtual runs: timer events processed (a measure of simulation work). */
  events?: number;
  /** The scenario's budgets, judged before the footer (absent without budgets or when interrupted). */
  verdicts?: Verdict[];
}

const GAUGE_EVERY_MS = 10_000;

export async function runScenario(scenario: Scenario, options: RunOptions): Promise<RunResult> {
  targetKind(scenario.target);
  const clock: Clock =
    scenario.clock === 'virtual' ? new VirtualClock() : new RealClock({ timeScale: scenario.timeScale });
  // Budget sets load before anything runs: a bad one fails at once (exit 104).
  const judge = prepareRunJudge(scenario.budgets);
  const rng = createRng(scenario.seed);
  const hash = scenarioHash(scenario);
  const tracePath = join(options.outDir, 'trace.jsonl');
  const runId =
    scenario.clock === 'virtual'
      ? `${scenario.name}-seed${scenario.seed}-${hash.slice(0, 8)}`
      : `${scenario.name}-${new Date(clock.epochMs).toISOString()}`;
  const trace = new TraceWriter(
    tracePath,
    {
      runId,
      tool: { name: 'fleetbench', version: VERSION },
      clock: scenario.clock,
      ...(scenario.clock === 'real' ? { timeScale: scenario.timeScale } : {}),
      seed: scenario.seed,
      scenario: { name: scenario.name, hash, ...(options.cell ? { cell: options.cell } : {}) },
      target: scenario.target,
      epochMs: clock.epochMs,
      startedAt: new Date(clock.epochMs).toISOString(),
    },
    { flushIntervalMs: scenario.clock === 'virtual' ? 0 : 250 },
  );

  judge?.observe(trace);
  const abort = new AbortController();
  // A part of the run that fails (a restart that never came back, an executor that cannot go
  // on) fails the run: it stops, the trace says why, and nothing judges what was left.
  let failure: RunResult['failure'];
  // The progress guard: under the virtual clock, a loop that writes record after record without
  // time passing (a zero interval) would fill the disk and starve signals (no macrotask ever
  // runs). Past the limit every record at that instant throws in its producer, which breaks the
  // loop, and the run fails. Off for the engine's own records and once the clock has stopped.
  const guardLimit = options.maxEventsAtOneInstant ?? MAX_EVENTS_AT_ONE_INSTANT;
  let guardOn = clock instanceof VirtualClock;
  const fail = (source: string) => (error: unknown) => {
    if (abort.signal.aborted) return;
    failure = { source, message: (error as Error)?.message ?? String(error) };
    const guarding = guardOn;
    guardOn = false;
    try {
      trace.write({
        kind: 'event',
        name: 'run.failed',
        t: clock.now(),
        labels: { source },
        data: { message: failure.message },
      });
    } finally {
      guardOn = guarding;
    }
    abort.abort();
  };
  let instant = -1;
  let atInstant = 0;
  trace.tap(() => {
    if (!guardOn) return;
    const now = clock.now();
    if (now !== instant) {
      instant = now;
      atInstant = 0;
      return;
    }
    if (++atInstant < guardLimit) return;
    const error = stalled(now, guardLimit, 'trace records');
    fail('progress-guard')(error);
    throw error;
  });
  const onAbort = () => abort.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let opened: Target | undefined;
  let scriptError: unknown;
  let attachment: RunAttachment | undefined;
  const detach = async () => {
    const current = attachment;
    attachment = undefined;
    await current?.close();
  };

  try {
    const github = createInProcessGitHub(scenario, clock, rng.fork('github'), trace);
    const markers = new MarkerBus(clock, trace);
    const world = new World(github.admin, clock, rng.fork('world'), trace, {
      prAfter: scenario.sessions.prAfter,
      ciAfter: scenario.sessions.ciAfter,
      checks: scenario.sessions.checks,
      mergeAfter: scenario.sessions.mergeAfter,
    });
    const target = await openTarget({
      scenario,
      clock,
      rng: rng.fork('target'),
      trace,
      github,
      runId,
      world,
      outDir: options.outDir,
    });
    opened = target;
    // The system under test failed for good (e.g. agent-orchestrator's process died).
    target.onFailure?.(fail('target'));
    checkFaults(scenario.faults, target);
    checkExecutors(scenario.executors, target);
    if (options.attach)
      attachment = await options.attach({ scenario, clock, trace, target, github, signal: abort.signal });
    const spawner = new SessionSpawner(clock, trace, target, world, github.repos);

    // Everything that talks to the target runs on the run's clock: under the virtual clock a
    // request only completes while the clock is running.
    const script = async () => {
      await github.snapshot('before');
      await target.start();
      scheduleFaults(scenario.faults, {
        onFailure: (index, error) => fail(`fault ${index + 1} (${scenario.faults[index]?.type})`)(error),
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
        markers.schedule(
          executor,
          () =>
            void runExecutor(executor, {
              clock,
              trace,
              target,
              spawner,
              markers,
              signal: abort.signal,
              name,
              rng: rng.fork(`executor:${name}`),
              endRun: () => abort.abort(),
              durationMs: scenario.durationMs,
            }).catch(fail(`executor ${name}`)),
        );
      });
    };
    clock.setTimeout(() => {
      script().catch((error: unknown) => {
        scriptError = error;
        abort.abort();
      });
    }, 0);

    // Gauges: sessions by state, every 10 s of run time.
    const writeSessionGauges = async () => {
      const counts = await target.sessionCounts();
      // A remote target may answer after the run ended (and the trace closed): drop it.
      if (abort.signal.aborted) return;
      // One sample, one time: under the real clock now() moves between writes.
      const t = clock.now();
      for (const [state, value] of Object.entries(counts)) {
        trace.write({
          kind: 'gauge',
          name: 'sessions',
          t,
          value: value ?? 0,
          labels: { state },
        });
      }
    };
    const sampleGauges = async () => {
      await writeSessionGauges();
      if (!abort.signal.aborted) clock.setTimeout(() => void sampleGauges(), GAUGE_EVERY_MS);
    };
    clock.setTimeout(() => void sampleGauges(), 0);

    if (options.onProgress) {
      const every = options.progressEveryMs ?? 60_000;
      const report = async () => {
        options.onProgress?.({
          t: clock.now(),
          durationMs: scenario.durationMs,
          sessions: await target.sessionCounts(),
          apiCalls: trace.counts.api,
        });
        if (!abort.signal.aborted) clock.setTimeout(() => void report(), every);
      };
      clock.setTimeout(() => void report(), every);
    }

    if (scenario.markers.steadyStartMs !== undefined) {
      clock.setTimeout(() => markers.emit('steady.start'), scenario.markers.steadyStartMs);
    }

    let events: number | undefined;
    if (clock instanceof VirtualClock) {
      let result: Awaited<ReturnType<VirtualClock['run']>>;
      try {
        result = await clock.run({
          until: scenario.durationMs,
          signal: abort.signal,
          maxEventsAtOneInstant: guardLimit,
        });
      } catch (error) {
        // The guard's error thrown inside a timer callback: the run failed, said above.
        if (failure === undefined) throw error;
        result = { events: clock.events, endedAt: clock.now(), reason: 'aborted' };
      }
      events = result.events;
      guardOn = false;
      if (result.reason === 'stalled')
        fail('progress-guard')(stalled(result.endedAt, guardLimit, 'clock events'));
    } else {
      await clock.sleep(scenario.durationMs, abort.signal).catch(() => undefined);
    }
    if (scriptError !== undefined && failure === undefined) throw scriptError;
    // Under the real clock the last 10 s sample can be up to 10 s old: one more at the end, so
    // the final states are the target's at the end (virtual time already samples at the end).
    if (!(clock instanceof VirtualClock)) await writeSessionGauges().catch(() => undefined);
    const interrupted = failure === undefined && (options.signal?.aborted ?? false);
    const reason: RunResult['reason'] = failure ? 'failed' : interrupted ? 'interrupted' : 'completed';
    abort.abort();
    await detach();
    opened = undefined;
    // A lost target may not answer its stop: that must not hide why the run failed.
    if (failure) await target.stop().catch(() => undefined);
    else await target.stop();
    await github.snapshot('after');
    const endedAt = clock.now();
    // Only a completed run is judged: a partial one would pass budgets it never faced.
    const verdicts =
      judge && reason === 'completed' ? judge.finish(trace, endedAt, spawner.count) : undefined;
    if (clock instanceof RealClock) clock.dispose();
    trace.close(reason, endedAt);
    return {
      scenario,
      tracePath,
      reason,
      ...(failure ? { failure } : {}),
      endedAt,
      sessionsStarted: spawner.count,
      sessionsDropped: spawner.droppedCount,
      events,
      ...(verdicts ? { verdicts } : {}),
    };
  } catch (error) {
    await detach().catch(() => undefined);
    await opened?.stop().catch(() => undefined);
    if (clock instanceof RealClock) clock.dispose();
    trace.close('failed');
    throw error;
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
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
