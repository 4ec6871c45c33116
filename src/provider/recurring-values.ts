/**
 * Request bodies parsed with what recurs taken from earlier ones. A CLI resends its system
 * prompt, its tools and its whole history on every request (Claude Code's are 70 KB before the
 * first prompt), and parsing them again, then hashing and comparing the fresh strings while
 * counting, was most of what the emulator did per request beyond serving it. So a body's top-level
 * members, and the elements of a top-level array (a history's messages, the tools), are found by
 * their bytes; one of at least `RECURRING_FROM_BYTES` whose bytes equal a remembered value's is that
 * value again, the same objects (nothing downstream changes a parsed body), and the rest is
 * parsed as before.
 *
 * The result is what `JSON.parse` gives for the whole body, key order included
 * (test/provider-recurring-values.test.ts searches for a counter-example). Anything but an object of
 * members at the top (an array, a `__proto__` key, a byte out of place) is parsed whole, so a
 * broken body gets `JSON.parse`'s own message.
 */
import type { ParsedBody } from './types.ts';

/** Values smaller than this are parsed each time: looking them up would cost about as much. */
export const RECURRING_FROM_BYTES = 1024;

/**
 * A body of more top-level members than this is parsed whole: a body is a few dozen fields, and
 * a member read alone costs a parse of its key and its value of their own.
 */
const MAX_MEMBERS = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

const isSpace = (byte: number | undefined) =>
  byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** A remembered value: its bytes (a copy of its own) and what they parse to. */
interface Entry {
  bytes: Buffer;
  value: unknown;
  /** Its fingerprint (its bucket). */
  hash: number;
  /** The top-level member it was last the value of (`lastOf`), if any. */
  lastOf?: string;
}

/** Where the body's structure is not the plain shape this reads: parse it whole instead. */
class NotPlain extends Error {}
const NOT_PLAIN = new NotPlain();

function skipSpace(bytes: Buffer, at: number): number {
  while (isSpace(bytes[at])) at += 1;
  return at;
}

/** The index of the quote that closes the string opened at `open`, or -1. */
function stringEnd(bytes: Buffer, open: number): number {
  let at = bytes.indexOf(QUOTE, open + 1);
  while (at >= 0) {
    let slashes = 0;
    while (bytes[at - 1 - slashes] === BACKSLASH) slashes += 1;
    if (slashes % 2 === 0) return at;
    at = bytes.indexOf(QUOTE, at + 1);
  }
  return -1;
}

/**
 * Where the value that starts at `at` ends (exclusive). Only its extent: whether it is valid JSON
 * is `JSON.parse`'s to say, on these bytes or the whole body's.
 */
function valueEnd(bytes: Buffer, at: number): number {
  const first = bytes[at];
  if (first === QUOTE) {
    const close = stringEnd(bytes, at);
    if (close < 0) throw NOT_PLAIN;
    return close + 1;
  }
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    for (let i = at; i < bytes.length; i++) {
      const byte = bytes[i];
      if (byte === QUOTE) {
        i = stringEnd(bytes, i);
        if (i < 0) throw NOT_PLAIN;
      } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) depth += 1;
      else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
    }
    throw NOT_PLAIN;
  }
  let end = at;
  for (;;) {
    const byte = bytes[end];
    if (
      byte === undefined ||
      byte === COMMA ||
      byte === CLOSE_BRACE ||
      byte === CLOSE_BRACKET ||
      isSpace(byte)
    )
      break;
    end += 1;
  }
  if (end === at) throw NOT_PLAIN;
  return end;
}

/** A cheap fingerprint of a value's bytes (its length and 32 bytes spread over it): a bucket. */
function fingerprint(bytes: Buffer, start: number, end: number): number {
  const length = end - start;
  let hash = length | 0;
  for (let k = 0; k < 32; k++) {
    const byte = bytes[start + Math.floor((k * (length - 1)) / 31)] as number;
    hash = Math.imul(hash ^ byte, 16777619);
  }
  return hash;
}

export class RecurringValues {
  /** Buckets by fingerprint, least recently used first (a hit moves its bucket last). */
  private readonly buckets = new Map<number, Entry[]>();
  /**
   * The remembered value each top-level member had last (at most one member per entry, and only
   * entries still remembered): a body that resends it is compared with it where the value
   * starts, before its end is looked for (a JSON object, array or string ends at its closing
   * byte, so bytes equal to a whole value are that value).
   */
  private readonly lastOf = new Map<string, Entry>();
  private entries = 0;
  private bytesHeld = 0;

  /** At most `maxEntries` values of at most `maxBytes` bytes together (docs/limits.md). */
  constructor(
    private readonly maxEntries: number,
    private readonly maxBytes: number,
  ) {}

  /** What is remembered now: values and their bytes. */
  get size(): { entries: number; bytes: number } {
    return { entries: this.entries, bytes: this.bytesHeld };
  }

  /** `bytes` parsed as `JSON.parse(bytes.toString('utf8'))` would, with what recurs remembered. */
  parse(bytes: Buffer): ParsedBody {
    try {
      return { ok: true, value: this.object(bytes) };
    } catch {
      // Not the plain shape, or a value JSON.parse refused: the whole body says what is wrong.
    }
    try {
      return { ok: true, value: JSON.parse(bytes.toString('utf8')) };
    } catch (error) {
      return { ok: false, message: (error as Error).message };
    }
  }

