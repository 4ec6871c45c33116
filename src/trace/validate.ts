/**
 * How the reader checks lines: ajv validators compiled from the published schema (fast-check.ts)
 * decide whether a line is valid, on every path. Words for a line that fails come from zod
 * (explain.ts), loaded only when there is a problem to word; a parser without `explain` leaves
 * the problem unworded (`LineProblem.unexplained`) and its caller words it (wordProblem).
 */

import { InputFileError } from '../base/errors.ts';
import { loadChecks } from './checks-code.ts';
import { cachedValidatorCode, publishedKindSchemas } from './fast-check.ts';
import { type LineProblem, LineProblemError, type TraceParser, type TraceValidator } from './parser.ts';
import { loadScanner, scannerCode, type TraceScanner } from './scanner.ts';

export { isBodyKind } from './fast-check.ts';

export type Validated<T> = { ok: true; value: T } | { ok: false; reason: string };

export type { TraceValidator } from './parser.ts';

let shared: TraceValidator | undefined;

/** The main thread's validator (compiled once). */
export function mainValidator(): TraceValidator {
  if (shared === undefined) {
    const code = cachedValidatorCode(publishedKindSchemas());
    shared = { checks: loadChecks(code), code };
  }
  return shared;
}

type SharedScanner = { code: string; scanner: TraceScanner } | null;
let sharedScanner: SharedScanner | undefined;

/**
 * The main thread's api-line scanner, generated from the same published schema as the
 * validators (its code is what workers run; scanner.ts); null if the schema has outgrown the
 * generator.
 */
export function mainScanner(): SharedScanner {
  if (sharedScanner === undefined) {
    const code = scannerCode(publishedKindSchemas().api);
    sharedScanner = code === undefined ? null : { code, scanner: loadScanner(code) };
  }
  return sharedScanner;
}

/** A problem in words, at `lineBase` + its line (workers count lines from their range start). */
export async function wordProblem(problem: LineProblem, lineBase = 0): Promise<LineProblem> {
  const line = problem.line === undefined ? undefined : lineBase + problem.line;
  if (!problem.unexplained) return { line, reason: problem.reason };
  const { explainRecord } = await import('./explain.ts');
  let value: unknown;
  try {
    value = JSON.parse(problem.unexplained.text);
  } catch {
    value = undefined;
  }
  return { line, reason: explainRecord(problem.unexplained.kind, value) };
}

/** Puts words to a parser's kept problems that its validator could not word (loads zod only then). */
export async function wordParserProblems(parser: TraceParser): Promise<void> {
  const problems = parser.problems;
  for (let i = 0; i < problems.length; i++) {
    if (problems[i]!.unexplained) problems[i] = await wordProblem(problems[i]!);
  }
}

/** A LineProblemError from a parser, as the user-facing `file:line: reason` error. */
export async function worded(file: string, error: unknown, lineBase = 0): Promise<unknown> {
  if (!(error instanceof LineProblemError)) return error;
  const problem = await wordProblem(error.problem, lineBase);
  return new InputFileError('E_TRACE', file, problem.line, problem.reason);
}
