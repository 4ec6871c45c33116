/**
 * OpenTelemetry OTLP trace exports → canonical `span` (and `event`) records.
 *
 * Input: one ExportTraceServiceRequest (`{"resourceSpans": [...]}`), as an OTLP/HTTP JSON body
 * or a collector's file export, or JSON Lines of them (the collector file exporter's format),
 * or the same in protobuf (otlp-proto.ts decodes it into the JSON shape), gzipped or not.
 * resourceSpans → scopeSpans → spans; times are nanosecond Unix strings (or numbers), read with
 * BigInt so nothing is lost; t = 0 is the earliest span start. Span attributes become labels,
 * plus `service` from the resource's `service.name`; a `session.id` (or `fleetbench.session`,
 * `session`) attribute becomes the record's session; status code ERROR becomes outcome `error`.
 * Span events become `event` records. The whole file is read into memory: OTLP exports are
 * documents, not streams.
 */
import { gunzipSync } from 'node:zlib';
import { z } from 'zod';
import { InputFileError } from '../../base/errors.ts';
import { readInputFile } from '../../base/input-file.ts';
import { MAX_OTLP_FILE_BYTES } from '../../base/limits.ts';
import { describeZodError } from '../../base/validation.ts';
import { describeBadJson } from '../parser.ts';
import { type EventRecord, type Labels, type SpanRecord, timeProblem } from '../schema.ts';
import {
  checkJsonShape,
  checkProtobufShape,
  DEPTH_ONLY,
  decodeTraceRequest,
  OtlpRequestError,
  splitProtobufFile,
} from './otlp-proto.ts';
import { importedTraceWriter } from './writer.ts';

const nanos = z.union([
  z.string().regex(/^\d+$/, 'expected nanoseconds as digits'),
  z.number().int().nonnegative(),
]);

const anyValueSchema: z.ZodType<unknown> = z.lazy(() =>
  z.looseObject({
    stringValue: z.string().optional(),
    boolValue: z.boolean().optional(),
    intValue: z.union([z.string(), z.number()]).optional(),
    doubleValue: z.number().optional(),
    arrayValue: z.looseObject({ values: z.array(anyValueSchema).optional() }).optional(),
    kvlistValue: z.looseObject({ values: z.array(keyValueSchema).optional() }).optional(),
    bytesValue: z.string().optional(),
  }),
);
const keyValueSchema = z.looseObject({ key: z.string(), value: anyValueSchema.optional() });
const attributesSchema = z.array(keyValueSchema).optional();

export const spanSchema = z.looseObject({
  traceId: z.string().optional(),
  spanId: z.string().optional(),
  parentSpanId: z.string().optional(),
  name: z.string().min(1),
  startTimeUnixNano: nanos,
  endTimeUnixNano: nanos,
  attributes: attributesSchema,
  events: z
    .array(z.looseObject({ timeUnixNano: nanos, name: z.string().min(1), attributes: attributesSchema }))
    .optional(),
  status: z
    .looseObject({ code: z.union([z.number(), z.string()]).optional(), message: z.string().optional() })
    .optional(),
});

/** A request whose spans are `span`: checked whole (the importer), or all but the spans (the receiver). */
function requestSchema<S extends z.ZodType>(span: S) {
  return z.looseObject({
    resourceSpans: z.array(
      z.looseObject({
        resource: z.looseObject({ attributes: attributesSchema }).optional(),
        scopeSpans: z
          .array(
            z.looseObject({
              scope: z.looseObject({ name: z.string().optional() }).optional(),
              spans: z.array(span).optional(),
            }),
          )
          .optional(),
      }),
    ),
  });
}

export const otlpRequestSchema = requestSchema(spanSchema);
/**
 * The request around its spans: what the live receiver checks at once, before it checks the
 * spans themselves a slice at a time (`spanSchema`), stopping at the first that fails.
 */
export const otlpEnvelopeSchema = requestSchema(z.unknown());
type OtlpRequest = z.infer<typeof otlpRequestSchema>;
type KeyValue = z.infer<typeof keyValueSchema>;

const SESSION_KEYS = ['session.id', 'fleetbench.session', 'session'];

function scalar(value: unknown): string | number | boolean | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.stringValue === 'string') return v.stringValue;
  if (typeof v.boolValue === 'boolean') return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (typeof v.doubleValue === 'number') return v.doubleValue;
  if (v.arrayValue !== undefined || v.kvlistValue !== undefined || v.bytesValue !== undefined)
    return JSON.stringify(v);
  return undefined;
}

