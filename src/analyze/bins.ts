/**
 * Fixed-memory time bins for burst shape and peak concurrency.
 *
 * `StartEndBins` counts call starts and call ends per bin. The bin width starts at 1 ms and
 * widens along a fixed ladder (1, 2, 4, 8, 40, 200, 1000 ms, ...) when a run outgrows
 * MAX_BINS bins, by summing neighbours: so the memory stays bounded (2 × 2^20 int32 = 8 MB at
 * most) whatever the run length, and the result never depends on when the widening happened.
 * Every width divides 1 s and 10 s (up to 1000 ms), so sliding 1 s and 10 s windows stay exact
 * multiples of a bin. Two bins merged are brought to the wider width and added: the same
 * numbers as one pass over all the records.
 *
 * `SecondSeries` is a growable per-second array (sums of a value per second of run time).
 */

export const BIN_LADDER_MS = [1, 2, 4, 8, 40, 200, 1000, 5000, 10_000, 60_000, 300_000, 3_600_000] as const;
export const MAX_BINS = 1 << 20;
const INITIAL_BINS = 1 << 14;

export interface StartEndBinsState {
  level: number;
  length: number;
  starts: Int32Array;
  ends: Int32Array;
}

export class StartEndBins {
  /** Index into BIN_LADDER_MS. */
  level = 0;
  /** Bins in use (highest index + 1). */
  length = 0;
  starts: Int32Array;
  ends: Int32Array;

  constructor(state?: StartEndBinsState) {
    if (state) {
      this.level = state.level;
      this.length = state.length;
      this.starts = state.starts;
      this.ends = state.ends;
    } else {
      this.starts = new Int32Array(INITIAL_BINS);
      this.ends = new Int32Array(INITIAL_BINS);
    }
  }

  get widthMs(): number {
    return BIN_LADDER_MS[this.level]!;
  }

  /** A call in flight over [start, end) (ms of run time; negatives count at 0). */
  add(start: number, end: number): void {
    const endIndex = this.indexFor(Math.max(end, 0));
    const startIndex = start > 0 ? Math.floor(start / BIN_LADDER_MS[this.level]!) : 0;
    this.starts[startIndex]!++;
    this.ends[endIndex]!++;
  }

  /** Bin index of time t, widening or growing first so that it fits. */
  private indexFor(t: number): number {
    let index = Math.floor(t / this.widthMs);
    while (index >= this.starts.length) {
      if (this.starts.length < MAX_BINS) this.grow(Math.min(MAX_BINS, this.starts.length * 2));
      else this.widen();
      index = Math.floor(t / this.widthMs);
    }
    if (index >= this.length) this.length = index + 1;
    return index;
  }

  private grow(size: number): void {
    const starts = new Int32Array(size);
    starts.set(this.starts);
    const ends = new Int32Array(size);
    ends.set(this.ends);
    this.starts = starts;
    this.ends = ends;
  }

  /** Next width on the ladder: sum groups of `factor` neighbours in place. */
  private widen(): void {
    if (this.level + 1 >= BIN_LADDER_MS.length) throw new Error('run too long for the time bins');
    const factor = BIN_LADDER_MS[this.level + 1]! / BIN_LADDER_MS[this.level]!;
    const newLength = Math.ceil(this.length / factor);
    for (const array of [this.starts, this.ends]) {
      for (let i = 0; i < newLength; i++) {
        let sum = 0;
        const from = i * factor;
        const to = Math.min(from + factor, this.length);
        for (let j = from; j < to; j++) sum += array[j]!;
        array[i] = sum;
      }
      array.fill(0, newLength);
    }
    this.length = newLength;
    this.level++;
  }

  /** Adds another's counts (brought to a common width first). */
  merge(other: StartEndBins): void {
    const o = other.level < this.level ? other.clone() : other;
    while (o.level < this.level) o.widen();
    while (this.level < o.level) this.widen();
    if (o.length > this.starts.length) this.grow(Math.min(MAX_BINS, Math.max(o.length, this.starts.length)));
    for (let i = 0; i < o.length; i++) {
      this.starts[i]! += o.starts[i]!;
      this.ends[i]! += o.ends[i]!;
    }
    if (o.length > this.length) this.length = o.length;
  }

  clone(): StartEndBins {
    return new StartEndBins({
      level: this.level,
      length: this.length,
      starts: this.starts.slice(),
      ends: this.ends.slice(),
    });
  }

  toState(): StartEndBinsState {
    return {
      level: this.level,
      length: this.length,
      starts: this.starts.slice(0, this.length),
      ends: this.ends.slice(0, this.length),
    };
  }

