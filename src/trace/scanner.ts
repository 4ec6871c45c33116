/**
 * The analyzer's fast path: reads an `api` line without `JSON.parse`. Most of the cost of
 * analysing a trace was `JSON.parse` building an object per line (and ajv checking it) that the
 * analyzer then read a few fields from; this scanner reads the fields straight off the chunk's
 * text into one reused object, checking each value against the schema as it goes.
 *
 * One definition: the scanner is generated, when a reading thread starts, from the published
 * JSON Schema of the record kind (docs/trace.schema.json, itself generated from schema.ts and
 * tested against it), the same document the ajv validators are compiled from. Every type,
 * enum, bound, required field and "no other field" rule comes from there; a keyword the
 * generator does not know makes that property (or, if required, the whole kind) go through the
 * full path instead, so the scanner can be conservative but never more lenient than the schema.
 *
 * What it accepts, and only that (anything else returns false and the line goes through the
 * full parse and validation, with its usual errors): a line that starts `{"kind":"api",` with
 * no whitespace between tokens (what JSON.stringify writes), keys in any order but none twice,
 * no escape sequence anywhere it reads a string, numbers without an exponent and with at most
 * 19 significant digits, read to exactly the double JSON.parse gives (see num()). Strings are
 * deduplicated per field (the last value, then a bounded map of flat copies), so no map key the
 * analyzer keeps holds on to a read buffer.
 *
 * Two paths read a line. The straight-line one (straightCode) expects the key order most of
 * the file's api lines have (the caller sniffs it: validate.ts scannerForFile) and checks each
 * key of it in turn by constant word compares; a line in any other order, or one it refuses,
 * goes to the general one, which takes keys in any order and decides.
 *
 * Where its time goes, and what keeps it down (each measured, see the git log): in the general
 * path, keys are predicted from the key before and checked by two to four 32-bit word compares
 * against a flat table (sameKey); a string is compared with its field's last value, then with
 * its hash slot's, both as rows of words in one Int32Array per field (sameRow); a number's
 * digits are read once, and most of those with 16-17 digits are settled by one Dekker product
 * (nearest).
 *
 * Only `api` records take this path: they are nearly every line of a trace, and the analyzer
 * never keeps an api record (src/analyze/analyzer.ts `add`), so one object can be reused.
 */
import type { ApiRecord } from './schema.ts';

/** Record kinds read by the scanner: the analyzer must not keep their records (see above). */
export const SCANNED_KINDS = ['api'] as const;

/** How every line the scanner reads begins (what JSON.stringify writes first for an api record). */
export const API_LINE_PREFIX = '{"kind":"api",';

export interface TraceScanner {
  /**
   * Reads bytes[start, end) (one line, no newline) into `record`; false when the line is not
   * one the scanner can vouch for (it must then go through the full parse).
   */
  scan(bytes: Uint8Array, start: number, end: number): boolean;
  /** The last scanned record: the same object every time, valid until the next scan. */
  readonly record: ApiRecord;
  /** Lines read by the straight-line path so far (the others scan() accepted took the general one). */
  readonly straightLines: number;
}

type JsonSchema = Record<string, unknown>;

/** Keywords that say nothing about which values are valid. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', '$comment']);

/** A property the generator understands: the code that reads and checks its value. */
interface FieldCode {
  name: string;
  /** Statements that read the value at `p` into `v` (p past it), or `return -1`. */
  read: string;
  /** The same for the straight-line path (see straightCode): differs only for nested objects. */
  straight: string;
  /** False: a key the scanner cannot read (its code is `return -1`). */
  readable: boolean;
}

/**
 * The key order of a line's object, and of the objects nested in it, as the line that was
 * sniffed has them (keyOrderOf): what the straight-line path expects.
 */
export interface KeyOrder {
  keys: string[];
  nested: Record<string, KeyOrder>;
}

/**
 * The key order of a parsed JSON object (undefined for anything else), nested objects down to
 * `depth` levels (the schema's are one deep; a deeper line is read by the general path).
 */
export function keyOrderOf(value: unknown, depth = 4): KeyOrder | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  // No prototype: a line's "__proto__" key must stay a key, not become one.
  const nested: Record<string, KeyOrder> = Object.create(null);
  if (depth > 0)
    for (const [key, inner] of Object.entries(value)) {
      const order = keyOrderOf(inner, depth - 1);
      if (order !== undefined) nested[key] = order;
    }
  return { keys: Object.keys(value), nested };
}

