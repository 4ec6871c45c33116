/**
 * agent-orchestrator's `AO_GH_TRACE_FILE` rows (one JSON row per `gh` subprocess) → canonical
 * `api` records. The mapping, field by field, is in docs/trace-format.md; the facts it rests on:
 *
 * - `timestamp` is the ISO time at the *end* of the call: start = timestamp − durationMs.
 * - Only rows of `gh api -i ...` carry `httpStatus` and the rate-limit headers. Rows without
 *   `httpStatus` (e.g. `gh pr list`, which prints no headers) are **opaque**: status null, cost
 *   0 (unknown, not zero: the analysis lists them beside the burn), never a guessed status.
 * - A 304 shows up as `ok:false, exitCode:1` with `httpStatus:304`: not modified, cost 0.
 * - `method` defaults to GET even for `gh api graphql`, which is really a POST.
 * - GraphQL rows may carry `graphqlCost`: the points charged to the `graphql` resource.
 * - A request was conditional when its args carry an `If-None-Match` header, or when it was
 *   answered 304. An `etag` in the *response* alone says nothing about the request.
 * - The runbook brackets a run with two `/rate_limit` captures (`gh api /rate_limit --jq
 *   '{ core: .resources.core, captured_at: now | todate }'`): given as `bracketBefore` and
 *   `bracketAfter`, they become the `ratelimit.snapshot` events an emulated run writes.
 */
import { z } from 'zod';
import { InputFileError } from '../../base/errors.ts';
import { readInputText } from '../../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES, MAX_RUN_MS } from '../../base/limits.ts';
import { describeZodError } from '../../base/validation.ts';
import { forEachLine } from '../lines.ts';
import { describeBadJson } from '../parser.ts';
import type { ApiRecord, ApiSource } from '../schema.ts';
import { importedTraceWriter } from './writer.ts';

const optionalNumber = z.number().nullish();
const optionalString = z.string().nullish();

export const aoGhRowSchema = z.looseObject({
  timestamp: z.string().describe('ISO time at the end of the call'),
  component: z.string(),
  operation: z.string(),
  projectId: optionalString,
  sessionId: optionalString,
  cwd: optionalString,
  args: z.array(z.string()).nullish(),
  endpoint: optionalString,
  method: optionalString,
  ok: z.boolean(),
  exitCode: optionalNumber,
  signal: optionalString,
  durationMs: z
    .number()
    .nonnegative()
    .max(MAX_RUN_MS, { error: `expected at most ${MAX_RUN_MS} ms (30 days: docs/limits.md)` }),
  stdoutBytes: optionalNumber,
  stderrBytes: optionalNumber,
  statusLine: optionalString,
  httpStatus: z.number().int().nullish(),
  etag: optionalString,
  rateLimitLimit: optionalNumber,
  rateLimitRemaining: optionalNumber,
  rateLimitReset: optionalNumber,
  rateLimitResource: optionalString,
  graphqlCost: z.number().nonnegative().nullish(),
  graphqlRemaining: optionalNumber,
  graphqlResetAt: optionalString,
});
export type AoGhRow = z.infer<typeof aoGhRowSchema>;

/** agent-orchestrator components whose calls come from its lifecycle polling. */
const LIFECYCLE_COMPONENTS = new Set(['scm-github', 'scm-github-batch', 'tracker-github']);
/** `gh` subcommands that talk GraphQL under the hood (their rows are opaque: no headers). */
const GRAPHQL_SUBCOMMANDS = new Set(['pr', 'issue', 'repo', 'project', 'release', 'search']);
const WRITE_METHODS = new Set(['POST', 'PATCH', 'PUT', 'DELETE']);

