// The api-line scanner's WebAssembly half (AssemblyScript). Built by `npm run build:wasm`
// (scripts/build-wasm.ts) into src/trace/api-scanner-wasm.ts, which is committed; src/trace/scanner.ts
// is the other half and says what the whole does. This half knows JSON syntax and nothing of the
// trace schema: it reads one line, an object of keys it was given (objects nested in it too), into
// a row of tagged values (numbers as doubles, strings as ids of a table per field, true, false,
// null), and refuses anything it cannot read exactly. The JavaScript half checks the row against
// the schema and makes the record. On request it also counts the rows that half accepted, calls
// and points by the string id of some fields (count()), so an analysis does not do it per record.
//
// Memory is laid out once, by init(), and never grows afterwards (views of it stay valid). Every
// area has at least 64 bytes of slack after it: 16-byte loads may run past a value's end.

const MAX_FIELDS: i32 = 64;
const MAX_OBJECTS: i32 = 8;
/** Longest key, quotes and colon included ("name":), in its 64-byte slot of the key table. */
const MAX_KEY: i32 = 64;
/** Longest string value read; longer ones are refused (the full path reads the line). */
const MAX_STRING: i32 = 4096;
/** String tables: one per field that has held a string, SLOTS hash slots and CAP values each. */
const MAX_TABLES: i32 = 24;
const SLOTS: i32 = 32768;
const CAP: i32 = 16384;
const ARENA_BYTES: i32 = 8 << 20;
/** Fields whose rows can be counted here (calls and points by value): see count(). */
const MAX_COUNTERS: i32 = 16;
/** A line copied in from a buffer outside this memory (a test, a line joined across reads). */
const SCRATCH_BYTES: i32 = 64 << 10;

// Tags of a row's values (0: the key was absent).
const TAG_NUMBER: u8 = 1;
const TAG_STRING: u8 = 2;
const TAG_TRUE: u8 = 3;
const TAG_FALSE: u8 = 4;
const TAG_NULL: u8 = 5;
const TAG_OBJECT: u8 = 6;

// What scan() found out besides accepting or refusing a line.
const STATUS_OK: i32 = 0;
/** A string table or the arena is full: reset() and scan the line again. */
const STATUS_FULL: i32 = 1;

let heap: usize = 0;
let KEYS: usize = 0; // MAX_FIELDS slots of MAX_KEY bytes
let KEY_LENGTH: usize = 0; // i32 per field
let CHILD: usize = 0; // i32 per field: the object its value may be, or -1
let OBJECT_FIRST: usize = 0; // i32 per object: its first field
let OBJECT_FIELDS: usize = 0; // i32 per object: how many fields
let PREDICTED: usize = 0; // i32 per field, then per object: the field whose key came next last time
let TABLE_OF: usize = 0; // i32 per field: its string table, or -1
let LAST_ID: usize = 0; // i32 per field: the id of the string it held last, or -1
let COUNTED_FIELD: usize = 0; // i32 per counter: the field it counts by
let NONE_ID: usize = 0; // i32 per counter: the id of the value counted as absent, or -1
let COUNTS: usize = 0; // per counter, CAP + 1 slots of two f64 (calls, points); slot CAP: absent or null
let PENDING: usize = 0; // u8: 1 when the row read last is to be counted (set by the JavaScript half)
let TABLE_COUNT: usize = 0; // i32 per table: values in it
let TABLE_SLOTS: usize = 0; // u32 per slot: value id + 1, 0 when free
let ENTRIES: usize = 0; // 16 bytes per value: arena offset, length, hash
let ARENA: usize = 0;
let NEW_VALUES: usize = 0; // (field, id) pairs: values first seen by the last scan
let VALUES: usize = 0; // 8 bytes per field: the row's numbers (f64) and string ids (i32)
let TAGS: usize = 0; // u8 per field: the row's tags
let PREFIX: usize = 0; // the bytes every line read starts with
let SCRATCH: usize = 0;
let INPUT: usize = 0;
let inputBytes: i32 = 0;

let prefixLength: i32 = 0;
let fieldCount: i32 = 0;
let objectCount: i32 = 0;
let tableCount: i32 = 0;
let arenaUsed: i32 = 0;
let newCount: i32 = 0;
let status: i32 = STATUS_OK;
let counterCount: i32 = 0;
let pointsField: i32 = -1;