/** A value's code for both paths (straight: the straight-line path's; see FieldCode). */
interface ValueCode {
  read: string;
  straight: string;
}

let helperId = 0;

/**
 * Code that reads one value of `schema` at `p` into `v`, or undefined when the schema uses
 * something the scanner does not implement (the property then always takes the full path).
 * `nested` collects the functions of nested objects; `order`, the key order the straight-line
 * path expects of an object value.
 */
function valueCode(schema: JsonSchema, nested: string[], order?: KeyOrder): ValueCode | undefined {
  const scalar = scalarCode(schema, nested);
  if (scalar !== undefined) return { read: scalar, straight: scalar };
  if ('anyOf' in schema) {
    const options = schema.anyOf as JsonSchema[];
    const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
    if (keys.length !== 1 || options.length !== 2) return undefined;
    const nullIndex = options.findIndex((o) => o.type === 'null' && Object.keys(o).length === 1);
    if (nullIndex === -1) return undefined;
    const inner = valueCode(options[1 - nullIndex]!, nested, order);
    if (inner === undefined) return undefined;
    const orNull = (code: string) =>
      `if (b[p] === 110) { if (!same(b, p, end, NULL)) return -1; v = null; p += 4; } else { ${code} }`;
    return { read: orNull(inner.read), straight: orNull(inner.straight) };
  }
  if (schema.type !== 'object') return undefined;
  const fn = objectCode(schema, nested, order);
  if (fn === undefined) return undefined;
  const holder = `o${helperId++}`;
  nested.push(`const ${holder} = ${fn.create};`);
  const call = (name: string) => `p = ${name}(b, p, end, ${holder}); if (p < 0) return -1; v = ${holder};`;
  return { read: call(fn.name), straight: call(fn.straight ?? fn.name) };
}

/** valueCode for a value that is not an object, nor one that may be null. */
function scalarCode(schema: JsonSchema, nested: string[]): string | undefined {
  const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
  const type = schema.type;
  const known = (allowed: string[]) => keys.every((k) => k === 'type' || allowed.includes(k));
  const checks: string[] = [];
  switch (type) {
    case 'boolean':
      if (!known([])) return undefined;
      return `if (b[p] === 116) { if (!same(b, p, end, TRUE)) return -1; v = true; p += 4; } else { if (!same(b, p, end, FALSE)) return -1; v = false; p += 5; }`;
    case 'number':
    case 'integer': {
      if (!known(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])) return undefined;
      if (type === 'integer') checks.push('!Number.isInteger(v)');
      const bound = (key: string, op: string) => {
        if (key in schema) {
          const limit = schema[key];
          if (typeof limit !== 'number') return false;
          checks.push(`!(v ${op} ${limit})`);
        }
        return true;
      };
      if (
        !bound('minimum', '>=') ||
        !bound('maximum', '<=') ||
        !bound('exclusiveMinimum', '>') ||
        !bound('exclusiveMaximum', '<')
      )
        return undefined;
      return `p = num(b, p); if (p < 0) return -1; v = NUM;${checks.length ? ` if (${checks.join(' || ')}) return -1;` : ''}`;
    }
    case 'string': {
      if (!known(['enum', 'const', 'minLength'])) return undefined;
      if ('enum' in schema) {
        const values = schema.enum as unknown[];
        if (!values.every((x) => typeof x === 'string')) return undefined;
        checks.push(values.map((x) => `v !== ${JSON.stringify(x)}`).join(' && '));
      }
      if ('const' in schema) {
        if (typeof schema.const !== 'string') return undefined;
        checks.push(`v !== ${JSON.stringify(schema.const)}`);
      }
      if ('minLength' in schema) {
        if (typeof schema.minLength !== 'number') return undefined;
        checks.push(`codePoints(v) < ${schema.minLength}`);
      }
      const cache = `c${helperId++}`;
      nested.push(`const ${cache} = newCache();`);
      return `p = str(b, p, end, ${cache}); if (p < 0) return -1; v = STR;${checks.length ? ` if (${checks.join(' || ')}) return -1;` : ''}`;
    }
    default:
      return undefined;
  }
}

/**
 * A function `(s, p, end, o) → p after the object, or -1` that reads an object of `schema`
 * into `o` (fields absent from the line set to undefined), and the expression creating `o`;
 * with an `order`, also the straight-line function for objects written in that order
 * (straightCode), when the schema allows that order.
 */
