/**
 * The statistics of `fleetbench compare` (docs/matrix.md says why these): the two-sided
 * Mann–Whitney U (Wilcoxon rank-sum) test with an exact permutation p-value (ties get mid-ranks;
 * the null distribution of the rank sum is counted exactly by dynamic programming up to 60
 * samples, beyond that the normal approximation with tie and continuity corrections), and
 * Holm–Bonferroni across the metrics judged together.
 */

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export interface RankTest {
  /** U of sample b: how many (a, b) pairs have b above a (ties count 1/2). */
  u: number;
  /** Two-sided p-value. */
  p: number;
  method: 'exact' | 'normal' | 'degenerate';
}

const EXACT_MAX = 60;

/** Two-sided Mann–Whitney U test of `a` against `b`; exact up to `exactMax` values in all. */
export function mannWhitney(a: readonly number[], b: readonly number[], exactMax = EXACT_MAX): RankTest {
  const n = a.length;
  const m = b.length;
  if (n === 0 || m === 0) return { u: Number.NaN, p: 1, method: 'degenerate' };
  const pooled = [...a.map((v) => ({ v, b: false })), ...b.map((v) => ({ v, b: true }))].sort(
    (x, y) => x.v - y.v,
  );
  const total = n + m;
  // Doubled mid-ranks keep every rank an integer (ties share the average of their positions).
  const ranks2 = new Array<number>(total);
  const tieSizes: number[] = [];
  for (let i = 0; i < total; ) {
    let j = i;
    while (j + 1 < total && pooled[j + 1]!.v === pooled[i]!.v) j++;
    const rank2 = i + 1 + (j + 1); // 2 × mean of ranks i+1 … j+1
    for (let k = i; k <= j; k++) ranks2[k] = rank2;
    tieSizes.push(j - i + 1);
    i = j + 1;
  }
  let sumB2 = 0;
  for (let k = 0; k < total; k++) if (pooled[k]!.b) sumB2 += ranks2[k]!;
  const u = sumB2 / 2 - (m * (m + 1)) / 2;
  if (tieSizes.length === 1) return { u, p: 1, method: 'degenerate' };
  const mean2 = m * (total + 1); // E[2 × rank sum of b]
  const observed = Math.abs(sumB2 - mean2);

  if (total <= exactMax) {
    // ways[k][s]: subsets of k of the items seen so far whose doubled ranks sum to s.
    const maxSum = ranks2.reduce((x, y) => x + y, 0);
    // Counted in place like a 0/1 knapsack: k runs downwards so each item is used once.
    const ways: Float64Array[] = Array.from({ length: m + 1 }, () => new Float64Array(maxSum + 1));
    ways[0]![0] = 1;
    for (const r of ranks2) {
      for (let k = m - 1; k >= 0; k--) {
        const from = ways[k]!;
        const to = ways[k + 1]!;
        for (let s = maxSum - r; s >= 0; s--) if (from[s]! !== 0) to[s + r]! += from[s]!;
      }
    }
    const row = ways[m]!;
    let extreme = 0;
    let all = 0;
    for (let s = 0; s <= maxSum; s++) {
      const w = row[s]!;
      if (w === 0) continue;
      all += w;
      // Integers in doubled space: compare with a hair of slack for the float sums.
      if (Math.abs(s - mean2) >= observed - 1e-9) extreme += w;
    }
    return { u, p: Math.min(1, extreme / all), method: 'exact' };
  }

  const tieTerm = tieSizes.reduce((acc, t) => acc + (t * t * t - t), 0);
  const variance = ((n * m) / 12) * (total + 1 - tieTerm / (total * (total - 1)));
  if (variance <= 0) return { u, p: 1, method: 'degenerate' };
  const z = Math.max(0, Math.abs(u - (n * m) / 2) - 0.5) / Math.sqrt(variance);
  return { u, p: Math.min(1, 2 * normalUpperTail(z)), method: 'normal' };
}

/** The smallest two-sided p-value an exact test of n against m can give (complete separation). */
export function minimumP(n: number, m: number): number {
  if (n === 0 || m === 0) return 1;
  return Math.min(1, 2 / binomial(n + m, Math.min(n, m)));
}

function binomial(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

/** P(Z > z) for a standard normal (Abramowitz–Stegun 7.1.26 on erfc; error < 1.5e-7). */
export function normalUpperTail(z: number): number {
  const x = z / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const poly =
    t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erfc = poly * Math.exp(-x * x);
  return x >= 0 ? erfc / 2 : 1 - erfc / 2;
}

/**
 * Holm–Bonferroni adjusted p-values (same order as given): the family-wise error rate stays at
 * most α when any adjusted p below α is called significant.
 */
export function holm(pValues: readonly number[]): number[] {
  const k = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p);
  const adjusted = new Array<number>(k);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (k - rank) * p));
    adjusted[i] = running;
  });
  return adjusted;
}
