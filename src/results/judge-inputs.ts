/**
 * What `fleetbench check` and `budgets derive` read: a trace (analysed here, as `fleetbench
 * analyze` would), a summary.json written by `fleetbench run`, an Analysis JSON (`analyze
 * --json`), a run directory (its summary.json, else its trace.jsonl), or a matrix's results
 * (baseline.json, or the directory holding it): every run of every unit, pooled like several
 * inputs.
 *
 * Only a run that completed is judged (docs/budgets.md#only-a-completed-run-is-judged): an
 * interrupted or failed run, a partial summary, a trace whose footer says so or that has none,
 * an interrupted matrix, is refused with the reason (exit 3). A partial run would pass budgets
 * it never faced.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { analyzeFile } from '../analyze/file.ts';
import { type Analysis, analysisSchema } from '../analyze/schema.ts';
import { ExitCode, FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_RESULTS_FILE_BYTES } from '../base/limits.ts';
import { describeZodError } from '../base/validation.ts';
import type { JudgeInput } from '../judge/judge.ts';
import { parseBaseline } from './baseline.ts';
import { incompleteSummary, incompleteTrace } from './results.ts';

export interface LoadedInput extends JudgeInput {
  /** Budget sets the run's scenario named (summary.json), when known. */
  scenarioBudgets?: string[];
}

/** A run that did not complete: never judged (exit 3, as a failed `fleetbench run`). */
function notCompleted(path: string, why: string): FleetbenchError {
  return new FleetbenchError('E_RESULTS', `${path}: ${why}: a run that did not complete is not judged`, {
    exitCode: ExitCode.runFailed,
    hint: 'judge a run that completed (docs/budgets.md#only-a-completed-run-is-judged)',
  });
}

/** The `reason` of a plain trace file's footer (its last line), null when it has none; undefined: unreadable (gzip). */
function footerReason(path: string): string | null | undefined {
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  try {
    const length = Math.min(size, 64 * 1024);
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    if (length >= 2 && tail[0] === 0x1f && tail[1] === 0x8b && size === length) return undefined;
    const last = tail.toString('utf8').trimEnd().split('\n').pop() ?? '';
    try {
      const footer = JSON.parse(last) as { kind?: unknown; reason?: unknown };
      return footer?.kind === 'end' && typeof footer.reason === 'string' ? footer.reason : null;
    } catch {
      return null;
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * A run directory's summary says completed: its trace must agree (a footer edited to `failed`,
 * a trace cut after the summary was written). A gzip trace is not read here.
 */
function checkTraceBeside(summaryPath: string): void {
  const trace = join(dirname(summaryPath), 'trace.jsonl');
  if (!existsSync(trace)) return;
  const reason = footerReason(trace);
  if (reason === undefined || reason === 'completed') return;
  throw notCompleted(
    trace,
    reason === null ? 'the trace has no end footer (cut short)' : `the trace ends with reason: ${reason}`,
  );
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
    if (baseline.partial) throw notCompleted(path, 'the matrix was interrupted: some of its runs never ran');
    for (const unit of baseline.units)
      for (const run of unit.runs) {
        const why =
          run.reason !== 'completed' ? `its run ${unit.id} seed ${run.seed} ${run.reason}` : undefined;
        const trace = incompleteTrace(run.analysis);
        if (why || trace) throw notCompleted(path, why ?? `${unit.id} seed ${run.seed}: ${trace}`);
      }
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
  const analysis = parsed.data as Analysis;
  const why =
    record?.kind === 'fleetbench-run'
      ? incompleteSummary({ ...(record as { outcome?: Record<string, unknown> }), analysis })
      : incompleteTrace(analysis);
  if (why) throw notCompleted(path, why);
  if (record?.kind === 'fleetbench-run') checkTraceBeside(path);
  const budgets = record?.kind === 'fleetbench-run' ? record.scenario?.budgets : undefined;
  return [
    {
      name: path,
      analysis,
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
  const incomplete = incompleteTrace(analysis);
  if (incomplete) throw notCompleted(path, incomplete);
  return [{ name: path, analysis }];
}