function objectCode(
  schema: JsonSchema,
  nested: string[],
  order?: KeyOrder,
): { name: string; create: string; straight?: string } | undefined {
  const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
  if (!keys.every((k) => ['type', 'properties', 'required', 'additionalProperties'].includes(k)))
    return undefined;
  // With other properties allowed the scanner would still refuse them: only stricter, fine.
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return undefined;
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const fields: FieldCode[] = [];
  for (const [name, property] of Object.entries(properties)) {
    // A default fills an absent property: only a line that carries it can skip the full path.
    const { default: withDefault, ...rest } = property;
    if (withDefault !== undefined) required.add(name);
    const code = valueCode(rest, nested, order?.nested[name]);
    // A property the scanner cannot read: present means the full path; required, never fast.
    if (code === undefined && required.has(name)) return undefined;
    fields.push({
      name,
      readable: code !== undefined,
      ...(code ?? { read: 'return -1;', straight: 'return -1;' }),
    });
  }
  if (fields.length > 30) return undefined;
  for (const name of required) if (!(name in properties)) return undefined;
  const name = `object${helperId++}`;
  const keyTable = `keys${helperId++}`;
  const next = `next${helperId++}`;
  let requiredMask = 0;
  fields.forEach((field, i) => {
    if (required.has(field.name)) requiredMask |= 1 << i;
  });
  nested.push(
    `const ${keyTable} = new Map([${fields.map((f, i) => `[${JSON.stringify(`${JSON.stringify(f.name)}:`)}, ${i}]`).join(', ')}]);`,
    `const ${keyTable}List = [...${keyTable}.keys()].map(bytesOf);`,
    `const ${keyTable}Words = ${keyTable}List.map(wordsOf);`,
    `const ${keyTable}Table = keyTable(${keyTable}List, ${keyTable}Words);`,
    `const ${next} = new Int32Array(${fields.length + 1}).fill(-1);`,
  );
  const resets = fields
    .filter((f) => !required.has(f.name))
    .map((f) => `o[${JSON.stringify(f.name)}] = undefined;`)
    .join(' ');
  const cases = fields
    .map((f, i) => `      case ${i}: { let v; ${f.read} o[${JSON.stringify(f.name)}] = v; break; }`)
    .join('\n');
  nested.push(`function ${name}(b, p, end, o) {
  if (b[p] !== 123) return -1;
  p++;
  ${resets}
  let seen = 0;
  let previous = ${fields.length};
  if (b[p] !== 125) {
    for (;;) {
      let k = ${next}[previous];
      if (k < 0 || !sameKey(b, p, end, ${keyTable}Table, k * 5, ${keyTable}List[k], ${keyTable}Words[k])) {
        k = keyAt(b, p, end, ${keyTable});
        if (k < 0) return -1;
        ${next}[previous] = k;
      }
      p += ${keyTable}List[k].length;
      if ((seen & (1 << k)) !== 0) return -1;
      seen |= 1 << k;
      switch (k) {
${cases}
      }
      previous = k;
      const c = b[p];
      if (c === 44) { p++; continue; }
      if (c === 125) break;
      return -1;
    }
  }
  if ((seen & ${requiredMask}) !== ${requiredMask}) return -1;
  return p + 1;
}`);
  // Every field present from the start and already holding every kind of value it will, so the
  // object keeps one shape and no optimized code is thrown away when a field first changes kind.
  const create = `generalized({ ${fields.map((f) => `${JSON.stringify(f.name)}: undefined`).join(', ')} })`;
  const straight = order && straightCode(fields, required, order, nested);
  return { name, create, ...(straight ? { straight } : {}) };
}

/**
 * The straight-line reader of an object whose keys come in `order` (what most lines of a file
 * share: one writer wrote them), optional keys of the order allowed to be absent: each key in
 * turn, its comma folded in, checked by constant word compares, then its value; no loop, no
 * dispatch, no bookkeeping of keys seen (each key of the order is matched at most once, in
 * turn). A line that departs from the order anywhere else fails it and is read again by the
 * general function, which decides. Undefined when the order cannot be a valid object of the
 * schema (an unknown or repeated key, a required one missing, a key the scanner cannot read).
 */
