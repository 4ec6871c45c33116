/**
 * The canonical trace: one JSON object per line. This file is the single definition of the
 * format; the validator, the TypeScript types and the published JSON Schema
 * (docs/trace.schema.json, see `fleetbench schema trace`) all come from it.
 *
 * Times (`t`, `dur`) are milliseconds since the run's epoch (the header's `epochMs`),
 * sub-millisecond allowed, so a virtual and a real run read the same way.
 */
import { z } from 'zod';
import { publishedJsonSchema } from '../base/json-schema.ts';
import { MAX_RUN_MS } from '../base/limits.ts';

export const TRACE_FORMAT = 'fleetbench-trace/1';

// One range for every time of every record (docs/limits.md): a run lasts at most MAX_RUN_MS, so
// no reader ever sizes anything from a time it could not hold.
const RANGE = `expected at most ${MAX_RUN_MS} ms (30 days, the longest run a trace holds: docs/limits.md)`;
const time = z
  .number()
  .min(0, { error: 'expected ms since the run epoch, not negative' })
  .max(MAX_RUN_MS, { error: RANGE })
  .describe('milliseconds since the run epoch (at most 30 days)');
const duration = z
  .number()
  .min(0, { error: 'expected a duration in ms, not negative' })
  .max(MAX_RUN_MS, { error: RANGE })
  .describe('milliseconds (at most 30 days)');
const labelValue = z.union([z.string(), z.number(), z.boolean()]);
export const labelsSchema = z.record(z.string(), labelValue);

export const clockKinds = ['virtual', 'real'] as const;
export const sources = ['lifecycle', 'dashboard', 'agent', 'cli', 'harness'] as const;

export const runHeaderSchema = z
  .object({
    kind: z.literal('run'),
    format: z.literal(TRACE_FORMAT),
    runId: z.string().min(1),
    tool: z.object({ name: z.string(), version: z.string() }).strict(),
    clock: z.enum(clockKinds),
    timeScale: z.number().positive().optional().describe('real clock only: virtual ms per real ms'),
    seed: z.number().int().nullable(),
    scenario: z
      .object({
        name: z.string(),
        hash: z.string().nullable().describe('sha256 of the resolved scenario, null when none'),
        cell: z.string().optional().describe('matrix cell id, e.g. S2-T1-50'),
      })
      .strict(),
    target: z.string().optional(),
    epochMs: z.number().describe('wall-clock Unix ms at t=0 (a fixed date for virtual runs)'),
    startedAt: z.string().describe('ISO time of t=0'),
    source: z.string().optional().describe('what produced the trace when imported (ao-gh, otlp)'),
    labels: labelsSchema.optional(),
  })
  .strict();

/** `x-ratelimit-*` values the response carried. */
export const rateLimitSnapshotSchema = z
  .object({
    limit: z.number(),
    remaining: z.number(),
    used: z.number(),
    reset: z.number().describe('epoch seconds'),
    resource: z.string(),
  })
  .partial({ used: true, resource: true })
  .strict();

export const apiRecordSchema = z
  .object({
    kind: z.literal('api'),
    t: time.describe('request start'),
    dur: duration,
    service: z.string().describe('github'),
    protocol: z.enum(['rest', 'graphql']),
    method: z.string(),
    route: z.string().describe('templated route, e.g. /repos/{owner}/{repo}/pulls'),
    status: z.number().int().nullable().describe('HTTP status; null for opaque calls (status unknown)'),
    conditional: z.boolean().describe('request carried If-None-Match / If-Modified-Since'),
    notModified: z.boolean().describe('answered 304'),
    resource: z.string().describe('rate-limit resource: core, graphql, search, ...'),
    cost: z.number().nonnegative().describe('points charged against the primary limit'),
    secondaryCost: z.number().nonnegative().describe('points charged against the secondary limit'),
    rl: rateLimitSnapshotSchema.optional(),
    bytes: z.number().nonnegative().optional().describe('response body bytes'),
    retryAfter: z.number().nonnegative().optional().describe('retry-after seconds, when answered'),
    limited: z.enum(['primary', 'secondary']).optional().describe('why a 403/429 was answered'),
    error: z.string().optional(),
    project: z.string().optional(),
    session: z.string().optional(),
    repo: z.string().optional().describe('owner/name'),
    source: z.enum(sources).optional(),
    op: z.string().optional().describe('operation: guard-pr-list, detect-pr, graphql-batch, ...'),
    cycle: z.number().int().optional().describe('poll cycle id'),
    phase: z.string().optional().describe('session or run phase'),
    scope: z
      .enum(['session', 'shared', 'unresolved'])
      .optional()
      .describe(
        "with attribution by content: the call named one session's work (session), named no piece of work (shared: the control plane's own), or named work no single session owns (unresolved)",
      ),
  })
  .strict();

