/**
 * What `fleetbench check` and `budgets derive` read: a trace (analysed here, as `fleetbench
 * analyze` would), a summary.json written by `fleetbench run`, an Analysis JSON (`analyze
 * --json`), or a run directory (its summary.json, else its trace.jsonl).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeFile } from '../analyze/file.ts';
import { type Analysis, analysisSchema } from '../analyze/schema.ts';
import { FleetbenchError, InputFileError } from '../errors.ts';
import { describeZodError } from '../validation.ts';
import type { JudgeInput } from './judge.ts';

export interface LoadedInput extends JudgeInput {
  /** Budget sets the run's scenario named (summary.json), when known. */
  scenarioBudgets?: string[];
}

function fromJson(path: string): LoadedInput {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InputFileError('E_RESULTS', path, undefined, `not JSON: ${(error as Error).message}`);
  }
  const record = doc as { kind?: unknown; analysis?: unknown; scenario?: { budgets?: unknown } };
  const candidate = record?.kind === 'fleetbench-run' ? record.analysis : doc;
  const parsed = analysisSchema.safeParse(candidate);
  if (!parsed.success) {
    throw new InputFileError(
      'E_RESULTS',
      path,
      undefined,
      `not a run summary or an Analysis document: ${describeZodError(parsed.error)}`,
    );
  }
  const budgets = record?.kind === 'fleetbench-run' ? record.scenario?.budgets : undefined;
  return {
    name: path,
    analysis: parsed.data as Analysis,
    ...(Array.isArray(budgets) ? { scenarioBudgets: budgets.map(String) } : {}),
  };
}

export async function loadInput(path: string, options: { lenient?: boolean } = {}): Promise<LoadedInput> {
  if (!existsSync(path)) throw new InputFileError('E_FILE', path, undefined, 'no such file or directory');
  if (statSync(path).isDirectory()) {
    const summary = join(path, 'summary.json');
    if (existsSync(summary)) return { ...fromJson(summary), name: path };
    const trace = join(path, 'trace.jsonl');
    if (existsSync(trace)) return { ...(await loadInput(trace, options)), name: path };
    throw new FleetbenchError('E_RESULTS', `${path}: a directory without summary.json or trace.jsonl`);
  }
  if (path.endsWith('.json')) return fromJson(path);
  const { analysis } = await analyzeFile(path, { lenient: options.lenient ?? false, threads: 'auto' });
  return { name: path, analysis };
}
