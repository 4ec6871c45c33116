/**
 * The analyzer's fast path: reads an `api` line without `JSON.parse`. Most of the cost of
 * analysing a trace was `JSON.parse` building an object per line (and ajv checking it) that the
 * analyzer then read a few fields from; this scanner reads the fields straight off the line's
 * bytes into one reused object, checking each value against the schema.
 *
 * Two halves. A WebAssembly module (wasm/api-scanner.ts, built into api-scanner-wasm.ts) reads
 * the line's JSON: keys by a table it was given, strings by SIMD and interned per field (an id
 * each; the same value, the same id), numbers to the exact double. It knows nothing of the
 * schema. This file generates the other half from the published JSON Schema of the record kind
 * (docs/trace.schema.json, itself generated from schema.ts and tested against it), the same
 * document the ajv validators are compiled from: code that checks the module's row of values
 * against every type, enum, bound, required field and "no other field" rule there, and fills the
 * record. A keyword the generator does not know makes that property (or, if required, the whole
 * kind) go through the full path instead, so the scanner can be conservative but never more
 * lenient than the schema. A caller may also have the module count the accepted rows by some
 * string fields (ScannedCounts: the analysis's api counts, src/analyze/accumulators/api-counts.ts).
 *
 * What it accepts, and only that (anything else returns false and the line goes through the
 * full parse and validation, with its usual errors): a line that starts `{"kind":"api",` with
 * no whitespace between tokens (what JSON.stringify writes), keys in any order but none twice,
 * strings of printable ASCII with no escape sequence, numbers without an exponent and with at
 * most 19 significant digits, read to exactly the double JSON.parse gives. Strings are made once
 * per value and id (a JavaScript string the analyzer's maps have hashed before); the module's
 * tables are bounded, and when one fills up every id is forgotten and values are made again.
 *
 * Only `api` records take this path: they are nearly every line of a trace, and the analyzer
 * never keeps an api record (src/analyze/analyzer.ts `add`), so one object can be reused.
 */
import { API_SCANNER_WASM } from './api-scanner-wasm.ts';
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
  /**
   * A buffer of `bytes` bytes (at most) to read a file into: lines scanned from it are read in
   * place, any other line is copied first.
   */
  readBuffer(bytes: number): Buffer;
  /** The last scanned line's string ids, for counting by id instead of by string. */
  readonly row: ScannedRow;
}

/** Calls and points of one value (what ScannedCounts keeps per value). */
export interface ValueCount {
  calls: number;
  points: number;
}

/**
 * Counting in the module: calls and points by the value of some top-level string fields, for
 * rows the caller accepts, without JavaScript touching the row. The caller's maps (value →
 * ValueCount) stay the state: a value's running totals are loaded into the module when the
 * scanner first meets it and written back by stop() (and before the module forgets its
 * values), added to in the same order as the caller would have, so the doubles are the same.
 * One caller at a time.
 */
export interface ScannedCounts {
  /**
   * Counts by each of `fields` into the map at the same index (a value absent or null, and the
   * value `none`, as `none`), points from `pointsField` (a number field).
   */
  start(
    fields: readonly string[],
    pointsField: string,
    maps: Array<Map<string, ValueCount>>,
    none: string,
  ): void;
  /** `pending[0] = 1`: count the row read last (done at the next scan or commit()). */
  readonly pending: Uint8Array;
  /** Counts the pending row now: before anything else is counted, so the order is kept. */
  commit(): void;
  /**
   * Adds a call of `key` (a record the full path read) to counter `counter` if the module holds
   * that value's totals; false when the caller's map does (then the caller adds it there).
   */
  add(counter: number, key: string, points: number): boolean;
  /** Writes every total back into the maps and stops counting. */
  stop(): void;
}

/**
 * The ids behind the last scanned record's strings: the same value of a field, the same id, so
 * a counter can keep its entries in an array by id and skip the map lookup by string. The ids
 * of one generation only: when the scanner's tables fill up, it forgets every id and
 * `generation[0]` changes.
 */
