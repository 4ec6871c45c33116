/**
 * CycleCounts (src/analyze/cycles.ts), the per-(session, poll cycle) counts the polling floor is
 * computed from: counting in two halves and merging (what analysis threads do) gives the same
 * cells and the same frequencies as counting everything in one, whatever the order, the gaps
 * between cycles, or a row turned sparse by a span past its limit.
 */
import { describe, expect, it } from 'vitest';
import { ALL, CycleCounts } from '../src/analyze/cycles.ts';
import { Rng } from '../src/base/rng.ts';

const RESOURCES = ['core', 'graphql', 'search'];

/** Every cell of every row, sorted: key, cycle, and its count for ALL and each resource. */
function cells(counts: CycleCounts): string[] {
  const out: string[] = [];
  for (const [key, row] of counts.rows)
    for (const [cycle, countOf] of row.cells())
      out.push(`${key} ${cycle} ${[ALL, ...RESOURCES].map((r) => countOf(r)).join(',')}`);
  return out.sort();
}

function frequencies(counts: CycleCounts, filter?: (cycle: number) => boolean) {
  const f = counts.frequencies(() => true, filter);
  return {
    cells: f.cells,
    keys: f.keys,
    cycles: [...f.cycles].sort((a, b) => a - b),
    freq: Object.fromEntries([...f.freq].map(([r, m]) => [r, [...m].sort((a, b) => a[0] - b[0])])),
  };
}

describe('CycleCounts merged from halves', () => {
  const cases: Array<[string, (rng: Rng) => number]> = [
    ['consecutive cycles', (rng) => rng.int(0, 300)],
    ['far apart (every resize, both directions)', (rng) => rng.int(0, 50) * 97 + rng.int(0, 3)],
    [
      'a span past the dense limit (sparse rows)',
      (rng) => (rng.next() < 0.05 ? 5_000_000 + rng.int(0, 9) : rng.int(0, 40)),
    ],
  ];
  for (const [name, cycleOf] of cases)
    it(name, () => {
      const rng = new Rng(name.length);
      const whole = new CycleCounts();
      const halves = [new CycleCounts(), new CycleCounts()];
      for (let i = 0; i < 20_000; i++) {
        const key = `ses-${rng.int(0, 30)}`;
        const cycle = cycleOf(rng);
        const resource = RESOURCES[rng.int(0, RESOURCES.length - 1)]!;
        whole.add(key, cycle, resource);
        halves[rng.int(0, 1)]!.add(key, cycle, resource);
      }
      // Merged into an empty counter, and into one that already holds the other half.
      const intoEmpty = new CycleCounts();
      intoEmpty.merge(halves[1]!);
      intoEmpty.merge(halves[0]!);
      halves[0]!.merge(halves[1]!);
      for (const merged of [intoEmpty, halves[0]!]) {
        expect(cells(merged)).toEqual(cells(whole));
        expect(frequencies(merged)).toEqual(frequencies(whole));
        const odd = (cycle: number) => cycle % 2 === 1;
        expect(frequencies(merged, odd)).toEqual(frequencies(whole, odd));
      }
    });
});
