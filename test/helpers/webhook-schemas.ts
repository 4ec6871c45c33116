/**
 * Webhook payloads checked against GitHub's own description of them: the `webhook-<event>-<action>`
 * schemas (`webhook-push`, `webhook-ping`) of the OpenAPI description test/helpers/openapi.ts reads
 * for REST answers. The schemas a payload reaches are kept in node_modules/.cache/fleetbench, keyed
 * by the package's version, so a test file does not parse the 13 MB description.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { nullableForAjv } from './openapi.ts';

const require = createRequire(import.meta.url);
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
type Json = Record<string, unknown>;

let ajv: Ajv | undefined;
const validators = new Map<string, ValidateFunction>();

/** The description's webhook schemas and every component they reach (cached on disk). */
function webhookComponents(): Json {
  const packageJson = require.resolve('@octokit/openapi/package.json');
  const version = (JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }).version;
  const cacheFile = join(process.cwd(), 'node_modules', '.cache', 'fleetbench', `webhooks-${version}-1.json`);
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, 'utf8')) as Json;
  const full = JSON.parse(
    readFileSync(join(dirname(packageJson), 'generated', 'api.github.com.json'), 'utf8'),
  ) as { components: Record<string, Record<string, unknown>> };
  const schemas: Record<string, unknown> = {};
  const pending: unknown[] = [];
  for (const [name, schema] of Object.entries(full.components.schemas!))
    if (name.startsWith('webhook-')) {
      schemas[name] = schema;
      pending.push(schema);
    }
  while (pending.length > 0) {
    const value = pending.pop();
    if (Array.isArray(value)) pending.push(...value);
    else if (value !== null && typeof value === 'object')
      for (const [k, v] of Object.entries(value)) {
        if (k === 'examples' || k === 'example') continue;
        if (k === '$ref' && typeof v === 'string') {
          const name = v.split('/')[3]!;
          if (schemas[name] === undefined) {
            schemas[name] = full.components.schemas![name];
            pending.push(schemas[name]);
          }
        } else pending.push(v);
      }
  }
  const doc = { components: { schemas } };
  nullableForAjv(doc);
  mkdirSync(dirname(cacheFile), { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(doc));
  return doc;
}

/** The schema GitHub documents for an event and action: `webhook-issues-opened`, `webhook-push`. */
export function schemaName(event: string, action: string | undefined): string {
  const base = `webhook-${event.replace(/_/g, '-')}`;
  return action === undefined || event === 'push' || event === 'ping'
    ? base
    : `${base}-${action.replace(/_/g, '-')}`;
}

/** What does not fit in one payload (empty when it fits); throws when GitHub documents no such schema. */
export function payloadProblems(event: string, payload: Json): string[] {
  const name = schemaName(event, typeof payload.action === 'string' ? payload.action : undefined);
  let validate = validators.get(name);
  if (validate === undefined) {
    if (ajv === undefined) {
      ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
      addFormats(ajv);
      ajv.addSchema(webhookComponents(), 'webhooks.json');
    }
    validate = ajv.compile({ $ref: `webhooks.json#/components/schemas/${name}` });
    validators.set(name, validate);
  }
  if (validate(payload)) return [];
  return (validate.errors ?? [])
    .slice(0, 8)
    .map((e) => `${name}: ${e.instancePath || '(payload)'} ${e.message} ${JSON.stringify(e.params)}`);
}