/** GitHub's REST route template for a `gh api` endpoint (query string dropped). */
export function templateRoute(endpoint: string): string {
  const path = endpoint
    .replace(/^https?:\/\/[^/]+/, '')
    .split('?')[0]!
    .replace(/^\/+/, '');
  const parts = path.split('/').filter((p) => p.length > 0);
  if (parts.length === 1 && parts[0] === 'graphql') return '/graphql';
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const previous = parts[i - 1];
    if (i === 1 && parts[0] === 'repos') out.push('{owner}');
    else if (i === 2 && parts[0] === 'repos') out.push('{repo}');
    else if (previous === 'commits' || previous === 'branches' || previous === 'refs') out.push('{ref}');
    else if (/^\d+$/.test(part)) {
      const names: Record<string, string> = {
        pulls: '{pull_number}',
        issues: '{issue_number}',
        comments: '{comment_id}',
        reviews: '{review_id}',
        'check-runs': '{check_run_id}',
        'check-suites': '{check_suite_id}',
      };
      out.push(names[previous ?? ''] ?? '{id}');
    } else if (i === 1 && (parts[0] === 'users' || parts[0] === 'orgs'))
      out.push(parts[0] === 'users' ? '{username}' : '{org}');
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

function repoOf(row: AoGhRow): string | undefined {
  const endpoint = row.endpoint ?? '';
  const match = /^\/?repos\/([^/?]+)\/([^/?]+)/.exec(endpoint);
  if (match) return `${match[1]}/${match[2]}`;
  const args = row.args ?? [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if ((arg === '--repo' || arg === '-R') && args[i + 1]) return args[i + 1];
    if (arg.startsWith('--repo=')) return arg.slice('--repo='.length);
  }
  return undefined;
}

function hasIfNoneMatch(args: readonly string[] | null | undefined): boolean {
  return (args ?? []).some((arg) => /if-none-match\s*:/i.test(arg));
}

/** `gh pr list` from args or, failing that, from the operation name (`gh.pr.list`). */
function subcommandOf(row: AoGhRow): string[] {
  const args = (row.args ?? []).filter((a) => !a.startsWith('-')).slice(0, 2);
  if (args.length > 0) return args;
  return row.operation.replace(/^gh\./, '').split('.').slice(0, 2);
}

export interface AoGhImportOptions {
  /** Assign poll cycles as floor(start / cycleMs) (AO rows carry no cycle id). */
  cycleMs?: number;
}

const bracketResourceSchema = z.looseObject({
  limit: z.number().nonnegative(),
  remaining: z.number().nonnegative(),
  reset: z.number().nonnegative().describe('epoch seconds'),
  used: z.number().nonnegative().optional(),
});

/** The runbook's capture: `{ core: {...}, captured_at: "2026-01-01T00:00:00Z" }`, or GitHub's whole answer. */
const bracketFileSchema = z.looseObject({ captured_at: z.string() });

export interface Bracket {
  /** Wall-clock ms of the capture. */
  capturedMs: number;
  resources: Record<string, { limit: number; remaining: number; reset: number; used: number }>;
}

/**
 * Reads one bracket file. Every key holding a `{limit, remaining, reset}` object is a resource
 * (`core`, and any other the capture kept); `resources: {...}` (GitHub's full answer plus
 * `captured_at`) is read the same way. `used` is `limit − remaining` when absent.
 */
export function readBracketFile(path: string): Bracket {
  const fail = (reason: string): never => {
    throw new InputFileError('E_IMPORT', path, undefined, `rate-limit bracket: ${reason}`, {
      hint: "capture it with gh api /rate_limit --jq '{ core: .resources.core, captured_at: now | todate }' (docs/trace-format.md#agent-orchestrator-ao_gh_trace_file)",
    });
  };
  let text: string;
  try {
    text = readInputText(path, { maxBytes: MAX_CONFIG_FILE_BYTES, code: 'E_IMPORT', what: 'a bracket file' });
  } catch (error) {
    if (error instanceof InputFileError) return fail(error.reason);
    return fail(`cannot read it (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return fail(`not JSON: ${describeBadJson(text.trim().split('\n')[0] ?? '')}`);
  }
  const parsed = bracketFileSchema.safeParse(value);
  if (!parsed.success) return fail(describeZodError(parsed.error));
  const capturedMs = Date.parse(parsed.data.captured_at);
  if (Number.isNaN(capturedMs))
    return fail(`captured_at: expected an ISO time, got '${parsed.data.captured_at}'`);
  const holder = (
    typeof parsed.data.resources === 'object' && parsed.data.resources !== null
      ? parsed.data.resources
      : parsed.data
  ) as Record<string, unknown>;
  const resources: Bracket['resources'] = {};
  for (const [key, raw] of Object.entries(holder)) {
    if (key === 'captured_at' || typeof raw !== 'object' || raw === null) continue;
    const r = bracketResourceSchema.safeParse(raw);
    if (!r.success) return fail(`${key}: ${describeZodError(r.error)}`);
    resources[key] = {
      limit: r.data.limit,
      remaining: r.data.remaining,
      reset: r.data.reset,
      used: r.data.used ?? r.data.limit - r.data.remaining,
    };
  }
  if (Object.keys(resources).length === 0)
    return fail('no resource in it (expected e.g. core: {limit, remaining, reset, used})');
  return { capturedMs, resources };
}

/** One row → one api record; `epochMs` is the run's t = 0 (the earliest call start). */
export function aoGhRowToApi(row: AoGhRow, epochMs: number, options: AoGhImportOptions = {}): ApiRecord {
  const endMs = Date.parse(row.timestamp);
  const startWall = endMs - row.durationMs;
  const t = round3(startWall - epochMs);
  const isApi = row.endpoint != null || row.args?.[0] === 'api';
  const isGraphql = isApi ? (row.endpoint ?? '').replace(/^\/+/, '') === 'graphql' : false;
  const sub = subcommandOf(row);
  const opaqueGraphql = !isApi && GRAPHQL_SUBCOMMANDS.has(sub[0] ?? '');
  const protocol = isGraphql || opaqueGraphql ? 'graphql' : 'rest';
  const route = isGraphql
    ? '/graphql'
    : isApi && row.endpoint
      ? templateRoute(row.endpoint)
      : `gh ${sub.join(' ')}`;
  const method = protocol === 'graphql' ? 'POST' : (row.method ?? 'GET').toUpperCase();
  const status = row.httpStatus ?? null;
  const notModified = status === 304;
  const resource =
    row.rateLimitResource ??
    (protocol === 'graphql' ? 'graphql' : route.startsWith('/search/') ? 'search' : 'core');
  let cost = 0;
  if (status !== null && !notModified) cost = protocol === 'graphql' ? (row.graphqlCost ?? 1) : 1;
  const secondaryCost = status === null ? 0 : protocol === 'rest' && WRITE_METHODS.has(method) ? 5 : 1;
  const record: ApiRecord = {
    kind: 'api',
    t,
    dur: row.durationMs,
    service: 'github',
    protocol,
    method,
    route,
    status,
    conditional: notModified || hasIfNoneMatch(row.args),
    notModified,
    resource,
    cost,
    secondaryCost,
  };
  if (row.rateLimitLimit != null && row.rateLimitRemaining != null && row.rateLimitReset != null) {
    record.rl = {
      limit: row.rateLimitLimit,
      remaining: row.rateLimitRemaining,
      used: row.rateLimitLimit - row.rateLimitRemaining,
      reset: row.rateLimitReset,
      resource,
    };
  }
  if (row.stdoutBytes != null) record.bytes = row.stdoutBytes;
  if (status !== null && (status === 403 || status === 429) && row.rateLimitRemaining === 0)
    record.limited = 'primary';
  // A gh killed by a signal failed whatever `ok` says: `signal`, or an exit code ≥ 128 (the
  // shell's 128 + signal number). The analysis counts these as failed calls (`killed`).
  const killed = row.signal != null || (row.exitCode != null && row.exitCode >= 128);
  if (killed) record.error = row.signal ? `signal ${row.signal}` : `signal (exit ${row.exitCode})`;
  else if (!row.ok && !notModified) record.error = `exit ${row.exitCode ?? 'unknown'}`;
  if (row.projectId) record.project = row.projectId;
  if (row.sessionId) record.session = row.sessionId;
  const repo = repoOf(row);
  if (repo) record.repo = repo;
  if (LIFECYCLE_COMPONENTS.has(row.component)) record.source = 'lifecycle' satisfies ApiSource;
  record.op = row.operation;
  if (options.cycleMs !== undefined && options.cycleMs > 0)
    record.cycle = Math.floor(Math.max(0, t) / options.cycleMs);
  return record;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export interface ImportResult {
  output: string;
  records: number;
  skipped: number;
  skippedReasons: string[];
  opaque: number;
}

function parseRow(text: string): AoGhRow | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return describeBadJson(text);
  }
  const parsed = aoGhRowSchema.safeParse(value);
  if (!parsed.success) return describeZodError(parsed.error);
  if (Number.isNaN(Date.parse(parsed.data.timestamp))) return 'timestamp: expected an ISO time';
  return parsed.data;
}

/**
 * Streams an AO trace file into a canonical trace, in two passes (the first finds the earliest
 * call start, the run's t = 0, and checks every row).
 */
export async function importAoGh(
  input: string,
  output: string,
  options: AoGhImportOptions & { lenient?: boolean; bracketBefore?: string; bracketAfter?: string } = {},
): Promise<ImportResult> {
  // Read first: a bad bracket file fails before anything is written.
  const before = options.bracketBefore !== undefined ? readBracketFile(options.bracketBefore) : undefined;
  const after = options.bracketAfter !== undefined ? readBracketFile(options.bracketAfter) : undefined;
  if (before && after && after.capturedMs < before.capturedMs) {
    throw new InputFileError(
      'E_IMPORT',
      options.bracketAfter!,
      undefined,
      `rate-limit bracket: captured at ${new Date(after.capturedMs).toISOString()}, before the "before" capture (${new Date(before.capturedMs).toISOString()})`,
    );
  }
  let epochMs = Number.POSITIVE_INFINITY;
  let latestEnd = Number.NEGATIVE_INFINITY;
  let earliestLine = 0;
  let latestLine = 0;
  let rows = 0;
  let skipped = 0;
  const skippedReasons: string[] = [];
  const bad = new Set<number>();
  await forEachLine(input, (text, lineNo) => {
    if (text.trim() === '') return;
    const row = parseRow(text);
    if (typeof row === 'string') {
      if (!options.lenient) throw new InputFileError('E_IMPORT', input, lineNo, row);
      skipped++;
      bad.add(lineNo);
      if (skippedReasons.length < 10) skippedReasons.push(`line ${lineNo}: ${row}`);
      return;
    }
    rows++;
    const end = Date.parse(row.timestamp);
    const start = end - row.durationMs;
    if (start < epochMs) {
      epochMs = start;
      earliestLine = lineNo;
    }
    if (end > latestEnd) {
      latestEnd = end;
      latestLine = lineNo;
    }
  });
  // One trace spans at most MAX_RUN_MS: a far-off timestamp (a year 9999, a clock reset) is an
  // error naming both ends, not a trace no analysis could hold.
  if (rows > 0 && latestEnd - epochMs > MAX_RUN_MS) {
    throw new InputFileError(
      'E_IMPORT',
      input,
      latestLine,
      `timestamp: ${new Date(latestEnd).toISOString()} is more than 30 days after the earliest call (line ${earliestLine}, ${new Date(epochMs).toISOString()}); one trace covers at most 30 days`,
      { hint: 'split the file by day, or remove the row with the wrong clock (docs/limits.md)' },
    );
  }
  if (rows === 0) {
    throw new InputFileError(
      'E_IMPORT',
      input,
      undefined,
      skipped > 0 ? 'no valid rows' : 'empty file: no rows',
    );
  }
  // t = 0 is the earliest call start, or the "before" capture when it came first (it should).
  if (before && before.capturedMs < epochMs) epochMs = before.capturedMs;
  epochMs = Math.floor(epochMs);
  const writer = importedTraceWriter(
    output,
    input,
    'ao-gh',
    'imported: agent-orchestrator gh trace',
    epochMs,
  );
  let opaque = 0;
  let records = 0;
  const snapshot = (bracket: Bracket, phase: 'before' | 'after') =>
    writer.write({
      kind: 'event',
      name: 'ratelimit.snapshot',
      t: round3(bracket.capturedMs - epochMs),
      data: { phase, resources: bracket.resources },
    });
  try {
    if (before) snapshot(before, 'before');
    await forEachLine(input, (text, lineNo) => {
      if (text.trim() === '' || bad.has(lineNo)) return;
      const row = parseRow(text) as AoGhRow;
      const record = aoGhRowToApi(row, epochMs, options);
      if (record.status === null) opaque++;
      records++;
      writer.write(record);
    });
    if (after) snapshot(after, 'after');
  } catch (error) {
    writer.close('failed');
    throw error;
  }
  writer.close('completed');
  return { output, records, skipped, skippedReasons, opaque };
}
