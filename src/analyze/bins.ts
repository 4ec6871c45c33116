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
 * The bins are kept in chunks of CHUNK bins, allocated when a call first lands in one. An hour
 * of run time is ~900 k bins of 4 ms, almost all empty at a few calls a second: as one array
 * they cost ~200 ms of a one-second run (allocating, copying, page faults, scanning), most of
 * the analysis of a matrix cell. Empty chunks are never touched: widening, merging and the
 * finishers visit the chunks that hold calls, and their results are those of the dense
 * arrays (test/bins.test.ts compares them with a one-array model).
 *
 * `SecondSeries` is a growable per-second array (sums of a value per second of run time).
 */

export const BIN_LADDER_MS = [1, 2, 4, 8, 40, 200, 1000, 5000, 10_000, 60_000, 300_000, 3_600_000] as const;
export const MAX_BINS = 1 << 20;
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const MASK = CHUNK - 1;
const CHUNKS = MAX_BINS / CHUNK;

/** One slot per chunk, all present from the start: a packed array, never a sparse one. */
const noChunks = (): Array<Int32Array | undefined> => new Array(CHUNKS).fill(undefined);

/**
 * What a worker thread hands over: the chunks that hold calls, packed (`chunks[k]` is the
 * index of the chunk whose bins are `starts`/`ends` [k × CHUNK, (k + 1) × CHUNK)).
 */
export interface StartEndBinsState {
  level: number;
  length: number;
  chunks: Int32Array;
  starts: Int32Array;
  ends: Int32Array;
}

export class StartEndBins {
  /** Index into BIN_LADDER_MS. */
  level = 0;
  /** Bins in use (highest index + 1). */
  length = 0;
  /** Chunk index → its start counts (undefined: all zero); `ends` likewise. */
  private starts = noChunks();
  private ends = noChunks();
  /** Zeroed chunks that widening left unused, taken before allocating: new memory is slow here. */
  private spare: Int32Array[] = [];

  get widthMs(): number {
    return BIN_LADDER_MS[this.level]!;
  }

  /**
   * A call in flight over [start, end) (ms of run time; negatives count at 0). A call the trace
   * schema refuses (NaN, an end before its start) is not counted past its end.
   */
  add(start: number, end: number): void {
    if (!(start <= end)) {
      if (Number.isNaN(start) || Number.isNaN(end)) return;
      start = end;
    }
    const endIndex = this.indexFor(Math.max(end, 0));
    const startIndex = start > 0 ? Math.floor(start / BIN_LADDER_MS[this.level]!) : 0;
    const starts =
      this.starts[startIndex >> CHUNK_BITS] ?? this.chunkOf(this.starts, startIndex >> CHUNK_BITS);
    starts[startIndex & MASK]!++;
    const ends = this.ends[endIndex >> CHUNK_BITS] ?? this.chunkOf(this.ends, endIndex >> CHUNK_BITS);
    ends[endIndex & MASK]!++;
  }

  /** Bin index of time t, widening first so that it fits. */
  private indexFor(t: number): number {
    let index = Math.floor(t / this.widthMs);
    while (index >= MAX_BINS) {
      this.widen();
      index = Math.floor(t / this.widthMs);
    }
    if (index >= this.length) this.length = index + 1;
    return index;
  }

  /**
   * Widens now to the width a call ending at `end` (ms of run time) will need, counting
   * nothing. For a call that will be added: the bins end up as they would have anyway (the
   * widening's moment never changes them), with less memory touched and less folding on the
   * way there (an analysis that knows where the trace ends starts at that width).
   */
  reach(end: number): void {
    while (Math.floor(Math.max(end, 0) / this.widthMs) >= MAX_BINS) this.widen();
  }

  private chunkOf(chunks: Array<Int32Array | undefined>, c: number): Int32Array {
    let chunk = chunks[c];
    if (chunk === undefined) {
      chunk = this.spare.pop() ?? new Int32Array(CHUNK);
      chunks[c] = chunk;
    }
    return chunk;
  }

  /** Next width on the ladder: each bin added into the bin `factor` times wider that holds it. */
  private widen(): void {
    if (this.level + 1 >= BIN_LADDER_MS.length) throw new Error('run too long for the time bins');
    const factor = BIN_LADDER_MS[this.level + 1]! / BIN_LADDER_MS[this.level]!;
    const fold = (chunks: Array<Int32Array | undefined>) => {
      const out = noChunks();
      for (let c = 0; c < CHUNKS; c++) {
        const chunk = chunks[c];
        if (chunk === undefined) continue;
        // Walk the chunk's bins and the wider bin each falls in together (no division per bin).
        let index = Math.floor((c * CHUNK) / factor);
        let within = (c * CHUNK) % factor;
        let into = out[index >> CHUNK_BITS] ?? this.chunkOf(out, index >> CHUNK_BITS);
        for (let j = 0; j < CHUNK; j++) {
          into[index & MASK]! += chunk[j]!;
          if (++within === factor) {
            within = 0;
            index++;
            if ((index & MASK) === 0 && j + 1 < CHUNK)
              into = out[index >> CHUNK_BITS] ?? this.chunkOf(out, index >> CHUNK_BITS);
          }
        }
        // Read for good: the wider bins ahead take it instead of new memory.
        chunk.fill(0);
        this.spare.push(chunk);
      }
      return out;
    };
    this.starts = fold(this.starts);
    this.ends = fold(this.ends);
    this.length = Math.ceil(this.length / factor);
    this.level++;
  }

