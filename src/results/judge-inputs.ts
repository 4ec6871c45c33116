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
import { closeSync, createReadStream, existsSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createGunzip } from 'node:zlib';
import { analyzeFile } from '../analyze/file.ts';
import { type Analysis, analysisSchema } from '../analyze/schema.ts';
import { ExitCode, FleetbenchError, InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_RESULTS_FILE_BYTES } from '../base/limits.ts';
import { describeZodError } from '../base/validation.ts';
import type { JudgeInput } from '../judge/judge.ts';
import { parseBaseline } from './baseline.ts';
import { incompleteSummary, incompleteTrace, type ResultSet, resultFileIn } from './results.ts';

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

const EDGE_BYTES = 64 * 1024;

/** Whether a file starts with gzip's magic bytes. */
function isGzipFile(path: string): boolean {
  const fd = openSync(path, 'r');
  try {
    const magic = Buffer.alloc(2);
    return readSync(fd, magic, 0, 2, 0) === 2 && magic[0] === 0x1f && magic[1] === 0x8b;
  } finally {
    closeSync(fd);
  }
}

/** The first line and the last non-blank line of at most EDGE_BYTES bytes at each end. */
function edgeLines(head: Buffer, tail: Buffer): { first: string; last: string } {
  return {
    first: head.toString('utf8').split('\n')[0] ?? '',
    last: tail.toString('utf8').trimEnd().split('\n').pop() ?? '',
  };
}

/**
 * The first and last lines of a trace: a plain file's head and tail, a gzip file decompressed
 * through (its first and last EDGE_BYTES kept, never the whole).
 */
async function firstAndLastLines(path: string): Promise<{ first: string; last: string }> {
  if (isGzipFile(path)) {
    let head = Buffer.alloc(0);
    let tail = Buffer.alloc(0);
    try {
      for await (const chunk of createReadStream(path).pipe(createGunzip())) {
        const bytes = chunk as Buffer;
        if (head.length < EDGE_BYTES)
          head = Buffer.concat([head, bytes.subarray(0, EDGE_BYTES - head.length)]);
        tail = Buffer.concat([tail, bytes]);
        if (tail.length > EDGE_BYTES) tail = tail.subarray(tail.length - EDGE_BYTES);
      }
    } catch (error) {
      // A gzip stream cut short has no footer to read: a run that did not complete.
      throw notCompleted(path, `the trace cannot be read to its end (${(error as Error).message})`);
    }
    return edgeLines(head, tail);
  }
  const size = statSync(path).size;
  const fd = openSync(path, 'r');
  try {
    const length = Math.min(size, EDGE_BYTES);
    const head = Buffer.alloc(length);
    readSync(fd, head, 0, length, 0);
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    return edgeLines(head, tail);
  } finally {
    closeSync(fd);
  }
}

function parsedLine(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * A run's results (its summary.json, or its entry in a matrix's baseline.json) say completed:
 * the trace in its directory must agree, and be the trace they were made from. A footer edited
 * to `failed` or cut after the results were written is a run that did not complete (exit 3); a
 * trace of another run (its header's runId), or one whose records changed since (its footer's
 * counts: a `run.failed` event added), is bad input (exit 2): the results would be judged for a
 * run its trace does not record.
 */
export async function checkTraceBeside(
  resultsPath: string,
  runDir: string,
  analysis: Analysis,
): Promise<void> {
  const trace = join(runDir, 'trace.jsonl');
  if (!existsSync(trace)) return;
  // A directory would fail the read, a FIFO nobody writes would block it forever.
  if (!statSync(trace).isFile())
    throw new InputFileError('E_RESULTS', trace, undefined, "not a regular file: a run's trace is a file");
  const { first, last } = await firstAndLastLines(trace);
  const footer = parsedLine(last);
  if (footer?.kind !== 'end' || typeof footer.reason !== 'string')
    throw notCompleted(trace, 'the trace has no end footer (cut short)');
  if (footer.reason !== 'completed')
    throw notCompleted(trace, `the trace ends with reason: ${footer.reason}`);
  const mismatch = (what: string) =>
    new InputFileError(
      'E_RESULTS',
      resultsPath,
      undefined,
      `${what}: a run's results are judged only beside its own trace`,
      {
        hint: 'judge the trace itself (fleetbench check DIR/trace.jsonl), or run again',
      },
    );
  const runId = parsedLine(first)?.runId;
  if (runId !== analysis.run.runId)
    throw mismatch(
      `its analysis is of run ${JSON.stringify(analysis.run.runId)}, the trace beside it (${trace}) of run ${JSON.stringify(runId ?? null)}`,
    );
  const counts = (footer.counts ?? {}) as Record<string, unknown>;
  for (const [kind, read] of Object.entries(analysis.input.records))
    if (counts[kind] !== read)
      throw mismatch(
        `its analysis read ${read} ${kind} records, the footer of the trace beside it (${trace}) counts ${String(counts[kind])}: the trace changed after the results were written`,
      );
}

async function fromJson(path: string): Promise<LoadedInput[]> {
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
        // Its directory is relative to baseline.json (docs/matrix.md).
        await checkTraceBeside(path, join(dirname(path), run.dir), run.analysis);
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
  if (record?.kind === 'fleetbench-run') await checkTraceBeside(path, dirname(path), analysis);
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
    const baseline = resultFileIn(path, 'baseline.json');
    if (baseline) return fromJson(baseline);
    const summary = resultFileIn(path, 'summary.json');
    if (summary) return (await fromJson(summary)).map((input) => ({ ...input, name: path }));
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

/**
 * Every run of a result set beside its trace, as check reads them (checkTraceBeside): compare
 * refuses a side whose summary.json or baseline.json says completed over a trace that does not.
 */
export async function checkResultTraces(set: ResultSet): Promise<void> {
  for (const unit of set.units)
    for (const run of unit.runs)
      if (run.resultsFile !== undefined && run.traceDir !== undefined)
        await checkTraceBeside(run.resultsFile, run.traceDir, run.analysis);
}