export interface ScannedRow {
  /** `ids[idIndex(field)]`: the id of a top-level field's string, when its tag is STRING_TAG. */
  readonly ids: Int32Array;
  /** `tags[tagIndex(field)]`: what the field held (0: absent). */
  readonly tags: Uint8Array;
  readonly generation: Int32Array;
  /** Counting by value in the module (see ScannedCounts). */
  readonly counts: ScannedCounts;
  /** Where a top-level field's id and tag are (-1: not a field the scanner reads). */
  idIndex(field: string): number;
  tagIndex(field: string): number;
}

/** The tag of a string value in a ScannedRow. */
export const STRING_TAG = 2;

type JsonSchema = Record<string, unknown>;

/** Keywords that say nothing about which values are valid. */
const ANNOTATIONS = new Set(['description', 'title', 'examples', '$comment']);

/** The module's row tags (wasm/api-scanner.ts). */
const TAG = { absent: 0, number: 1, string: STRING_TAG, true: 3, false: 4, null: 5, object: 6 } as const;
/** The module's limits (wasm/api-scanner.ts: MAX_FIELDS, MAX_OBJECTS, MAX_KEY). */
const MAX_FIELDS = 64;
const MAX_OBJECTS = 8;
const MAX_KEY_BYTES = 64;
/**
 * The module's input area, which readBuffer() hands out: as much as a span reader reads at once
 * (lines.ts SPAN_CHUNK; not imported, lines.ts sits above this file through parser.ts).
 */
const INPUT_BYTES = 1024 * 1024;

/** What the generator builds up while it walks the schema. */
interface Generated {
  /** The objects the module reads, in the order it numbers them: their keys and nested objects. */
  objects: Array<{ keys: string[]; children: number[] }>;
  fields: number;
  /** Declarations shared by the checks: the string checks, the nested objects' holders. */
  declarations: string[];
}

/** Statements that read field `field` of the row into `v`, or `return false`. */
function valueCode(schema: JsonSchema, field: number, out: Generated): string | undefined {
  const scalar = scalarCode(schema, field, out);
  if (scalar !== undefined) return scalar;
  if ('anyOf' in schema) {
    const options = schema.anyOf as JsonSchema[];
    const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
    if (keys.length !== 1 || options.length !== 2) return undefined;
    const nullIndex = options.findIndex((o) => o.type === 'null' && Object.keys(o).length === 1);
    if (nullIndex === -1) return undefined;
    const inner = valueCode(options[1 - nullIndex]!, field, out);
    if (inner === undefined) return undefined;
    return `if (t === ${TAG.null}) v = null; else { ${inner} }`;
  }
  if (schema.type !== 'object') return undefined;
  const nested = objectCode(schema, out);
  if (nested === undefined) return undefined;
  const holder = `holder${out.declarations.length}`;
  out.declarations.push(`const ${holder} = ${nested.create};`);
  return `if (t !== ${TAG.object}) return false; { const o = ${holder}; ${nested.fill} } v = ${holder};`;
}

/** valueCode for a value that is not an object, nor one that may be null. */
function scalarCode(schema: JsonSchema, field: number, out: Generated): string | undefined {
  const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
  const type = schema.type;
  const known = (allowed: string[]) => keys.every((k) => k === 'type' || allowed.includes(k));
  const checks: string[] = [];
  switch (type) {
    case 'boolean':
      if (!known([])) return undefined;
      return `if (t === ${TAG.true}) v = true; else if (t === ${TAG.false}) v = false; else return false;`;
    case 'number':
    case 'integer': {
      if (!known(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])) return undefined;
      if (type === 'integer') checks.push('!Number.isInteger(v)');
      for (const [key, op] of [
        ['minimum', '>='],
        ['maximum', '<='],
        ['exclusiveMinimum', '>'],
        ['exclusiveMaximum', '<'],
      ] as const) {
        if (!(key in schema)) continue;
        const limit = schema[key];
        if (typeof limit !== 'number') return undefined;
        checks.push(`!(v ${op} ${limit})`);
      }
      return `if (t !== ${TAG.number}) return false; v = F64[V + ${field}];${checks.length ? ` if (${checks.join(' || ')}) return false;` : ''}`;
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
        // Only printable ASCII is read: one code point a byte.
        checks.push(`v.length < ${schema.minLength}`);
      }
      const read = `if (t !== ${TAG.string}) return false; const id = I32[2 * (V + ${field})];`;
      // A value is checked once, when the module first sees it (see materialize).
      if (checks.length === 0) return `${read} v = STRINGS[${field}][id];`;
      out.declarations.push(`VALID[${field}] = (v) => !(${checks.join(' || ')});`);
      return `${read} if (OK[${field}][id] !== 1) return false; v = STRINGS[${field}][id];`;
    }
    default:
      return undefined;
  }
}

