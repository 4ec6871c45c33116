/**
 * A worker of the parallel analysis: one byte range (range.ts), its analyzer posted back as
 * structured-clone-safe state. Runs the validators' code the main thread sent; no zod, no
 * schema compiling here.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadChecks } from '../trace/checks-code.ts';
import { loadScanner } from '../trace/scanner.ts';
import { type AnalyzerState, stateTransferables } from './analyzer.ts';
import { analyzeRange, type RangeJob, type RangeOutcome } from './range.ts';

const job = workerData as RangeJob;
const scanner = job.scannerCode === undefined ? undefined : loadScanner(job.scannerCode);
const outcome = analyzeRange(job, { checks: loadChecks(job.checksCode) }, {}, scanner);
if (outcome.ok) {
  const state = outcome.analyzer.toState();
  const message: RangeOutcome<AnalyzerState> = { ...outcome, analyzer: state };
  // The arrays move to the main thread instead of being copied.
  parentPort!.postMessage(message, stateTransferables(state));
} else {
  parentPort!.postMessage(outcome);
}
