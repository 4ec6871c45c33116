/**
 * Calls per (session, poll cycle), per rate-limit resource: what the polling floor is computed
 * from. Stored densely: one int32 array per session and resource, indexed by cycle id minus the
 * session's first cycle, so a 50-session, 24-hour run (2,880 cycles of 30 s) takes about 1 MB,
 * where a map entry per (session, cycle) took a hundred times that. A session whose cycle ids
 * span more than MAX_SPAN falls back to a map. Merging adds counts, so it is exact in any order.
 */

const MAX_SPAN = 1 << 22;
/** The key under which every call is counted, beside its resource. */
export const ALL = 'all';

export interface CycleRowState {
  base: number;
  length: number;
  counts: Map<string, Int32Array>;
  sparse: Map<number, Map<string, number>> | null;
}

/** One key's counts per cycle and resource. */
export class CycleRow {
  base = 0;
  length = 0;
  counts = new Map<string, Int32Array>();
  /** Map fallback for sparse cycle ids. */
  sparse: Map<number, Map<string, number>> | null = null;
  private capacity = 0;
  /** The ALL array and the last resource's, while no resize replaced them (not state). */
  private all: Int32Array | undefined;
  private lastResource: string | undefined;
  private lastArray: Int32Array | undefined;

  add(cycle: number, resource: string, n = 1): void {
    if (this.sparse) {
      addSparse(this.sparse, cycle, resource, n);
      return;
    }
    let index = cycle - this.base;
    if (index < 0 || index >= this.capacity) {
      if (!this.reserve(cycle, cycle)) {
        this.toSparse();
        addSparse(this.sparse!, cycle, resource, n);
        return;
      }
      index = cycle - this.base;
    }
    if (index >= this.length) this.length = index + 1;
    if (this.all === undefined) this.all = this.array(ALL);
    this.all[index]! += n;
    if (resource !== this.lastResource || this.lastArray === undefined) {
      this.lastResource = resource;
      this.lastArray = this.array(resource);
    }
    this.lastArray[index]! += n;
  }

  /**
   * Room for cycles first..last in the dense arrays (at least doubling, so one cycle at a time
   * grows geometrically; a merge asks for a whole row at once). An empty row starts at `first`.
   * False when the row would span more than MAX_SPAN cycles: the caller turns it sparse.
   */
  private reserve(first: number, last: number): boolean {
    if (this.length === 0 && this.capacity === 0) this.base = first;
    const from = Math.min(this.base, first);
    const to = Math.max(this.base + this.length - 1, last);
    if (to - from + 1 > MAX_SPAN) return false;
    if (from < this.base || to >= this.base + this.capacity)
      this.resize(from, Math.max(to - from + 1, Math.min(MAX_SPAN, this.capacity * 2), 64));
    return true;
  }

  private array(resource: string): Int32Array {
    let array = this.counts.get(resource);
    if (array === undefined) {
      array = new Int32Array(this.capacity);
      this.counts.set(resource, array);
    }
    return array;
  }

  /** New capacity starting at cycle `from`, keeping the counts. */
  private resize(from: number, capacity: number): void {
    this.forget();
    const shift = this.base - from;
    for (const [resource, old] of this.counts) {
      const grown = new Int32Array(capacity);
      grown.set(old.subarray(0, this.length), shift);
      this.counts.set(resource, grown);
    }
    if (this.length > 0) this.length += shift;
    this.base = from;
    this.capacity = capacity;
  }

  private forget(): void {
    this.all = undefined;
    this.lastArray = undefined;
  }

  private toSparse(): void {
    this.forget();
    const sparse = new Map<number, Map<string, number>>();
    for (const [resource, array] of this.counts) {
      if (resource === ALL) continue;
      for (let i = 0; i < this.length; i++)
        if (array[i]! > 0) addSparse(sparse, this.base + i, resource, array[i]!);
    }
    this.sparse = sparse;
    this.counts.clear();
    this.length = 0;
  }

  /** Every cycle with at least one call: its counts by resource (and ALL). */
  *cells(): Generator<[number, (resource: string) => number]> {
    if (this.sparse) {
      for (const [cycle, counts] of this.sparse)
        yield [cycle, (r) => (r === ALL ? sum(counts) : (counts.get(r) ?? 0))];
      return;
    }
    const all = this.counts.get(ALL);
    if (all === undefined) return;
    for (let i = 0; i < this.length; i++) {
      if (all[i] === 0) continue;
      yield [this.base + i, (r) => this.counts.get(r)?.[i] ?? 0];
    }
  }

  /**
   * Counts this row's cells into `freqs` (one map per entry of `resources`, ALL among them: how
   * many cells made n calls of it) and their cycles into `cycles`; returns how many cells. The
   * dense arrays are read directly, one lookup per resource for the whole row.
   */
  tally(
    resources: readonly string[],
    freqs: ReadonlyArray<Map<number, number>>,
    cycles: Set<number>,
    cycleFilter?: (cycle: number) => boolean,
  ): number {
    let cells = 0;
    if (this.sparse) {
      for (const [cycle, countOf] of this.cells()) {
        if (cycleFilter !== undefined && !cycleFilter(cycle)) continue;
        cells++;
        cycles.add(cycle);
        resources.forEach((r, j) => {
          const n = countOf(r);
          freqs[j]!.set(n, (freqs[j]!.get(n) ?? 0) + 1);
        });
      }
      return cells;
    }
    const all = this.counts.get(ALL);
    if (all === undefined) return 0;
    const arrays = resources.map((r) => this.counts.get(r));
    for (let i = 0; i < this.length; i++) {
      if (all[i] === 0) continue;
      const cycle = this.base + i;
      if (cycleFilter !== undefined && !cycleFilter(cycle)) continue;
      cells++;
      cycles.add(cycle);
      for (let j = 0; j < arrays.length; j++) {
        const n = arrays[j]?.[i] ?? 0;
        const f = freqs[j]!;
        f.set(n, (f.get(n) ?? 0) + 1);
      }
    }
    return cells;
  }