function reserve(bytes: i32): usize {
  const at = heap;
  heap += ((<usize>bytes + 64 + 15) & ~(<usize>15));
  return at;
}

/** Lays memory out, with an input area of `input` bytes for reads; returns the input area's offset. */
export function init(input: i32): usize {
  heap = (__heap_base + 15) & ~(<usize>15);
  KEYS = reserve(MAX_FIELDS * MAX_KEY);
  KEY_LENGTH = reserve(MAX_FIELDS * 4);
  CHILD = reserve(MAX_FIELDS * 4);
  OBJECT_FIRST = reserve(MAX_OBJECTS * 4);
  OBJECT_FIELDS = reserve(MAX_OBJECTS * 4);
  PREDICTED = reserve((MAX_FIELDS + MAX_OBJECTS) * 4);
  TABLE_OF = reserve(MAX_FIELDS * 4);
  LAST_ID = reserve(MAX_FIELDS * 4);
  COUNTED_FIELD = reserve(MAX_COUNTERS * 4);
  NONE_ID = reserve(MAX_COUNTERS * 4);
  COUNTS = reserve(MAX_COUNTERS * (CAP + 1) * 16);
  PENDING = reserve(1);
  TABLE_COUNT = reserve(MAX_TABLES * 4);
  TABLE_SLOTS = reserve(MAX_TABLES * SLOTS * 4);
  ENTRIES = reserve(MAX_TABLES * CAP * 16);
  ARENA = reserve(ARENA_BYTES);
  NEW_VALUES = reserve(MAX_FIELDS * 8);
  VALUES = reserve(MAX_FIELDS * 8);
  TAGS = reserve(MAX_FIELDS);
  PREFIX = reserve(16);
  SCRATCH = reserve(SCRATCH_BYTES);
  INPUT = reserve(input);
  inputBytes = input;
  const pages = (heap + 0xffff) >> 16;
  const have = <usize>memory.size();
  if (pages > have) memory.grow(<i32>(pages - have));
  for (let f = 0; f < MAX_FIELDS; f++) store<i32>(TABLE_OF + (<usize>f << 2), -1);
  for (let f = 0; f < MAX_FIELDS; f++) store<i32>(LAST_ID + (<usize>f << 2), -1);
  for (let c = 0; c < MAX_COUNTERS; c++) store<i32>(NONE_ID + (<usize>c << 2), -1);
  for (let f = 0; f < MAX_FIELDS + MAX_OBJECTS; f++) store<i32>(PREDICTED + (<usize>f << 2), -1);
  return INPUT;
}

// Where the JavaScript half reads and writes.
export function keysAt(): usize {
  return KEYS;
}
export function prefixAt(): usize {
  return PREFIX;
}
export function scratchAt(): usize {
  return SCRATCH;
}
export function scratchBytes(): i32 {
  return SCRATCH_BYTES;
}
export function valuesAt(): usize {
  return VALUES;
}
export function tagsAt(): usize {
  return TAGS;
}
export function newValuesAt(): usize {
  return NEW_VALUES;
}
export function newValues(): i32 {
  return newCount;
}
export function lastStatus(): i32 {
  return status;
}
export function maxFields(): i32 {
  return MAX_FIELDS;
}
export function maxKeyBytes(): i32 {
  return MAX_KEY;
}
export function maxObjects(): i32 {
  return MAX_OBJECTS;
}

/** The bytes every line read must start with (written at prefixAt(); 16 at most). */
export function setPrefix(length: i32): void {
  prefixLength = length;
}

/** An object of `fields` fields, numbered from the next free field number on; its number. */
export function defineObject(fields: i32): i32 {
  if (objectCount >= MAX_OBJECTS || fieldCount + fields > MAX_FIELDS || fields > 64) return -1;
  const o = objectCount++;
  store<i32>(OBJECT_FIRST + (<usize>o << 2), fieldCount);
  store<i32>(OBJECT_FIELDS + (<usize>o << 2), fields);
  fieldCount += fields;
  return o;
}