  /** Adds another's counts (brought to a common width first). */
  merge(other: StartEndBins): void {
    const o = other.level < this.level ? other.clone() : other;
    while (o.level < this.level) o.widen();
    while (this.level < o.level) this.widen();
    for (const [mine, theirs] of [
      [this.starts, o.starts],
      [this.ends, o.ends],
    ] as const) {
      for (let c = 0; c < CHUNKS; c++) {
        const chunk = theirs[c];
        if (chunk === undefined) continue;
        const into = mine[c];
        // Threads' ranges mostly cover different times: most chunks are only theirs, copied whole.
        if (into === undefined) mine[c] = chunk.slice();
        else for (let j = 0; j < CHUNK; j++) into[j]! += chunk[j]!;
      }
    }
    if (o.length > this.length) this.length = o.length;
  }

  clone(): StartEndBins {
    const copy = new StartEndBins();
    copy.level = this.level;
    copy.length = this.length;
    copy.starts = this.starts.map((chunk) => chunk?.slice());
    copy.ends = this.ends.map((chunk) => chunk?.slice());
    return copy;
  }

  toState(): StartEndBinsState {
    const used: number[] = [];
    for (let c = 0; c < CHUNKS; c++) if (this.starts[c] || this.ends[c]) used.push(c);
    const starts = new Int32Array(used.length * CHUNK);
    const ends = new Int32Array(used.length * CHUNK);
    used.forEach((c, k) => {
      const s = this.starts[c];
      const e = this.ends[c];
      if (s) starts.set(s, k * CHUNK);
      if (e) ends.set(e, k * CHUNK);
    });
    return { level: this.level, length: this.length, chunks: Int32Array.from(used), starts, ends };
  }

  /** Takes the state's arrays as they are (views, no copy). */
  static fromState(state: StartEndBinsState): StartEndBins {
    const bins = new StartEndBins();
    bins.level = state.level;
    bins.length = state.length;
    state.chunks.forEach((c, k) => {
      bins.starts[c] = state.starts.subarray(k * CHUNK, (k + 1) * CHUNK);
      bins.ends[c] = state.ends.subarray(k * CHUNK, (k + 1) * CHUNK);
    });
    return bins;
  }

  /**
   * Peak calls in flight: for each bin, the calls still in flight when it opens plus those that
   * start inside it. An upper bound of the true peak, exact to within one bin width.
   *
   * Only chunks holding calls are visited: in an empty bin the count in flight is at most the
   * peak so far (it only fell since the bin that last raised it), so none can set a new peak.
   */
  peakConcurrency(): { peak: number; atMs: number | null } {
    let active = 0;
    let peak = 0;
    let at: number | null = null;
    for (let c = 0; c < CHUNKS; c++) {
      const starts = this.starts[c];
      const ends = this.ends[c];
      if (starts === undefined && ends === undefined) continue;
      for (let j = 0; j < CHUNK; j++) {
        const started = starts === undefined ? 0 : starts[j]!;
        const here = active + started;
        if (here > peak) {
          peak = here;
          at = (c * CHUNK + j) * this.widthMs;
        }
        active += started - (ends === undefined ? 0 : ends[j]!);
      }
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
    const span = windowMs / width;
    // The window's sum only rises at a bin with starts, so only those can hold a new maximum;
    // the sum there is the dense pass's: `tail` subtracts what left the window (empty chunks
    // skipped whole), and empty head chunks are skipped (their bins add nothing).
    const chunks = this.starts;
    let sum = 0;
    let best = 0;
    let firstBin: number | null = null;
    let tail = 0;
    for (let c = 0; c < CHUNKS; c++) {
      const chunk = chunks[c];
      if (chunk === undefined) continue;
      for (let j = 0; j < CHUNK; j++) {
        const value = chunk[j]!;
        if (value === 0) continue;
        const i = c * CHUNK + j;
        sum += value;
        while (tail <= i - span) {
          const left = chunks[tail >> CHUNK_BITS];
          if (left === undefined) {
            tail = ((tail >> CHUNK_BITS) + 1) << CHUNK_BITS;
            continue;
          }
          sum -= left[tail & MASK]!;
          tail++;
        }
        if (sum > best) {
          best = sum;
          firstBin = Math.max(0, i - span + 1);
        }
      }
    }
    return { calls: best, atMs: firstBin === null ? null : firstBin * width };
  }

  /** Call starts per fixed bin of `binMs` (a multiple of the width), from t = 0. */
  series(binMs: number): number[] | null {
    const width = this.widthMs;
    if (binMs % width !== 0) return null;
    const factor = binMs / width;
    const out = new Array<number>(Math.ceil(this.length / factor)).fill(0);
    for (let c = 0; c < CHUNKS; c++) {
      const chunk = this.starts[c];
      if (chunk === undefined) continue;
      for (let j = 0; j < CHUNK; j++)
        if (chunk[j] !== 0) out[Math.floor((c * CHUNK + j) / factor)]! += chunk[j]!;
    }
    return out;
  }
}

/**
 * The largest sum of `span` neighbouring values among the first `length`, sliding one at a time,
 * and the first index of the first window that reaches it (null when no sum is above 0): the
 * per-second series' window (StartEndBins.maxInWindow is the same pass over its chunks).
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
    // An empty state (an analyzer that saw no such record) must still grow: doubling 0 never does.
    this.values = values !== undefined && values.length > 0 ? values : new Float64Array(256);
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
