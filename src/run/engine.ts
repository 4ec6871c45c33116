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
import { type TraceSink, TraceWriter } from '../trace/writer.ts';
import { VERSION } from '../version.ts';
import { checkExecutors, runExecutor, startsOf } from '../workload/executors/index.ts';
import { checkFaults, scheduleFaults } from '../workload/faults.ts';
import { createInProcessGitHub, type GitHubSide } from '../workload/github-side.ts';
import { scenarioHash } from '../workload/load.ts';
import { MarkerBus } from '../workload/markers.ts';
import type { Scenario } from '../workload/scenario.ts';
import { type GlobalSessions, SessionSpawner } from '../workload/spawner.ts';
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
  /**
   * Real clock: run time 0 at this Unix ms instead of now (a start shared by the segments of a
   * live run, so they keep one global timing; docs/distributed.md).
   */
  epochMs?: number;
  /** The GitHub side when it is not an emulator of the run's own (`run --github URL`). */
  github?: (clock: Clock, trace: TraceSink) => Promise<GitHubSide>;
  /**
   * A live-run segment (docs/distributed.md): this process runs the starts of every executor
   * whose global index k has k mod count = index, against a target and a GitHub shared with the
   * other segments. Only segment 0 does what is run-wide: faults, the `sessions` gauge, marker
   * events, the records of the target's stream that belong to no session, `/rate_limit` brackets.
   * Budgets are not judged in a segment (alone it is not the run).
   */
  segment?: { index: number; count: number };
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
    scenario.clock === 'virtual'
      ? new VirtualClock()
      : new RealClock({ timeScale: scenario.timeScale, epochMs: options.epochMs });
  const { segment } = options;
  // Run-wide work (faults, gauges, markers, records of no session) is done once: in segment 0.
  const runWide = segment === undefined || segment.index === 0;
  // Budget sets load before anything runs: a bad one fails at once (exit 104).
  const judge = segment ? undefined : prepareRunJudge(scenario.budgets);
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
      ...(segment ? { labels: { segment: segment.index, segments: segment.count } } : {}),
      epochMs: clock.epochMs,
      startedAt: new Date(clock.epochMs).toISOString(),
    },
    { flushIntervalMs: scenario.clock === 'virtual' ? 0 : 250 },
  );

  judge?.observe(trace);
  let traceOpen = true;
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
    const github = options.github
      ? await options.github(clock, trace)
      : createInProcessGitHub(scenario, clock, rng.fork('github'), trace);
    // Segments other than 0 still hear their markers (executors wait on them) but do not record
    // them: the merged trace has each once.
    const markers = new MarkerBus(clock, runWide ? trace : { write: () => undefined });
    const global: GlobalSessions | undefined = segment ? { own: new Set() } : undefined;
    // A shared emulator's admin API answers over the network: the world's last step (CI done, a
    // PR opened) can land after the run closed its trace; it is not the run's any more.
    const worldTrace: TraceSink = options.github
      ? { write: (record) => (traceOpen ? trace.write(record) : undefined) }
      : trace;
    const world = new World(github.admin, clock, rng.fork('world'), worldTrace, {
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
    opened = target;
    // The system under test failed for good (e.g. agent-orchestrator's process died).
    target.onFailure?.(fail('target'));
    checkFaults(scenario.faults, target);
    checkExecutors(scenario.executors, target);
    if (options.attach)
      attachment = await options.attach({ scenario, clock, trace, target, github, signal: abort.signal });
    const spawner = new SessionSpawner(clock, trace, target, world, github.repos, global);
    // A segment numbers each executor's sessions after all the starts of those before it.
    const offsets: number[] = [];
    if (segment)
      scenario.executors.reduce((n, executor) => {
        offsets.push(n);
        return n + startsOf(executor);
      }, 0);

    // Everything that talks to the target runs on the run's clock: under the virtual clock a
    // request only completes while the clock is running.
    const script = async () => {
      if (runWide) await github.snapshot('before');
      await target.start();
      if (runWide)
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
    // The target's counts are the whole run's: sampled once, by segment 0.
    if (runWide) clock.setTimeout(() => void sampleGauges(), 0);

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
      // A segment ends at the run's end on the shared timeline (it may have started late).
      const remaining = segment ? Math.max(0, scenario.durationMs - clock.now()) : scenario.durationMs;
      await clock.sleep(remaining, abort.signal).catch(() => undefined);
    }
    if (scriptError !== undefined && failure === undefined) throw scriptError;
    // Under the real clock the last 10 s sample can be up to 10 s old: one more at the end, so
    // the final states are the target's at the end (virtual time already samples at the end).
    if (!(clock instanceof VirtualClock) && runWide) await writeSessionGauges().catch(() => undefined);
    const interrupted = failure === undefined && (options.signal?.aborted ?? false);
    const reason: RunResult['reason'] = failure ? 'failed' : interrupted ? 'interrupted' : 'completed';
    abort.abort();
    await detach();
    opened = undefined;
    // A lost target may not answer its stop: that must not hide why the run failed.
    if (failure) await target.stop().catch(() => undefined);
    else await target.stop();
    if (runWide) await github.snapshot('after');
    const endedAt = clock.now();
    // Only a completed run is judged: a partial one would pass budgets it never faced.
    const verdicts =
      judge && reason === 'completed' ? judge.finish(trace, endedAt, spawner.count) : undefined;
    if (clock instanceof RealClock) clock.dispose();
    traceOpen = false;
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
    traceOpen = false;
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