/**
 * Statements that fill `o` with an object of `schema` from the row (fields absent from the
 * line set to undefined), or `return false`; and the expression creating `o`. Registers the
 * object, and the objects nested in it, with the module (Generated.objects).
 */
function objectCode(schema: JsonSchema, out: Generated): { fill: string; create: string } | undefined {
  const keys = Object.keys(schema).filter((k) => !ANNOTATIONS.has(k));
  if (!keys.every((k) => ['type', 'properties', 'required', 'additionalProperties'].includes(k)))
    return undefined;
  // With other properties allowed the scanner would still refuse them: only stricter, fine.
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return undefined;
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const names = Object.keys(properties);
  const required = new Set((schema.required ?? []) as string[]);
  for (const name of required) if (!(name in properties)) return undefined;
  if (names.length > 64 || out.fields + names.length > MAX_FIELDS || out.objects.length >= MAX_OBJECTS)
    return undefined;
  // The module numbers an object's fields together, nested objects' after them.
  const first = out.fields;
  out.fields += names.length;
  const object = { keys: names.map((name) => `${JSON.stringify(name)}:`), children: names.map(() => -1) };
  out.objects.push(object);
  const steps: string[] = [];
  for (const [i, name] of names.entries()) {
    const field = first + i;
    // A default fills an absent property: only a line that carries it can skip the full path.
    const { default: withDefault, ...rest } = properties[name]!;
    if (withDefault !== undefined) required.add(name);
    const objectsBefore = out.objects.length;
    const keyFits = Buffer.byteLength(object.keys[i]!) <= MAX_KEY_BYTES;
    const code = keyFits ? valueCode(rest, field, out) : undefined;
    // The first object registered for this value is the one it may be (later ones nest in it).
    if (code !== undefined && out.objects.length > objectsBefore) object.children[i] = objectsBefore;
    const property = `o[${JSON.stringify(name)}]`;
    if (code === undefined) {
      // A property the scanner cannot read: present means the full path; required, never fast.
      if (required.has(name)) return undefined;
      if (!keyFits) object.keys[i] = '';
      steps.push(`if (TAGS[T + ${field}] !== ${TAG.absent}) return false; ${property} = undefined;`);
      continue;
    }
    const absent = required.has(name) ? 'return false;' : `${property} = undefined;`;
    steps.push(
      `t = TAGS[T + ${field}]; if (t === ${TAG.absent}) ${absent} else { let v; ${code} ${property} = v; }`,
    );
  }
  // Every field present from the start and already holding every kind of value it will, so the
  // object keeps one shape and no optimized code is thrown away when a field first changes kind.
  const create = `generalized({ ${names.map((name) => `${JSON.stringify(name)}: undefined`).join(', ')} })`;
  return { fill: `let t; ${steps.join('\n    ')}`, create };
}

