/**
 * The fast path of trace validation: ajv validators compiled from the JSON Schema of each record
 * kind. That JSON Schema is the published docs/trace.schema.json, generated from the zod schema
 * in schema.ts (the one definition; a test fails when the committed file is not what the zod
 * schema generates, and another that ajv and zod disagree on a record). Reading it instead of
 * generating it keeps zod, slow to load, off the path of a valid trace: zod is loaded only to
 * word the problem of a line that fails (explain.ts).
 */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';

export const bodyKinds = ['api', 'span', 'event', 'gauge'] as const;
export type BodyKind = (typeof bodyKinds)[number];
/** Kinds whose lines are checked with ajv: the header, the body kinds and the footer. */
export type CheckedKind = 'run' | BodyKind | 'end';
export type KindJsonSchemas = Record<CheckedKind, Record<string, unknown>>;
const checkedKinds: CheckedKind[] = ['run', 'api', 'span', 'event', 'gauge', 'end'];

export function isBodyKind(kind: unknown): kind is BodyKind {
  return kind === 'api' || kind === 'span' || kind === 'event' || kind === 'gauge';
}

export type FastChecks = Record<CheckedKind, (value: unknown) => boolean>;

/** Each kind's schema out of the published union (`oneOf`, one entry per `kind` const). */
export function kindSchemasOf(published: Record<string, unknown>): KindJsonSchemas {
  const out: Partial<KindJsonSchemas> = {};
  for (const entry of (published.oneOf ?? published.anyOf) as Array<Record<string, unknown>>) {
    const kind = (entry.properties as { kind?: { const?: CheckedKind } } | undefined)?.kind?.const;
    if (kind !== undefined) out[kind] = entry;
  }
  for (const kind of checkedKinds)
    if (out[kind] === undefined) throw new Error(`trace schema: no '${kind}' record`);
  return out as KindJsonSchemas;
}

let published: KindJsonSchemas | undefined;

/** The per-kind schemas of docs/trace.schema.json (read once). */
export function publishedKindSchemas(): KindJsonSchemas {
  published ??= kindSchemasOf(
    JSON.parse(readFileSync(new URL('../../docs/trace.schema.json', import.meta.url), 'utf8')) as Record<
      string,
      unknown
    >,
  );
  return published;
}

export function compileChecks(schemas: KindJsonSchemas): FastChecks {
  // useDefaults fills what zod would (a span's outcome); strict off: zod's descriptions are fine.
  // The draft-07 validator: the schema uses nothing newer (type, properties, required,
  // additionalProperties, const, enum, anyOf, minimum, minLength, propertyNames, default), and
  // without the 2020 dialect's unevaluated-properties bookkeeping a check takes half the time.
  const ajv = new Ajv({ strict: false, useDefaults: true, allErrors: false, validateFormats: false });
  const compile = (schema: Record<string, unknown>) => {
    const { $schema: _ignored, ...rest } = schema;
    return ajv.compile(rest) as (value: unknown) => boolean;
  };
  const checks = {} as FastChecks;
  for (const kind of checkedKinds) checks[kind] = compile(schemas[kind]);
  return checks;
}
