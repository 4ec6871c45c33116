/**
 * One worker of the parallel analysis: reads a byte range of body lines, parses and validates
 * them with the same TraceParser as the single-threaded reader, feeds an analyzer, and posts
 * back its state plus what the main thread needs to judge the file as a whole (line count,
 * problems with range-relative line numbers, a trailing footer).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { forEachLineInRange, LineSplitter } from '../trace/lines.ts';
import { LineProblemError, TraceParser } from '../trace/parser.ts';
import { createAnalyzer } from './analyzer.ts';
import type { RangeJob, RangeResult } from './file.ts';

const job = workerData as RangeJob;
let result: RangeResult;
const parser = new TraceParser(job.path, { lenient: job.lenient, expectHeader: false, rawProblems: true });
const analyzer = createAnalyzer();
const splitter = new LineSplitter((text, lineNo) => {
  const record = parser.line(text, lineNo);
  if (record !== undefined) analyzer.add(record);
});
try {
  forEachLineInRange(job.path, job.start, job.end, splitter);
  result = {
    ok: true,
    lines: splitter.lineNo,
    nonEmptyLines: parser.nonEmptyLines,
    counts: parser.stats.counts,
    skipped: parser.stats.skipped,
    problems: parser.problems,
    pendingFooter: parser.pendingFooter,
    state: analyzer.toState(),
  };
} catch (error) {
  if (!(error instanceof LineProblemError)) throw error;
  result = { ok: false, problem: error.problem };
}
parentPort!.postMessage(result);
