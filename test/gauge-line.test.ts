/**
 * `model learn` checks a gauge line in place (src/trace/gauge-line.ts) instead of parsing and
 * validating it: never more lenient than the schema. Properties over gauge records and over
 * lines edited at random: every line it accepts, the full parse and the schema's validator accept
 * as a gauge record; the usual form of a valid record is accepted. The schema it was written for
 * is pinned, and a learn still refuses a bad gauge line with its line number.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { publishedKindSchemas } from '../src/trace/fast-check.ts';
import { isCanonicalGaugeLine } from '../src/trace/gauge-line.ts';
import { mainValidator } from '../src/trace/validate.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

/** Whether the full path (JSON.parse, the schema's validator) reads `line` as a valid gauge record. */
function fullPathAccepts(line: string): boolean {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return false;
  }
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { kind?: unknown }).kind === 'gauge' &&
    mainValidator().checks.gauge(value)
  );
}

/** The line as the reader hands it: inside a larger buffer, with other bytes on both sides. */
function checked(line: string): boolean {
  const bytes = Buffer.from(`x\n${line}\n{"kind":"gauge"}`, 'utf8');
  const start = 2;
  return isCanonicalGaugeLine(bytes, start, start + Buffer.byteLength(line, 'utf8'));
}

const labelValue = fc.oneof(
  fc.string(),
  fc.boolean(),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
const gauge = fc.record(
  {
    kind: fc.constant('gauge'),
    name: fc.oneof(fc.constantFrom('sessions', 'queue', ''), fc.string()),
    t: fc.oneof(
      fc.integer({ min: 0, max: 2_592_000_000 }),
      fc.double({ min: -10, max: 3_000_000_000, noNaN: true }),
      fc.constantFrom(2_592_000_000, 2_592_000_000.5, 2_592_000_001, 0, -0),
    ),
    value: fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.constant(1e21)),
    labels: fc.dictionary(fc.string(), labelValue, { maxKeys: 3 }),
  },
  { requiredKeys: ['kind', 'name', 't', 'value'] },
);

describe('a gauge line checked in place', () => {
  it('is checked against the gauge schema it was written for', () => {
    // A change to the gauge record's schema fails here: src/trace/gauge-line.ts must follow it.
    const { $schema: _ignored, ...schema } = publishedKindSchemas().gauge as Record<string, unknown>;
    expect(schema).toEqual({
      type: 'object',
      properties: {
        kind: { type: 'string', const: 'gauge' },
        name: { type: 'string', minLength: 1 },
        t: {
          type: 'number',
          minimum: 0,
          maximum: 2592000000,
          description: 'milliseconds since the run epoch (at most 30 days)',
        },
        value: { type: 'number' },
        labels: {
          type: 'object',
          propertyNames: { type: 'string' },
          additionalProperties: { type: ['string', 'number', 'boolean'] },
        },
      },
      required: ['kind', 'name', 't', 'value'],
      additionalProperties: false,
    });
  });

  it('property: a line it accepts, the full parse and the validator accept; a valid record as JSON.stringify writes it (in that form) is accepted', () => {
    fc.assert(
      fc.property(gauge, (record) => {
        const line = JSON.stringify(record);
        const accepted = checked(line);
        if (accepted) expect(fullPathAccepts(line)).toBe(true);
        // The form it reads: printable ASCII, no escape, numbers without an exponent or a 16th digit.
        const numbers = line.replace(/"[^"]*"/g, '');
        const plain = /^[\x20-\x7e]*$/.test(line) && !line.includes('\\') && !/\d[eE]|\d{16}/.test(numbers);
        if (fullPathAccepts(line) && plain) expect(accepted).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: a valid line edited at random (a byte changed, inserted or removed; cut) is accepted only if the full path accepts it', () => {
    const edit = fc.record({
      at: fc.nat(),
      kind: fc.constantFrom('replace', 'insert', 'remove', 'cut'),
      char: fc.constantFrom(...'{}[]":,.-+eE0123456789 \\tfnulrsa\u00e9\u0000'.split('')),
    });
    fc.assert(
      fc.property(gauge, fc.array(edit, { minLength: 1, maxLength: 3 }), (record, edits) => {
        let line = JSON.stringify(record);
        for (const { at, kind, char } of edits) {
          const i = line.length === 0 ? 0 : at % (line.length + 1);
          if (kind === 'replace') line = line.slice(0, i) + char + line.slice(i + 1);
          else if (kind === 'insert') line = line.slice(0, i) + char + line.slice(i);
          else if (kind === 'remove') line = line.slice(0, i) + line.slice(i + 1);
          else line = line.slice(0, i);
        }
        if (checked(line)) expect(fullPathAccepts(line)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it('a learn still refuses a bad gauge line with its line number, and counts the good ones against the footer', async () => {
    const dir = scratchDir('gauge-line');
    // The recorded agent-orchestrator learn run: 575 lines, 38 of them gauges, and its footer.
    const lines = gunzipSync(readFileSync(join(import.meta.dirname, 'fixtures/ao/learn.trace.jsonl.gz')))
      .toString('utf8')
      .trimEnd()
      .split('\n');
    const gaugeAt = lines.findIndex((l) => l.startsWith('{"kind":"gauge"'));
    expect(gaugeAt).toBeGreaterThan(0);
    const good = join(dir, 'good.jsonl');
    writeFileSync(good, `${lines.join('\n')}\n`);
    const learned = await cli(['model', 'learn', good, '-o', join(dir, 'good.yaml')]);
    expect(learned.stderr).toBe('');
    expect(learned.code).toBe(0);

    const bad = join(dir, 'bad.jsonl');
    const broken = [...lines];
    broken[gaugeAt] = broken[gaugeAt]!.replace(/"t":[\d.]+/, '"t":-5');
    writeFileSync(bad, `${broken.join('\n')}\n`);
    const refused = await cli(['model', 'learn', bad, '-o', join(dir, 'bad.yaml')]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`bad.jsonl:${gaugeAt + 1}`);

    // One gauge line fewer than the footer counts: the counts are still checked.
    const short = join(dir, 'short.jsonl');
    writeFileSync(short, `${lines.filter((_, i) => i !== gaugeAt).join('\n')}\n`);
    const miscounted = await cli(['model', 'learn', short, '-o', join(dir, 'short.yaml')]);
    expect(miscounted.code).toBe(2);
    expect(miscounted.stderr).toMatch(/footer counts \d+ gauge records/);
  });
});
