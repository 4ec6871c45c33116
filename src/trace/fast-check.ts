/**
 * The fast path of trace validation: ajv validators compiled from the JSON Schema of each record
 * kind. That JSON Schema is the published docs/trace.schema.json, generated from the zod schema
 * in schema.ts (the one definition; a test fails when the committed file is not what the zod
 * schema generates, and another that ajv and zod disagree on a record). Reading it instead of
 * generating it keeps zod, slow to load, off the path of a valid trace: zod is loaded only to
 * word the problem of a line that fails (explain.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { privateCacheDir } from '../base/cache-dir.ts';
import { type CheckedKind, checkedKinds, type KindJsonSchemas } from './checks-code.ts';

export {
  type BodyKind,
  bodyKinds,
  type CheckedKind,
  type FastChecks,
  isBodyKind,
  type KindJsonSchemas,
} from './checks-code.ts';

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

// useDefaults fills what zod would (a span's outcome); strict off: zod's descriptions are fine.
// The draft-07 validator: the schema uses nothing newer (type, properties, required,
// additionalProperties, const, enum, anyOf, minimum, minLength, propertyNames, default), and
// without the 2020 dialect's unevaluated-properties bookkeeping a check takes half the time.
const AJV_OPTIONS = { strict: false, useDefaults: true, allErrors: false, validateFormats: false } as const;

/**
 * The validators of each kind, compiled by ajv from the schemas, as the source of a standalone
 * CommonJS module exporting one function per kind (loadChecks runs it).
 */
export function validatorCode(schemas: KindJsonSchemas): string {
  // ajv's compiler loads only here, when the code is not cached: most starts never need it.
  const require = createRequire(import.meta.url);
  const { Ajv } = require('ajv') as typeof import('ajv');
  const ajv = new Ajv({ ...AJV_OPTIONS, code: { source: true } });
  const exports: Record<string, string> = {};
  for (const kind of checkedKinds) {
    const { $schema: _ignored, ...rest } = schemas[kind];
    ajv.addSchema({ ...rest, $id: `fleetbench:${kind}` });
    exports[kind] = `fleetbench:${kind}`;
  }
  const standalone = require('ajv/dist/standalone') as {
    default: typeof import('ajv/dist/standalone/index.js').default;
  };
  return standalone.default(ajv, exports);
}

/**
 * validatorCode, cached in the private cache directory under a hash of the schemas, ajv's version
 * and the options: compiling costs 0.1-0.2 s of every start, reading the cached code a
 * millisecond. Without a usable cache directory it is compiled each time.
 */
export function cachedValidatorCode(schemas: KindJsonSchemas): string {
  const dir = privateCacheDir();
  if (dir === undefined) return validatorCode(schemas);
  const ajvVersion = (createRequire(import.meta.url)('ajv/package.json') as { version: string }).version;
  const key = createHash('sha256')
    .update(`${ajvVersion}\0${JSON.stringify(AJV_OPTIONS)}\0${JSON.stringify(schemas)}`)
    .digest('hex')
    .slice(0, 16);
  const path = join(dir, `checks-${key}.cjs`);
  try {
    return readFileSync(path, 'utf8');
  } catch {
    const code = validatorCode(schemas);
    try {
      const temp = `${path}.${process.pid}.tmp`;
      writeFileSync(temp, code);
      renameSync(temp, path);
    } catch {
      // Unwritable after all: the code still works from memory.
    }
    return code;
  }
}
