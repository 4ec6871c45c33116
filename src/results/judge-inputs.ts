/**
 * What `fleetbench check` and `budgets derive` read: a trace (analysed here, as `fleetbench
 * analyze` would), a summary.json written by `fleetbench run`, an Analysis JSON (`analyze
 * --json`), a run directory (its summary.json, else its trace.jsonl), or a matrix's results
 * (baseline.json, or the directory holding it): every run of every unit, pooled like several
 * inputs.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeFile } from '../analyze/file.ts';
import { type Analysis, analysisSchema } from '../analyze/schema.ts';
import { FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_RESULTS_FILE_BYTES } from '../base/limits.ts';
import { describeZodError } from '../base/validation.ts';
import type { JudgeInput } from '../judge/judge.ts';
import { parseBaseline } from './baseline.ts';

export interface LoadedInput extends JudgeInput {
  /** Budget sets the run's scenario named (summary.json), when known. */
  scenarioBudgets?: string[];
}

function fromJson(path: string): LoadedInput[] {
  let doc: unknown;
  try {
    doc = JSON.parse(
      readInputText(path, { maxBytes: MAX_RESULTS_FILE_BYTES, code: 'E_RESULTS', what: 'a results file' }),
    );
  } catch (error) {
    if (error instanceof InputFileError) throw error;
    throw new InputFileError('E_RESULTS', path, undefined, `not JSON: ${(error as Error).message}`);
  }
  if ((doc as { kind?: unknown } | null)?.kind === 'fleetbench-baseline') {
    const baseline = parseBaseline(doc, path);
    return baseline.units.flatMap((u) =>
      u.runs.map((r) => ({
        name: `${path} ${u.id}${u.runs.length > 1 ? `#${r.seed}` : ''}`,
        analysis: r.analysis,
        scenarioBudgets: u.budgets,
      })),
    );
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
  return [
    {
      name: path,
      analysis: parsed.data as Analysis,
      ...(Array.isArray(budgets) ? { scenarioBudgets: budgets.map(String) } : {}),
    },
  ];
}

/** The runs one path holds: one for a run, a trace or an Analysis; every run of a baseline. */
export async function loadInputs(path: string, options: { lenient?: boolean } = {}): Promise<LoadedInput[]> {
  if (!existsSync(path)) throw new InputFileError('E_FILE', path, undefined, 'no such file or directory');
  if (statSync(path).isDirectory()) {
    const baseline = join(path, 'baseline.json');
    if (existsSync(baseline)) return fromJson(baseline);
    const summary = join(path, 'summary.json');
    if (existsSync(summary)) return fromJson(summary).map((input) => ({ ...input, name: path }));
    const trace = join(path, 'trace.jsonl');
    if (existsSync(trace))
      return (await loadInputs(trace, options)).map((input) => ({ ...input, name: path }));
    throw new FleetbenchError(
      'E_RESULTS',
      `${path}: a directory without baseline.json, summary.json or trace.jsonl`,
    );
  }
  if (path.endsWith('.json')) return fromJson(path);
  const { analysis } = await analyzeFile(path, { lenient: options.lenient ?? false, threads: 'auto' });
  return [{ name: path, analysis }];
}
