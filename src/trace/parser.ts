/**
 * The rules of a trace file, line by line: the first non-empty line is the `run` header, the
 * last non-empty line the `end` footer, everything between body records. One parser serves the
 * streaming reader and each worker of the parallel analysis (which sees a byte range of body
 * lines, `expectHeader: false`), so both read a file the same way.
 *
 * Problems are `file:line: reason`. Strict: the first one throws. Lenient: bad lines are skipped
 * and counted (the first few reasons kept), and a missing footer becomes a warning.
 *
 * A footer is only known to be the last line once the file ends, so an `end` record is held
 * back: when another non-empty line follows it, the footer is the problem ("end footer before
 * the end of the file"), at its own line.
 *
 * Problems a validator cannot word stay unworded here (validate.ts's wordParserProblems words
 * them), so that a worker, which runs this parser, never loads zod.
 */
import { InputFileError } from '../base/errors.ts';
import { BOM_HINT, BOM_REASON } from '../base/input-file.ts';
import { type CheckedKind, type FastChecks, isBodyKind } from './checks-code.ts';
import { decode } from './decode.ts';
import { isCanonicalGaugeLine } from './gauge-line.ts';
import type { TraceScanner } from './scanner.ts';
import type { BodyRecord, EndFooter, RecordCounts, RunHeader } from './schema.ts';

export interface ReadStats {
  header?: RunHeader;
  footer?: EndFooter;
  lines: number;
  counts: RecordCounts;
  /** Lines skipped in lenient mode, with the first few reasons. */
  skipped: number;
  skippedReasons: string[];
  /** The file ended without an `end` footer (the run was killed, or the file was cut). */
  truncated: boolean;
  warnings: string[];
}

export interface LineProblem {
  line: number | undefined;
  reason: string;
  /** A worker cannot word schema problems (no zod there): the line, for the main thread to explain. */
  unexplained?: { kind: CheckedKind; text: string };
}

export const MAX_KEPT_REASONS = 10;

export function emptyStats(): ReadStats {
  return {
    lines: 0,
    counts: { api: 0, span: 0, event: 0, gauge: 0 },
    skipped: 0,
    skippedReasons: [],
    truncated: false,
    warnings: [],
  };
}

export function formatProblem(problem: LineProblem): string {
  return problem.line === undefined ? problem.reason : `line ${problem.line}: ${problem.reason}`;
}

/** Thrown inside a worker for a strict-mode problem; carries the range-relative line. */
export class LineProblemError extends Error {
  readonly problem: LineProblem;
  constructor(problem: LineProblem) {
    super(problem.reason);
    this.problem = problem;
  }
}

/** How a parser checks lines: the compiled validators, and words for a line that fails (validate.ts). */
export interface TraceValidator {
  checks: FastChecks;
  /** The validators' generated code (what workers evaluate instead of compiling). */
  code?: string;
  explain?: (kind: CheckedKind, value: unknown) => string;
}

export interface TraceParserOptions {
  validator: TraceValidator;
  lenient?: boolean;
  /** false for a worker's byte range, which holds body lines only. */
  expectHeader?: boolean;
  /**
   * Throw LineProblemError (relative lines, for workers) instead of InputFileError. Problems the
   * validator cannot word are always thrown as LineProblemError, for the caller to word.
   */
  rawProblems?: boolean;
  /**
   * The fast path for `api` lines (scanner.ts), for callers that use each record before the
   * next line and keep none of the api ones (the analyzer): see lineAt.
   */
  scanner?: TraceScanner;
  /**
   * The caller keeps no gauge record (`model learn`): with the scanner, a gauge line in the form
   * gauge-line.ts reads is checked in place and counted, and no record is made of it.
   */
  skipGauges?: boolean;
}