function toLabels(
  attributes: KeyValue[] | undefined,
  keep: Set<string> | undefined,
): { labels: Labels; session?: string } {
  const labels: Labels = {};
  let session: string | undefined;
  for (const { key, value } of attributes ?? []) {
    const v = scalar(value);
    if (v === undefined) continue;
    if (SESSION_KEYS.includes(key)) {
      session = String(v);
      continue;
    }
    if (keep && !keep.has(key)) continue;
    labels[key] = v;
  }
  return session === undefined ? { labels } : { labels, session };
}

function isError(code: number | string | undefined): boolean {
  return code === 2 || code === 'STATUS_CODE_ERROR' || code === 'ERROR';
}

export interface OtlpImportOptions {
  /** Keep only these attribute keys as labels (high-cardinality ids make one label set per span). */
  labelKeys?: string[];
}

/** Biggest file (after gunzip) the importer reads: the whole export is held in memory. */
export const MAX_IMPORT_BYTES = 1024 * 1024 * 1024;

/**
 * Parses the file: one JSON document, JSON Lines of them (file:line errors), or protobuf (one
 * ExportTraceServiceRequest, or the Collector file exporter's length-prefixed stream of them);
 * any of these gzipped.
 */
function readRequests(input: string): OtlpRequest[] {
  // The bytes read are bounded, not what stat says: a device or a FIFO has no size to trust.
  let data: Buffer;
  try {
    data = readInputFile(input, { maxBytes: MAX_OTLP_FILE_BYTES, code: 'E_IMPORT', what: 'an OTLP export' });
  } catch (error) {
    if (error instanceof InputFileError && error.code === 'E_IMPORT')
      throw new InputFileError(error.code, input, undefined, error.reason, {
        hint: 'export in smaller files (the collector file exporter rotates them)',
      });
    throw error;
  }
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b) {
    try {
      data = gunzipSync(data, { maxOutputLength: MAX_IMPORT_BYTES });
    } catch (error) {
      throw new InputFileError('E_IMPORT', input, undefined, `bad gzip: ${(error as Error).message}`);
    }
  }
  const first = data.find((byte) => byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09);
  if (first === undefined) throw new InputFileError('E_IMPORT', input, undefined, 'empty file');
  if (first !== 0x7b) return readProtobuf(input, data);
  // Nesting is bounded before the schema (recursive over attribute values) meets it.
  shapeChecked(input, () => checkJsonShape(data, DEPTH_ONLY));
  const text = data.toString('utf8');
  const check = (value: unknown, line: number | undefined): OtlpRequest => {
    const parsed = otlpRequestSchema.safeParse(value);
    if (!parsed.success) throw new InputFileError('E_IMPORT', input, line, describeZodError(parsed.error));
    return parsed.data;
  };
  try {
    return [check(JSON.parse(text), undefined)];
  } catch (error) {
    if (error instanceof InputFileError) throw error;
  }
  const requests: OtlpRequest[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      throw new InputFileError('E_IMPORT', input, i + 1, describeBadJson(line));
    }
    requests.push(check(value, i + 1));
  }
  return requests;
}

function readProtobuf(input: string, data: Buffer): OtlpRequest[] {
  const messages = splitProtobufFile(data);
  return messages.map((bytes, i) => {
    const where = messages.length > 1 ? `message ${i + 1}: ` : '';
    let value: unknown;
    try {
      checkProtobufShape(bytes, DEPTH_ONLY);
      value = decodeTraceRequest(bytes, 'protobuf');
    } catch (error) {
      throw new InputFileError(
        'E_IMPORT',
        input,
        undefined,
        `${where}${(error as Error).message} (expected OTLP/JSON, JSON Lines or protobuf)`,
      );
    }
    const parsed = otlpRequestSchema.safeParse(value);
    if (!parsed.success)
      throw new InputFileError('E_IMPORT', input, undefined, `${where}${describeZodError(parsed.error)}`);
    return parsed.data;
  });
}

/** A shape check of the importer: its refusal names the file. */
function shapeChecked(input: string, check: () => void): void {
  try {
    check();
  } catch (error) {
    if (error instanceof OtlpRequestError)
      throw new InputFileError('E_IMPORT', input, undefined, error.message);
    throw error;
  }
}

/**
 * One OTLP request's spans (and their events) as trace records, in request order. `toMs` maps a
 * Unix-nanosecond time to run time (the importer: from the earliest span; the live receiver of
 * a real run: from the run's epoch). Shared by `fleetbench import otlp` and the live receiver.
 */
