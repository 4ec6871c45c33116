/**
 * Running a matrix: expand the selection into units, check every scenario before anything runs
 * (a bad --set fails at once, not in cell 37), run every (unit, repeat) on the child-process
 * pool, then write the baseline (baseline.json, baseline.md) with the pruning decisions.
 */
import { join, relative } from 'node:path';
import { VERSION } from '../base/version.ts';
import { BASELINE_SCHEMA_VERSION, type Baseline, type BaselineUnit } from '../results/baseline.ts';
import { scenarioBudgetJudge } from '../results/checks.ts';
import { isPartialUnit } from '../results/overview.ts';
import { planRun } from '../run/plan.ts';
import { parseOverride, scenarioHash } from '../workload/load.ts';
import { baselineMarkdown } from './markdown.ts';
import { type JobResult, type PoolEvents, runPool } from './pool.ts';
import type { RunJob } from './protocol.ts';
import { PRUNE_THRESHOLD, type PruneCell, pruneCells } from './prune.ts';
import { selectUnits, type Unit, unitHeading } from './select.ts';
import { median } from './stats.ts';

/** One matrix: what to run and where its baseline goes. */
export interface MatrixSpec {
  /** What --cells says (priority, all, globs, names). */
  selection: string;
  /** `--set key=value` texts, applied to every unit. */
  overrides?: string[];
  /** Seed of the first repeat (default: each scenario's own); repeat i adds i. */
  seed?: number;
  /** Added to every seed: lets two sides of a comparison use disjoint seeds. */
  seedOffset?: number;
  repeats?: number;
  outDir: string;
  /** Prefix of this matrix's runs in progress lines when several matrices share a pool. */
  label?: string;
}

import { makeDirectories, writeOutputFile } from '../base/safe-write.ts';
import type { Judge } from '../results/checks.ts';

export type { Judge };

/** How the runs are carried out: job slots, interruption, progress, extra judging. */
export interface RunControl extends PoolEvents {
  judge?: Judge;
  jobs: number;
  signal?: AbortSignal;
  /** Called once the selection is expanded, with the number of runs to do. */
  onPlan?: (runs: number) => void;
}

export interface MatrixOptions extends MatrixSpec, RunControl {}

export interface MatrixOutcome {
  baseline: Baseline;
  jsonPath: string;
  markdownPath: string;
  /** Runs that did not happen (interrupted). */
  skipped: number;
}

export interface PlannedUnit {
  unit: Unit;
  heading: string;
  whatItTells: string | null;
  scenarioHash: string;
  /** The budget sets the unit's scenario names (as resolved with the matrix's overrides). */
  budgets: string[];
  jobs: RunJob[];
}

export function planMatrix(options: MatrixSpec): PlannedUnit[] {
  const overrides = (options.overrides ?? []).map(parseOverride);
  const repeats = options.repeats ?? 1;
  return selectUnits(options.selection).map((unit) => {
    // Planning validates: a bad override or scenario fails here, before any run starts. Each
    // run's own plan (its seed, its directory) is made by the child with the same planRun.
    const { scenario } = planRun(unit.ref, overrides, join(options.outDir, 'cells', unit.id));
    const first = (options.seed ?? scenario.seed) + (options.seedOffset ?? 0);
    const jobs: RunJob[] = [];
    for (let r = 0; r < repeats; r++) {
      const seed = first + r;
      const dir =
        repeats > 1
          ? join(options.outDir, 'cells', unit.id, `seed-${seed}`)
          : join(options.outDir, 'cells', unit.id);
      jobs.push({
        key: repeats > 1 ? `${unit.id}#${seed}` : unit.id,
        unitId: unit.id,
        ref: unit.ref,
        overrides: [...overrides, { path: ['seed'], value: seed }],
        outDir: dir,
        repeat: r,
      });
    }
    return {
      unit,
      heading: unitHeading(unit, scenario.description),
      whatItTells: scenario.whatItTells ?? null,
      scenarioHash: scenarioHash(scenario),
      budgets: scenario.budgets,
      jobs,
    };
  });
}

export async function runMatrix(options: MatrixOptions): Promise<MatrixOutcome> {
  return (await runMatrices([options], options))[0]!;
}

