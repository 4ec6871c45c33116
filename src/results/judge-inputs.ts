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
import { BOM_HINT, BOM_REASON, readInputText } from '../base/input-file.ts';
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

/** The trace parser's refusal of a byte-order mark, worded the same for a trace beside results. */
function bomError(path: string): InputFileError {
  return new InputFileError('E_TRACE', path, 1, BOM_REASON, { hint: BOM_HINT });
}

const EDGE_BYTES = 64 * 1024;
/** Reads of a plain trace go 1 MiB at a time: the scan is bound by the disk, not by calls. */
const SCAN_CHUNK_BYTES = 1024 * 1024;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const HEADER_START = Buffer.from('{"kind":"run"');
const FOOTER_START = Buffer.from('{"kind":"end"');
const LINE_PREFIX_BYTES = HEADER_START.length;

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

/**
 * What a streamed byte scan of a trace sees, without parsing a record: its first and last
 * lines (at most EDGE_BYTES each), how many non-blank lines it has (the parser skips blank
 * ones), and where a line other than the first starts as a run header, or one other than the
 * last as an end footer, does: two runs joined in one file (docs/budgets.md).
 */
export interface TraceOutline {
  first: string;
  last: string;
  /** Non-blank lines: 2 + the records the footer counts, in a trace written whole. */
  lines: number;
  /** Whether the file starts with a UTF-8 byte-order mark. */
  bom: boolean;
  /** The first line after line 1 that starts as a run header, if any (1-based). */
  secondHeaderLine?: number;
  /** The first line that starts as an end footer but is not the last non-blank line. */
  earlyFooterLine?: number;
}

/** What a line starts as: a run header, an end footer, or anything else. */
type LineStart = 'header' | 'footer' | 'other';

function startsWith(bytes: Buffer, at: number, marker: Buffer): boolean {
  for (let i = 0; i < marker.length; i++) if (bytes[at + i] !== marker[i]) return false;
  return true;
}

function lineStart(bytes: Buffer, at: number): LineStart {
  if (startsWith(bytes, at, HEADER_START)) return 'header';
  return startsWith(bytes, at, FOOTER_START) ? 'footer' : 'other';
}

class OutlineScan {
  private head: Buffer = Buffer.alloc(0);
  private tail: Buffer = Buffer.alloc(0);
  private lineNo = 1;
  private nonBlank = 0;
  /** The current line's first bytes (when they span two chunks), and whether it is blank so far. */
  private readonly prefix = Buffer.alloc(LINE_PREFIX_BYTES);
  private prefixLength = 0;
  private start: LineStart | undefined;
  private blank = true;
  private lastFooterLine: number | undefined;
  private lastNonBlankLine = 0;
  private secondHeaderLine: number | undefined;
  private earlyFooterLine: number | undefined;

  feed(chunk: Buffer): void {
    if (this.head.length < EDGE_BYTES)
      this.head = Buffer.concat([this.head, chunk.subarray(0, EDGE_BYTES - this.head.length)]);
    this.tail =
      chunk.length >= EDGE_BYTES
        ? Buffer.from(chunk.subarray(chunk.length - EDGE_BYTES)) // a copy: the caller reuses the chunk
        : Buffer.concat([
            this.tail.subarray(Math.max(0, this.tail.length + chunk.length - EDGE_BYTES)),
            chunk,
          ]);
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk, start, end);
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  /** Bytes [start, end) of the current line. */
  private take(chunk: Buffer, start: number, end: number): void {
    if (this.start === undefined) {
      if (this.prefixLength === 0 && end - start >= LINE_PREFIX_BYTES) {
        // The usual case, read in place: the line's first bytes are all in this chunk.
        this.start = lineStart(chunk, start);
      } else if (end > start) {
        const n = Math.min(LINE_PREFIX_BYTES - this.prefixLength, end - start);
        chunk.copy(this.prefix, this.prefixLength, start, start + n);
        this.prefixLength += n;
        if (this.prefixLength === LINE_PREFIX_BYTES) this.start = lineStart(this.prefix, 0);
      }
    }
    // A record starts with '{': the whitespace test stops at its first byte.
    for (let i = start; this.blank && i < end; i++) if (chunk[i]! > 32) this.blank = false;
  }

