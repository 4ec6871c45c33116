/**
 * Latency percentiles: exact for small samples, from an HDR histogram (hdr-histogram-js) beyond.
 * Always final percentiles over the whole window (never averages of window percentiles).
 *
 * - Up to EXACT_SAMPLE_LIMIT (10,000) values per series the raw values are kept, and a percentile
 *   is the **nearest-rank** value: p of n sorted values is the value at rank ⌈p/100 × n⌉ (rank 1
 *   at least), always one of the samples. A budget of two samples [5 s, 6 s] has p50 = 5 s, not a
 *   bucket's upper edge (docs/analysis.md#percentiles).
 * - Beyond that, the raw values are dropped and percentiles come from the HDR histogram, recorded
 *   in whole microseconds with 3 significant digits: within 0.1% of the recorded value (and
 *   within 1 µs). Min and max are tracked exactly beside it.
 *
 * `method` in every Percentiles says which rule gave the figures.
 */
import int32HistogramModule from 'hdr-histogram-js/dist/Int32Histogram.js';

// The one histogram class used, loaded on its own: the package's index also loads its
// WebAssembly build, pako and a log writer that sets up Intl at load, ~65 ms of CPU on every
// thread that analyses (~3 % of analysing 2 M records on two threads), for nothing used here.
// Node hands a CommonJS module's exports as its default import; some loaders unwrap `default`.
const Int32Histogram = (
  'default' in int32HistogramModule ? int32HistogramModule.default : int32HistogramModule
) as typeof int32HistogramModule.default;
type JsHistogram = InstanceType<typeof Int32Histogram>;

export const HISTOGRAM_SIGNIFICANT_DIGITS = 3;
export const HISTOGRAM_UNIT_MS = 0.001;
/** Raw values kept per series for exact percentiles; the histogram alone beyond (docs/limits.md). */
export const EXACT_SAMPLE_LIMIT = 10_000;

export type PercentileMethod = 'exact' | 'hdr';

export interface Percentiles {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
  /** `exact`: nearest-rank over the raw values; `hdr`: from the histogram (more samples than the limit). */
  method: PercentileMethod;
}

export interface LatencyHistogramState {
  /**
   * The histogram's non-zero counts as [index, count, index, count, …] by hdrIndex(), with its
   * exact largest and smallest non-zero values and the range it had grown to (null: no histogram
   * yet). Plain numbers: a state only crosses a thread boundary (structured clone), where
   * compressing cost more than it saved.
   */
  hdr: { counts: number[]; max: number; minNonZero: number; highestTrackable: number } | null;
  count: number;
  min: number;
  max: number;
  /** The raw values while the series is small enough to keep them (absent in older states). */
  raw?: number[] | null;
}