/** Several matrices on one pool (the two sides of a comparison): one process start, not two. */
export async function runMatrices(specs: MatrixSpec[], control: RunControl): Promise<MatrixOutcome[]> {
  const started = performance.now();
  const plans = specs.map((spec) => planMatrix(spec));
  const prefix = (i: number) => (specs.length > 1 ? `${specs[i]!.label ?? i}/` : '');
  const jobs = plans.flatMap((plan, i) =>
    plan.flatMap((p) => p.jobs.map((job) => ({ ...job, key: `${prefix(i)}${job.key}` }))),
  );
  control.onPlan?.(jobs.length);
  for (const spec of specs) makeDirectories(spec.outDir);
  const { results } = await runPool(jobs, {
    jobs: control.jobs,
    signal: control.signal,
    onStart: control.onStart,
    onDone: control.onDone,
  });
  const wallMs = Math.round(performance.now() - started);
  const byKey = new Map(results.map((r) => [r.job.key, r]));
  return specs.map((spec, i) => {
    const plan = plans[i]!;
    const budgetsByUnit = new Map(plan.map((p) => [p.unit.id, p.budgets]));
    const judge = control.judge ?? scenarioBudgetJudge((id) => budgetsByUnit.get(id) ?? []);
    const mine = (job: RunJob) => byKey.get(`${prefix(i)}${job.key}`);
    const units: BaselineUnit[] = plan.map((p) => baselineUnit(p, mine, spec.outDir, judge));
    const planned = plan.flatMap((p) => p.jobs);
    const done = planned.flatMap((job) => {
      const r = mine(job);
      return r ? [[job.key, r] as const] : [];
    });
    const baseline: Baseline = {
      kind: 'fleetbench-baseline',
      schemaVersion: BASELINE_SCHEMA_VERSION,
      generator: { name: 'fleetbench', version: VERSION },
      selection: spec.selection,
      overrides: spec.overrides ?? [],
      repeats: spec.repeats ?? 1,
      partial: done.length < planned.length || done.some(([, r]) => r.summary.outcome.reason !== 'completed'),
      units,
      pruning: pruneBaseline(units),
      timing: {
        wallMs,
        jobs: Math.max(1, Math.min(control.jobs, jobs.length)),
        runs: Object.fromEntries(done.map(([key, r]) => [key, Math.round(r.wallMs)])),
      },
    };
    const jsonPath = join(spec.outDir, 'baseline.json');
    const markdownPath = join(spec.outDir, 'baseline.md');
    writeOutputFile(jsonPath, `${JSON.stringify(baseline, null, 1)}\n`);
    writeOutputFile(markdownPath, baselineMarkdown(baseline));
    return { baseline, jsonPath, markdownPath, skipped: planned.length - done.length };
  });
}

/** A planned unit with the runs that finished (looked up by `resultOf`), as baseline.json has it. */
export function baselineUnit(
  p: PlannedUnit,
  resultOf: (job: RunJob) => JobResult | undefined,
  outDir: string,
  judge?: Judge,
): BaselineUnit {
  return {
    id: p.unit.id,
    ref: p.unit.ref,
    cell: p.unit.cell
      ? { scenario: p.unit.cell.scenario, topology: p.unit.cell.topology, scale: p.unit.cell.scale }
      : null,
    heading: p.heading,
    whatItTells: p.whatItTells,
    scenarioHash: p.scenarioHash,
    budgets: p.budgets,
    runs: p.jobs.flatMap((job) => {
      const r = resultOf(job);
      return r ? [baselineRun(r, outDir, judge)] : [];
    }),
  };
}

export function baselineRun(r: JobResult, outDir: string, judge?: Judge): BaselineUnit['runs'][number] {
  const s = r.summary;
  return {
    checks: judge?.(s.analysis, r.job.unitId) ?? null,
    seed: s.scenario.seed,
    dir: relative(outDir, r.job.outDir) || '.',
    reason: s.outcome.reason,
    sessionsStarted: s.outcome.sessionsStarted,
    sessionsDropped: s.outcome.sessionsDropped,
    // Paths relative to baseline.json, so a baseline reads the same wherever it was written.
    analysis: {
      ...s.analysis,
      input: { ...s.analysis.input, file: s.analysis.input.file && relative(outDir, s.analysis.input.file) },
    },
  };
}

/** Pruning over the A2 cells that ran; null when no cell has an adjacent scale point. */
export function pruneBaseline(units: BaselineUnit[]): Baseline['pruning'] {
  const cells: PruneCell[] = units.flatMap((u) => {
    // A partial cell's figures would decide on a run cut short: it takes no part.
    if (u.cell === null || u.runs.length === 0 || isPartialUnit(u)) return [];
    const metrics: Record<string, number | null> = {};
    for (const row of u.runs[0]!.analysis.scorecard.rows) {
      const values = u.runs
        .map((run) => run.analysis.scorecard.rows.find((x) => x.id === row.id)?.measured)
        .filter((v): v is number => typeof v === 'number');
      metrics[row.id] = values.length > 0 ? median(values) : null;
    }
    return [{ id: u.id, ...u.cell, metrics }];
  });
  const decisions = pruneCells(cells);
  if (decisions.every((d) => d.neighbours.length === 0)) return null;
  return {
    threshold: PRUNE_THRESHOLD,
    metrics: 'Track B scorecard rows (median over repeats)',
    decisions: decisions.map((d) => ({
      ...d,
      largest: d.largest
        ? { ...d.largest, relative: Number.isFinite(d.largest.relative) ? round(d.largest.relative) : null }
        : null,
    })),
  };
}

const round = (x: number) => Math.round(x * 1e6) / 1e6;
