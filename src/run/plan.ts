/**
 * A `RunPlan`: everything that decides what one run is, built once (from the CLI's flags, a
 * matrix unit, a test or a benchmark) and then handed to the one run pipeline (pipeline.ts):
 * the resolved scenario, its parsed target, where its files go, and, for a live-run segment,
 * its part of a shared run (docs/distributed.md).
 */
import type { Clock } from '../clock/clock.ts';
import { parseTarget, type TargetRef } from '../contract/target-ref.ts';
import type { TraceSink } from '../trace/writer.ts';
import { resolveScenarioRef } from '../workload/builtins.ts';
import type { GitHubSide } from '../workload/github-side.ts';
import { type Override, parseOverride } from '../workload/load.ts';
import type { Scenario } from '../workload/scenario.ts';

export interface RunPlan {
  scenario: Scenario;
  /** What `scenario.target` names, parsed once (targets/target-ref.ts). */
  target: TargetRef;
  /** The A2 cell id when the run is one, recorded in the trace header and the summary. */
  cell?: string;
  /** Directory of trace.jsonl, summary.json and report.html. */
  outDir: string;
  /**
   * A live-run segment (docs/distributed.md): this process runs the starts of every executor
   * whose global index k has k mod count = index, against a target and a GitHub shared with the
   * other segments. Only segment 0 does what is run-wide: faults, the `sessions` gauge, marker
   * events, the records of the target's stream that belong to no session, `/rate_limit` brackets.
   * Budgets are not judged in a segment (alone it is not the run).
   */
  segment?: { index: number; count: number };
  /**
   * Real clock: run time 0 at this Unix ms instead of now (a start shared by the segments of a
   * live run, so they keep one global timing; docs/distributed.md).
   */
  epochMs?: number;
  /** Budget rows with no samples fail the run's verdict (`run --require-samples`). */
  requireSamples?: boolean;
  /** The GitHub side when it is not an emulator of the run's own (`run --github URL`). */
  github?: (clock: Clock, trace: TraceSink) => Promise<GitHubSide>;
}

/** The plan of a scenario reference (cell id, built-in name or file) with overrides. */
export function planRun(ref: string, overrides: readonly (Override | string)[], outDir: string): RunPlan {
  const { scenario, cell } = resolveScenarioRef(
    ref,
    overrides.map((o) => (typeof o === 'string' ? parseOverride(o) : o)),
  );
  return planScenario(scenario, outDir, cell);
}

/** The plan of a resolved scenario. */
export function planScenario(scenario: Scenario, outDir: string, cell?: string): RunPlan {
  return { scenario, target: parseTarget(scenario.target), outDir, ...(cell ? { cell } : {}) };
}