export function otlpToRecords(
  request: OtlpRequest,
  toMs: (ns: string | number) => number,
  keep: Set<string> | undefined,
  onBad: (reason: string) => void = (reason) => {
    throw new Error(reason);
  },
): Array<SpanRecord | EventRecord> {
  const out: Array<SpanRecord | EventRecord> = [];
  for (const records of otlpRecordsBySpan(request, toMs, keep, onBad)) out.push(...records);
  return out;
}

/**
 * The same records, one span (with its events) at a time: the live receiver writes a large
 * request a slice at a time, letting the run's other work through between slices.
 */
export function* otlpRecordsBySpan(
  request: OtlpRequest,
  toMs: (ns: string | number) => number,
  keep: Set<string> | undefined,
  onBad: (reason: string) => void,
): Generator<Array<SpanRecord | EventRecord>> {
  for (const [r, rs] of request.resourceSpans.entries()) {
    const resource = toLabels(rs.resource?.attributes, undefined);
    const service = resource.labels['service.name'];
    for (const [s, ss] of (rs.scopeSpans ?? []).entries()) {
      for (const [i, span] of (ss.spans ?? []).entries()) {
        const where = `resourceSpans[${r}].scopeSpans[${s}].spans[${i}] '${span.name}'`;
        // A span ending before it starts, or outside the times a trace holds, is refused (the
        // caller counts it): a clamped or absurd time would be a wrong measurement.
        if (BigInt(span.endTimeUnixNano) < BigInt(span.startTimeUnixNano)) {
          onBad(`${where}: endTimeUnixNano is before startTimeUnixNano`);
          continue;
        }
        const { labels, session } = toLabels(span.attributes, keep);
        if (service !== undefined) labels.service = service;
        const t = toMs(span.startTimeUnixNano);
        const record: SpanRecord = {
          kind: 'span',
          name: span.name,
          t,
          dur: toMs(span.endTimeUnixNano) - t,
          outcome: isError(span.status?.code) ? 'error' : 'ok',
        };
        const problem = timeProblem(record);
        if (problem !== undefined) {
          onBad(`${where}: ${problem}`);
          continue;
        }
        if (session ?? resource.session) record.session = session ?? resource.session;
        if (Object.keys(labels).length > 0) record.labels = labels;
        const out: Array<SpanRecord | EventRecord> = [record];
        for (const [j, e] of (span.events ?? []).entries()) {
          const attrs = toLabels(e.attributes, keep);
          const event: EventRecord = { kind: 'event', name: e.name, t: toMs(e.timeUnixNano) };
          const eventProblem = timeProblem(event);
          if (eventProblem !== undefined) {
            onBad(`${where}.events[${j}]: ${eventProblem}`);
            continue;
          }
          if (record.session) event.session = record.session;
          event.labels = { ...attrs.labels, span: span.name };
          out.push(event);
        }
        yield out;
      }
    }
  }
}

export type { OtlpRequest };

export async function importOtlp(
  input: string,
  output: string,
  options: OtlpImportOptions = {},
): Promise<{ output: string; spans: number; events: number }> {
  const requests = readRequests(input);
  const keep = options.labelKeys ? new Set(options.labelKeys) : undefined;
  let epochNs: bigint | undefined;
  for (const request of requests)
    for (const rs of request.resourceSpans)
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? []) {
          const start = BigInt(span.startTimeUnixNano);
          if (epochNs === undefined || start < epochNs) epochNs = start;
        }
  if (epochNs === undefined) throw new InputFileError('E_IMPORT', input, undefined, 'no spans in the export');
  const epoch = epochNs;
  const ms = (ns: string | number) => Number(BigInt(ns) - epoch) / 1e6;
  const epochMs = Number(epoch / 1_000_000n);
  const refuse = (reason: string) => {
    throw new InputFileError('E_IMPORT', input, undefined, reason, { hint: 'time limits: docs/limits.md' });
  };
  // Every record checked before the output is created: a refused export leaves no half trace.
  const records = requests.flatMap((request) => otlpToRecords(request, ms, keep, refuse));
  const writer = importedTraceWriter(output, input, 'otlp', 'imported: OTLP', epochMs);
  let spans = 0;
  let events = 0;
  for (const record of records) {
    writer.write(record);
    if (record.kind === 'span') spans++;
    else events++;
  }
  writer.close('completed');
  return { output, spans, events };
}