function straightCode(
  fields: FieldCode[],
  required: Set<string>,
  order: KeyOrder,
  nested: string[],
): string | undefined {
  const byName = new Map(fields.map((f) => [f.name, f]));
  if (new Set(order.keys).size !== order.keys.length) return undefined;
  if (!order.keys.every((key) => byName.get(key)?.readable)) return undefined;
  if (![...required].every((name) => order.keys.includes(name))) return undefined;
  const resets = fields
    .filter((f) => !order.keys.includes(f.name))
    .map((f) => `o[${JSON.stringify(f.name)}] = undefined;`)
    .join(' ');
  const steps = order.keys.map((key, i) => {
    const field = byName.get(key)!;
    const bytes = Buffer.from(`${i === 0 ? '{' : ','}${JSON.stringify(key)}:`, 'latin1');
    const read = `p += ${bytes.length}; let v; ${field.straight} o[${JSON.stringify(key)}] = v;`;
    // An optional key may be absent: the line goes on with the next one of the order.
    if (!required.has(key) && i > 0)
      return `  if (${bytesMatch(bytes)}) { ${read} } else o[${JSON.stringify(key)}] = undefined;`;
    return `  if (!(${bytesMatch(bytes)})) return -1;\n  { ${read} }`;
  });
  const name = `straight${helperId++}`;
  nested.push(`function ${name}(b, p, end, o) {
  const view = viewOf(b);
${order.keys.length === 0 ? '  if (b[p] !== 123) return -1;\n  p++;' : steps.join('\n')}
  ${resets}
  if (b[p] !== 125) return -1;
  return p + 1;
}`);
  return name;
}

/**
 * An expression: b[p..] holds a key's `bytes` (`{"name":` or `,"name":`, 4 bytes at least),
 * before end. Constant word compares, the last word overlapping the one before when the length
 * is not a multiple of 4.
 */
function bytesMatch(bytes: Buffer): string {
  const n = bytes.length;
  const tests = [`p + ${n} <= end`];
  for (let at = 0; at < n; at += 4) {
    const offset = Math.min(at, n - 4);
    tests.push(`view.getInt32(p + ${offset}, true) === ${bytes.readInt32LE(offset)}`);
  }
  return tests.join(' && ');
}

