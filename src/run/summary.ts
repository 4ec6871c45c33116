/**
 * summary.json: what a run leaves beside its trace. One document: the resolved scenario, how the
 * run ended, and the Analysis of its trace (computed by the one analysis module, from the file,
 * exactly as `fleetbench analyze` would).
 */
import { join } from 'node:path';
import { analyzeFile } from '../analyze/file.ts';
import { writeOutputFile } from '../base/safe-write.ts';
import { RUN_SUMMARY_VERSION, type RunSummary } from '../results/run-summary.ts';
import { scenarioHash } from '../workload/load.ts';
import type { RunResult } from './engine.ts';

export async function writeRunSummary(
  outcome: RunResult,
  options: { outDir: string; cell?: string; wallMs: number },
): Promise<RunSummary> {
  const summaryPath = join(options.outDir, 'summary.json');
  const { analysis } = await analyzeFile(outcome.tracePath, {
    // An interrupted run still has its footer; lenient only guards against a cut last line.
    lenient: outcome.reason !== 'completed',
    threads: 1,
    analyzer: { sessions: outcome.sessionsStarted || undefined },
  });
  const summary: RunSummary = {
    kind: 'fleetbench-run',
    schemaVersion: RUN_SUMMARY_VERSION,
    scenario: {
      ...outcome.scenario,
      hash: scenarioHash(outcome.scenario),
      ...(options.cell ? { cell: options.cell } : {}),
    },
    outcome: {
      reason: outcome.reason,
      ...(outcome.failure ? { failure: outcome.failure } : {}),
      partial: outcome.reason !== 'completed',
      endedAtMs: outcome.endedAt,
      sessionsStarted: outcome.sessionsStarted,
      sessionsDropped: outcome.sessionsDropped,
      wallMs: Math.round(options.wallMs),
      tracePath: outcome.tracePath,
      summaryPath,
    },
    analysis,
    ...(outcome.verdicts ? { budgets: outcome.verdicts } : {}),
  };
  writeOutputFile(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}