  private endLine(): void {
    if (!this.blank) {
      this.nonBlank++;
      if (this.lineNo > 1 && this.secondHeaderLine === undefined && this.start === 'header')
        this.secondHeaderLine = this.lineNo;
      // A footer followed by another non-blank line was not the last.
      if (this.lastFooterLine !== undefined && this.earlyFooterLine === undefined)
        this.earlyFooterLine = this.lastFooterLine;
      this.lastFooterLine = this.start === 'footer' ? this.lineNo : undefined;
      this.lastNonBlankLine = this.lineNo;
    }
    this.lineNo++;
    this.prefixLength = 0;
    this.start = undefined;
    this.blank = true;
  }

  finish(): TraceOutline {
    this.endLine();
    return {
      first: this.head.toString('utf8').split('\n')[0] ?? '',
      last: this.tail.toString('utf8').trimEnd().split('\n').pop() ?? '',
      lines: this.nonBlank,
      bom: this.head.subarray(0, UTF8_BOM.length).equals(UTF8_BOM),
      ...(this.secondHeaderLine !== undefined ? { secondHeaderLine: this.secondHeaderLine } : {}),
      ...(this.earlyFooterLine !== undefined && this.earlyFooterLine !== this.lastNonBlankLine
        ? { earlyFooterLine: this.earlyFooterLine }
        : {}),
    };
  }
}

/** The outline of a trace given as chunks split anywhere (what traceOutline reads them as). */
export function outlineOfChunks(chunks: Iterable<Buffer>): TraceOutline {
  const scan = new OutlineScan();
  for (const chunk of chunks) scan.feed(chunk);
  return scan.finish();
}

/**
 * A trace's outline (TraceOutline), read once from end to end: a plain file 1 MiB at a time, a
 * gzip file decompressed through. About 0.1 s per 100 MB on a laptop (docs/limits.md).
 */
export async function traceOutline(path: string): Promise<TraceOutline> {
  const scan = new OutlineScan();
  if (isGzipFile(path)) {
    try {
      for await (const chunk of createReadStream(path).pipe(createGunzip())) scan.feed(chunk as Buffer);
    } catch (error) {
      // A gzip stream cut short has no footer to read: a run that did not complete.
      throw notCompleted(path, `the trace cannot be read to its end (${(error as Error).message})`);
    }
    return scan.finish();
  }
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(SCAN_CHUNK_BYTES);
    for (;;) {
      const n = readSync(fd, buffer, 0, SCAN_CHUNK_BYTES, null);
      if (n === 0) break;
      scan.feed(buffer.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return scan.finish();
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
  const outline = await traceOutline(trace);
  if (outline.bom) throw bomError(trace);
  const footer = parsedLine(outline.last);
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
  const runId = parsedLine(outline.first)?.runId;
  if (runId !== analysis.run.runId)
    throw mismatch(
      `its analysis is of run ${JSON.stringify(analysis.run.runId)}, the trace beside it (${trace}) of run ${JSON.stringify(runId ?? null)}`,
    );
  // Two runs joined in one file keep a first and a last line that match: the lines between
  // tell (docs/budgets.md#only-a-completed-run-is-judged).
  if (outline.secondHeaderLine !== undefined)
    throw mismatch(
      `the trace beside it (${trace}) has a second run header at line ${outline.secondHeaderLine}: two runs joined in one trace`,
    );
  if (outline.earlyFooterLine !== undefined)
    throw mismatch(
      `the trace beside it (${trace}) has an end footer at line ${outline.earlyFooterLine}, before its last line: two runs joined in one trace`,
    );
  const counts = (footer.counts ?? {}) as Record<string, unknown>;
  for (const [kind, read] of Object.entries(analysis.input.records))
    if (counts[kind] !== read)
      throw mismatch(
        `its analysis read ${read} ${kind} records, the footer of the trace beside it (${trace}) counts ${String(counts[kind])}: the trace changed after the results were written`,
      );
  const records = Object.values(analysis.input.records).reduce((n, c) => n + c, 0);
  if (outline.lines !== records + 2)
    throw mismatch(
      `its analysis read ${records} records, the trace beside it (${trace}) has ${outline.lines - 2} lines between its header and its footer: the trace changed after the results were written`,
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
 * `report` passes `completedOnly`: a run its results already call partial is shown as partial.
 */
export async function checkResultTraces(
  set: ResultSet,
  options: { completedOnly?: boolean } = {},
): Promise<void> {
  for (const unit of set.units)
    for (const run of unit.runs)
      if (run.resultsFile !== undefined && run.traceDir !== undefined) {
        if (options.completedOnly === true && run.incomplete !== undefined) continue;
        await checkTraceBeside(run.resultsFile, run.traceDir, run.analysis);
      }
}
