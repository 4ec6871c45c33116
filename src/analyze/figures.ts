/** What every metric shares: rounding, key order, GitHub's hourly window. */

export const HOUR_MS = 3_600_000;

/** `value` rounded to `digits` decimals, as every figure in an Analysis is. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Code-unit order of keys, so output does not depend on insertion or locale. */
export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A token count as a whole, non-negative number (a record may say anything: a hand-written trace). */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.max(0, Math.round(value)) : 0;
}