/** Field f's key is the `length` bytes at keysAt() + f * maxKeyBytes(); `child`: its object, or -1. */
export function defineField(f: i32, length: i32, child: i32): void {
  store<i32>(KEY_LENGTH + (<usize>f << 2), length);
  store<i32>(CHILD + (<usize>f << 2), child);
}

/** Forgets every string value: ids start again from 0 in every table. */
export function reset(): void {
  for (let t = 0; t < tableCount; t++) {
    memory.fill(TABLE_SLOTS + ((<usize>t * <usize>SLOTS) << 2), 0, <usize>SLOTS << 2);
    store<i32>(TABLE_COUNT + (<usize>t << 2), 0);
  }
  arenaUsed = 0;
  for (let f = 0; f < MAX_FIELDS; f++) store<i32>(LAST_ID + (<usize>f << 2), -1);
  for (let c = 0; c < MAX_COUNTERS; c++) store<i32>(NONE_ID + (<usize>c << 2), -1);
}

/** Where value `id` of field f is in the arena, and its length. */
export function valueAt(f: i32, id: i32): usize {
  return ARENA + <usize>load<u32>(entry(f, id));
}
export function valueLength(f: i32, id: i32): i32 {
  return load<i32>(entry(f, id) + 4);
}
// @ts-ignore: decorator
@inline function entry(f: i32, id: i32): usize {
  const t = load<i32>(TABLE_OF + (<usize>f << 2));
  return ENTRIES + ((<usize>t * <usize>CAP + <usize>id) << 4);
}

/**
 * Reads the line at [p, end) of this memory into the row: 1, or 0 when it is not a line this
 * scanner reads (then see lastStatus()). The byte at `end` is borrowed as a stop for every
 * loop (no value runs past it) and put back.
 */
export function scan(p: usize, end: usize): i32 {
  count();
  status = STATUS_OK;
  newCount = 0;
  if (<i32>(end - p) < prefixLength || !same(p, PREFIX, prefixLength)) return 0;
  const kept = load<u8>(end);
  store<u8>(end, 0);
  lineEnd = end;
  const zero = i64x2.splat(0);
  for (let f = 0; f < fieldCount; f += 16) v128.store(TAGS + <usize>f, zero);
  const after = object(p, 0);
  store<u8>(end, kept);
  return after == end ? 1 : 0;
}

// Counting. A row read here may be one the JavaScript half refuses (it checks the schema), so
// a row is counted only once that half says so (PENDING), at the next scan() or count(): by
// then its tags and values are still the row's. The counts of a value are the caller's running
// totals (it loads them into a slot when the value is first seen, valueCountsAt(), and reads them
// back before reset()): added here in the same order as it would have, to the same doubles.

export function pendingAt(): usize {
  return PENDING;
}
/** Counter c counts rows by field f's string (absent or null: slot CAP); points from field `points`. */
export function defineCounter(c: i32, f: i32, points: i32): void {
  store<i32>(COUNTED_FIELD + (<usize>c << 2), f);
  if (c >= counterCount) counterCount = c + 1;
  pointsField = points;
}
export function maxCounters(): i32 {
  return MAX_COUNTERS;
}
/** Counter c's slot of value `id` (CAP: absent or null): calls, then points, two f64. */
export function countsAt(c: i32, id: i32): usize {
  return COUNTS + ((<usize>c * <usize>(CAP + 1) + <usize>id) << 4);
}
export function noneSlot(): i32 {
  return CAP;
}
/** Value `id` of counter c's field is counted as absent (it is the caller's word for absent). */
export function countAsNone(c: i32, id: i32): void {
  store<i32>(NONE_ID + (<usize>c << 2), id);
}

/** Counts the row read last, if the JavaScript half asked for it. */
export function count(): void {
  if (load<u8>(PENDING) == 0) return;
  store<u8>(PENDING, 0);
  const points = load<f64>(VALUES + (<usize>pointsField << 3));
  for (let c = 0; c < counterCount; c++) {
    const f = load<i32>(COUNTED_FIELD + (<usize>c << 2));
    let id = CAP;
    if (load<u8>(TAGS + <usize>f) == TAG_STRING) {
      id = load<i32>(VALUES + (<usize>f << 3));
      if (id == load<i32>(NONE_ID + (<usize>c << 2))) id = CAP;
    }
    const slot = countsAt(c, id);
    store<f64>(slot, load<f64>(slot) + 1);
    store<f64>(slot + 8, load<f64>(slot + 8) + points);
  }
}

