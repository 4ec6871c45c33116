import { describe, expect, it } from 'vitest';
import { createRng } from '../src/base/rng.ts';

describe('Rng', () => {
  it('is reproducible from the seed and forks independent named streams', () => {
    const a = createRng(42);
    const b = createRng(42);
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(createRng(43).next()).not.toBe(seqA[0]);
    // Drawing from one fork does not move another.
    const parent = createRng(7);
    const latency1 = parent.fork('latency');
    const firstLatency = latency1.next();
    parent.fork('spawn').next();
    expect(createRng(7).fork('latency').next()).toBe(firstLatency);
    expect(createRng(7).fork('spawn').next()).not.toBe(firstLatency);
  });

  it('draws log-normal values with the requested median and p95', () => {
    const rng = createRng(1);
    const values = Array.from({ length: 20_000 }, () => rng.lognormal(100, 300)).sort((x, y) => x - y);
    expect(values[10_000]).toBeGreaterThan(95);
    expect(values[10_000]).toBeLessThan(105);
    expect(values[19_000]).toBeGreaterThan(280);
    expect(values[19_000]).toBeLessThan(320);
  });

  it('keeps ints and jitter inside their bounds', () => {
    const rng = createRng(3);
    for (let i = 0; i < 1_000; i++) {
      const n = rng.int(2, 5);
      expect(n).toBeGreaterThanOrEqual(2);
      expect(n).toBeLessThanOrEqual(5);
      const j = rng.jitter(10, 0.2);
      expect(j).toBeGreaterThanOrEqual(8);
      expect(j).toBeLessThanOrEqual(12);
    }
  });
});
