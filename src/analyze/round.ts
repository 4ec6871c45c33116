/** `value` rounded to `digits` decimals, as every figure in an Analysis is. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
