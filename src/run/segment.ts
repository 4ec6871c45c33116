/**
 * A live run's segment planned (docs/distributed.md): `fleetbench run SCENARIO --clock real
 * --segment i/n` (or a pod of an Indexed Job) runs its share of the run's starts, dealt by global
 * index like k6's execution segments (start k of each executor is segment k mod n's), on one
 * timeline shared by every segment (a common start time), against one shared target
 * (`--target http://…`) and one shared GitHub emulator (`--github URL`). Here: which segment,
 * whether the scenario can be split at all, the common start and where the segment writes.
 * Its record and the merge are src/distributed/run-segment.ts and merge-run.ts.
 *
 * A virtual-time run is never split: its sessions share one GitHub quota and one simulated
 * clock in one process, so n processes would measure n smaller fleets, not this one.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { MAX_START_AT_LEAD_MS } from '../base/limits.ts';
import { makeDirectories } from '../base/safe-write.ts';
import { resolveSegment, SEGMENTS_DIR, type Segment, segmentLabel } from '../base/segment.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';
import { SEGMENTED_EXECUTORS } from '../workload/executors/index.ts';
import type { Scenario } from '../workload/scenario.ts';

/** Where the segments of a run agree on their start when no `--start-at` is given. */
export const START_FILE = 'run-start.json';
/** How far ahead the first segment sets the common start: time for the others to come up. */
export const START_LEAD_MS = 10_000;

export const runSegmentName = (s: Segment) => `run-${s.index}-of-${s.count}`;

/** A live-run segment planned; planFromOptions (request.ts) puts it into the RunPlan. */
export interface RunSegmentPlan {
  segment: Segment;
  /** The common start (Unix ms): run time 0 of every segment, so they keep one timeline. */
  startAtMs: number;
  /** This segment's own directory (trace.jsonl, summary.json), under the shared one. */
  dir: string;
  recordPath: string;
  /** The same in every segment of one run: the scenario's name and the common start. */
  runId: string;
}

/** The segment this process runs, or undefined for the whole run (checks: checkRunSplittable). */
export function planRunSegment(
  flag: string | undefined,
  scenario: Scenario,
  options: { github?: string; startAt?: string; outDir: string; now?: number; env?: NodeJS.ProcessEnv },
): RunSegmentPlan | undefined {
  const segment = resolveSegment(flag, options.env);
  if (!segment) return undefined;
  const label = `run: segment ${segmentLabel(segment)}`;
  checkRunSplittable(scenario, label, options.github);
  const now = options.now ?? Date.now();
  const startAtMs =
    options.startAt !== undefined ? parseStartAt(options.startAt) : agreedStart(options.outDir, now);
  if (startAtMs - now > MAX_START_AT_LEAD_MS)
    throw new FleetbenchError(
      'E_USAGE',
      `${label}: --start-at ${new Date(startAtMs).toISOString()} is more than 24 hours ahead (docs/limits.md): give the common start in Unix milliseconds or as an ISO time`,
    );
  if (startAtMs + scenario.durationMs / scenario.timeScale < now)
    throw new FleetbenchError(
      'E_USAGE',
      `${label}: the run that started at ${new Date(startAtMs).toISOString()} is over; a live run's segment cannot be re-run after it`,
      {
        hint: `run every segment again with a new start (--start-at, or remove ${join(options.outDir, SEGMENTS_DIR, START_FILE)}); docs/distributed.md`,
      },
    );
  const dir = join(options.outDir, SEGMENTS_DIR);
  return {
    segment,
    startAtMs,
    dir: join(dir, runSegmentName(segment)),
    recordPath: join(dir, `${runSegmentName(segment)}.json`),
    runId: `${scenario.name}-${new Date(startAtMs).toISOString()}`,
  };
}

/**
 * Refuses, with the reason, what cannot be split (also `k8s manifest run`, before a cluster is
 * involved): a virtual-time run; a target or a GitHub of the process's own (each segment would
 * measure its own fleet); executors and faults that act on the whole run's sessions.
 */
