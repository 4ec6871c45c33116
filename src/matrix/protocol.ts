/**
 * The messages between the matrix parent and its child processes (src/matrix/pool.ts and
 * child.ts). One run at a time per child; the child answers every `run` with `done` or `failed`.
 */

import type { RunSummary } from '../results/run-summary.ts';
import type { Override } from '../workload/load.ts';

export interface RunJob {
  /** Unique in a pool: the unit id, plus `#seed` when a unit repeats. */
  key: string;
  unitId: string;
  /** A cell id, a built-in scenario name or a scenario file (what `fleetbench run` takes). */
  ref: string;
  overrides: Override[];
  /** Directory for trace.jsonl and summary.json. */
  outDir: string;
  /** Which repeat of its unit (0-based). */
  repeat: number;
}

export type ParentMessage = { type: 'run'; job: RunJob } | { type: 'abort' };

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'done'; key: string; summary: RunSummary; wallMs: number; events: number | null }
  | { type: 'failed'; key: string; message: string; code?: string; exitCode?: number; stack?: string };
