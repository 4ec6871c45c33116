/**
 * Fast validation of trace lines, derived from the one schema in schema.ts.
 *
 * zod is the definition and produces every error message, but validating millions of lines with
 * it costs about half the read time. So each record kind's zod schema is turned into JSON Schema
 * (the same generator that publishes docs/trace.schema.json) and compiled once with ajv; a line
 * that ajv accepts is used as is (ajv also fills the same defaults zod would, e.g. a span's
 * `outcome`), and a line that ajv rejects is handed to zod, which says what is wrong.
 * Dispatching on `kind` first avoids a oneOf over six schemas. test/validate.test.ts checks that
 * both validators agree on a table of good and bad records.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import { z } from 'zod';
import { describeZodError } from '../validation.ts';
import {
  apiRecordSchema,
  type BodyRecord,
  type EndFooter,
  endFooterSchema,
  eventRecordSchema,
  gaugeRecordSchema,
  type RunHeader,
  runHeaderSchema,
  spanRecordSchema,
  TRACE_FORMAT,
} from './schema.ts';

type Check = (value: unknown) => boolean;

const ajv = new Ajv2020({ strict: false, useDefaults: true, allErrors: false, validateFormats: false });

function compile(schema: z.ZodType): Check {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as Record<string, unknown>;
  delete json.$schema;
  return ajv.compile(json) as Check;
}

const bodySchemas = {
  api: apiRecordSchema,
  span: spanRecordSchema,
  event: eventRecordSchema,
  gauge: gaugeRecordSchema,
} as const;
type BodyKind = keyof typeof bodySchemas;

const bodyChecks: Record<BodyKind, Check> = {
  api: compile(apiRecordSchema),
  span: compile(spanRecordSchema),
  event: compile(eventRecordSchema),
  gauge: compile(gaugeRecordSchema),
};

export function isBodyKind(kind: unknown): kind is BodyKind {
  return kind === 'api' || kind === 'span' || kind === 'event' || kind === 'gauge';
}

export type Validated<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Validates a parsed JSON object whose `kind` is a body kind. On success the object itself is
 * returned (defaults filled in place); on failure zod describes the first problem.
 */
export function validateBody(kind: BodyKind, value: object): Validated<BodyRecord> {
  if (bodyChecks[kind](value)) return { ok: true, value: value as BodyRecord };
  const parsed = bodySchemas[kind].safeParse(value);
  // ajv and zod agree (tested); should they ever not, zod, the definition, decides.
  if (parsed.success) return { ok: true, value: parsed.data as BodyRecord };
  return { ok: false, reason: `${kind} record: ${describeZodError(parsed.error)}` };
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

export function validateFooter(value: object): Validated<EndFooter> {
  const parsed = endFooterSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, reason: `end footer: ${describeZodError(parsed.error)}` };
}