// @ts-ignore: decorator
@inline function same(p: usize, bytes: usize, n: i32): bool {
  if (n > 16) return memory.compare(p, bytes, <usize>n) == 0;
  const equal = i8x16.bitmask(i8x16.eq(v128.load(p), v128.load(bytes)));
  const want = (1 << n) - 1;
  return (equal & want) == want;
}

/** An object of object o at p ('{'): the position after it, or 0. */
function object(p: usize, o: i32): usize {
  if (load<u8>(p) != 123) return 0;
  p++;
  if (load<u8>(p) == 125) return p + 1;
  const first = load<i32>(OBJECT_FIRST + (<usize>o << 2));
  let seen: u64 = 0;
  // Keys are predicted from the key before (the object's start for the first): lines of one
  // file mostly share their key order.
  let prediction = PREDICTED + (<usize>(MAX_FIELDS + o) << 2);
  for (;;) {
    let f = load<i32>(prediction);
    if (f < 0 || !same(p, KEYS + (<usize>f << 6), load<i32>(KEY_LENGTH + (<usize>f << 2)))) {
      f = keyAt(p, o, first);
      if (f < 0) return 0;
      store<i32>(prediction, f);
    }
    p += <usize>load<i32>(KEY_LENGTH + (<usize>f << 2));
    const bit: u64 = (<u64>1) << (<u64>(f - first));
    if ((seen & bit) != 0) return 0;
    seen |= bit;
    p = value(p, f);
    if (p == 0) return 0;
    prediction = PREDICTED + (<usize>f << 2);
    const c = load<u8>(p);
    if (c == 44) {
      p++;
      continue;
    }
    if (c == 125) return p + 1;
    return 0;
  }
}

/** The field of object o whose key is at p, or -1. */
function keyAt(p: usize, o: i32, first: i32): i32 {
  const last = first + load<i32>(OBJECT_FIELDS + (<usize>o << 2));
  for (let f = first; f < last; f++) {
    const n = load<i32>(KEY_LENGTH + (<usize>f << 2));
    if (n > 0 && same(p, KEYS + (<usize>f << 6), n)) return f;
  }
  return -1;
}

/** Field f's value at p into the row: the position after it, or 0. */
function value(p: usize, f: i32): usize {
  const c = <i32>load<u8>(p);
  const tag = TAGS + <usize>f;
  const slot = VALUES + (<usize>f << 3);
  if (c == 34) {
    p = string(p, f);
    if (p == 0) return 0;
    store<u8>(tag, TAG_STRING);
    store<i32>(slot, STRING_ID); // the slot's first four bytes: an Int32Array reads it
  } else if (c == 45 || <u32>(c - 48) < 10) {
    p = number(p);
    if (p == 0) return 0;
    store<u8>(tag, TAG_NUMBER);
    store<f64>(slot, NUMBER);
  } else if (c == 116) {
    if (load<u32>(p) != 0x65757274) return 0; // true
    store<u8>(tag, TAG_TRUE);
    p += 4;
  } else if (c == 102) {
    if (load<u32>(p + 1) != 0x65736c61) return 0; // (f)alse
    store<u8>(tag, TAG_FALSE);
    p += 5;
  } else if (c == 110) {
    if (load<u32>(p) != 0x6c6c756e) return 0; // null
    store<u8>(tag, TAG_NULL);
    p += 4;
  } else if (c == 123) {
    const child = load<i32>(CHILD + (<usize>f << 2));
    if (child < 0) return 0;
    p = object(p, child);
    if (p == 0) return 0;
    store<u8>(tag, TAG_OBJECT);
  } else return 0;
  return p;
}

let STRING_ID: i32 = 0;
/** The end of the line being scanned (its stop byte). */
let lineEnd: usize = 0;

/**
 * A string of printable ASCII without escapes at p (its opening quote), as the id of its value
 * in field f's table: the position after it, or 0 (anything else: the full path reads the line).
 */
