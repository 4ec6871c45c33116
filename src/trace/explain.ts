/**
 * zod's words for a trace line the fast check rejected. Loaded lazily (zod takes a few hundred
 * milliseconds to load): only a trace with a problem pays for it.
 */
import { z } from 'zod';
import { describeZodError } from '../base/validation.ts';
import type { CheckedKind, KindJsonSchemas } from './fast-check.ts';
import {
  apiRecordSchema,
  endFooterSchema,
  eventRecordSchema,
  gaugeRecordSchema,
  runHeaderSchema,
  spanRecordSchema,
  TRACE_FORMAT,
} from './schema.ts';

const kindSchemas = {
  run: runHeaderSchema,
  api: apiRecordSchema,
  span: spanRecordSchema,
  event: eventRecordSchema,
  gauge: gaugeRecordSchema,
  end: endFooterSchema,
} as const;

/** Each kind's JSON Schema generated from zod (what docs/trace.schema.json holds for it). */
export function kindJsonSchemas(): KindJsonSchemas {
  const out = {} as KindJsonSchemas;
  for (const [kind, schema] of Object.entries(kindSchemas)) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' });
    out[kind as CheckedKind] = rest as Record<string, unknown>;
  }
  return out;
}

/** One line: what is wrong with a record the fast check rejected. */
export function explainRecord(kind: CheckedKind, value: unknown): string {
  if (kind === 'run') {
    const format = (value as { format?: unknown } | undefined)?.format;
    if (format !== TRACE_FORMAT) {
      return `unsupported trace format ${JSON.stringify(format)} (this fleetbench reads ${TRACE_FORMAT})`;
    }
  }
  const parsed = kindSchemas[kind].safeParse(value);
  const what = kind === 'end' ? 'end footer' : kind === 'run' ? 'run header' : `${kind} record`;
  // Should ajv and zod ever disagree (tested that they do not), ajv's verdict stands.
  return `${what}: ${parsed.success ? 'does not match the trace schema' : describeZodError(parsed.error)}`;
}
