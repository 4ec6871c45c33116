/**
 * A benchmark's numeric knob from the environment (`LIVE_BENCH_SECONDS=30 npm run bench -- live`):
 * the default when unset, an integer within [min, max] when set, or the bench stops at once
 * naming the variable (exit 2). A zero, negative or absurd length would otherwise divide by zero into NaN
 * ratios or start a hey or Locust run that never ends.
 */
/** A knob set to what a bench cannot run with: `bench/run.ts` prints its message and exits 2. */
export class BenchSettingError extends Error {}

export function envInteger(name: string, fallback: number, min: number, max: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new BenchSettingError(
      `${name}=${text}: expected an integer from ${min} to ${max} (default ${fallback})`,
    );
  return value;
}
