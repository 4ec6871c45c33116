/**
 * Live-run segments (docs/distributed.md): each segment of a live run writes its own trace and a
 * record in `segments/` for `fleetbench merge`, and before its run waits for what it shares and
 * for the common start. What a segment is and when it starts is planned with the run
 * (src/run/segment.ts); this is what a segment process does around that plan, and the records
 * read back.
 */
import { readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.ts';
import { makeDirectories } from '../base/safe-write.ts';
import { SEGMENTS_DIR } from '../base/segment.ts';
import { describeZodIssues } from '../base/validation.ts';
import { VERSION } from '../base/version.ts';
import type { RunResult } from '../run/engine.ts';
import type { RunPlan } from '../run/plan.ts';
import { type RunSegmentPlan, runSegmentName } from '../run/segment.ts';
import { type SharedGitHubOptions, sharedGitHubSide, waitReachable } from '../run/shared-github.ts';
import { scenarioHash } from '../workload/load.ts';
import type { Scenario } from '../workload/scenario.ts';
import { outsideDir, segmentRecordFields } from './segment.ts';

export const RUN_SEGMENT_VERSION = 1;

export const runSegmentSchema = z.object({
  ...segmentRecordFields('fleetbench-run-segment', RUN_SEGMENT_VERSION),
  run: z.object({
    /** The same in every segment of one run: the scenario's name and the common start. */
    runId: z.string(),
    scenario: z.object({ name: z.string(), hash: z.string() }),
    startAtMs: z.number(),
    timeScale: z.number().positive(),
    durationMs: z.number(),
    target: z.string(),
    github: z.string(),
  }),
  /** Relative to the record's directory. */
  trace: z.string(),
  sessionsStarted: z.number().int().nonnegative(),
  sessionsDropped: z.number().int().nonnegative(),
  wallMs: z.number(),
});
export type RunSegmentRecord = z.infer<typeof runSegmentSchema>;

/** A live-run segment as its record and its wait for the start see it (from the RunPlan). */
type SegmentOfRun = Pick<RunSegmentPlan, 'segment' | 'startAtMs' | 'runId' | 'recordPath'>;

export function writeRunSegmentRecord(path: string, record: RunSegmentRecord): void {
  makeDirectories(join(path, '..'));
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(tmp, path);
}

export function runSegmentRecord(
  plan: SegmentOfRun,
  scenario: Scenario,
  github: string,
  state: Pick<RunSegmentRecord, 'status' | 'sessionsStarted' | 'sessionsDropped' | 'wallMs'> & {
    error?: string;
  },
): RunSegmentRecord {
  return {
    kind: 'fleetbench-run-segment',
    schemaVersion: RUN_SEGMENT_VERSION,
    generator: { name: 'fleetbench', version: VERSION },
    segment: plan.segment,
    status: state.status,
    ...(state.error ? { error: state.error } : {}),
    run: {
      runId: plan.runId,
      scenario: { name: scenario.name, hash: scenarioHash(scenario) },
      startAtMs: plan.startAtMs,
      timeScale: scenario.timeScale,
      durationMs: scenario.durationMs,
      target: scenario.target,
      github,
    },
    trace: `${runSegmentName(plan.segment)}/trace.jsonl`,
    sessionsStarted: state.sessionsStarted,
    sessionsDropped: state.sessionsDropped,
    wallMs: Math.round(state.wallMs),
  };
}

/**
 * A segment process around its run: its record says `running` from the start and how the run
 * ended at the end (a segment that was lost stays `running`); before the run it waits for what
 * it shares, connects to the shared emulator, and waits for the common start.
 */
export class RunSegmentProcess {
  private readonly started = performance.now();

  private constructor(
    private readonly plan: RunPlan,
    private readonly segment: SegmentOfRun,
    private readonly github: SharedGitHubOptions,
  ) {}

  /** The process of a plan's segment, if it has one (planFromOptions gives a segment all of these). */
  static of(plan: RunPlan): RunSegmentProcess | undefined {
    const { segment, epochMs, segmentRecord, github } = plan;
    if (!segment || epochMs === undefined || !segmentRecord || !github) return undefined;
    return new RunSegmentProcess(
      plan,
      { segment, startAtMs: epochMs, runId: segmentRecord.runId, recordPath: segmentRecord.path },
      github,
    );
  }

  /** Records `running`, waits for the shared target and emulator, connects, and waits for the start. */
  async join(signal: AbortSignal, notice: (message: string) => void): Promise<void> {
    this.record({ status: 'running', sessionsStarted: 0, sessionsDropped: 0, wallMs: 0 });
    // A pod may start before the Services it shares: wait for them (admin paths are not traced).
    await waitReachable(
      `${this.github.url.replace(/\/+$/, '')}/_fleetbench/stats`,
      'the shared GitHub emulator',
    );
    await waitReachable(`${this.plan.scenario.target.replace(/\/+$/, '')}/v1/info`, 'the shared target');
    await sharedGitHubSide(this.github);
    await untilStart(this.segment, signal, notice);
  }

  /** How the run ended: done, interrupted or failed (with why). */
  ended(outcome: RunResult): void {
    this.record({
      status:
        outcome.reason === 'completed' ? 'done' : outcome.reason === 'interrupted' ? 'interrupted' : 'failed',
      ...(outcome.failure ? { error: `${outcome.failure.source}: ${outcome.failure.message}` } : {}),
      sessionsStarted: outcome.sessionsStarted,
      sessionsDropped: outcome.sessionsDropped,
      wallMs: performance.now() - this.started,
    });
  }

  /** The run never ended by itself: an error before or during it. */
  failed(error: unknown, interrupted: boolean): void {
    this.record({
      status: interrupted ? 'interrupted' : 'failed',
      error: (error as Error)?.message ?? String(error),
      sessionsStarted: 0,
      sessionsDropped: 0,
      wallMs: performance.now() - this.started,
    });
  }

  private record(state: Parameters<typeof runSegmentRecord>[3]): void {
    writeRunSegmentRecord(
      this.segment.recordPath,
      runSegmentRecord(this.segment, this.plan.scenario, this.github.url, state),
    );
  }
}

/** A segment waits for the common start, so every segment reads one timeline (docs/distributed.md). */
async function untilStart(
  plan: SegmentOfRun,
  signal: AbortSignal,
  notice: (message: string) => void,
): Promise<void> {
  const wait = plan.startAtMs - Date.now();
  notice(
    `segment ${plan.segment.index}/${plan.segment.count} of ${plan.runId}${wait > 0 ? `: starts in ${(wait / 1000).toFixed(1)} s` : `: joining ${(-wait / 1000).toFixed(1)} s after its start`}`,
  );
  if (wait <= 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, wait);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
  if (signal.aborted)
    throw new FleetbenchError('E_USAGE', 'interrupted before the start', { exitCode: ExitCode.interrupted });
}

export interface FoundRunSegment {
  path: string;
  dir: string;
  record: RunSegmentRecord;
}

/** The run-segment records in DIR/segments/ (or DIR itself), validated (the file named on error). */
export function findRunSegments(dir: string): FoundRunSegment[] {
  const found: FoundRunSegment[] = [];
  for (const base of [join(dir, SEGMENTS_DIR), dir]) {
    let names: string[];
    try {
      names = readdirSync(base);
    } catch {
      continue;
    }
    for (const name of names.filter((n) => /^run-\d+-of-\d+\.json$/.test(n)).sort()) {
      const path = join(base, name);
      let json: unknown;
      try {
        json = JSON.parse(
          readInputText(path, {
            maxBytes: MAX_CONFIG_FILE_BYTES,
            code: 'E_RESULTS',
            what: 'a segment record',
          }),
        );
      } catch (error) {
        if (error instanceof FleetbenchError) throw error;
        throw new FleetbenchError('E_RESULTS', `${path}: not JSON (${(error as Error).message})`);
      }
      const parsed = runSegmentSchema.safeParse(json);
      if (!parsed.success)
        throw new FleetbenchError(
          'E_RESULTS',
          `${path}: not a run-segment record: ${describeZodIssues(parsed.error.issues, 3).join('; ')}`,
        );
      // Its trace is in the segment's directory: a record naming ../../etc/passwd, or a link
      // out, is refused, naming the field.
      const why = outsideDir(base, parsed.data.trace);
      if (why !== undefined)
        throw new FleetbenchError(
          'E_RESULTS',
          `${path}: trace: '${parsed.data.trace}' ${why} the segment's directory (${base})`,
        );
      found.push({ path, dir: base, record: parsed.data });
    }
    if (found.length > 0) break;
  }
  return found;
}
