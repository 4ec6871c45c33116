/**
 * Analysis of a trace file. Small files and gzip input are read in one pass on this thread. A
 * large plain file is cut at newlines into one byte range per thread; this thread analyses the
 * first range while worker threads take the others, and the analyzers are merged in file order,
 * so the result is exactly the single-pass one (tested), including `file:line` problems,
 * skipped-line counts and footer checks.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { InputFileError } from '../base/errors.ts';
import { MAX_ANALYSIS_THREADS } from '../base/limits.ts';
import { checkReadable, isGzip, splitAtNewlines } from '../trace/lines.ts';
import { MAX_KEPT_REASONS, type ReadStats, TraceParser } from '../trace/parser.ts';
import { scanTrace } from '../trace/reader.ts';
import type { EndFooter } from '../trace/schema.ts';
import {
  mainScanner,
  mainValidator,
  type TraceValidator,
  worded,
  wordParserProblems,
  wordProblem,
} from '../trace/validate.ts';
import {
  Analyzer,
  type AnalyzerOptions,
  type AnalyzerState,
  analyzerFromState,
  createAnalyzer,
} from './analyzer.ts';
import { analyzeRange, type RangeJob, type RangeOutcome } from './range.ts';
import type { Analysis } from './schema.ts';
import { workerEntry } from './worker-source.ts';

/**
 * This thread starts on its range at once, a worker about 0.1 s later (thread start and loading
 * its bundle; it no longer compiles validators nor loads ajv and zod): the first range gets this
 * many bytes more (about what one thread parses in that time) so both end together.
 */
const WORKER_START_BYTES = 8 * 1024 * 1024;
const NEWLINE = 0x0a;

/** Below this size one thread is faster than starting workers. */
export const PARALLEL_MIN_BYTES = 16 * 1024 * 1024;

export interface AnalyzeFileOptions {
  lenient?: boolean;
  /** Worker threads: 'auto' (one per core for large plain files), or a number (1 = this thread). */
  threads?: number | 'auto';
  analyzer?: AnalyzerOptions;
  /**
   * Read canonical api lines with the scanner (src/trace/scanner.ts; the default); false:
   * JSON.parse every line. Default from FLEETBENCH_FAST_PATH (`0` turns it off, for the
   * side-by-side figures of `npm run bench -- analyze`).
   */
  fastPath?: boolean;
}

export interface FileAnalysis {
  analysis: Analysis;
  stats: ReadStats;
  threads: number;
}

export async function analyzeFile(path: string, given: AnalyzeFileOptions = {}): Promise<FileAnalysis> {
  const options = { ...given, fastPath: given.fastPath ?? process.env.FLEETBENCH_FAST_PATH !== '0' };
  checkReadable(path);
  const size = statSync(path).size;
  const wanted = options.threads ?? 'auto';
  let threads = Math.min(
    wanted === 'auto' ? (size >= PARALLEL_MIN_BYTES ? availableParallelism() : 1) : wanted,
    MAX_ANALYSIS_THREADS,
  );
  if (threads > 1 && (await isGzip(path))) threads = 1;
  if (threads > 1) {
    const parallel = await analyzeInParallel(path, size, threads, options);
    if (parallel) return parallel;
  }
  const analyzer = createAnalyzer(options.analyzer);
  // The analyzer keeps no api record, so the scanner's fast path applies (scanner.ts).
  const stats = await scanTrace(path, (record) => analyzer.add(record), {
    lenient: options.lenient,
    transientApi: options.fastPath,
  });
  return { analysis: analyzer.finish({ file: path, stats }), stats, threads: 1 };
}

/**
 * Reads up to and including the run header on this thread (the parser applies the same rules
 * as a single pass). Returns the parser and the byte offset after the header line, or undefined
 * when no header turns up in the first megabyte (the single pass then reports why).
 */
