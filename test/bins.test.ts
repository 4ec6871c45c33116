/**
 * The chunked start/end bins (src/analyze/bins.ts) against a one-array model of what they
 * promise: every call binned at the width the whole run ends up with, the peak and the sliding
 * windows taken over every bin. Same numbers whatever the order of the calls, however they are
 * split and merged, and after a trip through the state a worker thread hands over.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BIN_LADDER_MS, MAX_BINS, SecondSeries, StartEndBins } from '../src/analyze/bins.ts';
import { createRng } from '../src/base/rng.ts';

type Call = [start: number, end: number];

/** The dense model: the final width is the first on the ladder that fits the latest end. */
function model(calls: Call[]) {
  const latest = Math.max(0, ...calls.map(([, end]) => end));
  let level = 0;
  while (Math.floor(latest / BIN_LADDER_MS[level]!) >= MAX_BINS) level++;
  const width = BIN_LADDER_MS[level]!;
  const length = calls.length === 0 ? 0 : Math.floor(latest / width) + 1;
  const starts = new Array<number>(length).fill(0);
  const ends = new Array<number>(length).fill(0);
  for (const [start, end] of calls) {
    starts[start > 0 ? Math.floor(start / width) : 0]!++;
    ends[Math.floor(Math.max(end, 0) / width)]!++;
  }
  let active = 0;
  let peak = 0;
  let peakAt: number | null = null;
  for (let i = 0; i < length; i++) {
    if (active + starts[i]! > peak) {
      peak = active + starts[i]!;
      peakAt = i * width;
    }
    active += starts[i]! - ends[i]!;
  }
  const windowOf = (ms: number) => {
    if (width > ms || ms % width !== 0) return null;
    const span = ms / width;
    let sum = 0;
    let best = 0;
    let first: number | null = null;
    for (let i = 0; i < length; i++) {
      sum += starts[i]! - (i >= span ? starts[i - span]! : 0);
      if (sum > best) {
        best = sum;
        first = Math.max(0, i - span + 1);
      }
    }
    return { calls: best, atMs: first === null ? null : first * width };
  };
  const seriesOf = (ms: number) => {
    if (ms % width !== 0) return null;
    const out = new Array<number>(Math.ceil(length / (ms / width))).fill(0);
    for (let i = 0; i < length; i++) out[Math.floor(i / (ms / width))]! += starts[i]!;
    return out;
  };
  return {
    width,
    length,
    peak: { peak, atMs: peakAt },
    w1: windowOf(1000),
    w10: windowOf(10_000),
    s60: seriesOf(60_000),
  };
}

function observed(bins: StartEndBins) {
  return {
    width: bins.widthMs,
    length: bins.length,
    peak: bins.peakConcurrency(),
    w1: bins.maxInWindow(1000),
    w10: bins.maxInWindow(10_000),
    s60: bins.series(60_000),
  };
}

/**
 * Calls over `spanMs` of run time, in bursts (so windows and peaks differ), a few negative, the
 * last ending at `spanMs` (so the run reaches the width its span implies).
 */
function calls(seed: number, count: number, spanMs: number): Call[] {
  const rng = createRng(seed);
  const list = Array.from({ length: Math.max(0, count - 1) }, () => {
    const burst = Math.floor(rng.next() * 20) * (spanMs / 20);
    const start = Math.round(burst + rng.next() * rng.next() * (spanMs / 20)) - (rng.next() < 0.01 ? 50 : 0);
    return [start, start + Math.round(rng.next() * 3000)] as Call;
  });
  return count === 0 ? [] : [...list, [spanMs - 100, spanMs]];
}

const feed = (list: Call[]) => {
  const bins = new StartEndBins();
  for (const [start, end] of list) bins.add(start, end);
  return bins;
};

/** Through the state a worker thread hands over (packed chunks, read back without a copy). */
const viaState = (bins: StartEndBins) => StartEndBins.fromState(structuredClone(bins.toState()));

