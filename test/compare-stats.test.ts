import { describe, expect, it } from 'vitest';
import { judgeFamily, measureMetric, relativeChange, repeatsNeeded } from '../src/matrix/compare.ts';
import type { MetricDef } from '../src/matrix/metrics.ts';
import { holm, mannWhitney, median, minimumP } from '../src/matrix/stats.ts';

/** The permutation p-value by brute force: every way to pick |b| of the pooled values. */
function bruteForceP(a: number[], b: number[]): number {
  const pooled = [...a, ...b];
  const sorted = [...pooled].sort((x, y) => x - y);
  const rank = (v: number) => {
    const first = sorted.indexOf(v);
    const last = sorted.lastIndexOf(v);
    return (first + last + 2) / 2;
  };
  const ranks = pooled.map(rank);
  const m = b.length;
  const mean = (m * (pooled.length + 1)) / 2;
  const observed = Math.abs(b.map(rank).reduce((x, y) => x + y, 0) - mean);
  let extreme = 0;
  let all = 0;
  const pick = (start: number, left: number, sum: number) => {
    if (left === 0) {
      all++;
      if (Math.abs(sum - mean) >= observed - 1e-9) extreme++;
      return;
    }
    for (let i = start; i <= ranks.length - left; i++) pick(i + 1, left - 1, sum + ranks[i]!);
  };
  pick(0, m, 0);
  return extreme / all;
}

/** A deterministic pseudo-random stream (tests must not depend on Math.random). */
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const def = (better: 'lower' | 'higher', judged = true): MetricDef => ({
  id: 'x',
  title: 'x',
  unit: 'calls',
  better,
  judged,
  group: 'cost',
});

describe('Mann–Whitney U', () => {
  it('complete separation of 5 and 5 gives the exact two-sided p = 2/252', () => {
    const r = mannWhitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]);
    expect(r.method).toBe('exact');
    expect(r.u).toBe(25);
    expect(r.p).toBeCloseTo(2 / 252, 12);
    expect(minimumP(5, 5)).toBeCloseTo(2 / 252, 12);
  });

  it('matches a brute-force permutation test, ties included', () => {
    const cases: Array<[number[], number[]]> = [
      [
        [1, 2, 2, 3],
        [2, 3, 4, 5],
      ],
      [
        [10, 10, 10, 12, 9],
        [10, 11, 13, 13, 13, 8],
      ],
      [
        [4, 4, 4],
        [4, 4, 5],
      ],
      [
        [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5],
        [3, 4, 5, 6, 7, 8],
      ],
    ];
    for (const [a, b] of cases) expect(mannWhitney(a, b).p).toBeCloseTo(bruteForceP(a, b), 12);
  });

  it('all values equal: no evidence at all (p = 1)', () => {
    expect(mannWhitney([0, 0, 0], [0, 0, 0])).toMatchObject({ p: 1, method: 'degenerate' });
  });

  it('large samples use the normal approximation, which agrees with the exact p', () => {
    const rnd = lcg(7);
    const a = Array.from({ length: 30 }, () => rnd());
    const b = Array.from({ length: 30 }, () => rnd() + 0.4);
    const exact = mannWhitney(a, b);
    const normal = mannWhitney(a, b, 0);
    expect(exact.method).toBe('exact');
    expect(normal.method).toBe('normal');
    expect(exact.p).toBeLessThan(0.001);
    expect(normal.p / exact.p).toBeGreaterThan(0.5); // the normal tail is only approximate this far out
    expect(normal.p / exact.p).toBeLessThan(2);
    expect(mannWhitney([...a, 0.5], b).method).toBe('normal'); // 61 values: past the exact limit
    const same = mannWhitney(
      a,
      a.map((x) => x + 1e-9),
      0,
    );
    expect(same.p).toBeGreaterThan(0.5);
  });

  it('Holm: adjusted p-values are monotone and capped at 1', () => {
    expect(holm([0.01, 0.04, 0.03, 0.5])).toEqual([0.04, 0.09, 0.09, 0.5]);
    expect(holm([0.6, 0.9])).toEqual([1, 1]);
  });
});

describe('compare verdicts', () => {
  const noisy = (seed: number, center: number, n: number) => {
    const rnd = lcg(seed);
    return Array.from({ length: n }, () => center * (1 + (rnd() - 0.5) * 0.2)); // ±10% noise
  };

  it('a clear 2× regression is significant, in the direction the metric says is worse', () => {
    const a = noisy(1, 100, 6);
    const b = noisy(2, 200, 6);
    const lower = measureMetric('S2-T1-50', def('lower'), a, b);
    judgeFamily([lower], 0.05, 0.05);
    expect(lower.verdict).toBe('regression');
    expect(lower.change!).toBeGreaterThan(0.7);
    expect(lower.pAdjusted!).toBeLessThan(0.01);
    // The same numbers for a higher-is-better metric (headroom) are an improvement.
    const higher = measureMetric('S2-T1-50', def('higher'), a, b);
    judgeFamily([higher], 0.05, 0.05);
    expect(higher.verdict).toBe('improvement');
  });

  it('two sets of seeds of the same code are not significant', () => {
    let flagged = 0;
    for (let trial = 0; trial < 40; trial++) {
      const family = [0, 1, 2, 3, 4, 5, 6].map((k) =>
        measureMetric(
          'S2-T1-50',
          def('lower'),
          noisy(1000 + trial * 10 + k, 50, 6),
          noisy(5000 + trial * 10 + k, 50, 6),
        ),
      );
      judgeFamily(family, 0.05, 0.05);
      if (family.some((m) => m.verdict === 'regression')) flagged++;
    }
    // Holm keeps the family-wise error at most 5%: 40 families, expect about 2 at most.
    expect(flagged).toBeLessThanOrEqual(3);
  });

  it('one run a side is untested, never a regression', () => {
    const m = measureMetric('S2-T1-50', def('lower'), [100], [200]);
    judgeFamily([m], 0.05, 0.05);
    expect(m.verdict).toBe('untested');
    expect(m.change).toBe(1);
  });

  it('a significant but tiny change is negligible under min-change', () => {
    const m = measureMetric(
      'c',
      def('lower'),
      [100, 100.1, 100.2, 100.3, 100.4, 100.5],
      [101, 101.1, 101.2, 101.3, 101.4, 101.5],
    );
    judgeFamily([m], 0.05, 0.05);
    expect(m.pAdjusted!).toBeLessThan(0.05);
    expect(m.verdict).toBe('negligible');
  });

  it('medians, changes and the repeats a family needs', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(relativeChange(0, 0)).toBe(0);
    expect(relativeChange(0, 3)).toBe(Number.POSITIVE_INFINITY);
    expect(relativeChange(50, 25)).toBe(-0.5);
    expect(repeatsNeeded(1, 0.05)).toBe(4); // 2/70 = 0.029
    expect(repeatsNeeded(7, 0.05)).toBe(6); // 5: 7 × 2/252 = 0.056; 6: 7 × 2/924 = 0.015
  });
});