  /** The first cycle with a call (undefined: none). */
  firstCycle(): number | undefined {
    if (this.sparse) {
      let first: number | undefined;
      for (const [cycle, counts] of this.sparse)
        if (sum(counts) > 0 && (first === undefined || cycle < first)) first = cycle;
      return first;
    }
    const all = this.counts.get(ALL);
    if (all === undefined) return undefined;
    for (let i = 0; i < this.length; i++) if (all[i]! > 0) return this.base + i;
    return undefined;
  }

  resources(): string[] {
    if (this.sparse) {
      const out = new Set<string>();
      for (const counts of this.sparse.values()) for (const r of counts.keys()) out.add(r);
      return [...out];
    }
    return [...this.counts.keys()].filter((r) => r !== ALL);
  }

  mergeFrom(other: CycleRow): void {
    if (other.sparse) {
      for (const [cycle, counts] of other.sparse) for (const [r, n] of counts) this.add(cycle, r, n);
      return;
    }
    if (other.length === 0) return;
    // Room for the whole row at once, then its arrays added into ours (ALL among them): what
    // add() would do cell by cell, without a call per cell.
    if (!this.sparse && this.reserve(other.base, other.base + other.length - 1)) {
      const shift = other.base - this.base;
      for (const [resource, theirs] of other.counts) {
        const mine = this.array(resource);
        for (let i = 0; i < other.length; i++) mine[shift + i]! += theirs[i]!;
      }
      if (shift + other.length > this.length) this.length = shift + other.length;
      return;
    }
    // A span past MAX_SPAN: add() turns this row sparse.
    for (const [resource, array] of other.counts) {
      if (resource === ALL) continue;
      for (let i = 0; i < other.length; i++) if (array[i]! > 0) this.add(other.base + i, resource, array[i]!);
    }
  }

  toState(): CycleRowState {
    const counts = new Map<string, Int32Array>();
    for (const [r, a] of this.counts) counts.set(r, a.slice(0, this.length));
    return { base: this.base, length: this.length, counts, sparse: this.sparse };
  }

  static fromState(state: CycleRowState): CycleRow {
    const row = new CycleRow();
    row.base = state.base;
    row.length = state.length;
    row.capacity = state.length;
    row.counts = state.counts;
    row.sparse = state.sparse;
    return row;
  }
}

function addSparse(map: Map<number, Map<string, number>>, cycle: number, resource: string, n: number): void {
  let counts = map.get(cycle);
  if (counts === undefined) {
    counts = new Map();
    map.set(cycle, counts);
  }
  counts.set(resource, (counts.get(resource) ?? 0) + n);
}

function sum(counts: Map<string, number>): number {
  let total = 0;
  for (const n of counts.values()) total += n;
  return total;
}

/** Per key (a session, or '' for calls with a cycle but no session): counts per cycle. */
export class CycleCounts {
  rows = new Map<string, CycleRow>();
  /** The last key's row: a session's calls of one cycle mostly come together. Rows are only
   * ever mutated in place, so this stays true across merges. */
  private lastKey: string | undefined;
  private lastRow: CycleRow | undefined;

  add(key: string, cycle: number, resource: string): void {
    const row = key === this.lastKey ? this.lastRow! : this.row(key);
    this.lastKey = key;
    this.lastRow = row;
    row.add(cycle, resource);
  }

  /** The row of `key`, made if there is none yet (the same object from then on). */
  row(key: string): CycleRow {
    let row = this.rows.get(key);
    if (row === undefined) {
      row = new CycleRow();
      this.rows.set(key, row);
    }
    return row;
  }

  merge(other: CycleCounts): void {
    for (const [key, row] of other.rows) {
      let mine = this.rows.get(key);
      if (mine === undefined) {
        mine = new CycleRow();
        this.rows.set(key, mine);
      }
      mine.mergeFrom(row);
    }
  }

  toState(): Map<string, CycleRowState> {
    return new Map([...this.rows].map(([key, row]) => [key, row.toState()]));
  }

  static fromState(state: Map<string, CycleRowState>): CycleCounts {
    const out = new CycleCounts();
    for (const [key, row] of state) out.rows.set(key, CycleRow.fromState(row));
    return out;
  }

  /**
   * For each resource (and ALL): how many cells made 0, 1, 2, ... calls of it. A cell is a
   * (key, cycle) with at least one call; cells without a resource's calls count as 0 for it.
   */
  frequencies(
    keys: (key: string) => boolean,
    cycleFilter?: (cycle: number) => boolean,
  ): {
    cells: number;
    cycles: Set<number>;
    /** Keys with at least one cell. */
    keys: number;
    freq: Map<string, Map<number, number>>;
  } {
    const resourceSet = new Set<string>([ALL]);
    for (const [key, row] of this.rows) if (keys(key)) for (const r of row.resources()) resourceSet.add(r);
    const resources = [...resourceSet];
    const freqs = resources.map(() => new Map<number, number>());
    const cycles = new Set<number>();
    let cells = 0;
    let withCells = 0;
    for (const [key, row] of this.rows) {
      if (!keys(key)) continue;
      const counted = row.tally(resources, freqs, cycles, cycleFilter);
      if (counted > 0) withCells++;
      cells += counted;
    }
    return { cells, cycles, keys: withCells, freq: new Map(resources.map((r, j) => [r, freqs[j]!])) };
  }
}