/** Shared by every generated scanner: numbers, strings and keys at a byte position. */
const RUNTIME = `
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22];
let NUM = 0;
let STR = '';
const bytesOf = (word) => Uint8Array.from(word, (ch) => ch.charCodeAt(0));
// A word's bytes as little-endian 32-bit integers, for sameWords(): the whole ones, then (when
// the length is not a multiple of 4) the last four bytes, overlapping the word before. None
// under 4 bytes.
const wordsOf = (bytes) => {
  const n = bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, n);
  const words = new Int32Array(n < 4 ? 0 : (n + 3) >> 2);
  for (let i = 0; i < words.length; i++) words[i] = view.getInt32(Math.min(i * 4, n - 4), true);
  return words;
};
let VIEW_OF = undefined;
let VIEW = new DataView(new ArrayBuffer(8));
// A DataView over the chunk b, made once per chunk.
function viewOf(b) {
  if (b !== VIEW_OF) { VIEW_OF = b; VIEW = new DataView(b.buffer, b.byteOffset, b.byteLength); }
  return VIEW;
}
// same() four bytes at a time.
function sameWords(b, p, end, bytes, words) {
  const n = bytes.length;
  if (p + n > end) return false;
  if (n < 4) {
    for (let i = 0; i < n; i++) if (b[p + i] !== bytes[i]) return false;
    return true;
  }
  const view = viewOf(b);
  const last = words.length - 1;
  for (let i = 0; i < last; i++) if (view.getInt32(p + i * 4, true) !== words[i]) return false;
  return view.getInt32(p + n - 4, true) === words[last];
}
// Keys (a quote, a name, a quote and a colon) by rows of 5: length, the words at 0, 4 and 8, and
// the last four bytes' word, for sameKey(), taken from each key's wordsOf() (its last word is
// the last four bytes'; the one at 8 is only used when there are 12 bytes or more).
function keyTable(list, wordsList) {
  const table = new Int32Array(list.length * 5);
  list.forEach((bytes, k) => {
    const n = bytes.length;
    table[k * 5] = n;
    if (n < 4) return;
    const words = wordsList[k];
    table[k * 5 + 1] = words[0];
    if (n >= 8) table[k * 5 + 2] = words[1];
    if (n >= 12) table[k * 5 + 3] = words[2];
    table[k * 5 + 4] = words[words.length - 1];
  });
  return table;
}
// The key at row r of table is at b[p..]: one of 4 to 16 bytes by two to four word compares and
// no loop (keys are most of what a line's bytes are compared against), others by sameWords().
function sameKey(b, p, end, table, r, bytes, words) {
  const n = table[r];
  if (n < 4 || n > 16) return sameWords(b, p, end, bytes, words);
  if (p + n > end) return false;
  const view = viewOf(b);
  if (view.getInt32(p, true) !== table[r + 1] || view.getInt32(p + n - 4, true) !== table[r + 4]) return false;
  if (n <= 8) return true;
  if (view.getInt32(p + 4, true) !== table[r + 2]) return false;
  return n <= 12 || view.getInt32(p + 8, true) === table[r + 3];
}
// A JSON number without exponent, read exactly as JSON.parse reads it, in one pass: its first 15
// significant digits into high, up to 4 more into low (beyond 19: the full path). While the whole
// mantissa high * 10^k + low is below 2^53 it is an exact double, and mantissa / 10^scale is one
// correctly rounded division of two exact doubles (Clinger's fast path). Real traces are mostly
// 16-17 digit numbers (JSON.stringify writes the shortest string that round-trips a double, and a
// measured time rarely has a short one), so longer mantissas are read exactly too: see
// nearest(). An exponent or a scale over 22: the full path.
let PH = 0;
let PL = 0;
function num(b, p) {
  let c = b[p];
  let negative = false;
  if (c === 45) { negative = true; c = b[++p]; }
  let high = 0;
  let digits = 0;
  let low = 0;
  let k = 0;
  if (c === 48) {
    c = b[++p];
    if (c >= 48 && c <= 57) return -1;
  } else if (c >= 49 && c <= 57) {
    do { high = high * 10 + (c - 48); digits++; c = b[++p]; } while (c >= 48 && c <= 57 && digits < 15);
    while (c >= 48 && c <= 57) { if (++k > 4) return -1; low = low * 10 + (c - 48); c = b[++p]; }
  } else return -1;
  let scale = 0;
  if (c === 46) {
    const point = p;
    c = b[++p];
    if (!(c >= 48 && c <= 57)) return -1;
    // Zeros before the first significant digit (0.000123) are not digits of the mantissa.
    if (digits === 0) while (c === 48) c = b[++p];
    while (c >= 48 && c <= 57 && digits < 15) { high = high * 10 + (c - 48); digits++; c = b[++p]; }
    while (c >= 48 && c <= 57) { if (++k > 4) return -1; low = low * 10 + (c - 48); c = b[++p]; }
    scale = p - point - 1;
  }
  if (c === 101 || c === 69 || scale > 22) return -1;
  let value;
  if (k === 0) value = scale === 0 ? high : high / POW10[scale];
  else {
    // high < 10^15 and k <= 4: high * 10^k + low below 2^53 is computed exactly (rounding is
    // monotonic and 2^53 a double, so a sum at or past it never comes out below).
    const m = high * POW10[k] + low;
    if (m < 9007199254740992) value = scale === 0 ? m : m / POW10[scale];
    else {
      value = nearest(high, low, k, scale);
      if (value < 0) return -1;
    }
  }
  NUM = negative ? -value : value;
  return p;
}
// a * b as PH + PL exactly (Dekker's product: no fused multiply-add in JavaScript).
const SPLITTER = 134217729;
function twoProduct(a, b) {
  const p = a * b;
  let t = SPLITTER * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLITTER * b;
  const bh = t - (t - b);
  const bl = b - bh;
  PL = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  PH = p;
}
const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
// The double next to a positive finite q, up or down (its bits as an integer, plus or minus 1).
function neighbour(q, up) {
  F64[0] = q;
  if (up) { if (U32[0] === 0xffffffff) { U32[0] = 0; U32[1]++; } else U32[0]++; }
  else if (U32[0] === 0) { U32[0] = 0xffffffff; U32[1]--; } else U32[0]--;
  return F64[0];
}
// The double nearest to D / 10^scale, D = high * 10^k + low (16 to 19 significant digits), or
// -1 when it is too close to call (a tie, which the full path rounds to even). D is held
// exactly as dh + dl; the quotient of dh is within two doubles of the nearest, and stepping
// towards the side the residual D - q * 10^scale points to finds it: the nearest is the first
// whose neighbour on that side has a larger residual. Residuals are computed with a relative
// error near 2^-52, far inside the 1e-9 margin that sends near-ties to the full path.
let DH = 0;
let DL = 0;
function residual(q, divisor) {
  twoProduct(q, divisor);
  return (DH - PH) + (DL - PL);
}
function nearest(high, low, k, scale) {
  if (!LITTLE_ENDIAN) return -1;
  twoProduct(high, POW10[k]);
  DH = PH + low;
  const bv = DH - PH;
  DL = PL + ((PH - (DH - bv)) + (low - bv));
  const divisor = POW10[scale];
  let q = DH / divisor;
  let r = residual(q, divisor);
  // Most quotients are provably the nearest at once: q lies in [2^e, 2^(e+1)), half its ulp is
  // 2^(e-53) and q * 2^-54 at most that, so a residual under q * 2^-54 * 10^scale (less a margin
  // far above the residual's error) puts D / 10^scale closer to q than to any other double.
  if (Math.abs(r) < q * divisor * 5.551115123125783e-17 * 0.999999) return q;
  for (let step = 0; step < 3; step++) {
    if (r === 0) return q;
    const other = neighbour(q, r > 0);
    const o = residual(other, divisor);
    const a = Math.abs(r);
    const ao = Math.abs(o);
    if (Math.abs(a - ao) <= (a + ao) * 1e-9) return -1;
    if (a < ao) return q;
    q = other;
    r = o;
  }
  return -1;
}
// b[p..] holds the bytes of word, before end (never reading past the buffer: a read out of
// bounds would throw the optimized code away).
function same(b, p, end, word) {
  const n = word.length;
  if (p + n > end) return false;
  for (let i = 0; i < n; i++) if (b[p + i] !== word[i]) return false;
  return true;
}
const SLOTS = 1024;
// A value of up to 64 bytes has a row of ROW ints in its field's table: its length + 1 (0: an
// empty slot), then its words (wordsOf's layout; under 4 bytes, the bytes in one int). One
// contiguous row per value: its compare chases no pointer from object to object, which cost
// cache misses once the analyzer's work between lines had pushed those objects out.
const ROW = 17;
const ROW_BYTES = 4 * (ROW - 1);
// Per field: the last value, then a direct-mapped table of values by hash (bounded memory);
// longer values are kept whole in slots of their own (bytes, words, longStrings).
function newCache() {
  return {
    last: -1, // the last value's row; -2: a long value (lastBytes, lastWords); -1: none yet
    lastBytes: undefined,
    lastWords: undefined,
    lastString: '',
    rows: new Int32Array(SLOTS * ROW),
    strings: new Array(SLOTS).fill(''),
    bytes: new Array(SLOTS).fill(undefined),
    words: new Array(SLOTS).fill(undefined),
    longStrings: new Array(SLOTS).fill(''),
  };
}
// b[p, p + n) holds the value of the row at rows[r] (n its length, p + n within the line).
function sameRow(b, p, n, rows, r) {
  if (n < 4) {
    const packed = rows[r + 1];
    for (let i = 0; i < n; i++) if (b[p + i] !== ((packed >>> (8 * i)) & 255)) return false;
    return true;
  }
  const view = viewOf(b);
  const last = r + ((n + 3) >> 2);
  for (let w = r + 1, q = p; w < last; w++, q += 4) if (view.getInt32(q, true) !== rows[w]) return false;
  return view.getInt32(p + n - 4, true) === rows[last];
}
// A string of printable ASCII without escapes (anything else: the full path), the same string
// object each time a value repeats, so the analyzer's maps hash nothing new.
function str(b, p, end, cache) {
  if (b[p] !== 34) return -1;
  const a = p + 1;
  const last = cache.last;
  if (last >= 0) {
    const rows = cache.rows;
    const n = rows[last] - 1;
    if (a + n < end && b[a + n] === 34 && sameRow(b, a, n, rows, last)) {
      STR = cache.lastString;
      return a + n + 1;
    }
  } else if (last === -2) {
    const lastBytes = cache.lastBytes;
    const n = lastBytes.length;
    if (a + n < end && b[a + n] === 34 && sameWords(b, a, end, lastBytes, cache.lastWords)) {
      STR = cache.lastString;
      return a + n + 1;
    }
  }
  let q = a;
  let h = 0;
  for (;;) {
    if (q >= end) return -1;
    const c = b[q];
    if (c === 34) break;
    if (c < 32 || c === 92 || c > 126) return -1;
    h = (Math.imul(h, 31) + c) | 0;
    q++;
  }
  const slot = h & (SLOTS - 1);
  const n = q - a;
  let value;
  if (n <= ROW_BYTES) {
    const rows = cache.rows;
    const row = slot * ROW;
    if (rows[row] === n + 1 && sameRow(b, a, n, rows, row)) value = cache.strings[slot];
    else {
      rows[row] = n + 1;
      if (n < 4) {
        let packed = 0;
        for (let i = n - 1; i >= 0; i--) packed = (packed << 8) | b[a + i];
        rows[row + 1] = packed;
      } else {
        const view = viewOf(b);
        const words = (n + 3) >> 2;
        for (let i = 0; i < words; i++) rows[row + 1 + i] = view.getInt32(a + Math.min(i * 4, n - 4), true);
      }
      value = String.fromCharCode.apply(null, b.subarray(a, q));
      cache.strings[slot] = value;
    }
    cache.last = row;
  } else {
    let bytes = cache.bytes[slot];
    let words;
    if (bytes !== undefined && bytes.length === n && sameWords(b, a, end, bytes, cache.words[slot])) {
      value = cache.longStrings[slot];
      words = cache.words[slot];
    } else {
      if (n > 4096) return -1;
      bytes = new Uint8Array(b.subarray(a, q));
      words = wordsOf(bytes);
      value = String.fromCharCode.apply(null, bytes);
      cache.bytes[slot] = bytes;
      cache.words[slot] = words;
      cache.longStrings[slot] = value;
    }
    cache.last = -2;
    cache.lastBytes = bytes;
    cache.lastWords = words;
  }
  cache.lastString = value;
  STR = value;
  return q + 1;
}
// The field a key names, or -1 (unknown, or escaped: the full path).
function keyAt(b, p, end, keys) {
  if (b[p] !== 34) return -1;
  let q = p + 1;
  while (q < end && b[q] !== 34) { if (b[q] === 92) return -1; q++; }
  if (q - p > 256 || q + 1 >= end || b[q + 1] !== 58) return -1;
  const k = keys.get(String.fromCharCode.apply(null, b.subarray(p, q + 2)));
  return k === undefined ? -1 : k;
}
function generalized(o) {
  for (const key of Object.keys(o)) {
    o[key] = 0.5;
    o[key] = 'x';
    o[key] = null;
    o[key] = undefined;
  }
  return o;
}
function codePoints(v) {
  let n = 0;
  for (const _ of v) n++;
  return n;
}
`;

