/**
 * A `gauge` line checked in place, for a reader that keeps no gauge record (`model learn`: its
 * model is made of calls, spans and events; docs/model.md). A trace's gauges are a tenth of its
 * lines (the sessions per state, written every few seconds), and each went through `JSON.parse`
 * and the schema's validator only to be dropped: about 0.1-0.2 s of a 100,000-record learn
 * (docs/performance.md, `model learn`). This reads the line's bytes instead, and says whether it
 * is a gauge record the published schema (docs/trace.schema.json) accepts.
 *
 * It accepts one form only, what JSON.stringify writes for a gauge record: no whitespace, the
 * fields in the schema's order (`kind`, `name`, `t`, `value`, then `labels` if any), strings of
 * printable ASCII with no escape sequence, numbers without an exponent (at most 15 digits before
 * the point, so every one is finite), `t` not negative. Anything else (false) goes through the full
 * parse and validation, with its usual words for what is wrong: this is never more lenient than
 * the schema, only stricter. test/gauge-line.test.ts holds it to the validator, and to the schema
 * as published (a change to the gauge record's schema fails it until this is brought along).
 */

/** How every line checked here begins (what JSON.stringify writes first for a gauge record). */
const PREFIX = Buffer.from('{"kind":"gauge","name":"');
const T_KEY = Buffer.from('","t":');
const VALUE_KEY = Buffer.from(',"value":');
const LABELS_KEY = Buffer.from(',"labels":{');
/** The schema's bound on `t` (milliseconds since the run's epoch: at most 30 days). */
const MAX_T = 2_592_000_000;

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Where `literal` ends if bytes[at, …) starts with it, else -1. */
function expect(bytes: Uint8Array, at: number, end: number, literal: Uint8Array): number {
  if (at + literal.length > end) return -1;
  for (let i = 0; i < literal.length; i++) if (bytes[at + i] !== literal[i]) return -1;
  return at + literal.length;
}

/** Where the string's closing quote is (its body starting at `at`: printable ASCII, no escape), else -1. */
function stringEnd(bytes: Uint8Array, at: number, end: number): number {
  for (let i = at; i < end; i++) {
    const b = bytes[i]!;
    if (b === QUOTE) return i;
    if (b < 0x20 || b > 0x7e || b === BACKSLASH) return -1;
  }
  return -1;
}

/** Where a JSON number starting at `at` ends (no exponent, at most 15 integer digits), else -1. */
function numberEnd(bytes: Uint8Array, at: number, end: number, signed: boolean): number {
  let i = at;
  if (signed && bytes[i] === 0x2d) i++;
  const digits = i;
  if (i < end && bytes[i] === 0x30) i++;
  else while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) i++;
  if (i === digits || i - digits > 15) return -1;
  if (i < end && bytes[i] === 0x2e) {
    const fraction = ++i;
    while (i < end && bytes[i]! >= 0x30 && bytes[i]! <= 0x39) i++;
    if (i === fraction) return -1;
  }
  // An exponent (or anything else glued on) is left to the full parse.
  if (i < end && (bytes[i] === 0x65 || bytes[i] === 0x45)) return -1;
  return i;
}

/**
 * Whether bytes[start, end) (one line, no newline) is a gauge record the schema accepts, in the
 * form above. False says nothing about the line: it must then go through the full parse.
 */
export function isCanonicalGaugeLine(bytes: Buffer, start: number, end: number): boolean {
  let at = expect(bytes, start, end, PREFIX);
  if (at < 0) return false;
  // name: a string of at least one character.
  const nameEnd = stringEnd(bytes, at, end);
  if (nameEnd <= at) return false;
  at = expect(bytes, nameEnd, end, T_KEY);
  if (at < 0) return false;
  const tEnd = numberEnd(bytes, at, end, false);
  if (tEnd < 0) return false;
  // Under 10 characters it is under 10^9: only a longer one is read to compare.
  if (tEnd - at >= 10 && Number(bytes.toString('latin1', at, tEnd)) > MAX_T) return false;
  at = expect(bytes, tEnd, end, VALUE_KEY);
  if (at < 0) return false;
  at = numberEnd(bytes, at, end, true);
  if (at < 0) return false;
  if (at === end - 1) return bytes[at] === 0x7d;
  at = expect(bytes, at, end, LABELS_KEY);
  if (at < 0) return false;
  // labels: string keys, each value a string, a number or a boolean; then the two closing braces.
  // (Every read is before `end`: past it are the buffer's next lines.)
  if (at < end && bytes[at] !== 0x7d) {
    for (;;) {
      if (at >= end || bytes[at] !== QUOTE) return false;
      const keyEnd = stringEnd(bytes, at + 1, end);
      if (keyEnd < 0 || keyEnd + 2 >= end || bytes[keyEnd + 1] !== 0x3a) return false;
      at = keyEnd + 2;
      const b = bytes[at];
      if (b === QUOTE) {
        const valueEnd = stringEnd(bytes, at + 1, end);
        if (valueEnd < 0) return false;
        at = valueEnd + 1;
      } else if (b === 0x74) at = expect(bytes, at, end, TRUE);
      else if (b === 0x66) at = expect(bytes, at, end, FALSE);
      else at = numberEnd(bytes, at, end, true);
      if (at < 0 || at >= end) return false;
      if (bytes[at] === 0x7d) break;
      if (bytes[at] !== 0x2c) return false;
      at++;
    }
  }
  return at + 2 === end && bytes[at + 1] === 0x7d;
}
