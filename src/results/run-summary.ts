/**
 * summary.json: what a run leaves beside its trace (written by src/run/summary.ts, read by
 * `report`, `compare`, `check` and the matrix). One document: the resolved scenario, how the run
 * ended, and the Analysis of its trace.
 */
import type { Analysis } from '../analyze/schema.ts';
import type { Verdict } from '../judge/judge.ts';
import type { Scenario } from '../workload/scenario.ts';

/**
 * How a run ended. `failed`: the run did not complete (its target failed or was lost, or its
 * clock stopped advancing): partial, never judged.
 */
export type RunEndReason = 'completed' | 'interrupted' | 'failed';

/** Why a `failed` run stopped, and what failed. */
export interface RunFailure {
  source: string;
  message: string;
}

export const RUN_SUMMARY_VERSION = 1;

export interface RunSummary {
  kind: 'fleetbench-run';
  schemaVersion: number;
  scenario: Scenario & { hash: string; cell?: string };
  outcome: {
    reason: RunEndReason;
    /** Why a `failed` run stopped (what failed, and its message). */
    failure?: RunFailure;
    partial: boolean;
    endedAtMs: number;
    sessionsStarted: number;
    sessionsDropped: number;
    wallMs: number;
    tracePath: string;
    summaryPath: string;
  };
  analysis: Analysis;
  /** The scenario's budgets, judged at the end of the run (docs/budgets.md). */
  budgets?: Verdict[];
}
