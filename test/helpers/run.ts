import { analyzeFile } from '../../src/analyze/file.ts';
import type { Analysis } from '../../src/analyze/schema.ts';
import type { RunResult } from '../../src/run/engine.ts';
import { executeRun } from '../../src/run/pipeline.ts';
import { planRun } from '../../src/run/plan.ts';
import { readTrace } from '../../src/trace/reader.ts';
import type { BodyRecord } from '../../src/trace/schema.ts';
import { scratchDir } from './tmp.ts';

export interface TestRun {
  outcome: RunResult;
  analysis: Analysis;
  records: BodyRecord[];
}

/**
 * Runs a scenario in-process through the run pipeline (virtual time unless the scenario says
 * otherwise) and analyses its trace with the real analyzer, as `fleetbench analyze` would.
 */
export async function runRef(ref: string, sets: string[] = [], outDir?: string): Promise<TestRun> {
  const dir = outDir ?? scratchDir('fleetbench-run-');
  const { outcome } = await executeRun(planRun(ref, sets, dir));
  const { analysis } = await analyzeFile(outcome.tracePath, { threads: 1 });
  const { records } = await readTrace(outcome.tracePath);
  return { outcome, analysis, records };
}

export function apiRecords(records: BodyRecord[]) {
  return records.filter((r): r is Extract<BodyRecord, { kind: 'api' }> => r.kind === 'api');
}

export function spans(records: BodyRecord[], name: string) {
  return records.filter(
    (r): r is Extract<BodyRecord, { kind: 'span' }> => r.kind === 'span' && r.name === name,
  );
}

export function events(records: BodyRecord[], name: string) {
  return records.filter(
    (r): r is Extract<BodyRecord, { kind: 'event' }> => r.kind === 'event' && r.name === name,
  );
}

/** Sum of values in [fromMs, toMs) of a 1-s series. */
export function sumSeries(series: { binMs: number; values: number[] }, fromMs: number, toMs: number): number {
  let total = 0;
  for (
    let i = Math.floor(fromMs / series.binMs);
    i < Math.ceil(toMs / series.binMs) && i < series.values.length;
    i++
  ) {
    total += series.values[i] ?? 0;
  }
  return total;
}