function string(p: usize, f: i32): usize {
  const start = p + 1;
  // Most fields hold the value they held on the line before: those bytes, then the closing
  // quote, are that value (it was read and checked then), with no search, hash nor lookup.
  const lastId = load<i32>(LAST_ID + (<usize>f << 2));
  if (lastId >= 0) {
    const e = entry(f, lastId);
    const n = load<i32>(e + 4);
    const quote = start + <usize>n;
    if (quote < lineEnd && load<u8>(quote) == 34 && equal(ARENA + <usize>load<u32>(e), start, n)) {
      STRING_ID = lastId;
      return quote + 1;
    }
  }
  let q = start;
  let at = 0;
  for (;;) {
    const v = v128.load(q);
    const quotes = i8x16.bitmask(i8x16.eq(v, i8x16.splat(34)));
    const bad = i8x16.bitmask(
      v128.or(
        v128.or(i8x16.eq(v, i8x16.splat(92)), i8x16.lt_u(v, i8x16.splat(32))),
        i8x16.gt_u(v, i8x16.splat(126)),
      ),
    );
    if (quotes != 0) {
      at = ctz(quotes);
      if ((bad & ((1 << at) - 1)) != 0) return 0;
      break;
    }
    if (bad != 0) return 0;
    q += 16;
  }
  q += <usize>at;
  const n = <i32>(q - start);
  if (n > MAX_STRING) return 0;
  const id = intern(start, n, f);
  if (id < 0) return 0;
  STRING_ID = id;
  store<i32>(LAST_ID + (<usize>f << 2), id);
  return q + 1;
}

/** The id of the n bytes at p in field f's table, added if new; -1 when they do not fit. */
function intern(p: usize, n: i32, f: i32): i32 {
  let h: u64 = <u64>n * 0x9e3779b97f4a7c15;
  let i = 0;
  for (; i + 8 <= n; i += 8) h = (h ^ load<u64>(p + <usize>i)) * 0xff51afd7ed558ccd;
  if (i < n) h = (h ^ (load<u64>(p + <usize>i) & ((<u64>1 << (<u64>(n - i) * 8)) - 1))) * 0xff51afd7ed558ccd;
  const hash = <u32>(h ^ (h >> 32));
  let t = load<i32>(TABLE_OF + (<usize>f << 2));
  if (t < 0) {
    if (tableCount >= MAX_TABLES) return -1;
    t = tableCount++;
    store<i32>(TABLE_OF + (<usize>f << 2), t);
  }
  const slots = TABLE_SLOTS + ((<usize>t * <usize>SLOTS) << 2);
  const entries = ENTRIES + ((<usize>t * <usize>CAP) << 4);
  let s = hash & (SLOTS - 1);
  for (;;) {
    const taken = load<u32>(slots + (<usize>s << 2));
    if (taken == 0) break;
    const e = entries + (<usize>(taken - 1) << 4);
    if (load<u32>(e + 8) == hash && load<i32>(e + 4) == n && equal(ARENA + <usize>load<u32>(e), p, n))
      return <i32>(taken - 1);
    s = (s + 1) & (SLOTS - 1);
  }
  const count = load<i32>(TABLE_COUNT + (<usize>t << 2));
  if (count >= CAP || arenaUsed + n > ARENA_BYTES) {
    status = STATUS_FULL;
    return -1;
  }
  const e = entries + (<usize>count << 4);
  store<u32>(e, arenaUsed);
  store<i32>(e + 4, n);
  store<u32>(e + 8, hash);
  memory.copy(ARENA + <usize>arenaUsed, p, <usize>n);
  arenaUsed += n;
  store<u32>(slots + (<usize>s << 2), count + 1);
  store<i32>(TABLE_COUNT + (<usize>t << 2), count + 1);
  const pair = NEW_VALUES + (<usize>newCount << 3);
  store<i32>(pair, f);
  store<i32>(pair + 4, count);
  newCount++;
  return count;
}

/** n bytes at a and b are equal (both followed by slack: whole words, the last one masked). */
function equal(a: usize, b: usize, n: i32): bool {
  let i = 0;
  for (; i + 8 <= n; i += 8) if (load<u64>(a + <usize>i) != load<u64>(b + <usize>i)) return false;
  if (i == n) return true;
  const mask = (<u64>1 << (<u64>(n - i) * 8)) - 1;
  return ((load<u64>(a + <usize>i) ^ load<u64>(b + <usize>i)) & mask) == 0;
}

