/**
 * A matrix segment: one process's share of a matrix's runs (unit × repeat), dealt out by index
 * over the matrix's fixed plan (src/matrix/run.ts `planMatrix`), run on the usual pool, written
 * as today under the shared output directory (`cells/<id>/…`), and recorded in
 * `segments/matrix-<i>-of-<n>.json` for `fleetbench merge`. The record is written with status
 * `running` before the first run and replaced (write + rename) at the end, so a segment that was
 * lost mid-way says so, and re-running one index replaces its record and its run directories.
 */
import { readdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { FleetbenchError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_RESULTS_FILE_BYTES } from '../base/limits.ts';
import { makeDirectories } from '../base/safe-write.ts';
import { inSegment, SEGMENTS_DIR, type Segment } from '../base/segment.ts';
import { describeZodIssues } from '../base/validation.ts';
import { VERSION } from '../base/version.ts';
import { runPool } from '../matrix/pool.ts';
import { baselineUnit, type MatrixSpec, planMatrix, type RunControl } from '../matrix/run.ts';
import { baselineSchema } from '../results/baseline.ts';
import { scenarioBudgetJudge } from '../results/checks.ts';
import { outsideDir, segmentRecordFields, type segmentStatusSchema } from './segment.ts';

export const MATRIX_SEGMENT_VERSION = 1;

export const matrixSegmentSchema = z.object({
  ...segmentRecordFields('fleetbench-matrix-segment', MATRIX_SEGMENT_VERSION),
  plan: z.object({
    selection: z.string(),
    overrides: z.array(z.string()),
    seed: z.number().int().nullable(),
    repeats: z.number().int().positive(),
    /** Every run of the whole matrix, in plan order: segments of one matrix agree on it. */
    keys: z.array(z.string()),
  }),
  /** The runs this segment owns (a subset of plan.keys). */
  assigned: z.array(z.string()),
  /** Every unit of the plan (its metadata), with the runs this segment finished. */
  units: baselineSchema.shape.units,
  timing: z.object({ wallMs: z.number(), jobs: z.number().int(), runs: z.record(z.string(), z.number()) }),
});

export type MatrixSegmentRecord = z.infer<typeof matrixSegmentSchema>;
export type SegmentStatus = z.infer<typeof segmentStatusSchema>;

export const segmentFileName = (s: Segment) => `matrix-${s.index}-of-${s.count}.json`;

export interface SegmentOutcome {
  record: MatrixSegmentRecord;
  path: string;
  /** Runs of this segment that did not happen (interrupted). */
  skipped: number;
}

function writeAtomically(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export async function runMatrixSegment(
  spec: MatrixSpec,
  segment: Segment,
  control: RunControl,
): Promise<SegmentOutcome> {
  const started = performance.now();
  const plan = planMatrix(spec);
  const all = plan.flatMap((p) => p.jobs);
  const mine = all.filter((_, k) => inSegment(k, segment));
  const judge =
    control.judge ?? scenarioBudgetJudge((id) => plan.find((p) => p.unit.id === id)?.budgets ?? []);
  const dir = join(spec.outDir, SEGMENTS_DIR);
  makeDirectories(dir);
  const path = join(dir, segmentFileName(segment));
  const record = (
    status: SegmentStatus,
    results: Awaited<ReturnType<typeof runPool>>['results'],
    error?: string,
  ): MatrixSegmentRecord => {
    const byKey = new Map(results.map((r) => [r.job.key, r]));
    return {
      kind: 'fleetbench-matrix-segment',
      schemaVersion: MATRIX_SEGMENT_VERSION,
      generator: { name: 'fleetbench', version: VERSION },
      segment,
      status,
      ...(error === undefined ? {} : { error }),
      plan: {
        selection: spec.selection,
        overrides: spec.overrides ?? [],
        seed: spec.seed ?? null,
        repeats: spec.repeats ?? 1,
        keys: all.map((j) => j.key),
      },
      assigned: mine.map((j) => j.key),
      units: plan.map((p) => baselineUnit(p, (job) => byKey.get(job.key), spec.outDir, judge)),
      timing: {
        wallMs: Math.round(performance.now() - started),
        jobs: Math.max(1, Math.min(control.jobs, mine.length)),
        runs: Object.fromEntries(results.map((r) => [r.job.key, Math.round(r.wallMs)])),
      },
    };
  };
  const save = (r: MatrixSegmentRecord) => writeAtomically(path, `${JSON.stringify(r, null, 1)}\n`);
  save(record('running', []));
  control.onPlan?.(mine.length);
  try {
    const { results } = mine.length
      ? await runPool(mine, {
          jobs: control.jobs,
          signal: control.signal,
          onStart: control.onStart,
          onDone: control.onDone,
        })
      : { results: [] };
    const complete =
      results.length === mine.length && results.every((r) => r.summary.outcome.reason === 'completed');
    const final = record(complete ? 'done' : 'interrupted', results);
    save(final);
    return { record: final, path, skipped: mine.length - results.length };
  } catch (error) {
    save(record('failed', [], (error as Error)?.message ?? String(error)));
    throw error;
  }
}

export interface FoundSegment {
  /** The matrix directory the record belongs to (its runs' paths are relative to it). */
  root: string;
  path: string;
  record: MatrixSegmentRecord;
}

/** Every matrix segment record under `<dir>/segments/`. */
export function findMatrixSegments(dir: string): FoundSegment[] {
  const segDir = join(dir, SEGMENTS_DIR);
  let names: string[];
  try {
    names = readdirSync(segDir).filter((n) => /^matrix-\d+-of-\d+\.json$/.test(n));
  } catch {
    return [];
  }
  return names.sort().map((name) => {
    const path = join(segDir, name);
    return { root: dir, path, record: readMatrixSegment(path, dir) };
  });
}

/** A matrix segment record, checked; its run paths must stay inside `matrixDir`. */
export function readMatrixSegment(path: string, matrixDir: string): MatrixSegmentRecord {
  let raw: unknown;
  try {
    raw = JSON.parse(
      readInputText(path, { maxBytes: MAX_RESULTS_FILE_BYTES, code: 'E_RESULTS', what: 'a segment record' }),
    );
  } catch (error) {
    if (error instanceof FleetbenchError) throw error;
    throw new FleetbenchError('E_RESULTS', `${path}: not readable as JSON (${(error as Error).message})`);
  }
  const parsed = matrixSegmentSchema.safeParse(raw);
  if (!parsed.success)
    throw new FleetbenchError(
      'E_RESULTS',
      `${path}: not a fleetbench matrix segment record: ${describeZodIssues(parsed.error.issues, 3).join('; ')}`,
    );
  // A segment's run paths are relative to its matrix directory and stay inside it, by their text
  // and on disk: a record pointing a merged baseline at ../../etc, or at a link to /etc, is
  // refused, naming the field.
  for (const [u, unit] of parsed.data.units.entries())
    for (const [r, run] of unit.runs.entries())
      for (const [field, value] of [
        ['dir', run.dir],
        ['analysis.input.file', run.analysis.input.file],
      ] as const) {
        const why = value === null ? undefined : outsideDir(matrixDir, value);
        if (why !== undefined)
          throw new FleetbenchError(
            'E_RESULTS',
            `${path}: units[${u}].runs[${r}].${field}: '${value}' ${why} the matrix directory (a segment's run paths are relative to it)`,
          );
      }
  // The raw document, not zod's copy: zod rebuilds objects in schema order and drops what the
  // schema does not name, and a merged baseline must keep the runs' bytes as the segment wrote them.
  return raw as MatrixSegmentRecord;
}