/** Nearest-rank percentile of sorted values: the value at rank ⌈p/100 × n⌉, at least rank 1. */
export function nearestRank(sorted: readonly number[], percentile: number): number {
  const rank = Math.max(1, Math.ceil((percentile / 100) * sorted.length - 1e-9));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

/** 32-bit counts, whole µs from 1 up, growing past 2^20 µs (or `highest`) as values need. */
function build(highest = 2 ** 20): JsHistogram {
  const histogram = new Int32Histogram(1, highest, HISTOGRAM_SIGNIFICANT_DIGITS);
  histogram.autoResize = true;
  return histogram;
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

/**
 * The index hdr-histogram-js gives a value of [0, 2^31) (µs) in the histograms build() makes
 * (unit magnitude 0, 3 digits: 1024 sub-buckets a half): the value itself below 2048, else
 * bucket b = floor(log2 v) - 10 and sub-bucket v >> b, at b × 1024 + (v >> b). The library works
 * it out with Math.log2, Math.pow and a division on every record, which was most of recording
 * a duration (test/histogram-pending.test.ts checks this against the library's own).
 */
export function hdrIndex(micros: number): number {
  const bucket = 21 - Math.clz32(micros);
  return bucket <= 0 ? micros : (bucket << 10) + (micros >>> bucket);
}

/** The lowest value at an index of hdrIndex(). */
function lowestAt(index: number): number {
  if (index < 2048) return index;
  const bucket = (index >> 10) - 1;
  return (index - (bucket << 10)) * 2 ** bucket;
}

/** Where a histogram's largest and smallest non-zero values are (their indices), and what they are. */
interface Extremes {
  maxAt: number;
  max: number;
  minAt: number;
  minNonZero: number;
}

/**
 * Records `count` values of index `index`. Any value of an index gives the same counts; the
 * largest and the smallest non-zero one also set the histogram's max and min as recording each
 * value would have.
 */
function recordIndex(h: JsHistogram, index: number, count: number, extremes: Extremes): void {
  const { maxAt, max, minAt, minNonZero } = extremes;
  if (index === maxAt && index === minAt && minNonZero !== max) {
    h.recordValueWithCount(minNonZero, 1);
    count--;
  }
  h.recordValueWithCount(index === maxAt ? max : index === minAt ? minNonZero : lowestAt(index), count);
}

/**
 * `h.mean`, the same number the same way: the sum, in ascending index order, of each non-zero
 * count times the midpoint of its values' range (as the library's iterator reports a recorded
 * value: the highest of the range), over the total count. The library walks its generic
 * iterator across every index, ~10 ms a histogram that runs once per analysis, cold.
 */
export function hdrMean(
  h: Pick<
    JsHistogram,
    | 'totalCount'
    | 'countsArrayLength'
    | 'getCountAtIndex'
    | 'valueFromIndex'
    | 'highestEquivalentValue'
    | 'medianEquivalentValue'
  >,
): number {
  if (h.totalCount === 0) return 0;
  let total = 0;
  for (let index = 0; index < h.countsArrayLength; index++) {
    const count = h.getCountAtIndex(index);
    if (count === 0) continue;
    total += h.medianEquivalentValue(h.highestEquivalentValue(h.valueFromIndex(index))) * count;
  }
  return total / h.totalCount;
}

/** Indices hdrIndex() gives values under 2^31: the size of a pending-count array. */
const PENDING_INDICES = hdrIndex(2 ** 31 - 1) + 1;
/** Values a series records straight into its histogram before it counts them by index. */
const DIRECT_RECORDS = 1024;

export class LatencyHistogram {
  private histogram: JsHistogram | undefined;
  /**
   * Counts by histogram index of the values recorded since the last flush() (a long series:
   * see DIRECT_RECORDS), with the largest and the smallest non-zero of them. flush() records
   * each index's count at once, at a value of that index: those two exact, so the histogram ends
   * up exactly as if every value had been recorded one by one (counts, total, min and max).
   */
  private pending: Int32Array | undefined;
  private pendingCount = 0;
  private pendingTop = -1;
  private pendingMax = -1;
  private pendingMinNonZero = Number.POSITIVE_INFINITY;
  count = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  /** Raw values (ms) while count ≤ EXACT_SAMPLE_LIMIT; null once the series outgrew it. */
  private raw: number[] | null = [];
  private sorted = true;

  get method(): PercentileMethod {
    return this.raw === null ? 'hdr' : 'exact';
  }

  /** Records a duration in ms. */
  record(ms: number): void {
    if (this.histogram === undefined) this.histogram = build();
    const micros = Math.round(ms * 1000);
    if (this.count >= DIRECT_RECORDS && micros >= 0 && micros < 2 ** 31) {
      if (this.pending === undefined) this.pending = new Int32Array(PENDING_INDICES);
      const index = hdrIndex(micros);
      this.pending[index]!++;
      this.pendingCount++;
      if (index > this.pendingTop) this.pendingTop = index;
      if (micros > this.pendingMax) this.pendingMax = micros;
      if (micros !== 0 && micros < this.pendingMinNonZero) this.pendingMinNonZero = micros;
    } else this.histogram.recordValue(micros);
    this.count++;
    // keep() for one value, without an array per record.
    const raw = this.raw;
    if (raw !== null) {
      if (this.count > EXACT_SAMPLE_LIMIT) this.raw = null;
      else {
        raw.push(ms);
        this.sorted = false;
      }
    }
    if (ms < this.min) this.min = ms;
    if (ms > this.max) this.max = ms;
  }

  /** Records the pending counts into the histogram (see `pending`). */
  private flush(): void {
    const pending = this.pending;
    const h = this.histogram;
    if (this.pendingCount === 0 || pending === undefined || h === undefined) return;
    const max = this.pendingMax;
    const minNonZero = this.pendingMinNonZero;
    const extremes = {
      maxAt: hdrIndex(max),
      max,
      minAt: Number.isFinite(minNonZero) ? hdrIndex(minNonZero) : -1,
      minNonZero,
    };
    for (let index = 0; index <= this.pendingTop; index++) {
      const count = pending[index]!;
      if (count === 0) continue;
      pending[index] = 0;
      recordIndex(h, index, count, extremes);
    }
    this.pendingCount = 0;
    this.pendingTop = -1;
    this.pendingMax = -1;
    this.pendingMinNonZero = Number.POSITIVE_INFINITY;
  }

  merge(other: LatencyHistogram): void {
    if (other.count === 0 || other.histogram === undefined) return;
    if (this.histogram === undefined) this.histogram = build();
    this.flush();
    other.flush();
    this.histogram.add(other.histogram);
    this.count += other.count;
    if (other.raw === null) this.raw = null;
    else this.keep(other.raw);
    if (other.min < this.min) this.min = other.min;
    if (other.max > this.max) this.max = other.max;
  }

  private keep(values: readonly number[]): void {
    if (this.raw === null) return;
    if (this.count > EXACT_SAMPLE_LIMIT) {
      this.raw = null;
      return;
    }
    for (const v of values) this.raw.push(v);
    this.sorted = false;
  }

  private exact(): number[] | null {
    if (this.raw === null) return null;
    if (!this.sorted) {
      this.raw.sort((a, b) => a - b);
      this.sorted = true;
    }
    return this.raw;
  }

  percentiles(): Percentiles | null {
    this.flush();
    const h = this.histogram;
    if (h === undefined || this.count === 0) return null;
    const exact = this.exact();
    if (exact !== null && exact.length === this.count) {
      const at = (p: number) => round3(nearestRank(exact, p));
      return {
        count: this.count,
        min: round3(this.min),
        mean: round3(exact.reduce((sum, v) => sum + v, 0) / exact.length),
        p50: at(50),
        p90: at(90),
        p95: at(95),
        p99: at(99),
        max: round3(this.max),
        method: 'exact',
      };
    }
    // HDR reports a bucket's highest equivalent value (and a midpoint mean): keep both inside the
    // exact [min, max] so no percentile reads above the largest sample or below the smallest.
    const clamp = (ms: number) => Math.min(this.max, Math.max(this.min, ms));
    const at = (p: number) => round3(clamp(h.getValueAtPercentile(p) / 1000));
    return {
      count: this.count,
      min: round3(this.min),
      mean: round3(clamp(hdrMean(h) / 1000)),
      p50: at(50),
      p90: at(90),
      p95: at(95),
      p99: at(99),
      max: round3(this.max),
      method: 'hdr',
    };
  }

  /** Any percentile (0-100], by the same rule as percentiles(): exact, or inside [min, max]. */
  valueAt(percentile: number): number | null {
    this.flush();
    const h = this.histogram;
    if (h === undefined || this.count === 0) return null;
    const exact = this.exact();
    if (exact !== null && exact.length === this.count) return round3(nearestRank(exact, percentile));
    const ms = h.getValueAtPercentile(percentile) / 1000;
    return round3(Math.min(this.max, Math.max(this.min, ms)));
  }

  toState(): LatencyHistogramState {
    this.flush();
    const h = this.histogram;
    let state: LatencyHistogramState['hdr'] = null;
    if (h !== undefined) {
      const counts: number[] = [];
      for (let index = 0; index < h.countsArrayLength; index++) {
        const count = h.getCountAtIndex(index);
        if (count !== 0) counts.push(index, count);
      }
      state = {
        counts,
        max: h.maxValue,
        minNonZero: h.minNonZeroValue,
        highestTrackable: h.highestTrackableValue,
      };
    }
    return {
      hdr: state,
      count: this.count,
      min: this.min,
      max: this.max,
      raw: this.raw === null ? null : [...this.raw],
    };
  }

  static fromState(state: LatencyHistogramState): LatencyHistogram {
    const out = new LatencyHistogram();
    if (state.hdr !== null) {
      const { counts, max, minNonZero, highestTrackable } = state.hdr;
      const h = build(highestTrackable);
      // Indices ascending: the last holds the max, the first above 0 the smallest non-zero value
      // (index 0 is the value 0 alone). hdrIndex() is not used: a value may be 2^31 µs or more.
      const extremes = { maxAt: counts[counts.length - 2] ?? -1, max, minAt: -1, minNonZero };
      for (let i = 0; i < counts.length; i += 2) {
        if (extremes.minAt < 0 && counts[i]! > 0) extremes.minAt = counts[i]!;
        recordIndex(h, counts[i]!, counts[i + 1]!, extremes);
      }
      out.histogram = h;
    }
    out.count = state.count;
    out.min = state.min;
    out.max = state.max;
    // A state without raw values (an older one) can only give histogram percentiles.
    out.raw = state.raw && state.raw.length === state.count ? [...state.raw] : state.count === 0 ? [] : null;
    out.sorted = false;
    return out;
  }
}