  /** The body as an object of members, each value parsed or remembered. */
  private object(bytes: Buffer): Record<string, unknown> {
    let at = skipSpace(bytes, 0);
    if (bytes[at] !== OPEN_BRACE) throw NOT_PLAIN;
    at = skipSpace(bytes, at + 1);
    const out: Record<string, unknown> = {};
    if (bytes[at] === CLOSE_BRACE) throw NOT_PLAIN;
    for (let members = 1; ; members++) {
      if (bytes[at] !== QUOTE || members > MAX_MEMBERS) throw NOT_PLAIN;
      const keyEnd = valueEnd(bytes, at);
      const key = JSON.parse(bytes.toString('utf8', at, keyEnd)) as string;
      // JSON.parse makes an own property of it; an assignment would set the prototype.
      if (key === '__proto__') throw NOT_PLAIN;
      at = skipSpace(bytes, keyEnd);
      if (bytes[at] !== COLON) throw NOT_PLAIN;
      at = skipSpace(bytes, at + 1);
      const last = this.lastOf.get(key);
      let end: number;
      if (
        last !== undefined &&
        at + last.bytes.length <= bytes.length &&
        bytes.compare(last.bytes, 0, last.bytes.length, at, at + last.bytes.length) === 0
      ) {
        end = at + last.bytes.length;
        this.touch(last);
        out[key] = last.value;
      } else {
        end = valueEnd(bytes, at);
        out[key] = this.value(bytes, at, end, true, key);
      }
      at = skipSpace(bytes, end);
      if (bytes[at] === COMMA) {
        at = skipSpace(bytes, at + 1);
        continue;
      }
      if (bytes[at] !== CLOSE_BRACE) throw NOT_PLAIN;
      if (skipSpace(bytes, at + 1) !== bytes.length) throw NOT_PLAIN;
      return out;
    }
  }

  /** One value: parsed when small, else remembered (a top-level array element by element). */
  private value(bytes: Buffer, start: number, end: number, topLevel: boolean, member?: string): unknown {
    if (end - start < RECURRING_FROM_BYTES) return JSON.parse(bytes.toString('utf8', start, end));
    const hash = fingerprint(bytes, start, end);
    const bucket = this.buckets.get(hash);
    if (bucket)
      for (const entry of bucket)
        if (
          entry.bytes.length === end - start &&
          bytes.compare(entry.bytes, 0, entry.bytes.length, start, end) === 0
        ) {
          this.touch(entry);
          if (member !== undefined) this.setLastOf(member, entry);
          return entry.value;
        }
    const value =
      topLevel && bytes[start] === OPEN_BRACKET
        ? this.array(bytes, start, end)
        : JSON.parse(bytes.toString('utf8', start, end));
    const entry = this.remember(hash, bytes, start, end, value);
    if (member !== undefined && entry !== undefined) this.setLastOf(member, entry);
    return value;
  }

  /** Least recently used last out: the entry's bucket moves to the end of the map's order. */
  private touch(entry: Entry): void {
    const bucket = this.buckets.get(entry.hash) as Entry[];
    this.buckets.delete(entry.hash);
    this.buckets.set(entry.hash, bucket);
  }

  private setLastOf(member: string, entry: Entry): void {
    if (entry.lastOf === member) return;
    if (entry.lastOf !== undefined) this.lastOf.delete(entry.lastOf);
    const previous = this.lastOf.get(member);
    if (previous !== undefined) previous.lastOf = undefined;
    entry.lastOf = member;
    this.lastOf.set(member, entry);
  }

  /**
   * A top-level array, element by element (its end is known to be its closing bracket); a run of
   * small elements is parsed in one piece, so ten thousand short messages are not ten thousand
   * parses.
   */
  private array(bytes: Buffer, start: number, end: number): unknown[] {
    const out: unknown[] = [];
    let at = skipSpace(bytes, start + 1);
    if (at === end - 1) return out;
    let runStart = -1;
    let runEnd = -1;
    const endRun = () => {
      if (runStart < 0) return;
      for (const value of JSON.parse(`[${bytes.toString('utf8', runStart, runEnd)}]`) as unknown[])
        out.push(value);
      runStart = -1;
    };
    for (;;) {
      const elementEnd = valueEnd(bytes, at);
      if (elementEnd - at < RECURRING_FROM_BYTES) {
        if (runStart < 0) runStart = at;
        runEnd = elementEnd;
      } else {
        endRun();
        out.push(this.value(bytes, at, elementEnd, false));
      }
      at = skipSpace(bytes, elementEnd);
      if (bytes[at] === COMMA) {
        at = skipSpace(bytes, at + 1);
        continue;
      }
      if (at !== end - 1) throw NOT_PLAIN;
      endRun();
      return out;
    }
  }

  private remember(
    hash: number,
    bytes: Buffer,
    start: number,
    end: number,
    value: unknown,
  ): Entry | undefined {
    const length = end - start;
    if (length > this.maxBytes) return undefined;
    const copy = Buffer.allocUnsafeSlow(length);
    bytes.copy(copy, 0, start, end);
    let bucket = this.buckets.get(hash);
    if (bucket) this.buckets.delete(hash);
    else bucket = [];
    const entry: Entry = { bytes: copy, value, hash };
    bucket.push(entry);
    this.buckets.set(hash, bucket);
    this.entries += 1;
    this.bytesHeld += length;
    // The least recently used buckets go first, until the memo is within its bounds.
    for (const [oldest, entries] of this.buckets) {
      if (this.entries <= this.maxEntries && this.bytesHeld <= this.maxBytes) break;
      this.buckets.delete(oldest);
      for (const forgotten of entries) {
        this.entries -= 1;
        this.bytesHeld -= forgotten.bytes.length;
        if (forgotten.lastOf !== undefined) this.lastOf.delete(forgotten.lastOf);
      }
    }
    // Remembered and forgotten at once (larger than the memo's room): not a member's last value.
    return this.buckets.get(hash)?.includes(entry) ? entry : undefined;
  }
}