function readHeader(path: string, parser: TraceParser): { offset: number; lines: number } | undefined {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(1024 * 1024);
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    let start = 0;
    let lineNo = 0;
    while (start < read) {
      const nl = buffer.indexOf(0x0a, start);
      if (nl === -1 || nl >= read) return undefined;
      lineNo++;
      parser.line(buffer.toString('utf8', start, nl), lineNo);
      start = nl + 1;
      if (parser.stats.header !== undefined) return { offset: start, lines: lineNo };
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** How far back from the file's end lastCallEnd looks for an api record. */
const TAIL_BYTES = 64 * 1024;

/**
 * The end (t + dur) of the last valid api record in the last TAIL_BYTES of the body [from,
 * size), judged by the rules every range applies (a record the analysis will count), or
 * undefined. Records run in time order, so it is about where the run's calls end: each range's
 * time bins start at the width the whole analysis ends at, instead of each thread widening (and
 * folding what it holds) on the way there.
 */
function lastCallEnd(
  path: string,
  from: number,
  size: number,
  validator: TraceValidator,
): number | undefined {
  const start = Math.max(from, size - TAIL_BYTES);
  const tail = Buffer.allocUnsafe(size - start);
  const fd = openSync(path, 'r');
  try {
    if (readSync(fd, tail, 0, tail.length, start) !== tail.length) return undefined;
  } finally {
    closeSync(fd);
  }
  // Lenient, so a bad line is passed over; a line cut by the window's start is not whole.
  const parser = new TraceParser(path, { lenient: true, expectHeader: false, rawProblems: true, validator });
  let end = tail.length;
  while (end > 0) {
    const nl = tail.lastIndexOf(NEWLINE, end - 1);
    if (nl === -1 && start > from) return undefined;
    const record = parser.line(tail.toString('utf8', nl + 1, end), 1);
    if (record?.kind === 'api') return record.t + record.dur;
    end = nl === -1 ? 0 : nl;
  }
  return undefined;
}

const SYNCHRONOUS_COMPILES = '--no-concurrent-recompilation';
/** Process options that already say compiles are synchronous: leave V8's flag alone then. */
const ALREADY_SYNCHRONOUS = new Set([SYNCHRONOUS_COMPILES, '--single-threaded', '--predictable']);

/**
 * Starts one worker per job, each compiling its optimized code on its own thread (V8's
 * --no-concurrent-recompilation, which an isolate reads when it starts). Every core is busy
 * analysing: a background compile thread only competes with them, and the hot code runs
 * unoptimized for longer while it waits for it. Measured on the 2M file: 3 % less CPU
 * (docs/performance.md). The flag is set only while the workers' isolates start, so this
 * thread's isolate (and a live run's) keeps concurrent compiles; a process started with the
 * flag (or with one that implies it) keeps it. The workers' 'online' events wait for this
 * thread to finish its own range (it analyses synchronously), so the flag is set back then:
 * only isolates started in that time, the analysis's own, take it.
 */
function runWorkers(jobs: RangeJob[]): Array<Promise<RangeOutcome<AnalyzerState>>> {
  // V8 takes `_` for `-` in its flags. (A caller that set the flag with v8.setFlagsFromString
  // cannot be seen: its setting is restored to concurrent once the workers are up.)
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((option) =>
    ALREADY_SYNCHRONOUS.has(option.replaceAll('_', '-')),
  );
  let starting = jobs.length;
  const started = () => {
    if (--starting === 0 && !given) setFlagsFromString('--concurrent-recompilation');
  };
  if (!given && starting > 0) setFlagsFromString(SYNCHRONOUS_COMPILES);
  return jobs.map((job) => runWorker(job, started));
}

/** One worker; `started` is called once, when its isolate exists or it failed to start. */
function runWorker(job: RangeJob, started: () => void): Promise<RangeOutcome<AnalyzerState>> {
  return new Promise((resolve, reject) => {
    let worker: Worker;
    try {
      const entry = workerEntry();
      worker = new Worker(entry.filename, { ...entry.options, workerData: job });
    } catch (error) {
      started();
      throw error;
    }
    let starting = true;
    const online = () => {
      if (starting) started();
      starting = false;
    };
    worker.once('online', online);
    let settled = false;
    worker.once('message', (result: RangeOutcome<AnalyzerState>) => {
      settled = true;
      resolve(result);
      void worker.terminate();
    });
    worker.once('error', (error) => {
      online();
      settled = true;
      reject(error);
    });
    worker.once('exit', (code) => {
      online();
      if (!settled) reject(new Error(`analysis worker exited with code ${code}`));
    });
  });
}

async function analyzeInParallel(
  path: string,
  size: number,
  threads: number,
  options: AnalyzeFileOptions,
): Promise<FileAnalysis | undefined> {
  const lenient = options.lenient ?? false;
  const validator = mainValidator();
  const parser = new TraceParser(path, { lenient, validator });
  let head: { offset: number; lines: number } | undefined;
  try {
    head = readHeader(path, parser);
  } catch (error) {
    throw await worded(path, error);
  }
  if (head === undefined) return undefined;
  const scanner = options.fastPath === false ? null : mainScanner();
  const headStart = Math.min(WORKER_START_BYTES, Math.floor((size - head.offset) / (threads * 2)));
  const cuts = splitAtNewlines(path, head.offset, size, threads, headStart);
  const callEndMs = lastCallEnd(path, head.offset, size, validator);
  const jobs: RangeJob[] = [];
  for (let i = 0; i + 1 < cuts.length; i++)
    jobs.push({
      path,
      start: cuts[i]!,
      end: cuts[i + 1]!,
      lenient,
      checksCode: validator.code!,
      ...(scanner ? { scannerCode: scanner.code } : {}),
      ...(callEndMs !== undefined ? { callEndMs } : {}),
    });
  // This thread takes the first range while workers start up and take the others.
  const others = runWorkers(jobs.slice(1));
  const first: RangeOutcome<Analyzer | AnalyzerState> = analyzeRange(
    jobs[0]!,
    validator,
    options.analyzer,
    scanner?.scanner,
  );
  const outcomes: Array<RangeOutcome<Analyzer | AnalyzerState>> = [first, ...(await Promise.all(others))];

  // Judge the ranges in file order, exactly as one pass would have.
  let lineBase = head.lines;
  let pending: { line: number; footer: EndFooter } | undefined;
  let merged: Analyzer | undefined;
  const stats = parser.stats;
  for (const outcome of outcomes) {
    if (pending && (!outcome.ok || outcome.nonEmptyLines > 0)) {
      parser.problem(pending.line, 'end footer before the end of the file');
      pending = undefined;
    }
    if (!outcome.ok) {
      const problem = await wordProblem(outcome.problem, lineBase);
      throw new InputFileError('E_TRACE', path, problem.line, problem.reason);
    }
    for (const problem of outcome.problems) {
      if (parser.problems.length < MAX_KEPT_REASONS)
        parser.problems.push(await wordProblem(problem, lineBase));
    }
    stats.skipped += outcome.skipped;
    for (const kind of ['api', 'span', 'event', 'gauge'] as const) stats.counts[kind] += outcome.counts[kind];
    if (outcome.pendingFooter)
      pending = { line: lineBase + outcome.pendingFooter.line, footer: outcome.pendingFooter.footer };
    lineBase += outcome.lines;
    const analyzer =
      outcome.analyzer instanceof Analyzer ? outcome.analyzer : analyzerFromState(outcome.analyzer);
    merged = merged === undefined ? analyzer : merged.merge(analyzer);
  }
  stats.lines = lineBase;
  parser.pendingFooter = pending;
  await wordParserProblems(parser);
  parser.finish();
  const result = merged ?? createAnalyzer(options.analyzer);
  return { analysis: result.finish({ file: path, stats }), stats, threads: jobs.length };
}
