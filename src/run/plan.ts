/**
 * A `RunPlan`: everything that decides what one run is, built once and then handed to the one
 * run pipeline (pipeline.ts): the resolved scenario, its parsed target, where its files go, and,
 * for a live run, its segment of a shared run, the shared GitHub it uses and its live telemetry
 * (docs/distributed.md, docs/live-runs.md). `planFromOptions` (request.ts) builds the whole plan
 * from what `fleetbench run` was asked; `planRun` and `planScenario` build the plan of a scenario
 * alone (a matrix unit, a test, a benchmark), which leaves the live-run parts out.
 */
import type { Segment } from '../base/segment.ts';
import { parseTarget, type TargetRef } from '../contract/target-ref.ts';
import { resolveScenarioRef } from '../workload/builtins.ts';
import { type Override, parseOverride } from '../workload/load.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { SharedGitHubOptions } from './shared-github.ts';

export interface RunPlan {
  scenario: Scenario;
  /** What `scenario.target` names, parsed once (targets/target-ref.ts). */
  target: TargetRef;
  /** The A2 cell id when the run is one, recorded in the trace header and the summary. */
  cell?: string;
  /** Directory of trace.jsonl, summary.json and report.html. */
  outDir: string;
  /** What the user changed, in words (`--set` texts, `seed=N`): the summary shows them. */
  changed?: string[];
  /** Write report.html beside summary.json (default: no). A failure to write it is said, never fatal. */
  report?: boolean;
  /**
   * A live-run segment (docs/distributed.md): this process runs the starts of every executor
   * whose global index k has k mod count = index, against a target and a GitHub shared with the
   * other segments. Only segment 0 does what is run-wide: faults, the `sessions` gauge, marker
   * events, the records of the target's stream that belong to no session, `/rate_limit` brackets.
   * Budgets are not judged in a segment (alone it is not the run).
   */
  segment?: Segment;
  /**
   * Real clock: run time 0 at this Unix ms instead of now (a start shared by the segments of a
   * live run, so they keep one global timing; docs/distributed.md).
   */
  epochMs?: number;
  /**
   * A live-run segment's record for `fleetbench merge` (written around the run by
   * src/distributed/run-segment.ts), and the id every segment of the run shares.
   */
  segmentRecord?: { path: string; runId: string };
  /**
   * The GitHub side when it is not an emulator of the run's own (`run --github URL`): a shared
   * emulator the engine connects to (once: a segment connects before the common start).
   */
  github?: SharedGitHubOptions;
  /** Budget rows with no samples fail the run's verdict (`run --require-samples`). */
  requireSamples?: boolean;
  /** Live telemetry of a real-clock run (none in virtual time); src/live/ attaches it. */
  telemetry?: TelemetryPlan;
  // Which agents a target starts (stand-ins, or the real CLIs against the run's provider emulator)
  // is the scenario's `agents` and `provider` (`scenario.agents`, set by `--agents` in
  // request.ts): a target reads it where it starts its agents (docs/agents.md).
}

/**
 * What a real-clock run serves and sends while it runs (docs/live-runs.md). The plan only says
 * what; src/live/ (above src/run/ in the layers) opens the endpoints through the engine's
 * `attach` hook, and the CLI instantiates it from this.
 */
export interface TelemetryPlan {
  /** The progress line on stderr. */
  progress: boolean;
  /** Serve GET /metrics on 127.0.0.1 here (0: a free port). */
  metricsPort?: number;
  /** Accept OTLP/HTTP spans on 127.0.0.1 here into the trace. */
  otlpPort?: number;
  /** Send the run's spans and metrics to this OTLP/HTTP endpoint. */
  otlpExport?: string;
  /** How long /metrics stays up after the run with the final values and verdicts (0: not at all). */
  metricsLingerSeconds: number;
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