let NUMBER: f64 = 0;
// @ts-ignore: decorator
@lazy const POW10: StaticArray<f64> = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
  1e19, 1e20, 1e21, 1e22,
];

/**
 * A JSON number without exponent, with at most 19 significant digits, read to exactly the
 * double JSON.parse gives: the position after it, or 0. The digits make an exact integer m
 * (19 digits fit 64 bits) over 10^scale, scale ≤ 22 (10^22 is the largest power of ten a
 * double holds exactly). Below 2^53, m is an exact double and one division rounds correctly
 * (Clinger's fast path); above, nearest() finds the nearest double or refuses a near-tie.
 */
function number(p: usize): usize {
  let c = <i32>load<u8>(p);
  let negative = false;
  if (c == 45) {
    negative = true;
    c = <i32>load<u8>(++p);
  }
  let m: u64 = 0;
  let digits = 0;
  if (c == 48) {
    c = <i32>load<u8>(++p);
    if (<u32>(c - 48) < 10) return 0; // a leading zero
  } else if (<u32>(c - 49) < 9) {
    do {
      if (++digits > 19) return 0;
      m = m * 10 + <u64>(c - 48);
      c = <i32>load<u8>(++p);
    } while (<u32>(c - 48) < 10);
  } else return 0;
  let scale = 0;
  if (c == 46) {
    const point = p;
    c = <i32>load<u8>(++p);
    if (<u32>(c - 48) >= 10) return 0;
    // Zeros before the first significant digit (0.000123) are not digits of m.
    if (digits == 0) while (c == 48) c = <i32>load<u8>(++p);
    while (<u32>(c - 48) < 10) {
      if (++digits > 19) return 0;
      m = m * 10 + <u64>(c - 48);
      c = <i32>load<u8>(++p);
    }
    scale = <i32>(p - point - 1);
  }
  if (c == 101 || c == 69 || scale > 22) return 0;
  let value: f64;
  if (m < 9007199254740992) value = scale == 0 ? <f64>m : <f64>m / unchecked(POW10[scale]);
  else {
    value = nearest(m, scale);
    if (value < 0) return 0;
  }
  NUMBER = negative ? -value : value;
  return p;
}

// a * b as PH + PL exactly (Dekker's product).
let PH: f64 = 0;
let PL: f64 = 0;
// @ts-ignore: decorator
@inline function twoProduct(a: f64, b: f64): void {
  const product = a * b;
  let t = 134217729.0 * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = 134217729.0 * b;
  const bh = t - (t - b);
  const bl = b - bh;
  PL = ah * bh - product + ah * bl + al * bh + al * bl;
  PH = product;
}

// m as DH + DL exactly; the residual m - q * divisor, to a relative error near 2^-52.
let DH: f64 = 0;
let DL: f64 = 0;
// @ts-ignore: decorator
@inline function residual(q: f64, divisor: f64): f64 {
  twoProduct(q, divisor);
  return DH - PH + (DL - PL);
}

/**
 * The double nearest to m / 10^scale (m ≥ 2^53), or -1 when it is too close to call (a tie,
 * which JSON.parse rounds to even). The quotient of the doubles is within two doubles of the
 * nearest; stepping towards the side the residual points to finds it: the nearest is the first
 * whose neighbour on that side has a larger residual.
 */
function nearest(m: u64, scale: i32): f64 {
  DH = <f64>m;
  DL = <f64>(<i64>(m - <u64>DH));
  const divisor = unchecked(POW10[scale]);
  let q = DH / divisor;
  let r = residual(q, divisor);
  // Most quotients are the nearest at once: q lies in [2^e, 2^(e+1)), half its ulp is 2^(e-53)
  // and q * 2^-54 at most that, so a residual under q * 2^-54 * 10^scale (less a margin far
  // above the residual's error) puts m / 10^scale closer to q than to any other double.
  if (Math.abs(r) < q * divisor * 5.551115123125783e-17 * 0.999999) return q;
  for (let step = 0; step < 3; step++) {
    if (r == 0) return q;
    const bits = reinterpret<i64>(q);
    const other = reinterpret<f64>(r > 0 ? bits + 1 : bits - 1);
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
