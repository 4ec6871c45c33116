/**
 * The one run pipeline: open → drive → close and judge (engine.ts) → summarise (summary.ts) →
 * report (report.html beside the summary). `fleetbench run`, the matrix's child processes, the
 * tests and the benchmarks all run through `executeRun`, each with a RunPlan (plan.ts); what
 * differs between them is only what they attach and print.
 */
import { join } from 'node:path';
import type { RunSummary } from '../results/run-summary.ts';
import { type RunHooks, type RunResult, runScenario } from './engine.ts';
import type { RunPlan } from './plan.ts';
import { writeRunSummary } from './summary.ts';

export interface PipelineOptions extends RunHooks {
  /**
   * After the run and before its summary: what must see the outcome first (the live metrics'
   * final verdicts, the OTLP exporter's last batch).
   */
  afterRun?: (outcome: RunResult) => Promise<void> | void;
}

export interface RunDone {
  outcome: RunResult;
  summary: RunSummary;
  /** The report's path, or why it could not be written. */
  report?: { path: string } | { error: string };
  /** Wall time of the whole pipeline, and of its run and summary steps (benchmarks read them). */
  wallMs: number;
  runMs: number;
  summaryMs: number;
}

export async function executeRun(plan: RunPlan, options: PipelineOptions = {}): Promise<RunDone> {
  const started = performance.now();
  const outcome = await runScenario(plan, options);
  const ran = performance.now();
  await options.afterRun?.(outcome);
  const summary = await writeRunSummary(outcome, {
    outDir: plan.outDir,
    ...(plan.cell ? { cell: plan.cell } : {}),
    wallMs: performance.now() - started,
  });
  const summarised = performance.now();
  // The HTML report beside the summary (partial too, after Ctrl-C): what a user opens.
  const report = plan.report ? await writeRunReport(plan.outDir) : undefined;
  return {
    outcome,
    summary,
    ...(report ? { report } : {}),
    wallMs: performance.now() - started,
    runMs: ran - started,
    summaryMs: summarised - ran,
  };
}

/** Writes <outDir>/report.html; a failure is returned, never thrown (the trace and summary exist). */
async function writeRunReport(outDir: string): Promise<{ path: string } | { error: string }> {
  const path = join(outDir, 'report.html');
  try {
    const { htmlReportFor } = await import('../report-html/index.ts');
    htmlReportFor(outDir, path);
    return { path };
  } catch (error) {
    return { error: (error as Error).message };
  }
}
