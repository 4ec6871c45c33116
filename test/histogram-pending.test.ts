/**
 * LatencyHistogram (src/analyze/histogram.ts) counts a long series' values by histogram index
 * and records each index's count at once: against an hdr histogram fed every value one by one,
 * the same index for every value and the same histogram at the end (its encoding, counts,
 * total, min and max), whatever the values (zeros, resizes, beyond 2^31 µs), with percentiles
 * read in between and series merged.
 */
import fc from 'fast-check';
import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { hdrIndex, hdrMean, LatencyHistogram } from '../src/analyze/histogram.ts';
import { Rng } from '../src/base/rng.ts';

/** The library histogram inside a LatencyHistogram (private: the test looks at its state). */
const inner = (h: LatencyHistogram) => (h as unknown as { histogram: hdr.Histogram }).histogram;

/** Built as histogram.ts builds its own (checked below against one it built). */
function reference(values: number[]): hdr.Histogram {
  const h = hdr.build({
    bitBucketSize: 32,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 2 ** 20,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
  for (const ms of values) h.recordValue(Math.round(ms * 1000));
  return h;
}

function expectSame(latency: LatencyHistogram, values: number[] | hdr.Histogram) {
  const ref = Array.isArray(values) ? reference(values) : values;
  // The histogram itself, and the one a worker's state rebuilds on the other side.
  for (const [label, h] of [
    ['histogram', inner(latency)],
    ['from its state', inner(LatencyHistogram.fromState(latency.toState()))],
  ] as const) {
    expect(hdr.encodeIntoCompressedBase64(h), label).toBe(hdr.encodeIntoCompressedBase64(ref));
    expect([h.totalCount, h.maxValue, h.minNonZeroValue], label).toEqual([
      ref.totalCount,
      ref.maxValue,
      ref.minNonZeroValue,
    ]);
    for (const p of [0, 1, 50, 90, 99, 99.9, 100])
      expect(h.getValueAtPercentile(p), `${label} p${p}`).toBe(ref.getValueAtPercentile(p));
    expect(h.mean, label).toBe(ref.mean);
    expect(hdrMean(h as unknown as Parameters<typeof hdrMean>[0]), label).toBe(ref.mean);
  }
}

describe('LatencyHistogram counted by index', () => {
  it("gives every value the library's own index", () => {
    const h = new LatencyHistogram();
    h.record(1);
    const library = inner(h) as unknown as { countsArrayIndex(value: number): number };
    // Large enough for every index below 2^31 (indices beyond the array are computed all the same).
    const values: number[] = [];
    for (let v = 0; v < 70_000; v++) values.push(v);
    for (let k = 1; k <= 31; k++) values.push(2 ** k - 1, 2 ** k, Math.min(2 ** k + 1, 2 ** 31 - 1));
    const rng = new Rng(3);
    for (let i = 0; i < 100_000; i++)
      values.push(Math.floor(rng.next() * 2 ** (1 + Math.floor(rng.next() * 31))));
    for (const v of values) {
      if (v >= 2 ** 31) continue;
      const index = hdrIndex(v);
      if (index !== library.countsArrayIndex(v))
        expect(index, `value ${v}`).toBe(library.countsArrayIndex(v));
    }
  });

  it('ends up as the histogram of every value recorded one by one', () => {
    const rng = new Rng(11);
    const series: Array<[string, () => number]> = [
      ['calls of tens to hundreds of ms', () => 20 + rng.next() * 300],
      ['sub-millisecond, zeros among them', () => (rng.next() < 0.1 ? 0 : rng.next() * 2)],
      ['every magnitude, resizes', () => rng.next() * 10 ** (rng.next() * 7)],
      [
        'some beyond 2^31 µs',
        () => (rng.next() < 0.01 ? 2 ** 31 / 1000 + rng.next() * 1e7 : rng.next() * 5000),
      ],
      ['one value', () => 42.5],
    ];
    for (const [name, next] of series)
      for (const length of [0, 1, 1024, 1025, 3000, 40_000]) {
        const values = Array.from({ length }, next);
        const latency = new LatencyHistogram();
        for (const v of values) latency.record(v);
        if (length === 0) {
          expect(latency.toState().hdr, name).toBeNull();
          continue;
        }
        expectSame(latency, values);
        // Read in between, then more values: flushed twice.
        const more = Array.from({ length: 2000 }, next);
        latency.percentiles();
        for (const v of more) latency.record(v);
        expect(latency.percentiles(), name).toEqual(
          (() => {
            const again = new LatencyHistogram();
            for (const v of [...values, ...more]) again.record(v);
            return again.percentiles();
          })(),
        );
        expectSame(latency, [...values, ...more]);
      }
  });

  it('merges series still counting by index, and through a worker state', () => {
    const rng = new Rng(19);
    const a = Array.from({ length: 5000 }, () => rng.next() * 400);
    const b = Array.from({ length: 7000 }, () => rng.next() * 40_000);
    const left = new LatencyHistogram();
    const right = new LatencyHistogram();
    for (const v of a) left.record(v);
    for (const v of b) right.record(v);
    const shipped = LatencyHistogram.fromState(right.toState());
    for (const v of b.slice(0, 3000)) right.record(v);
    left.merge(right);
    // As the library merges histograms of every value recorded one by one.
    const merged = reference(a);
    merged.add(reference([...b, ...b.slice(0, 3000)]));
    expectSame(left, merged);
    const viaState = new LatencyHistogram();
    for (const v of a) viaState.record(v);
    viaState.merge(shipped);
    // A state carries the histogram whole (counts, extremes, the range it grew to): merging the
    // shipped one is merging the histogram itself.
    const direct = reference(a);
    direct.add(reference(b));
    expectSame(viaState, direct);
  });

  it("reads the mean as the library's own iterator does, to the last bit", () => {
    // Values of every magnitude (zeros, resizes past 2^20 µs and 2^31 µs), many of one value.
    const micros = fc.oneof(
      fc.integer({ min: 0, max: 3000 }),
      fc.integer({ min: 0, max: 2 ** 24 }),
      fc.integer({ min: 0, max: 2 ** 40 }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(micros, fc.integer({ min: 1, max: 1000 })), { maxLength: 200 }),
        (values) => {
          const h = reference([]);
          for (const [value, count] of values) h.recordValueWithCount(value, count);
          expect(hdrMean(h as unknown as Parameters<typeof hdrMean>[0])).toBe(h.mean);
        },
      ),
      { numRuns: 300 },
    );
  });
});