export class TraceParser {
  readonly file: string;
  readonly stats: ReadStats = emptyStats();
  /** The first few problems (lenient mode), in file order; word them before finish(). */
  readonly problems: LineProblem[] = [];
  /** A footer not yet known to be the last line. */
  pendingFooter: { line: number; footer: EndFooter } | undefined;
  /** Non-empty lines seen (a worker reports it so a footer in an earlier range is judged). */
  nonEmptyLines = 0;
  private readonly lenient: boolean;
  private readonly rawProblems: boolean;
  private readonly validator: TraceValidator;
  private readonly scanner: TraceScanner | undefined;
  private readonly skipGauges: boolean;
  private headerSeen: boolean;

  constructor(file: string, options: TraceParserOptions) {
    this.file = file;
    this.validator = options.validator;
    this.lenient = options.lenient ?? false;
    this.rawProblems = options.rawProblems ?? false;
    this.scanner = options.scanner;
    this.skipGauges = options.skipGauges ?? false;
    this.headerSeen = options.expectHeader === false;
  }

  /**
   * One line, as bytes[start, end): a body line in the canonical form (scanner.ts) is read in
   * place into the scanner's reused record, valid until the next line; any other line is
   * decoded and goes through line(), the full parse and validation. With `skipGauges`, a gauge
   * line in gauge-line.ts's form is checked in place and counted, and gives no record. All count
   * and judge lines the same way.
   */
  lineAt(bytes: Buffer, start: number, end: number, lineNo: number): BodyRecord | undefined {
    const scanner = this.scanner;
    if (scanner !== undefined && this.headerSeen && this.pendingFooter === undefined) {
      if (scanner.scan(bytes, start, end)) {
        this.stats.lines = lineNo;
        this.nonEmptyLines++;
        this.stats.counts.api++;
        return scanner.record;
      }
      if (this.skipGauges && isCanonicalGaugeLine(bytes, start, end)) {
        this.stats.lines = lineNo;
        this.nonEmptyLines++;
        this.stats.counts.gauge++;
        return undefined;
      }
    }
    return this.line(decode(bytes, start, end), lineNo);
  }