describe('start/end bins', () => {
  const cases: Array<[string, number, number]> = [
    ['no calls', 0, 1000],
    ['a minute at 1 ms', 500, 60_000],
    ['17.5 min: past 2^20 bins of 1 ms', 2_000, 1_050_000],
    ['an hour: 4 ms bins', 5_000, 3_600_000],
    ['a day: 200 ms bins', 3_000, 86_400_000],
  ];
  it.each(cases)('%s: the one-array model, in any order, split and merged, through state', (_, n, span) => {
    const list = calls(n + span, n, span);
    const expected = model(list);
    expect(observed(feed(list))).toEqual(expected);
    const rng = createRng(7);
    const shuffled = [...list].sort(() => rng.next() - 0.5);
    expect(observed(feed(shuffled))).toEqual(expected);
    // Split in time order, as threads split a file: the early part stays at a finer width than
    // the late one, so a merge widens one side (a clone of it when it is the other), both ways.
    const byEnd = [...list].sort((a, b) => a[1] - b[1]);
    const cut = Math.floor(n / 3);
    const early = feed(byEnd.slice(0, cut));
    early.merge(feed(byEnd.slice(cut)));
    expect(observed(early)).toEqual(expected);
    const late = feed(byEnd.slice(cut));
    late.merge(feed(byEnd.slice(0, cut)));
    expect(observed(late)).toEqual(expected);
    // The main thread's path: workers' states read back, merged, then added to.
    const received = viaState(feed(byEnd.slice(0, cut)));
    received.merge(viaState(feed(byEnd.slice(cut, 2 * cut))));
    for (const [start, end] of byEnd.slice(2 * cut)) received.add(start, end);
    expect(observed(received)).toEqual(expected);
    const state = feed(list).toState();
    expect(state.starts.length).toBe(state.chunks.length * 4096);
    expect(observed(viaState(feed(list)))).toEqual(expected);
  });

  it('the split parts end at different widths (what the merges above exercise)', () => {
    const byEnd = calls(2_000 + 1_050_000, 2_000, 1_050_000).sort((a, b) => a[1] - b[1]);
    expect(feed(byEnd.slice(0, 666)).widthMs).toBe(1);
    expect(feed(byEnd).widthMs).toBe(2);
  });

  it('widened ahead to the end of any call added (reach), the same bins: the moment of widening never shows', () => {
    // What the parallel analysis does with the file's last call (src/analyze/file.ts lastCallEnd).
    const call = fc
      .tuple(fc.integer({ min: -100, max: 20_000_000 }), fc.integer({ min: 0, max: 3_000_000 }))
      .map(([start, dur]): Call => [start, start + dur]);
    fc.assert(
      fc.property(fc.array(call, { minLength: 1, maxLength: 60 }), fc.nat(), (list, pick) => {
        const ahead = new StartEndBins();
        ahead.reach(list[pick % list.length]![1]);
        for (const [start, end] of list) ahead.add(start, end);
        // The state is everything the bins hold (a worker hands over no more); its arrays are
        // compared as bytes (toEqual walks hundreds of thousands of elements one by one).
        const [a, b] = [ahead.toState(), feed(list).toState()];
        expect([a.level, a.length]).toEqual([b.level, b.length]);
        const bytes = (x: Int32Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
        for (const key of ['chunks', 'starts', 'ends'] as const)
          expect(bytes(a[key]).equals(bytes(b[key])), key).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  it('reach widens to the width of the end it is given, and counts nothing', () => {
    const bins = new StartEndBins();
    bins.reach(3_600_000);
    expect(bins.widthMs).toBe(4);
    expect(bins.length).toBe(0);
    expect(bins.series(60_000)).toEqual([]);
    bins.reach(1000);
    expect(bins.widthMs).toBe(4);
  });

  it('a call the schema refuses (end before start, NaN) counts no further than its end', () => {
    const bins = new StartEndBins();
    bins.add(5000, 100);
    bins.add(Number.NaN, 10);
    expect(bins.series(1000)).toEqual([1]);
    expect(bins.maxInWindow(1000)).toEqual({ calls: 1, atMs: 0 });
  });

  it('an hour of a few calls a second touches a few chunks, not a million bins', () => {
    const state = feed(calls(3, 5_000, 3_600_000)).toState();
    expect(state.level).toBe(2);
    expect(state.length).toBeGreaterThan(800_000);
    expect(state.starts.length).toBeLessThan(state.length);
  });
});

describe('per-second series', () => {
  it('one restored from an empty state still grows (doubling an empty array once never ended)', () => {
    const restored = new SecondSeries(structuredClone(new SecondSeries().toState()));
    const later = new SecondSeries();
    later.add(2500, 3);
    restored.merge(later);
    restored.add(4000, 1);
    expect(restored.bins(1)).toEqual([0, 0, 3, 0, 1]);
  });
});
