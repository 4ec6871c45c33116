import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { privateCacheDir } from '../src/base/cache-dir.ts';
import { loadChecks } from '../src/trace/checks-code.ts';
import { explainRecord, kindJsonSchemas } from '../src/trace/explain.ts';
import { cachedValidatorCode, publishedKindSchemas, validatorCode } from '../src/trace/fast-check.ts';
import { bodyRecordSchema, isBodyKind, mainValidator } from '../src/trace/index.ts';

/** The reader's verdict on one record: the fast check, worded by zod when it fails. */
function validateBody(kind: 'api' | 'span' | 'event' | 'gauge', value: object) {
  return mainValidator().checks[kind](value)
    ? ({ ok: true, value } as const)
    : ({ ok: false, reason: explainRecord(kind, value) } as const);
}

const api = {
  kind: 'api',
  t: 1.5,
  dur: 20,
  service: 'github',
  protocol: 'rest',
  method: 'GET',
  route: '/repos/{owner}/{repo}/pulls',
  status: 200,
  conditional: false,
  notModified: false,
  resource: 'core',
  cost: 1,
  secondaryCost: 1,
};

// Each case: a record and whether the one schema (zod) accepts it. The fast validator (ajv,
// compiled from the same schema) must agree on every one.
const cases: Array<[string, Record<string, unknown>]> = [
  ['a minimal api record', api],
  ['an opaque api record', { ...api, status: null }],
  ['status as a string', { ...api, status: '200' }],
  ['a fractional status', { ...api, status: 200.5 }],
  ['a negative duration', { ...api, dur: -1 }],
  ['an unknown field', { ...api, colour: 'red' }],
  ['a missing route', { ...api, route: undefined }],
  ['an unknown protocol', { ...api, protocol: 'grpc' }],
  ['an unknown source', { ...api, source: 'robot' }],
  [
    'a full rl snapshot',
    { ...api, rl: { limit: 5000, remaining: 10, used: 4990, reset: 1, resource: 'core' } },
  ],
  ['an rl without reset', { ...api, rl: { limit: 5000, remaining: 10 } }],
  ['an rl with an extra field', { ...api, rl: { limit: 5000, remaining: 10, reset: 1, x: 1 } }],
  ['a fractional cycle', { ...api, cycle: 1.5 }],
  ['a span without outcome', { kind: 'span', name: 'agent.boot', t: 0, dur: 5 }],
  [
    'a span with labels',
    { kind: 'span', name: 'a', t: 0, dur: 5, labels: { adapter: 'codex', n: 1, b: true } },
  ],
  ['a span with a nested label', { kind: 'span', name: 'a', t: 0, dur: 5, labels: { x: { y: 1 } } }],
  ['a span with an empty name', { kind: 'span', name: '', t: 0, dur: 5 }],
  ['a span with a bad outcome', { kind: 'span', name: 'a', t: 0, dur: 5, outcome: 'maybe' }],
  ['an event with data', { kind: 'event', name: 'ratelimit.snapshot', t: 3, data: { a: [1, { b: 2 }] } }],
  ['an event without t', { kind: 'event', name: 'x' }],
  ['a gauge', { kind: 'gauge', name: 'sessions', t: 1, value: 3, labels: { state: 'awake' } }],
  ['a gauge with a string value', { kind: 'gauge', name: 'sessions', t: 1, value: '3' }],
];

describe('fast validator agrees with the zod schema', () => {
  it.each(cases)('%s', (_name, record) => {
    const clean = JSON.parse(JSON.stringify(record)) as Record<string, unknown>;
    const zod = bodyRecordSchema.safeParse(JSON.parse(JSON.stringify(record)));
    expect(isBodyKind(clean.kind)).toBe(true);
    const fast = validateBody(clean.kind as 'api', clean);
    expect(fast.ok).toBe(zod.success);
    if (fast.ok && zod.success) expect(fast.value).toEqual(zod.data);
    if (!fast.ok) expect(fast.reason).toMatch(new RegExp(`^${String(clean.kind)} record: `));
  });

  it('checks each kind against the published schema, which is what zod generates', () => {
    expect(publishedKindSchemas()).toEqual(kindJsonSchemas());
  });

  it('fills the span outcome default like zod does', () => {
    const record = { kind: 'span', name: 'x', t: 0, dur: 1 };
    const fast = validateBody('span', record);
    expect(fast.ok && fast.value).toMatchObject({ outcome: 'ok' });
  });
});

describe("the validators run from ajv's generated code, compiled once and cached", () => {
  it('caches the code under a hash of the schema and gives the same verdicts as a fresh compile', () => {
    const schemas = publishedKindSchemas();
    const code = cachedValidatorCode(schemas);
    expect(code).toBe(validatorCode(schemas));
    const dir = privateCacheDir()!;
    const cached = readdirSync(dir).filter((name) => /^checks-[0-9a-f]{16}\.cjs$/.test(name));
    expect(cached.some((name) => readFileSync(join(dir, name), 'utf8') === code)).toBe(true);
    const checks = loadChecks(code);
    for (const [, record] of cases) {
      const clean = JSON.parse(JSON.stringify(record)) as { kind: 'api' };
      expect(checks[clean.kind](clean)).toBe(bodyRecordSchema.safeParse(clean).success);
    }
    // An edited schema is another entry: stale code is never run for it.
    const changed = {
      ...schemas,
      gauge: { ...schemas.gauge, required: ['kind', 'name', 't', 'value', 'labels'] },
    };
    const changedCode = cachedValidatorCode(changed);
    expect(changedCode).not.toBe(code);
    expect(loadChecks(changedCode).gauge({ kind: 'gauge', name: 'g', t: 1, value: 2 })).toBe(false);
    expect(checks.gauge({ kind: 'gauge', name: 'g', t: 1, value: 2 })).toBe(true);
  });

  it("runs generated code that requires only ajv's runtime helpers", () => {
    expect(() => loadChecks('require("node:child_process");')).toThrow(
      'generated validator requires node:child_process',
    );
    expect(() => loadChecks('module.exports = { api() { return true; } };')).toThrow(
      "generated validators lack 'run'",
    );
  });
});