/**
 * The scanner's source for the `api` record of the published schema (one kind's entry of
 * docs/trace.schema.json), or undefined when the schema uses something the generator does not
 * implement for a required field (then every line takes the full path; a test fails).
 */
export function scannerCode(apiSchema: JsonSchema, order?: KeyOrder): string | undefined {
  helperId = 0;
  const nested: string[] = [];
  const { $schema: _ignored, ...schema } = apiSchema;
  const kind = (schema.properties as Record<string, JsonSchema> | undefined)?.kind;
  if (kind?.const !== 'api') return undefined;
  const top = objectCode(schema, nested, order?.keys[0] === 'kind' ? order : undefined);
  if (top === undefined) return undefined;
  // A line in the sniffed order is read straight; any other, or one the straight path refuses,
  // by the general function.
  const straightFirst = top.straight
    ? `\n    if (${top.straight}(b, start, end, record) === end) { straightLines++; return true; }`
    : '';
  return `${RUNTIME}
const NULL = bytesOf('null');
const TRUE = bytesOf('true');
const FALSE = bytesOf('false');
${nested.join('\n')}
const record = ${top.create};
const PREFIX = bytesOf(${JSON.stringify(API_LINE_PREFIX)});
let straightLines = 0;
return {
  record,
  get straightLines() { return straightLines; },
  scan(b, start, end) {${straightFirst}
    if (!same(b, start, end, PREFIX)) return false;
    return ${top.name}(b, start, end, record) === end;
  },
};`;
}

/** Runs generated scanner code (on the main thread or in a worker; no compiler needed). */
export function loadScanner(code: string): TraceScanner {
  return new Function(code)() as TraceScanner;
}
