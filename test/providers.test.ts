/**
 * The provider profiles are consistent with the native-speed budget table (docs/budgets.md#built-in-sets): sampled
 * on their own, and in the six built-in chaos waves, judged for real.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { ADAPTERS } from '../src/contract/types.ts';
import { judge, resolveBudgets } from '../src/judge/index.ts';
import { draw, loadDuration, PROVIDER_PROFILES } from '../src/reference/providers.ts';
import { runRef } from './helpers/run.ts';

const NATIVE = resolveBudgets('native-speed');
const budget = (metric: string, scope: Record<string, string>) =>
  NATIVE.entries
    .find((e) => e.metric.name === metric && JSON.stringify(e.scope) === JSON.stringify(scope))!
    .thresholds.map((t) => t.limit);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil((p / 100) * sorted.length) - 1]!;
}

describe('provider profiles', () => {
  it.each(ADAPTERS)('%s: a cold boot sits below its budget, near its baseline (budget ÷ 1.2)', (adapter) => {
    const profile = PROVIDER_PROFILES[adapter];
    const rng = new Rng(7);
    const boots = Array.from({ length: 20_000 }, () => draw(profile.bootCold, rng));
    const [p50, p95] = budget('agent_boot', { adapter, start: 'cold' }) as [number, number];
    // Calibrated to about 0.85 × the baseline: the margin a p95 of a few samples needs.
    for (const [measured, limit] of [
      [percentile(boots, 50), p50],
      [percentile(boots, 95), p95],
    ] as const) {
      expect(measured / limit).toBeGreaterThan(0.6);
      expect(measured / limit).toBeLessThan(0.85);
    }
  });

  it('session load grows with the saved session size and with concurrent loads', () => {
    const profile = PROVIDER_PROFILES.claude;
    const median = (bytes: number, concurrent: number) => {
      const rng = new Rng(3);
      return percentile(
        Array.from({ length: 5_000 }, () => loadDuration(profile, bytes, concurrent, rng)),
        50,
      );
    };
    expect(median(2_000_000, 1) / median(0, 1)).toBeCloseTo(1.6 / 0.4, 1);
    expect(median(1_000_000, 4) / median(1_000_000, 1)).toBeCloseTo(1 + 3 * profile.loadContention, 1);
  });

  it('the six built-in chaos waves pass native-speed with their seed, no faster than plausible', async () => {
    for (const adapter of ADAPTERS) {
      for (const c of [4, 6]) {
        const { analysis } = await runRef(`chaos-${adapter}-c${c}`, ['budgets=[]']);
        const verdict = judge(NATIVE, [{ name: `chaos-${adapter}-c${c}`, analysis }]);
        expect(verdict.errors, `chaos-${adapter}-c${c}`).toEqual([]);
        const failed = verdict.rows.filter((r) => r.mode === 'judged' && r.status === 'fail');
        expect(
          failed.map((r) => `${r.metric} ${JSON.stringify(r.scope)}`),
          `chaos-${adapter}-c${c}`,
        ).toEqual([]);
        for (const row of verdict.rows.filter((r) => r.mode === 'judged' && r.status === 'pass')) {
          // A median below a third of the budget would make the budget meaningless.
          expect(
            row.p50! / row.stats[0]!.threshold.limit,
            `${row.metric} ${JSON.stringify(row.scope)}`,
          ).toBeGreaterThan(0.3);
        }
      }
    }
  });
});
