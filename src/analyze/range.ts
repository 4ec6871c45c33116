/**
 * One byte range of body lines → an analyzer plus what is needed to judge the file as a whole
 * (line count, problems with range-relative line numbers, a footer that may or may not be the
 * last line). The same function runs on the main thread for the first range and in each worker
 * for the others. Loads no zod: workers get the validators' code the main thread compiled from
 * the published schema, and evaluate it.
 */

import { forEachLineInRange, LineSplitter, SPAN_CHUNK } from '../trace/lines.ts';
import { type LineProblem, LineProblemError, TraceParser } from '../trace/parser.ts';
import type { TraceScanner } from '../trace/scanner.ts';
import type { EndFooter, RecordCounts } from '../trace/schema.ts';
import type { TraceValidator } from '../trace/validate.ts';
import { type Analyzer, type AnalyzerOptions, createAnalyzer } from './analyzer.ts';

export interface RangeJob {
  path: string;
  start: number;
  end: number;
  lenient: boolean;
  /** The trace validators' generated code (checks-code.ts). */
  checksCode: string;
  /** The api-line scanner's generated code (scanner.ts), if any. */
  scannerCode?: string;
  /** The end (t + dur) of an api record of the file's body, valid: see Analyzer.expectCallEnd. */
  callEndMs?: number;
}

export type RangeOutcome<A = Analyzer> =
  | {
      ok: true;
      lines: number;
      nonEmptyLines: number;
      counts: RecordCounts;
      skipped: number;
      problems: LineProblem[];
      pendingFooter: { line: number; footer: EndFooter } | undefined;
      analyzer: A;
    }
  | { ok: false; problem: LineProblem };

export function analyzeRange(
  job: RangeJob,
  validator: TraceValidator,
  options: AnalyzerOptions = {},
  scanner?: TraceScanner,
): RangeOutcome {
  const parser = new TraceParser(job.path, {
    lenient: job.lenient,
    expectHeader: false,
    rawProblems: true,
    validator,
    scanner,
  });
  const analyzer = createAnalyzer(options);
  if (job.callEndMs !== undefined) analyzer.expectCallEnd(job.callEndMs);
  // The analyzer keeps no api record: the scanner's reused one is safe here.
  const scanned = scanner?.record;
  const row = scanner?.row;
  const splitter = scanner
    ? LineSplitter.spans(
        (bytes, start, end, lineNo) => {
          const record = parser.lineAt(bytes, start, end, lineNo);
          if (record === undefined) return;
          // A line the scanner read comes with its strings' ids: counted by id.
          if (record === scanned) analyzer.addScanned(scanned, row!);
          else analyzer.add(record);
        },
        { readBuffer: scanner.readBuffer(SPAN_CHUNK) },
      )
    : new LineSplitter((text, lineNo) => {
        const record = parser.line(text, lineNo);
        if (record !== undefined) analyzer.add(record);
      });
  // The api counts by string are counted in the scanner's module (Analyzer.countScanned).
  if (row) analyzer.countScanned(row.counts);
  try {
    forEachLineInRange(job.path, job.start, job.end, splitter);
  } catch (error) {
    if (error instanceof LineProblemError) return { ok: false, problem: error.problem };
    throw error;
  } finally {
    analyzer.endScanned();
  }
  return {
    ok: true,
    lines: splitter.lineNo,
    nonEmptyLines: parser.nonEmptyLines,
    counts: parser.stats.counts,
    skipped: parser.stats.skipped,
    problems: parser.problems,
    pendingFooter: parser.pendingFooter,
    analyzer,
  };
}
