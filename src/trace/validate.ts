/**
 * Trace validation as the main thread does it: the fast ajv checks compiled from the zod
 * schemas, and zod itself for every error message. zod stays the one definition; ajv only makes
 * the common case (a valid line) fast: validating millions of lines with zod costs about half the
 * read time.
 */
import { z } from 'zod';
import { describeZodError } from '../validation.ts';
import { type CheckedKind, compileChecks, type FastChecks, type KindJsonSchemas } from './fast-check.ts';
import {
  apiRecordSchema,
  type BodyRecord,
  endFooterSchema,
  eventRecordSchema,
  gaugeRecordSchema,
  type RunHeader,
  runHeaderSchema,
  spanRecordSchema,
  TRACE_FORMAT,
} from './schema.ts';

export { isBodyKind } from './fast-check.ts';

export type Validated<T> = { ok: true; value: T } | { ok: false; reason: string };

/** How a TraceParser checks lines. Workers have no `explain`/`header`: the main thread explains. */
export interface TraceValidator {
  checks: FastChecks;
  explain?: (kind: CheckedKind, value: unknown) => string;
  header?: (value: object) => Validated<RunHeader>;
}

const kindSchemas = {
  api: apiRecordSchema,
  span: spanRecordSchema,
  event: eventRecordSchema,
  gauge: gaugeRecordSchema,
  end: endFooterSchema,
} as const;

/** The JSON Schema of each checked kind, generated from zod like docs/trace.schema.json. */
export function kindJsonSchemas(): KindJsonSchemas {
  const out = {} as KindJsonSchemas;
  for (const [kind, schema] of Object.entries(kindSchemas)) {
    out[kind as CheckedKind] = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Record<
      string,
      unknown
    >;
  }
  return out;
}

/** zod's one-line message for a record the fast check rejected. */
export function explainRecord(kind: CheckedKind, value: unknown): string {
  const parsed = kindSchemas[kind].safeParse(value);
  const what = kind === 'end' ? 'end footer' : `${kind} record`;
  // Should ajv and zod ever disagree (tested that they do not), ajv's verdict stands.
  return `${what}: ${parsed.success ? 'does not match the trace schema' : describeZodError(parsed.error)}`;
}

export function validateHeader(value: object): Validated<RunHeader> {
  const parsed = runHeaderSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const format = (value as { format?: unknown }).format;
  if (format !== TRACE_FORMAT) {
    return {
      ok: false,
      reason: `unsupported trace format ${JSON.stringify(format)} (this fleetbench reads ${TRACE_FORMAT})`,
    };
  }
  return { ok: false, reason: `run header: ${describeZodError(parsed.error)}` };
}

let shared: TraceValidator | undefined;

/** The main thread's validator (compiled once). */
export function mainValidator(): TraceValidator {
  shared ??= { checks: compileChecks(kindJsonSchemas()), explain: explainRecord, header: validateHeader };
  return shared;
}

/** One body record: the object itself when valid (defaults filled in), else zod's message. */
export function validateBody(kind: Exclude<CheckedKind, 'end'>, value: object): Validated<BodyRecord> {
  const validator = mainValidator();
  if (validator.checks[kind](value)) return { ok: true, value: value as BodyRecord };
  return { ok: false, reason: explainRecord(kind, value) };
}