/** Shared by every generated scanner: the module's memory, the strings it has seen. */
const RUNTIME = `
const exports = instance.exports;
// Memory is laid out (and grown) once, before any view of it is made.
const inputAt = exports.init(${INPUT_BYTES});
const memory = exports.memory.buffer;
const U8 = new Uint8Array(memory);
const I32 = new Int32Array(memory);
const F64 = new Float64Array(memory);
const TAGS = U8;
const T = exports.tagsAt();
const V = exports.valuesAt() / 8;
const SCRATCH = exports.scratchAt();
const SCRATCH_BYTES = exports.scratchBytes();
const NEW_VALUES = exports.newValuesAt() / 4;
const STATUS_FULL = 1;
// Per field: its strings by id, and for a field with checks, whether each passed (1) or not (2).
const STRINGS = [];
const OK = [];
const VALID = [];
function generalized(o) {
  for (const key of Object.keys(o)) {
    o[key] = 0.5;
    o[key] = 'x';
    o[key] = null;
    o[key] = undefined;
  }
  return o;
}
function configure(objects) {
  const encoder = new TextEncoder();
  const numbers = objects.map((object) => exports.defineObject(object.keys.length));
  if (numbers.some((n) => n < 0)) throw new Error('api scanner: the schema has outgrown the module');
  let field = 0;
  for (const object of objects)
    object.keys.forEach((key, i) => {
      const bytes = encoder.encode(key);
      U8.set(bytes, exports.keysAt() + field * ${MAX_KEY_BYTES});
      exports.defineField(field, bytes.length, object.children[i] < 0 ? -1 : numbers[object.children[i]]);
      STRINGS.push([]);
      OK.push(undefined);
      field++;
    });
  const prefix = encoder.encode(${JSON.stringify(API_LINE_PREFIX)});
  U8.set(prefix, exports.prefixAt());
  exports.setPrefix(prefix.length);
}
// The values the last scan met first: their strings, made once each (printable ASCII: latin1).
function materialize() {
  const n = exports.newValues();
  for (let i = 0; i < n; i++) {
    const field = I32[NEW_VALUES + 2 * i];
    const id = I32[NEW_VALUES + 2 * i + 1];
    const at = exports.valueAt(field, id);
    const value = String.fromCharCode.apply(null, U8.subarray(at, at + exports.valueLength(field, id)));
    STRINGS[field][id] = value;
    const valid = VALID[field];
    if (valid !== undefined) (OK[field] ??= [])[id] = valid(value) ? 1 : 2;
    if (counting !== null && COUNTER_OF[field] >= 0) loadSlot(COUNTER_OF[field], id, value);
  }
}
// Counting by value in the module (ScannedCounts): null when not counting.
let counting = null;
const COUNTER_OF = [];
const PENDING = new Uint8Array(memory, exports.pendingAt(), 1);
const NONE_SLOT = exports.noneSlot();
// Counter c's value id (of this generation) takes its running totals from the caller's map.
function loadSlot(c, id, value) {
  if (value === counting.none) {
    exports.countAsNone(c, id);
    return;
  }
  counting.ids[c].set(value, id);
  const entry = counting.maps[c].get(value);
  const at = exports.countsAt(c, id) / 8;
  F64[at] = entry === undefined ? 0 : entry.calls;
  F64[at + 1] = entry === undefined ? 0 : entry.points;
}
function loadNone(c) {
  const entry = counting.maps[c].get(counting.none);
  const at = exports.countsAt(c, NONE_SLOT) / 8;
  F64[at] = entry === undefined ? 0 : entry.calls;
  F64[at + 1] = entry === undefined ? 0 : entry.points;
}
function storeSlot(map, value, at) {
  const calls = F64[at];
  if (calls === 0) return;
  const entry = map.get(value);
  if (entry === undefined) map.set(value, { calls, points: F64[at + 1] });
  else {
    entry.calls = calls;
    entry.points = F64[at + 1];
  }
}
// The module's totals written back into the caller's maps.
function harvest() {
  exports.count();
  for (let c = 0; c < counting.maps.length; c++) {
    const map = counting.maps[c];
    for (const [value, id] of counting.ids[c]) storeSlot(map, value, exports.countsAt(c, id) / 8);
    storeSlot(map, counting.none, exports.countsAt(c, NONE_SLOT) / 8);
  }
}
const counts = {
  pending: PENDING,
  start(fields, pointsField, maps, none) {
    if (counting !== null) throw new Error('api scanner: already counting');
    if (fields.length > exports.maxCounters()) throw new Error('api scanner: too many counters');
    const points = TOP.indexOf(pointsField);
    if (points < 0) throw new Error('api scanner: no field ' + pointsField);
    counting = { maps, none, ids: fields.map(() => new Map()) };
    COUNTER_OF.length = 0;
    for (let f = 0; f < STRINGS.length; f++) COUNTER_OF.push(-1);
    fields.forEach((name, c) => {
      const field = TOP.indexOf(name);
      if (field < 0) throw new Error('api scanner: no field ' + name);
      COUNTER_OF[field] = c;
      exports.defineCounter(c, field, points);
      exports.countAsNone(c, -1);
      loadNone(c);
      STRINGS[field].forEach((value, id) => loadSlot(c, id, value));
    });
    PENDING[0] = 0;
  },
  commit() {
    if (PENDING[0] !== 0) exports.count();
  },
  add(c, key, points) {
    let at;
    if (key === counting.none) at = exports.countsAt(c, NONE_SLOT) / 8;
    else {
      const id = counting.ids[c].get(key);
      if (id === undefined) return false;
      at = exports.countsAt(c, id) / 8;
    }
    F64[at] += 1;
    F64[at + 1] += points;
    return true;
  },
  stop() {
    if (counting === null) return;
    harvest();
    counting = null;
    PENDING[0] = 0;
  },
};
const GENERATION = new Int32Array(1);
function forget() {
  if (counting !== null) harvest();
  exports.reset();
  GENERATION[0]++;
  for (let f = 0; f < STRINGS.length; f++) {
    STRINGS[f] = [];
    if (OK[f] !== undefined) OK[f] = [];
  }
  if (counting !== null)
    for (let c = 0; c < counting.maps.length; c++) {
      counting.ids[c].clear();
      loadNone(c);
    }
}
// The module reads the line at [p, end) of its memory; the row is then checked by fillApiRecord().
function read(p, end) {
  let ok = exports.scan(p, end);
  if (exports.newValues() > 0) materialize();
  if (ok === 0 && exports.lastStatus() === STATUS_FULL) {
    forget();
    ok = exports.scan(p, end);
    if (exports.newValues() > 0) materialize();
  }
  return ok === 1 && fillApiRecord(record);
}
`;

