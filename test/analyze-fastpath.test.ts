/**
 * The analyzer's fast path (src/trace/scanner.ts) against the full path (JSON.parse + the ajv
 * validators): line by line on every record kind and on deliberately odd lines, on seeded
 * random mutations of canonical lines, and file by file (one pass and two threads, strict and
 * lenient, errors included) on a real run's trace.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import { analyzeRange } from '../src/analyze/range.ts';
import { Rng } from '../src/base/rng.ts';
import { kindSchemasOf, publishedKindSchemas } from '../src/trace/fast-check.ts';
import { SPAN_CHUNK } from '../src/trace/lines.ts';
import { loadScanner, scannerCode, type TraceScanner } from '../src/trace/scanner.ts';
import { type ApiRecord, traceJsonSchema } from '../src/trace/schema.ts';
import { isBodyKind, mainScanner, mainValidator } from '../src/trace/validate.ts';
import { runRef } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-fastpath-');
const scanner = mainScanner()!.scanner;
const checks = mainValidator().checks;

/** What the full path makes of a line: the record, or undefined when it refuses it. */
function fullPath(line: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (!isBodyKind(kind) || !checks[kind](value)) return undefined;
  return value;
}

/** The scanner's record without the fields it left undefined (what JSON.parse would not have). */
function scanned(line: string, by: TraceScanner = scanner): unknown {
  const bytes = Buffer.from(`${line}\n`);
  if (!by.scan(bytes, 0, bytes.length - 1)) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(by.record)) {
    if (value === undefined) continue;
    out[key] =
      key === 'rl'
        ? Object.fromEntries(Object.entries(value as object).filter(([, v]) => v !== undefined))
        : value;
  }
  return out;
}

/**
 * The fast path may refuse a line, never accept one the full path refuses or read it otherwise:
 * the shared scanner, and another one whose string tables and key predictions have seen other
 * lines (which must read every line alike).
 */
function expectAgreement(line: string): 'scanned' | 'full path' {
  const fast = scanned(line);
  expect(scanned(line, other), line).toEqual(fast);
  if (fast === undefined) return 'full path';
  expect(fullPath(line), line).toEqual(fast);
  // -0 and 0 are equal to toEqual's eye, not to Object.is: compare the numbers exactly too.
  const full = fullPath(line) as Record<string, unknown>;
  for (const [key, value] of Object.entries(fast as Record<string, unknown>))
    if (typeof value === 'number') expect(Object.is(value, full[key]), `${key} in ${line}`).toBe(true);
  return 'scanned';
}

const api: ApiRecord = {
  kind: 'api',
  t: 1234.567,
  dur: 89.5,
  service: 'github',
  protocol: 'rest',
  method: 'GET',
  route: '/repos/{owner}/{repo}/pulls',
  status: 304,
  conditional: true,
  notModified: true,
  resource: 'core',
  cost: 0,
  secondaryCost: 1,
  rl: { limit: 5000, remaining: 4990, used: 10, reset: 1767229200, resource: 'core' },
  bytes: 0,
  session: 'ses-1',
  repo: 'acme/repo-1',
  source: 'lifecycle',
  op: 'guard-pr-list',
  cycle: 3,
  phase: 'steady',
};
const canonical = JSON.stringify(api);
/** A second scanner: the same code, its own module instance (tables, predictions). */
const other = loadScanner(mainScanner()!.code);