  /** One line; returns the body record it holds, if any. */
  line(text: string, lineNo: number): BodyRecord | undefined {
    this.stats.lines = lineNo;
    if (text.length === 0 || (text.charCodeAt(0) <= 32 && text.trim() === '')) return undefined;
    this.nonEmptyLines++;
    if (!this.headerSeen && text.charCodeAt(0) === 0xfeff) this.fail(lineNo, BOM_REASON, undefined, BOM_HINT);
    if (this.pendingFooter) {
      const footerLine = this.pendingFooter.line;
      this.pendingFooter = undefined;
      // A run header after the footer: another run's trace appended to this one.
      const joined = /^\s*\{\s*"kind"\s*:\s*"run"/.test(text)
        ? // No line number in the words: a worker's are relative to its range (only `line` is rebased).
          ': a second run header follows it (two runs joined in one file: split them, docs/trace-format.md)'
        : '';
      this.problem(footerLine, `end footer before the end of the file${joined}`);
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.problem(lineNo, describeBadJson(text));
      return undefined;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.problem(lineNo, 'expected a JSON object');
      return undefined;
    }
    const kind = (value as { kind?: unknown }).kind;
    if (isBodyKind(kind) && this.headerSeen) {
      if (!this.validator.checks[kind](value)) {
        this.schemaProblem(lineNo, kind, value, text);
        return undefined;
      }
      this.stats.counts[kind]++;
      return value as BodyRecord;
    }
    if (!this.headerSeen) {
      if (kind !== 'run') {
        const reason = `expected a 'run' header as the first record, found ${describeKind(kind)}`;
        this.fail(lineNo, reason, undefined, importHint(value));
      }
      if (!this.validator.checks.run(value)) {
        // A bad header stops the read even in lenient mode: nothing after it can be placed.
        if (this.validator.explain) this.fail(lineNo, this.validator.explain('run', value));
        this.fail(lineNo, '', { kind: 'run', text });
      }
      this.stats.header = value as RunHeader;
      this.headerSeen = true;
      return undefined;
    }
    if (kind === 'end') {
      if (!this.validator.checks.end(value)) this.schemaProblem(lineNo, 'end', value, text);
      else this.pendingFooter = { line: lineNo, footer: value as EndFooter };
      return undefined;
    }
    if (kind === 'run') this.problem(lineNo, 'a second run header');
    else this.problem(lineNo, `unknown record kind ${describeKind(kind)}`);
    return undefined;
  }

  private schemaProblem(lineNo: number, kind: CheckedKind, value: unknown, text: string): void {
    if (this.validator.explain) this.problem(lineNo, this.validator.explain(kind, value));
    else this.problem(lineNo, '', { kind, text });
  }

  /** End of the file: promote the held footer, report a missing one, check footer counts. */
  finish(): void {
    const stats = this.stats;
    if (!this.headerSeen) this.fail(undefined, 'empty trace: no run header');
    if (this.pendingFooter) {
      stats.footer = this.pendingFooter.footer;
      this.pendingFooter = undefined;
    }
    if (stats.footer === undefined) {
      stats.truncated = true;
      const reason = `truncated: no end footer after line ${stats.lines} (the run was killed or the file was cut)`;
      if (!this.lenient) {
        throw new InputFileError('E_TRACE', this.file, undefined, reason, {
          hint: 'pass --lenient to analyse the records it has',
        });
      }
      stats.warnings.push(reason);
    } else if (stats.skipped === 0) {
      for (const kind of ['api', 'span', 'event', 'gauge'] as const) {
        if (stats.footer.counts[kind] !== stats.counts[kind]) {
          this.problem(
            undefined,
            `footer counts ${stats.footer.counts[kind]} ${kind} records, the file has ${stats.counts[kind]}`,
          );
        }
      }
    }
    stats.skippedReasons = this.problems.map(formatProblem);
  }

  /** A bad line: fatal in strict mode, skipped and counted in lenient mode. */
  problem(line: number | undefined, reason: string, unexplained?: LineProblem['unexplained']): void {
    if (!this.lenient) this.fail(line, reason, unexplained);
    this.stats.skipped++;
    if (this.problems.length < MAX_KEPT_REASONS) {
      this.problems.push(unexplained ? { line, reason, unexplained } : { line, reason });
    }
  }

  private fail(
    line: number | undefined,
    reason: string,
    unexplained?: LineProblem['unexplained'],
    hint?: string,
  ): never {
    // Unworded problems (no zod loaded here) go to the caller, which words them.
    if (this.rawProblems || unexplained)
      throw new LineProblemError(unexplained ? { line, reason, unexplained } : { line, reason });
    throw new InputFileError('E_TRACE', this.file, line, reason, hint ? { hint } : {});
  }
}

/** Another tool's format where a trace was expected: say how to import it. */
function importHint(value: object): string | undefined {
  if ('resourceSpans' in value)
    return 'this looks like an OTLP/JSON export: run `fleetbench import otlp FILE` first';
  if ('operation' in value && 'timestamp' in value && 'durationMs' in value) {
    return 'this looks like an agent-orchestrator gh trace: run `fleetbench import ao-gh FILE` first';
  }
  return undefined;
}

function describeKind(kind: unknown): string {
  return kind === undefined ? 'a record without a kind' : JSON.stringify(kind);
}

export function describeBadJson(line: string): string {
  // Binary garbage and half-written lines are the usual causes; say which it looks like.
  // U+FFFD: bytes that are not UTF-8 at all, as random binary mostly is.
  if (/[\u0000-\u0008\u000e-\u001f\ufffd]/.test(line)) return 'not JSON (binary data?)';
  return `malformed JSON: ${line.length > 60 ? `${line.slice(0, 60)}…` : line}`;
}