  /** Takes the state's arrays as they are (no copy) when they are large enough. */
  static fromState(state: StartEndBinsState): StartEndBins {
    if (state.starts.length >= INITIAL_BINS && state.starts.length === state.ends.length) {
      return new StartEndBins({
        level: state.level,
        length: state.length,
        starts: state.starts,
        ends: state.ends,
      });
    }
    const size = Math.max(INITIAL_BINS, state.length);
    const starts = new Int32Array(size);
    starts.set(state.starts.subarray(0, state.length));
    const ends = new Int32Array(size);
    ends.set(state.ends.subarray(0, state.length));
    return new StartEndBins({ level: state.level, length: state.length, starts, ends });
  }

  /**
   * Peak calls in flight: for each bin, the calls still in flight when it opens plus those that
   * start inside it. An upper bound of the true peak, exact to within one bin width.
   */
  peakConcurrency(): { peak: number; atMs: number | null } {
    let active = 0;
    let peak = 0;
    let at: number | null = null;
    for (let i = 0; i < this.length; i++) {
      const here = active + this.starts[i]!;
      if (here > peak) {
        peak = here;
        at = i * this.widthMs;
      }
      active += this.starts[i]! - this.ends[i]!;
    }
    return { peak, atMs: at };
  }

  /**
   * Most call starts inside any window of `windowMs`, sliding one bin at a time. Null when the
   * bins are wider than the window.
   */
  maxInWindow(windowMs: number): { calls: number; atMs: number | null } | null {
    const width = this.widthMs;
    if (width > windowMs || windowMs % width !== 0) return null;
    const best = maxWindowSum(this.starts, this.length, windowMs / width);
    return { calls: best.sum, atMs: best.firstBin === null ? null : best.firstBin * width };
  }

  /** Call starts per fixed bin of `binMs` (a multiple of the width), from t = 0. */
  series(binMs: number): number[] | null {
    const width = this.widthMs;
    if (binMs % width !== 0) return null;
    const factor = binMs / width;
    return groupSums(this.starts, this.length, factor, Math.ceil(this.length / factor));
  }
}

/**
 * The largest sum of `span` neighbouring bins among the first `length`, sliding one bin at a
 * time, and the first bin of the first window that reaches it (null when no sum is above 0).
 * Call starts per bin and values per second slide the same way.
 */
function maxWindowSum(
  bins: ArrayLike<number>,
  length: number,
  span: number,
): { sum: number; firstBin: number | null } {
  let sum = 0;
  let best = 0;
  let firstBin: number | null = null;
  for (let i = 0; i < length; i++) {
    sum += bins[i]!;
    if (i >= span) sum -= bins[i - span]!;
    if (sum > best) {
      best = sum;
      firstBin = Math.max(0, i - span + 1);
    }
  }
  return { sum: best, firstBin };
}

/** The first `length` bins added up `factor` at a time into `groups` groups (zeros past the data). */
function groupSums(bins: ArrayLike<number>, length: number, factor: number, groups: number): number[] {
  const out = new Array<number>(groups).fill(0);
  for (let i = 0; i < length; i++) out[Math.floor(i / factor)]! += bins[i]!;
  return out;
}

/** Cap on per-second series: about 388 days of run time. */
export const MAX_SECONDS = 1 << 25;

export class SecondSeries {
  values: Float64Array;
  length = 0;

  constructor(values?: Float64Array) {
    this.values = values ?? new Float64Array(256);
    if (values) this.length = values.length;
  }

  /** Adds `value` at second floor(t / 1000); returns false when t is beyond MAX_SECONDS. */
  add(t: number, value: number): boolean {
    const index = t > 0 ? Math.floor(t / 1000) : 0;
    if (index >= MAX_SECONDS) return false;
    if (index >= this.values.length) {
      let size = this.values.length * 2;
      while (size <= index) size *= 2;
      const grown = new Float64Array(size);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[index]! += value;
    if (index >= this.length) this.length = index + 1;
    return true;
  }

  merge(other: SecondSeries): void {
    for (let i = 0; i < other.length; i++) {
      const value = other.values[i]!;
      if (value !== 0) this.add(i * 1000, value);
    }
    if (other.length > this.length) this.add((other.length - 1) * 1000, 0);
  }

  get(index: number): number {
    return index < this.length ? this.values[index]! : 0;
  }

  /** Sum over seconds [from, to] (inclusive indices). */
  sum(from: number, to: number): number {
    let total = 0;
    for (let i = Math.max(0, from); i <= Math.min(to, this.length - 1); i++) total += this.values[i]!;
    return total;
  }

  /** Fixed bins of `seconds` seconds each, from t = 0, covering `totalSeconds` at least. */
  bins(seconds: number, totalSeconds = this.length): number[] {
    return groupSums(
      this.values,
      this.length,
      seconds,
      Math.ceil(Math.max(totalSeconds, this.length) / seconds),
    );
  }

  /** Most in any `seconds`-long window sliding one second at a time. */
  maxInWindow(seconds: number): { value: number; atMs: number | null } {
    const best = maxWindowSum(this.values, this.length, seconds);
    return { value: best.sum, atMs: best.firstBin === null ? null : best.firstBin * 1000 };
  }

  toState(): Float64Array {
    return this.values.slice(0, this.length);
  }
}
