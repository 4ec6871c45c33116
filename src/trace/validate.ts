/**
 * How the reader checks lines: ajv validators compiled from the published schema (fast-check.ts)
 * decide whether a line is valid, on every path. Words for a line that fails come from zod
 * (explain.ts), loaded only when there is a problem to word; a parser without `explain` leaves
 * the problem unworded (`LineProblem.unexplained`) and its caller words it (wordProblem).
 */

import { closeSync, openSync, readSync } from 'node:fs';
import { InputFileError } from '../base/errors.ts';
import { loadChecks } from './checks-code.ts';
import { cachedValidatorCode, publishedKindSchemas } from './fast-check.ts';
import { type LineProblem, LineProblemError, type TraceParser, type TraceValidator } from './parser.ts';
import {
  API_LINE_PREFIX,
  type KeyOrder,
  keyOrderOf,
  loadScanner,
  scannerCode,
  type TraceScanner,
} from './scanner.ts';

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

/**
 * Scanners by their code (a few at most: one per writer whose files this process reads). Keyed
 * by code, not by order: orders the generator makes the same code of (keys the schema does not
 * have, junk nested objects) share one.
 */
const sharedScanners = new Map<string, SharedScanner>();
const MAX_SHARED_SCANNERS = 8;

/**
 * The main thread's api-line scanner, generated from the same published schema as the
 * validators (its code is what workers run), with a straight-line path for lines in `order`
 * (scanner.ts); null if the schema has outgrown the generator.
 */
export function mainScanner(order?: KeyOrder): SharedScanner {
  const code = scannerCode(publishedKindSchemas().api, order);
  if (code === undefined) return null;
  let shared = sharedScanners.get(code);
  if (shared === undefined) {
    shared = { code, scanner: loadScanner(code) };
    if (sharedScanners.size < MAX_SHARED_SCANNERS) sharedScanners.set(code, shared);
  }
  return shared;
}

/** How far into a file to look for api lines, and how many of them to look at, for their key order. */
const SNIFF_BYTES = 256 * 1024;
const SNIFF_LINES = 256;

/**
 * mainScanner for a plain trace file, its straight-line path in the key order most api lines
 * among the first SNIFF_LINES (in SNIFF_BYTES from `from`) have: the order its writer uses.
 * What those lines hold only picks which lines take the straight path: each line is still
 * checked in full (scanner.ts).
 */
export function scannerForFile(path: string, from = 0): SharedScanner {
  return mainScanner(commonApiKeyOrder(path, from));
}

function commonApiKeyOrder(path: string, from: number): KeyOrder | undefined {
  const fd = openSync(path, 'r');
  let read: number;
  const buffer = Buffer.allocUnsafe(SNIFF_BYTES);
  try {
    read = readSync(fd, buffer, 0, SNIFF_BYTES, from);
  } finally {
    closeSync(fd);
  }
  const prefix = Buffer.from(API_LINE_PREFIX);
  const orders = new Map<string, { order: KeyOrder; lines: number }>();
  let best: { order: KeyOrder; lines: number } | undefined;
  let seen = 0;
  for (let start = 0; start < read && seen < SNIFF_LINES; ) {
    const nl = buffer.indexOf(0x0a, start);
    if (nl === -1 || nl >= read) break;
    if (buffer.compare(prefix, 0, prefix.length, start, Math.min(start + prefix.length, nl)) === 0) {
      seen++;
      let order: KeyOrder | undefined;
      try {
        order = keyOrderOf(JSON.parse(buffer.toString('utf8', start, nl)));
      } catch {
        order = undefined;
      }
      if (order !== undefined) {
        const key = JSON.stringify(order);
        const entry = orders.get(key) ?? { order, lines: 0 };
        entry.lines++;
        orders.set(key, entry);
        if (best === undefined || entry.lines > best.lines) best = entry;
      }
    }
    start = nl + 1;
  }
  return best?.order;
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
