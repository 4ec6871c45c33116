/**
 * Joins the segment records of one matrix (src/distributed/matrix-segment.ts) into the baseline
 * the matrix would have written in one process: units in plan order, each unit's runs in repeat
 * order, pruning recomputed over the whole, `partial` when a run is missing or did not complete.
 * Per-unit figures are the runs' own (each run is whole in one segment), so they are byte-for-byte
 * the single process's; only `timing` differs. A segment that is missing, still `running` (lost),
 * `failed` or `interrupted` is named in the outcome.
 */
import { join, relative } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { makeDirectories, writeOutputFile } from '../base/safe-write.ts';
import { VERSION } from '../base/version.ts';
import { baselineMarkdown } from '../matrix/markdown.ts';
import { pruneBaseline } from '../matrix/run.ts';
import {
  BASELINE_SCHEMA_VERSION,
  type Baseline,
  type BaselineRun,
  type BaselineUnit,
} from '../results/baseline.ts';
import type { FoundSegment, SegmentStatus } from './matrix-segment.ts';
import { segmentsByIndex } from './segment.ts';

export interface SegmentReport {
  index: number;
  status: SegmentStatus | 'missing';
  file: string | null;
  /** Runs this segment owns, and how many of them are in the merged baseline. */
  assigned: number | null;
  merged: number;
  error?: string;
}

export interface MatrixMergeOutcome {
  baseline: Baseline;
  jsonPath: string;
  markdownPath: string;
  segments: SegmentReport[];
  /** Plan keys with no run in any segment. */
  missingRuns: string[];
}

const runKey = (unitId: string, seed: number, repeats: number) =>
  repeats > 1 ? `${unitId}#${seed}` : unitId;

const samePlan = (a: FoundSegment, b: FoundSegment) =>
  JSON.stringify([a.record.plan, a.record.segment.count]) ===
  JSON.stringify([b.record.plan, b.record.segment.count]);

export function mergeMatrixSegments(found: FoundSegment[], outDir: string): MatrixMergeOutcome {
  if (found.length === 0) throw new FleetbenchError('E_RESULTS', 'no matrix segment records to merge');
  const first = found[0]!;
  for (const f of found.slice(1)) {
    if (!samePlan(first, f))
      throw new FleetbenchError(
        'E_RESULTS',
        `${f.path}: belongs to another matrix than ${first.path} (the selection, overrides, seed, repeats or segment count differ); merge the segments of one matrix at a time`,
      );
  }
  const { plan, segment } = first.record;
  const byIndex = segmentsByIndex(found, (s) => `${s.index}/${s.count}`);

  // Each run, found in whichever segment owns it, with its paths made relative to outDir.
  const runs = new Map<string, BaselineRun>();
  const mergedPerSegment = new Map<number, number>();
  for (const f of found) {
    const owned = new Set(f.record.assigned);
    for (const unit of f.record.units) {
      for (const run of unit.runs) {
        const key = runKey(unit.id, run.seed, plan.repeats);
        if (!owned.has(key)) continue;
        runs.set(key, relocate(run, f.root, outDir));
        mergedPerSegment.set(f.record.segment.index, (mergedPerSegment.get(f.record.segment.index) ?? 0) + 1);
      }
    }
  }
  const units: BaselineUnit[] = first.record.units.map((unit) => ({
    ...unit,
    runs: plan.keys
      .filter((key) => key === unit.id || key.startsWith(`${unit.id}#`))
      .flatMap((key) => {
        const run = runs.get(key);
        return run ? [run] : [];
      }),
  }));
  const missingRuns = plan.keys.filter((key) => !runs.has(key));
  const timingRuns: Record<string, number> = {};
  for (const key of plan.keys) {
    for (const f of found) {
      const ms = f.record.timing.runs[key];
      if (ms !== undefined && runs.has(key)) timingRuns[key] = ms;
    }
  }
  const baseline: Baseline = {
    kind: 'fleetbench-baseline',
    schemaVersion: BASELINE_SCHEMA_VERSION,
    generator: { name: 'fleetbench', version: VERSION },
    selection: plan.selection,
    overrides: plan.overrides,
    repeats: plan.repeats,
    partial: missingRuns.length > 0 || [...runs.values()].some((r) => r.reason !== 'completed'),
    units,
    pruning: pruneBaseline(units),
    timing: {
      // Segments run side by side: the matrix took as long as its slowest segment.
      wallMs: Math.max(...found.map((f) => f.record.timing.wallMs)),
      jobs: Math.max(
        1,
        found.reduce((n, f) => n + f.record.timing.jobs, 0),
      ),
      runs: timingRuns,
    },
  };
  const segments: SegmentReport[] = [];
  for (let index = 0; index < segment.count; index++) {
    const f = byIndex.get(index);
    segments.push(
      f
        ? {
            index,
            status: f.record.status,
            file: f.path,
            assigned: f.record.assigned.length,
            merged: mergedPerSegment.get(index) ?? 0,
            ...(f.record.error ? { error: f.record.error } : {}),
          }
        : { index, status: 'missing', file: null, assigned: null, merged: 0 },
    );
  }
  makeDirectories(outDir);
  const jsonPath = join(outDir, 'baseline.json');
  const markdownPath = join(outDir, 'baseline.md');
  writeOutputFile(jsonPath, `${JSON.stringify(baseline, null, 1)}\n`);
  writeOutputFile(markdownPath, baselineMarkdown(baseline));
  return { baseline, jsonPath, markdownPath, segments, missingRuns };
}

/** A run's paths are relative to its segment's matrix directory; the merged baseline's to outDir. */
function relocate(run: BaselineRun, root: string, outDir: string): BaselineRun {
  const move = (p: string) => relative(outDir, join(root, p)) || '.';
  const file = run.analysis.input.file;
  return {
    ...run,
    dir: move(run.dir),
    analysis: { ...run.analysis, input: { ...run.analysis.input, file: file && move(file) } },
  };
}