export const spanRecordSchema = z
  .object({
    kind: z.literal('span'),
    name: z.string().min(1),
    t: time.describe('start'),
    dur: duration,
    writtenAt: time.optional().describe('when the span was written, if later than its end'),
    session: z.string().optional(),
    outcome: z.enum(['ok', 'error', 'cancelled']).default('ok'),
    labels: labelsSchema.optional().describe('dimensions spans are grouped by (adapter, start kind, ...)'),
    data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('per-span values that are not dimensions (cycle id, call count, lag)'),
  })
  .strict();

export const eventRecordSchema = z
  .object({
    kind: z.literal('event'),
    name: z.string().min(1),
    t: time,
    session: z.string().optional(),
    labels: labelsSchema.optional(),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();

export const gaugeRecordSchema = z
  .object({
    kind: z.literal('gauge'),
    name: z.string().min(1),
    t: time,
    value: z.number(),
    labels: labelsSchema.optional(),
  })
  .strict();

export const recordCountsSchema = z
  .object({
    api: z.number().int().nonnegative(),
    span: z.number().int().nonnegative(),
    event: z.number().int().nonnegative(),
    gauge: z.number().int().nonnegative(),
  })
  .strict();

export const endFooterSchema = z
  .object({
    kind: z.literal('end'),
    t: time,
    reason: z.enum(['completed', 'interrupted', 'failed']),
    counts: recordCountsSchema,
  })
  .strict();

export const bodyRecordSchema = z.discriminatedUnion('kind', [
  apiRecordSchema,
  spanRecordSchema,
  eventRecordSchema,
  gaugeRecordSchema,
]);

export const traceRecordSchema = z.discriminatedUnion('kind', [
  runHeaderSchema,
  apiRecordSchema,
  spanRecordSchema,
  eventRecordSchema,
  gaugeRecordSchema,
  endFooterSchema,
]);

export type Labels = z.infer<typeof labelsSchema>;
export type RunHeader = z.infer<typeof runHeaderSchema>;
export type RateLimitSnapshot = z.infer<typeof rateLimitSnapshotSchema>;
export type ApiRecord = z.infer<typeof apiRecordSchema>;
export type SpanRecord = z.infer<typeof spanRecordSchema>;
export type EventRecord = z.infer<typeof eventRecordSchema>;
export type GaugeRecord = z.infer<typeof gaugeRecordSchema>;
export type EndFooter = z.infer<typeof endFooterSchema>;
export type BodyRecord = z.infer<typeof bodyRecordSchema>;
export type TraceRecord = z.infer<typeof traceRecordSchema>;
export type RecordCounts = z.infer<typeof recordCountsSchema>;
export type ApiSource = (typeof sources)[number];
/** Input shape of a span before defaults (outcome may be omitted). */
export type SpanInput = z.input<typeof spanRecordSchema>;

export const recordKinds = ['run', 'api', 'span', 'event', 'gauge', 'end'] as const;
export type RecordKind = (typeof recordKinds)[number];

/**
 * Why a record's times are out of the trace's range, or undefined when they are fine: the check
 * a writer makes on records it did not produce itself (a target's events, OTLP spans), so that a
 * bad one is counted instead of poisoning the whole trace.
 */
export function timeProblem(record: {
  kind: string;
  t?: unknown;
  dur?: unknown;
  writtenAt?: unknown;
}): string | undefined {
  // The fast path (every record a writer takes): plain comparisons, no closure, no string.
  const t = record.t;
  if (typeof t === 'number' && t >= 0 && t <= MAX_RUN_MS && record.writtenAt === undefined) {
    if (record.kind !== 'api' && record.kind !== 'span') return undefined;
    const dur = record.dur;
    if (typeof dur === 'number' && dur >= 0 && dur <= MAX_RUN_MS) return undefined;
  }
  return describeTimeProblem(record);
}

function describeTimeProblem(record: {
  kind: string;
  t?: unknown;
  dur?: unknown;
  writtenAt?: unknown;
}): string | undefined {
  const check = (field: string, value: unknown): string | undefined =>
    typeof value !== 'number' || !Number.isFinite(value)
      ? `${field}: expected a finite number of ms`
      : value < 0
        ? `${field}: ${value} is negative`
        : value > MAX_RUN_MS
          ? `${field}: ${value} ms is beyond the ${MAX_RUN_MS} ms (30 days) a trace can hold`
          : undefined;
  return (
    check('t', record.t) ??
    (record.kind === 'api' || record.kind === 'span' ? check('dur', record.dur) : undefined) ??
    (record.writtenAt !== undefined ? check('writtenAt', record.writtenAt) : undefined)
  );
}

/** The published JSON Schema of one trace line. */
export function traceJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(
    traceRecordSchema,
    {
      id: 'trace-record-1',
      title: `fleetbench trace record (${TRACE_FORMAT})`,
      description:
        'One line of a fleetbench trace (JSONL). The first line is a `run` header, the last an `end` footer.',
    },
    { io: 'input' },
  );
}
