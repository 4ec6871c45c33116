import { describe, expect, it } from 'vitest';
import { type PruneCell, pruneCells, relativeDifference } from '../src/matrix/prune.ts';

const ROWS = ['rest-core-headroom', 'peak-concurrency', 'max-1s'] as const;

function cell(id: string, values: [number | null, number | null, number | null]): PruneCell {
  const [scenario, topology, scale] = id.split('-') as [string, string, string];
  return {
    id,
    scenario,
    topology,
    scale: Number(scale),
    metrics: Object.fromEntries(ROWS.map((r, i) => [r, values[i]!])),
  };
}

const decide = (cells: PruneCell[]) => Object.fromEntries(pruneCells(cells).map((d) => [d.id, d]));

describe('pruning rule: keep cells that differ by more than 15% from an adjacent scale point', () => {
  it('relative difference is taken against the larger of the two, the same both ways; 0 and null are handled', () => {
    // |115 − 100| / 115 = 13.04%, from either side.
    expect(relativeDifference(115, 100)).toBeCloseTo(15 / 115);
    expect(relativeDifference(100, 115)).toBe(relativeDifference(115, 100));
    // |85 − 100| / 100 = 15%.
    expect(relativeDifference(85, 100)).toBeCloseTo(0.15);
    expect(relativeDifference(0, 0)).toBe(0);
    // |3 − 0| / 3 = 100%.
    expect(relativeDifference(3, 0)).toBe(1);
    expect(relativeDifference(null, null)).toBe(0);
    expect(relativeDifference(null, 4)).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps the cells where a scorecard metric moves and drops the flat middle of a line', () => {
    // A line whose cost flattens out from 10 sessions on, and whose burst saturates at 10 req/s.
    const cells = [
      cell('S2-T1-1', [70, 2, 6]),
      cell('S2-T1-5', [87, 3, 10]), // vs 1: headroom 17/87 = 19.5%: kept
      cell('S2-T1-10', [89, 4, 10]), // vs 5: peak 1/4 = 25%: kept
      cell('S2-T1-25', [90, 4, 10]), // vs 10 (+1.1%) and 50 (−1.1%): pruned
      cell('S2-T1-50', [91, 4, 10]), // vs 25 only: +1.1%: pruned
    ];
    const d = decide(cells);
    expect(d['S2-T1-1']!.kept).toBe(true);
    expect(d['S2-T1-5']!.kept).toBe(true);
    expect(d['S2-T1-10']!.kept).toBe(true);
    expect(d['S2-T1-25']!.kept).toBe(false);
    expect(d['S2-T1-50']!.kept).toBe(false);
    expect(d['S2-T1-25']!.neighbours).toEqual(['S2-T1-10', 'S2-T1-50']);
    expect(d['S2-T1-25']!.reason).toMatch(/^within 15% of S2-T1-10 and S2-T1-50 on every scorecard metric/);
    expect(d['S2-T1-10']!.reason).toContain('peak-concurrency 4 vs 3 at S2-T1-5 (25%)');
    expect(d['S2-T1-10']!.largest).toMatchObject({ metric: 'peak-concurrency', neighbour: 'S2-T1-5' });
  });

  it('a difference of exactly 15% is not more than 15%', () => {
    const d = decide([
      cell('S1-T1-5', [100, 4, 10]),
      cell('S1-T1-10', [115, 4, 10]),
      cell('S1-T1-25', [115, 4, 10]),
    ]);
    // 10 vs 5 (and 5 vs 10): |115−100|/115 = 13%, not more than 15%; 10 vs 25: 0.
    expect(d['S1-T1-10']!.kept).toBe(false);
    // 5: pruned too; 25 vs 10: 0: pruned; the line keeps its largest.
    expect(d['S1-T1-5']!.kept).toBe(false);
    expect(d['S1-T1-25']!.kept).toBe(true);
    expect(d['S1-T1-25']!.representative).toBe(true);
    expect(d['S1-T1-25']!.reason).toMatch(/^kept to represent S1-T1/);
  });

  it('the rule is symmetric: 100 vs 86.5 keeps both cells or neither, and shows the percentage that decided', () => {
    // |100 − 86.5| / max(100, 86.5) = 13.5 / 100 = 13.5% from either cell: within 15%, so both
    // go (the line then keeps its largest as representative). Relative to the neighbour alone,
    // 13.5/86.5 = 15.6% would have kept S4-T1-5 and pruned S4-T1-10.
    const d = decide([cell('S4-T1-5', [100, 4, 10]), cell('S4-T1-10', [86.5, 4, 10])]);
    expect(d['S4-T1-5']!.largest!.relative).toBeCloseTo(0.135);
    expect(d['S4-T1-10']!.largest!.relative).toBeCloseTo(0.135);
    expect(d['S4-T1-5']!.kept).toBe(false);
    expect(d['S4-T1-10']!.representative).toBe(true);
    expect(d['S4-T1-5']!.reason).toContain('rest-core-headroom 100 vs 86.5 at S4-T1-10 (13.5%)');
    // Above 15% both are kept: 100 vs 84 = 16%.
    const e = decide([cell('S4-T1-5', [100, 4, 10]), cell('S4-T1-10', [84, 4, 10])]);
    expect([e['S4-T1-5']!.kept, e['S4-T1-10']!.kept]).toEqual([true, true]);
    expect(e['S4-T1-10']!.reason).toContain('(16%)');
  });

  it('T1-1 is the scale-1 point of the T2 line too', () => {
    const d = decide([
      cell('S3-T1-1', [56, 2, 5]),
      cell('S3-T1-5', [64, 2, 5]), // vs 1: 8/64 = 12.5%, within
      cell('S3-T2-5', [66, 3, 10]), // vs T1-1 (scale 1 of T2): peak 1/3 = 33%
      cell('S3-T2-10', [66, 3, 10]),
    ]);
    expect(d['S3-T1-1']!.neighbours).toEqual(['S3-T1-5', 'S3-T2-5']);
    expect(d['S3-T2-5']!.neighbours).toEqual(['S3-T1-1', 'S3-T2-10']);
    expect(d['S3-T1-1']!.kept).toBe(true); // differs from S3-T2-5
    expect(d['S3-T2-5']!.kept).toBe(true);
    expect(d['S3-T2-10']!.kept).toBe(false);
    // S3-T1-5 is within 15% of S3-T1-1, its only neighbour; its line keeps it as representative
    // only if nothing else of S3-T1 is kept, and S3-T1-1 is.
    expect(d['S3-T1-5']!.kept).toBe(false);
  });

  it('a metric that appears or vanishes (null, or from 0) counts as a difference', () => {
    const d = decide([
      cell('S4-T1-5', [40, 3, 10]),
      cell('S4-T1-10', [40, 3, null]),
      cell('S4-T1-25', [40, 3, null]),
    ]);
    expect(d['S4-T1-5']!.kept).toBe(true);
    expect(d['S4-T1-10']!.kept).toBe(true);
    expect(d['S4-T1-10']!.reason).toContain('∞');
    expect(d['S4-T1-25']!.kept).toBe(false);
  });

  it('a cell without an adjacent scale point in the run is kept and says why', () => {
    const d = decide([cell('S1-T1-50', [58, 4, 10]), cell('S4-T1-10', [46, 5, 10])]);
    expect(d['S1-T1-50']!.kept).toBe(true);
    expect(d['S1-T1-50']!.reason).toBe('no adjacent scale point in this run: nothing to compare with');
  });
});