describe('the api scanner', () => {
  it('is generated from the published schema, which is what the zod schema generates', () => {
    const published = scannerCode(publishedKindSchemas().api);
    expect(published).toBeDefined();
    expect(scannerCode(kindSchemasOf(traceJsonSchema()).api)).toBe(published);
    // Every property of the api record is one the generator reads (none left to the full path).
    for (const property of Object.keys(publishedKindSchemas().api.properties as object))
      expect(published, property).toContain(`"${property}":`);
  });

  it('reads canonical api lines exactly as JSON.parse and the validators do', () => {
    expect(expectAgreement(canonical)).toBe('scanned');
    const minimal: ApiRecord = {
      kind: 'api',
      t: 0,
      dur: 0,
      service: 'github',
      protocol: 'graphql',
      method: 'POST',
      route: '/graphql',
      status: null,
      conditional: false,
      notModified: false,
      resource: 'graphql',
      cost: 1,
      secondaryCost: 1,
    };
    expect(expectAgreement(JSON.stringify(minimal))).toBe('scanned');
    const everything = {
      ...api,
      status: 429,
      retryAfter: 60,
      limited: 'secondary',
      error: 'signal SIGKILL',
      project: 'acme',
      rl: { limit: 5000, remaining: 0, reset: 1767229200 },
    };
    expect(expectAgreement(JSON.stringify(everything))).toBe('scanned');
  });

  it('reads lines in any key order alike, one after another', () => {
    const everything = JSON.stringify({
      ...api,
      retryAfter: 60,
      limited: 'primary',
      error: 'x',
      project: 'p',
    });
    const noUsed = JSON.stringify({ ...api, rl: { limit: 5000, remaining: 1, reset: 1767229200 } });
    const reordered = `{"kind":"api",${JSON.stringify(Object.fromEntries(Object.entries(api).slice(1).reverse())).slice(1)}`;
    const shuffled = `{"kind":"api",${JSON.stringify(
      Object.fromEntries(
        Object.entries({ ...api, rl: { resource: 'core', reset: 1, remaining: 2, limit: 3 } })
          .slice(1)
          .sort(([a], [b]) => (a < b ? -1 : 1)),
      ),
    ).slice(1)}`;
    // Each line after each other: fields one line set must not survive into the next, and a
    // key predicted from the line before must not be taken for another.
    const lines = [canonical, everything, canonical, noUsed, canonical, reordered, shuffled, canonical];
    for (const first of lines)
      for (const second of lines) {
        expect(expectAgreement(first)).toBe('scanned');
        expect(expectAgreement(second)).toBe('scanned');
      }
  });

  it('leaves the other record kinds to the full path', () => {
    const others = [
      {
        kind: 'span',
        name: 'poll.cycle',
        t: 1,
        dur: 2,
        outcome: 'ok',
        labels: { a: 'b' },
        data: { cycle: 1 },
      },
      { kind: 'event', name: 'steady.start', t: 3 },
      { kind: 'gauge', name: 'sessions', t: 4, value: 5 },
      { kind: 'run', format: 'fleetbench-trace/1' },
      { kind: 'end', t: 9, reason: 'completed', counts: { api: 1, span: 0, event: 0, gauge: 0 } },
    ];
    for (const record of others) expect(expectAgreement(JSON.stringify(record))).toBe('full path');
  });

  it('agrees with the full path on odd lines, and refuses what it cannot vouch for', () => {
    const replace = (from: string, to: string) => {
      expect(canonical).toContain(from);
      return canonical.replace(from, to);
    };
    const reordered = JSON.stringify(Object.fromEntries(Object.entries(api).reverse()));
    const cases: Array<[string, string, 'scanned' | 'full path']> = [
      [
        'other key order, kind first',
        `{"kind":"api",${reordered.slice(1).replace(',"kind":"api"', '')}`,
        'scanned',
      ],
      ['kind not first', reordered, 'full path'],
      ['escaped slash', replace('"/repos/', '"\\/repos/'), 'full path'],
      ['escaped key', replace('"route":', '"\\u0072oute":'), 'full path'],
      ['unicode in a string', replace('ses-1', 'sés-1'), 'full path'],
      ['unicode escape', replace('ses-1', 'ses-\\u00e9'), 'full path'],
      ['exponent', replace('"t":1234.567', '"t":1.234567e3'), 'full path'],
      ['exponent, capital', replace('"bytes":0', '"bytes":0E0'), 'full path'],
      ['duplicate key', replace('"status":304', '"status":304,"status":200'), 'full path'],
      ['duplicate nested key', replace('"used":10', '"used":10,"used":11'), 'full path'],
      ['negative zero', replace('"cost":0', '"cost":-0'), 'scanned'],
      ['0.1', replace('"dur":89.5', '"dur":0.1'), 'scanned'],
      ['many decimals', replace('"dur":89.5', '"dur":0.123456789012345'), 'scanned'],
      ['16 significant digits', replace('"dur":89.5', '"dur":1.234567890123456'), 'scanned'],
      ['17 significant digits', replace('"dur":89.5', '"dur":210.58319747557107'), 'scanned'],
      ['19 significant digits', replace('"dur":89.5', '"dur":0.0001234567890123456789'), 'scanned'],
      ['20 significant digits', replace('"dur":89.5', '"dur":1.2345678901234567891'), 'full path'],
      ['a tie, rounded to even', replace('"bytes":0', '"bytes":9007199254740993'), 'full path'],
      ['17 digits, an integer', replace('"bytes":0', '"bytes":12345678901234568'), 'scanned'],
      ['integer written 3.0', replace('"cycle":3', '"cycle":3.0'), 'scanned'],
      ['integer written 3.5', replace('"cycle":3', '"cycle":3.5'), 'full path'],
      ['leading zero', replace('"cycle":3', '"cycle":03'), 'full path'],
      ['bare point', replace('"dur":89.5', '"dur":89.'), 'full path'],
      ['negative time', replace('"t":1234.567', '"t":-1'), 'full path'],
      ['time beyond 30 days', replace('"t":1234.567', '"t":2592000001'), 'full path'],
      ['time at 30 days', replace('"t":1234.567', '"t":2592000000'), 'scanned'],
      ['status null', replace('"status":304', '"status":null'), 'scanned'],
      ['status a string', replace('"status":304', '"status":"304"'), 'full path'],
      ['boolean as number', replace('"conditional":true', '"conditional":1'), 'full path'],
      ['enum value unknown', replace('"protocol":"rest"', '"protocol":"soap"'), 'full path'],
      ['enum value prefix', replace('"protocol":"rest"', '"protocol":"res"'), 'full path'],
      ['missing required', replace('"service":"github",', ''), 'full path'],
      ['unknown field', replace('"phase":"steady"', '"phase":"steady","extra":1'), 'full path'],
      ['__proto__ field', replace('"phase":"steady"', '"phase":"steady","__proto__":{}'), 'full path'],
      ['unknown nested field', replace('"used":10', '"used":10,"other":1'), 'full path'],
      ['optional as null', replace('"op":"guard-pr-list"', '"op":null'), 'full path'],
      ['whitespace after a colon', replace('"t":1234', '"t": 1234'), 'full path'],
      ['trailing whitespace', `${canonical} `, 'full path'],
      ['trailing CR', `${canonical}\r`, 'full path'],
      ['trailing garbage', `${canonical}x`, 'full path'],
      ['cut short', canonical.slice(0, -10), 'full path'],
      ['tab in a string', replace('ses-1', 'ses\t1'), 'full path'],
      ['empty strings', replace('"method":"GET"', '"method":""'), 'scanned'],
      ['string with a quote escaped', replace('ses-1', 'ses\\"1'), 'full path'],
    ];
    for (const [name, line, expected] of cases)
      expect([name, expectAgreement(line)]).toEqual([name, expected]);
  });

  it('reads 16 to 19 digit numbers to exactly the double JSON.parse gives', () => {
    // What real traces hold: JSON.stringify writes most measured times with 16-17 digits.
    // Also written out longer than the shortest form, where two doubles are nearly as near.
    const rng = new Rng(5);
    let scannedCount = 0;
    const check = (text: string) => {
      const bytes = Buffer.from(canonical.replace('"dur":89.5', `"dur":${text}`));
      if (!scanner.scan(bytes, 0, bytes.length)) return;
      scannedCount++;
      if (!Object.is(scanner.record.dur, JSON.parse(text)))
        expect(scanner.record.dur, text).toBe(JSON.parse(text));
    };
    for (let i = 0; i < 50_000; i++) {
      check(String(rng.next() * 10 ** (Math.floor(rng.next() * 9) - 3)));
      const length = 16 + Math.floor(rng.next() * 4);
      let digits = String(1 + Math.floor(rng.next() * 9));
      while (digits.length < length) digits += String(Math.floor(rng.next() * 10));
      // At most 9 digits before the point: dur's schema bound (30 days in ms) holds.
      const point = Math.floor(rng.next() * 10);
      check(`${digits.slice(0, point) || '0'}.${digits.slice(point)}`);
    }
    expect(scannedCount).toBeGreaterThan(95_000);
  });

  it('reads numbers in one pass, exactly, at every digit-count boundary and sign', () => {
    // The number reader alone, on a field with no bounds (the api schema has none that takes a
    // negative fraction): a schema of one plain number.
    const plain = loadScanner(
      scannerCode({
        type: 'object',
        properties: { kind: { type: 'string', const: 'api' }, x: { type: 'number' } },
        required: ['kind', 'x'],
        additionalProperties: false,
      })!,
    );
    const read = (text: string): number | undefined => {
      const bytes = Buffer.from(`{"kind":"api","x":${text}}`);
      return plain.scan(bytes, 0, bytes.length) ? (plain.record as unknown as { x: number }).x : undefined;
    };
    const exact = (text: string) => {
      for (const signed of [text, `-${text}`]) {
        const value = read(signed);
        if (value !== undefined && !Object.is(value, JSON.parse(signed)))
          expect(value, signed).toBe(JSON.parse(signed));
      }
    };
    const accepted = [
      '0',
      '0.0',
      '7',
      '123456789012345', // 15 digits: high alone
      '1234567890123456', // 16 digits, below 2^53: one exact division
      '9007199254740991', // 2^53 - 1
      '900719925474099.1',
      '0.9007199254740991',
      '9007199254740992', // 2^53: nearest()
      '9007199254740994',
      '900719925474099.4',
      '0.9007199254740995',
      '1234567890123456.7', // 17 digits
      '1234567890123456789', // 19 digits
      '123456789012345.6789',
      '0.1234567890123456789',
      '0.000123', // zeros of a fraction are not significant digits
      '0.0001234567890123456789', // 19 significant digits after 3 zeros
      '0.0000001234567890123456', // scale 22
      '100000000000000000.0',
      '1.000000000000000000', // 19 digits, trailing zeros
      '1.5',
      '2592000000',
      // Next to a power of two, where the doubles below are twice as close as those above.
      '0.50000000000000001',
      '0.49999999999999997',
      '0.49999999999999998',
      '1024.0000000000001',
      '1023.9999999999999',
      '4503599627370496.7',
      '4503599627370495.7',
    ];
    for (const text of accepted) {
      expect(read(text), text).toBeDefined();
      exact(text);
    }
    const refused = [
      '12345678901234567890', // 20 significant digits
      '1.2345678901234567891',
      '0.00012345678901234567891',
      '1.0000000000000000000', // 20 digits, trailing zeros count
      '0.00000000000000000000001', // scale 23
      '0.00000000000000000000000', // scale 23, even of zeros
      '9007199254740993', // a tie: rounded to even by the full path
      '4503599627370496.5', // ties at 2^52, above and below
      '4503599627370495.75',
      '01',
      '00',
      '-01',
      '-',
      '--1',
      '+1',
      '1.',
      '.5',
      '-.5',
      '1e5',
      '1E5',
      '1.5e-3',
      '1.5.5',
    ];
    for (const text of refused) expect(read(text), text).toBeUndefined();
    // Random numbers of every length around the boundaries, leading fraction zeros, both signs.
    const rng = new Rng(23);
    const digit = () => String(Math.floor(rng.next() * 10));
    let readCount = 0;
    for (let i = 0; i < 30_000; i++) {
      const length = 1 + Math.floor(rng.next() * 20);
      let digits = String(1 + Math.floor(rng.next() * 9));
      while (digits.length < length) digits += digit();
      const point = Math.floor(rng.next() * (length + 1));
      const zeros = '0'.repeat(Math.floor(rng.next() * 6));
      const near = (9007199254740992n + BigInt(Math.floor((rng.next() - 0.5) * 4000))).toString();
      const nearPoint = Math.floor(rng.next() * 16);
      for (const text of [
        point === 0 || point === length ? digits : `${digits.slice(0, point)}.${digits.slice(point)}`,
        `0.${zeros}${digits}`,
        nearPoint === 0 ? near : `${near.slice(0, nearPoint)}.${near.slice(nearPoint)}`,
      ]) {
        exact(text);
        if (read(text) !== undefined) readCount++;
      }
    }
    expect(readCount).toBeGreaterThan(60_000);
  });

  it('tells keys of every length apart, one byte changed anywhere', () => {
    // Keys are compared by words: 3 bytes ("":), 4 to 16 with overlapping words, longer ones.
    const names = [
      '',
      'a',
      'ab',
      'abc',
      'abcd',
      'abcdefg',
      'abcdefgh',
      'abcdefghijk',
      'abcdefghijkl',
      'abcdefghijklm',
      'abcdefghijklmnopq',
    ];
    const properties = Object.fromEntries(names.map((name) => [name, { type: 'number' }]));
    const keyed = loadScanner(
      scannerCode({
        type: 'object',
        properties: { kind: { type: 'string', const: 'api' }, ...properties },
        required: ['kind'],
        additionalProperties: false,
      })!,
    );
    const scan = (line: string) => {
      const bytes = Buffer.from(line);
      return keyed.scan(bytes, 0, bytes.length);
    };
    const values = names.map((name, i) => `${JSON.stringify(name)}:${i}`);
    for (const order of [values, [...values].reverse()]) {
      for (let round = 0; round < 3; round++) {
        expect(scan(`{"kind":"api",${order.join(',')}}`)).toBe(true);
        const record = keyed.record as unknown as Record<string, number>;
        for (const [i, name] of names.entries()) expect(record[name], name).toBe(i);
      }
      for (const [i, name] of names.entries())
        for (let at = 0; at < name.length; at++) {
          const changed = `${name.slice(0, at)}z${name.slice(at + 1)}`;
          const line = order.map((value, j) =>
            value === values[i] ? `${JSON.stringify(changed)}:${j}` : value,
          );
          expect(scan(`{"kind":"api",${line.join(',')}}`), changed).toBe(false);
        }
    }
  });

  it('never accepts a mutated line the full path reads otherwise (seeded mutations)', () => {
    const rng = new Rng(17);
    const alphabet = '{}[]",:.-+eE0123456789 \\/tfnulaé\u0000';
    const lines = [canonical, JSON.stringify({ ...api, status: null, rl: undefined, cycle: 12345 })];
    let scannedCount = 0;
    for (let i = 0; i < 20_000; i++) {
      const base = lines[i % lines.length]!;
      const at = Math.floor(rng.next() * base.length);
      const op = rng.next();
      const char = alphabet[Math.floor(rng.next() * alphabet.length)]!;
      const line =
        op < 0.4
          ? base.slice(0, at) + char + base.slice(at + 1)
          : op < 0.7
            ? base.slice(0, at) + char + base.slice(at)
            : base.slice(0, at) + base.slice(at + 1);
      if (expectAgreement(line) === 'scanned') scannedCount++;
    }
    // Digits changed inside numbers and letters inside strings stay readable: some get through.
    expect(scannedCount).toBeGreaterThan(1000);
  });

  it('reads every value right across a full string table (all forgotten, read again)', () => {
    const fresh = loadScanner(mainScanner()!.code);
    // More distinct values of one field than its table holds (16,384), then the first ones again.
    for (const i of [...Array.from({ length: 20_000 }, (_, n) => n), 0, 1, 16_383, 16_384, 19_999]) {
      const session = `ses-${i}`;
      const bytes = Buffer.from(JSON.stringify({ ...api, session }));
      expect(fresh.scan(bytes, 0, bytes.length)).toBe(true);
      if (fresh.record.session !== session) expect(fresh.record.session).toBe(session);
    }
  });

  it('deduplicates strings without mixing up values that share a hash slot', () => {
    const fresh = loadScanner(mainScanner()!.code);
    const seen = new Map<string, string>();
    for (let i = 0; i < 5000; i++) {
      const session = `ses-${(i * 7919) % 3001}`;
      const bytes = Buffer.from(JSON.stringify({ ...api, session }));
      expect(fresh.scan(bytes, 0, bytes.length)).toBe(true);
      expect(fresh.record.session).toBe(session);
      seen.set(session, fresh.record.session!);
    }
    expect(seen.size).toBe(3001);
    // Values of up to 64 bytes live in rows of a table, longer ones beside it: 2000 values of 0
    // to 130 bytes (many sharing a slot across that line), each read back right, again and again.
    const rng = new Rng(31);
    const values = Array.from({ length: 2000 }, (_, i) => {
      const length = Math.floor(rng.next() * 131);
      let value = String(i);
      while (value.length < length) value += String.fromCharCode(33 + Math.floor(rng.next() * 90));
      return value.slice(0, Math.max(length, 0)).replaceAll('\\', '/').replaceAll('"', "'");
    });
    for (let i = 0; i < 20_000; i++) {
      const session = values[(i * 7919) % values.length]!;
      const bytes = Buffer.from(JSON.stringify({ ...api, session }));
      expect(fresh.scan(bytes, 0, bytes.length)).toBe(true);
      if (fresh.record.session !== session) expect(fresh.record.session).toBe(session);
      // The same again: the field's last value.
      expect(fresh.scan(bytes, 0, bytes.length)).toBe(true);
      if (fresh.record.session !== session) expect(fresh.record.session).toBe(session);
    }
    // Values compared a word at a time, the last word overlapping the one before: values of
    // every length up to 13 that differ from the field's last value in one byte, anywhere.
    for (let length = 0; length <= 13; length++) {
      const plain = 'a'.repeat(length);
      for (let at = 0; at < length; at++) {
        const differing = `${plain.slice(0, at)}b${plain.slice(at + 1)}`;
        for (const session of [plain, differing, plain, differing]) {
          const bytes = Buffer.from(JSON.stringify({ ...api, session }));
          expect(fresh.scan(bytes, 0, bytes.length)).toBe(true);
          expect(fresh.record.session).toBe(session);
        }
      }
    }
  });
});