export function checkRunSplittable(scenario: Scenario, label: string, github: string | undefined): void {
  if (scenario.clock === 'virtual')
    throw new FleetbenchError(
      'E_USAGE',
      `${label} asked, but a virtual-time run is not split: its sessions share one GitHub quota and one simulated clock in one process, so n processes would measure n smaller fleets, not this one`,
      {
        hint: 'split a matrix instead (fleetbench matrix --segment i/n), or repeat the run with --seed; see docs/distributed.md',
      },
    );
  if (!targetInfo(parseTarget(scenario.target)).shareable)
    throw new FleetbenchError(
      'E_USAGE',
      `${label}: a live-run segment drives a shared target, '${scenario.target}' would be one control plane per segment`,
      {
        hint: 'serve it once (fleetbench reference serve) and give --target http://HOST:PORT; docs/distributed.md',
      },
    );
  if (github === undefined)
    throw new FleetbenchError(
      'E_USAGE',
      `${label}: a live-run segment needs the shared GitHub emulator (--github URL): with one of its own, each segment would spend a quota of its own`,
      {
        hint: 'start one with fleetbench github serve and give its URL and admin token; docs/distributed.md',
      },
    );
  for (const executor of scenario.executors)
    if (!SEGMENTED_EXECUTORS.has(executor.type))
      throw new FleetbenchError(
        'E_USAGE',
        `${label}: executor '${executor.type}' is not split across segments (it acts on the whole run's sessions); split: ${[...SEGMENTED_EXECUTORS].join(', ')}`,
        { hint: 'run it in one process; docs/distributed.md says what is split' },
      );
  for (const executor of scenario.executors)
    if (executor.afterMarker !== undefined)
      throw new FleetbenchError(
        'E_USAGE',
        `${label}: executor '${executor.type}' starts after the marker '${executor.afterMarker}', which each segment reaches at its own time (its share of the work): the segments would leave the common timeline`,
        { hint: 'start it at a run time instead (at: 3m); docs/distributed.md' },
      );
  for (const fault of scenario.faults)
    if (fault.type === 'review-burst')
      throw new FleetbenchError(
        'E_USAGE',
        `${label}: a review-burst fault picks among every session's PRs, which no one segment knows`,
        { hint: 'run it in one process; docs/distributed.md says what is split' },
      );
}

/** `--start-at`: Unix ms or an ISO 8601 time. */
export function parseStartAt(text: string): number {
  // Digits are Unix milliseconds; anything else must read as an ISO date (Date.parse alone would
  // take '-5' or 'May 1' as some date).
  const ms = /^\d+$/.test(text)
    ? Number(text)
    : /^\d{4}-\d{2}-\d{2}(T|$)/.test(text)
      ? Date.parse(text)
      : Number.NaN;
  if (!Number.isFinite(ms) || ms <= 0)
    throw new FleetbenchError(
      'E_USAGE',
      `--start-at: expected Unix milliseconds or an ISO time (2026-12-03T02:00:00Z), got '${text}'`,
    );
  return ms;
}

/**
 * Without --start-at, the segments agree through the shared output directory: the first to
 * come creates `segments/run-start.json` (exclusively) with a start 10 s ahead, the others read
 * it. A segment re-run by Kubernetes within the run reads it too, and joins the run.
 */
function agreedStart(outDir: string, now: number): number {
  const dir = join(outDir, SEGMENTS_DIR);
  makeDirectories(dir);
  const path = join(dir, START_FILE);
  const proposal = now + START_LEAD_MS;
  try {
    const fd = openSync(path, 'wx');
    writeSync(fd, `${JSON.stringify({ startAtMs: proposal, iso: new Date(proposal).toISOString() })}\n`);
    closeSync(fd);
    return proposal;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  // Written by another segment: it may be mid-write for a moment.
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const parsed = JSON.parse(readFileSync(path, 'utf8')) as { startAtMs?: unknown };
      if (typeof parsed.startAtMs === 'number') return parsed.startAtMs;
    } catch {
      // not complete yet
    }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  throw new FleetbenchError('E_FILE', `${path}: expected {"startAtMs": <Unix ms>}`);
}
