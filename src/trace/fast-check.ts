/**
 * The fast path of trace validation: ajv validators compiled from the JSON Schema of each record
 * kind. The JSON Schemas come from the zod schemas (validate.ts, the one definition); this file
 * only compiles them, so a worker thread can check lines without loading zod (the main thread
 * passes it the JSON Schemas, and writes the messages for the lines it rejected).
 * ajv decides whether a record is valid everywhere, so every reading path accepts the same lines;
 * test/validate.test.ts checks that ajv and zod agree.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';

export const bodyKinds = ['api', 'span', 'event', 'gauge'] as const;
export type BodyKind = (typeof bodyKinds)[number];
/** Kinds whose lines are checked with ajv: the body kinds and the footer. */
export type CheckedKind = BodyKind | 'end';
export type KindJsonSchemas = Record<CheckedKind, Record<string, unknown>>;

export function isBodyKind(kind: unknown): kind is BodyKind {
  return kind === 'api' || kind === 'span' || kind === 'event' || kind === 'gauge';
}

export type FastChecks = Record<CheckedKind, (value: unknown) => boolean>;

export function compileChecks(schemas: KindJsonSchemas): FastChecks {
  // useDefaults fills what zod would (a span's outcome); strict off: zod's descriptions are fine.
  const ajv = new Ajv2020({ strict: false, useDefaults: true, allErrors: false, validateFormats: false });
  const compile = (schema: Record<string, unknown>) => {
    const { $schema: _ignored, ...rest } = schema;
    return ajv.compile(rest) as (value: unknown) => boolean;
  };
  return {
    api: compile(schemas.api),
    span: compile(schemas.span),
    event: compile(schemas.event),
    gauge: compile(schemas.gauge),
    end: compile(schemas.end),
  };
}