describe("the api scanner's field-by-field shortcut (the value the field held on the line before)", () => {
  // A string equal to the field's value on the line before is taken by comparing it with that
  // value (wasm/api-scanner.ts string()); the property: every line reads exactly as the full path
  // reads it, whatever the values before it (the same, one byte longer or shorter, one byte
  // changed, the line ending inside the value).
  const letters = fc.constantFrom('a', 'b', '-', '/', '{');
  const value = fc.array(letters, { maxLength: 20 }).map((chars) => chars.join(''));
  const line = fc.record({
    session: value,
    repo: value,
    route: value.map((v) => `/r${v}`),
    op: fc.option(value, { nil: undefined }),
    method: fc.constantFrom('GET', 'POST', 'GE', 'GETT'),
    cut: fc.option(fc.nat({ max: 400 }), { nil: undefined, freq: 8 }),
  });
  it('reads every line of any sequence of related values as JSON.parse and the validators do', () => {
    const fresh = loadScanner(mainScanner()!.code);
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 40 }), (lines) => {
        for (const { cut, ...values } of lines) {
          const whole = JSON.stringify({ ...api, ...values });
          const text = cut === undefined ? whole : whole.slice(0, Math.min(cut, whole.length));
          const fast = scanned(text, fresh);
          if (fast === undefined) continue;
          expect(fast, text).toEqual(fullPath(text));
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('analyzeFile, fast path against full path', () => {
  const header = {
    kind: 'run',
    format: 'fleetbench-trace/1',
    runId: 'fastpath',
    tool: { name: 'fleetbench', version: 'test' },
    clock: 'virtual',
    seed: 1,
    scenario: { name: 'fastpath', hash: null },
    epochMs: Date.UTC(2026, 0, 1),
    startedAt: new Date(Date.UTC(2026, 0, 1)).toISOString(),
  };

  /** Every kind, canonical and odd api lines mixed, with `extra` lines planted in the middle. */
  function writeTrace(name: string, extra: string[] = []): string {
    const lines = [JSON.stringify(header)];
    const counts = { api: 0, span: 0, event: 0, gauge: 0 };
    for (let i = 0; i < 3000; i++) {
      const t = i * 10;
      const record = {
        ...api,
        t,
        session: `ses-${i % 37}`,
        status: i % 50 === 0 ? null : i % 3 === 0 ? 200 : 304,
        cycle: Math.floor(t / 1000),
      };
      let line = JSON.stringify(record);
      if (i % 11 === 0) line = line.replace('"route":"/repos/', '"route":"\\/repos/');
      if (i % 13 === 0) line = line.replace('"phase":"steady"', '"phase":"st\\u00e9ady"');
      if (i % 17 === 0) line = line.replace(`"t":${t},`, `"t":${t / 1000}e3,`);
      if (i % 19 === 0) line = line.replace('"cycle":', '"cycle":0,"cycle":');
      if (i % 23 === 0) line = JSON.stringify(Object.fromEntries(Object.entries(record).reverse()));
      lines.push(line);
      counts.api++;
      if (i % 5 === 0) {
        lines.push(
          JSON.stringify({ kind: 'span', name: 'poll.cycle', t, dur: 5, labels: { strategy: 'guarded' } }),
        );
        lines.push(JSON.stringify({ kind: 'event', name: 'steady.start', t }));
        lines.push(JSON.stringify({ kind: 'gauge', name: 'sessions', t, value: i % 7 }));
        counts.span++;
        counts.event++;
        counts.gauge++;
      }
      if (i === 1500) {
        lines.push(...extra);
        for (const line of extra) if (line.startsWith('{"kind":"api"') && fullPath(line)) counts.api++;
      }
    }
    lines.push(JSON.stringify({ kind: 'end', t: 30_000, reason: 'completed', counts }));
    const path = join(dir, name);
    writeFileSync(path, `${lines.join('\n')}\n`);
    return path;
  }

  async function bothWays(path: string, lenient = false) {
    const full = await analyzeFile(path, { threads: 1, fastPath: false, lenient });
    for (const threads of [1, 2]) {
      const fast = await analyzeFile(path, { threads, lenient });
      expect(fast.analysis).toEqual(full.analysis);
      expect(fast.stats).toEqual(full.stats);
    }
    return full;
  }

  it("counts by the scanner's ids alike when its tables fill up and every id is forgotten", async () => {
    // More sessions than a string table holds (16,384), then the first ones again: the ids
    // counted by are given to other values after the scanner forgets them.
    const lines = [JSON.stringify(header)];
    for (let i = 0; i < 40_000; i++) {
      const n = i < 20_000 ? i : i % 300;
      lines.push(
        JSON.stringify({ ...api, t: i, session: `ses-${n}`, repo: `acme/repo-${n % 97}`, cycle: i }),
      );
    }
    lines.push(
      JSON.stringify({
        kind: 'end',
        t: 40_000,
        reason: 'completed',
        counts: { api: 40_000, span: 0, event: 0, gauge: 0 },
      }),
    );
    const path = join(dir, 'forgotten.jsonl');
    writeFileSync(path, `${lines.join('\n')}\n`);
    const { analysis } = await bothWays(path);
    expect(Object.keys(analysis.api.counts.bySession)).toHaveLength(20_000);
    expect(analysis.api.counts.bySession['ses-7']!.calls).toBe(1 + Math.ceil((40_000 - 20_000 - 7) / 300));
  });

  it("counts in the scanner's module exactly as by string, whatever the lines (property)", async () => {
    // The api counts by string dimension are kept in the scanner's module on the ranges of a
    // parallel analysis (ApiCounts.countScanned): absent values and the literal '(none)', lines
    // the full path reads between scanned ones (the same values, counted in between), lines the
    // schema refuses (lenient: skipped), fractional costs (summed in file order, to the same
    // doubles).
    const value = (prefix: string) =>
      fc.oneof(
        fc.constant(undefined),
        fc.constant('(none)'),
        fc.nat({ max: 5 }).map((n) => `${prefix}${n}`),
      );
    type Form = 'canonical' | 'escaped' | 'refused' | 'huge';
    const record = fc.record({
      session: value('ses-'),
      repo: value('acme/r'),
      op: value('op-'),
      phase: value('p'),
      // 1e16: a double whose sum with 1 rounds, so a sum taken out of order shows.
      cost: fc.constantFrom(0, 1, 0.1, 0.2, 1 / 3, 1e16, 5),
      method: fc.constantFrom('GET', 'POST'),
      form: fc.constantFrom<Form>('canonical', 'canonical', 'canonical', 'escaped', 'refused'),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 60 }), async (records) => {
        const lines = [JSON.stringify(header)];
        records.forEach(({ form, ...values }, i) => {
          const line = JSON.stringify({ ...api, ...values, t: i });
          // An escaped route is read by the full path; a negative duration is refused by both; a
          // line longer than a read is joined across reads and goes to the full path without
          // reaching the module (which counts the row before it at its next line).
          if (form === 'escaped') lines.push(line.replace('"route":"/', '"route":"\\/'));
          else if (form === 'huge')
            lines.push(line.replace('"kind":"api",', `"kind":"api","error":"${'x'.repeat(SPAN_CHUNK)}",`));
          else if (form === 'refused') lines.push(line.replace('"dur":89.5', '"dur":-1'));
          else lines.push(line);
        });
        const path = join(dir, 'counted.jsonl');
        const text = `${lines.join('\n')}\n`;
        writeFileSync(path, text);
        const full = await analyzeFile(path, { threads: 1, fastPath: false, lenient: true });
        // The body as one range on this thread, as a parallel analysis's first range is read.
        const validator = mainValidator();
        const job = {
          path,
          start: Buffer.byteLength(lines[0]!) + 1,
          end: Buffer.byteLength(text),
          lenient: true,
          checksCode: validator.code!,
        };
        const range = analyzeRange(job, validator, {}, mainScanner()!.scanner);
        if (!range.ok) throw new Error('the range was refused');
        const fast = range.analyzer.finish({ file: path, stats: full.stats });
        expect(fast.api.counts).toEqual(full.analysis.api.counts);
        expect(fast).toEqual(full.analysis);
      }),
      {
        numRuns: 200,
        // A line read by the full path right after a scanned one, on the same values: the
        // scanned one is counted first (1 + 1 + 1e16 is not 1 + 1e16 + 1 in doubles).
        examples: [
          [
            [
              {
                session: 'ses-1',
                repo: 'r',
                op: 'op',
                phase: 'p',
                cost: 1,
                method: 'GET',
                form: 'canonical',
              },
              {
                session: 'ses-1',
                repo: 'r',
                op: 'op',
                phase: 'p',
                cost: 1,
                method: 'GET',
                form: 'canonical',
              },
              { session: 'ses-1', repo: 'r', op: 'op', phase: 'p', cost: 1e16, method: 'GET', form: 'huge' },
            ],
          ],
        ],
      },
    );
  });

  it('gives the same analysis on every kind and on odd lines, in one pass and on two threads', async () => {
    // A line longer than a read (64 KB of text, SPAN_CHUNK of bytes) crosses reads: the splitter
    // joins it, the scanner refuses it (the full path reads it).
    const long = JSON.stringify({ ...api, error: 'x'.repeat(SPAN_CHUNK + 100_000) });
    const path = writeTrace('mixed.jsonl', [long]);
    const { analysis } = await bothWays(path);
    expect(analysis.api.totals.calls).toBe(3001);
    // gzip: read in one pass through the stream, the same lines the same way.
    const gz = `${path}.gz`;
    writeFileSync(gz, gzipSync(readFileSync(path)));
    const gzipped = await analyzeFile(gz);
    expect(gzipped.analysis).toEqual({ ...analysis, input: { ...analysis.input, file: gz } });
  });

  it('reports a bad line the same way (file, line, field), strict and lenient', async () => {
    const bad = JSON.stringify({ ...api, t: -5 });
    const path = writeTrace('bad.jsonl', [bad, '{"kind":"api","t":1,']);
    const errors: string[] = [];
    for (const options of [{ fastPath: false, threads: 1 }, { threads: 1 }, { threads: 2 }] as const) {
      const error = await analyzeFile(path, options).catch((e: Error) => e);
      expect(error).toBeInstanceOf(Error);
      errors.push((error as Error).message);
    }
    expect(errors[0]).toMatch(/bad\.jsonl:\d+: .*t/);
    expect(errors[1]).toBe(errors[0]);
    expect(errors[2]).toBe(errors[0]);
    const lenient = await bothWays(path, true);
    expect(lenient.stats.skipped).toBe(2);
  });

  it("gives the same analysis of a real run's trace, nearly all of it read by the scanner", async () => {
    const run = await runRef('S2-T1-5');
    expect(run.analysis.api.totals.calls).toBeGreaterThan(0);
    const apiLines = readFileSync(run.outcome.tracePath, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('{"kind":"api"'));
    const taken = apiLines.filter((line) => scanned(line) !== undefined).length;
    // The fast path exists for traces like this one; a rule that sends its lines to the full
    // path (as the 15-digit limit once did for every measured duration) shows here.
    expect(taken / apiLines.length).toBeGreaterThan(0.99);
    const { analysis } = await bothWays(run.outcome.tracePath);
    expect(analysis).toEqual(run.analysis);
  });
});
