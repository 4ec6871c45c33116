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
import * as hdr from 'hdr-histogram-js';

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
  encoded: string | null;
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

function build(): hdr.Histogram {
  return hdr.build({
    bitBucketSize: 32,
    autoResize: true,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 2 ** 20,
    numberOfSignificantValueDigits: HISTOGRAM_SIGNIFICANT_DIGITS,
    useWebAssembly: false,
  });
}

const round3 = (value: number) => Math.round(value * 1000) / 1000;

export class LatencyHistogram {
  private histogram: hdr.Histogram | undefined;
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
    this.histogram.recordValue(Math.round(ms * 1000));
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

  merge(other: LatencyHistogram): void {
    if (other.count === 0 || other.histogram === undefined) return;
    if (this.histogram === undefined) this.histogram = build();
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
      mean: round3(clamp(h.mean / 1000)),
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
    const h = this.histogram;
    if (h === undefined || this.count === 0) return null;
    const exact = this.exact();
    if (exact !== null && exact.length === this.count) return round3(nearestRank(exact, percentile));
    const ms = h.getValueAtPercentile(percentile) / 1000;
    return round3(Math.min(this.max, Math.max(this.min, ms)));
  }

  toState(): LatencyHistogramState {
    return {
      encoded: this.histogram ? hdr.encodeIntoCompressedBase64(this.histogram) : null,
      count: this.count,
      min: this.min,
      max: this.max,
      raw: this.raw === null ? null : [...this.raw],
    };
  }

  static fromState(state: LatencyHistogramState): LatencyHistogram {
    const out = new LatencyHistogram();
    if (state.encoded !== null) {
      const decoded = hdr.decodeFromCompressedBase64(state.encoded, 32, false);
      out.histogram = build();
      out.histogram.add(decoded);
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