/**
 * The scanner's source for the `api` record of the published schema (one kind's entry of
 * docs/trace.schema.json), or undefined when the schema uses something the generator does not
 * implement for a required field (then every line takes the full path; a test fails). It runs
 * with `instance`, the module's instance, in scope (loadScanner).
 */
export function scannerCode(apiSchema: JsonSchema): string | undefined {
  const out: Generated = { objects: [], fields: 0, declarations: [] };
  const { $schema: _ignored, ...schema } = apiSchema;
  const kind = (schema.properties as Record<string, JsonSchema> | undefined)?.kind;
  if (kind?.const !== 'api') return undefined;
  const top = objectCode(schema, out);
  if (top === undefined) return undefined;
  return `${RUNTIME}
${out.declarations.join('\n')}
configure(${JSON.stringify(out.objects)});
// The top-level fields, numbered from 0 in this order (objectCode).
const TOP = ${JSON.stringify(Object.keys((schema.properties ?? {}) as object))};
const record = ${top.create};
function fillApiRecord(o) {
  ${top.fill}
  return true;
}
return {
  record,
  scan(b, start, end) {
    if (b.buffer === memory) return read(b.byteOffset + start, b.byteOffset + end);
    if (end - start > SCRATCH_BYTES) return false;
    U8.set(b.subarray(start, end), SCRATCH);
    return read(SCRATCH, SCRATCH + end - start);
  },
  readBuffer(bytes) {
    return Buffer.from(memory, inputAt, Math.min(bytes, ${INPUT_BYTES}));
  },
  row: {
    ids: I32,
    tags: TAGS,
    generation: GENERATION,
    counts,
    idIndex: (name) => (TOP.includes(name) ? 2 * (V + TOP.indexOf(name)) : -1),
    tagIndex: (name) => (TOP.includes(name) ? T + TOP.indexOf(name) : -1),
  },
};`;
}

// Node's WebAssembly global: the ES2023 library (no DOM) does not declare it.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: Record<string, Record<string, unknown>>) => object;
};

let compiled: object | undefined;

/** Runs generated scanner code (on the main thread or in a worker) with a module instance of its own. */
export function loadScanner(code: string): TraceScanner {
  compiled ??= new WebAssembly.Module(Buffer.from(API_SCANNER_WASM, 'base64'));
  const instance = new WebAssembly.Instance(compiled, {
    env: {
      abort() {
        throw new Error('api scanner: aborted');
      },
    },
  });
  return new Function('instance', 'Buffer', code)(instance, Buffer) as TraceScanner;
}
