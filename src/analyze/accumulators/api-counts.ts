/** Calls and points of api records by dimension (operation, route, status, session, ...). */
import type { ScannedCounts, ScannedRow } from '../../trace/scanner.ts';
import type { ApiRecord } from '../../trace/schema.ts';
import { cmp } from '../figures.ts';
import type { Analysis, KeyCount } from '../schema.ts';
import { type Accumulator, ById } from './accumulator.ts';

export const NONE = '(none)';
export const DIMENSIONS = [
  'byOperation',
  'byRoute',
  'byStatus',
  'bySource',
  'bySession',
  'byRepo',
  'byPhase',
  'byResource',
  'byMethod',
  'byProtocol',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];
type Counts = Map<string, KeyCount>;
export type ApiCountsState = Record<Dimension, Counts>;

const STATUS_KEYS: string[] = [];
/** `String(status)` without a new string per record. */
function statusKey(status: number): string {
  if (status >= 0 && status < 1000) {
    const key = STATUS_KEYS[status];
    if (key !== undefined) return key;
    STATUS_KEYS[status] = String(status);
    return STATUS_KEYS[status]!;
  }
  return String(status);
}

/** The entry of `key`, made (at zero) if there is none yet. */
function entryOf(map: Counts, key: string): KeyCount {
  let entry = map.get(key);
  if (entry === undefined) {
    entry = { calls: 0, points: 0 };
    map.set(key, entry);
  }
  return entry;
}

function bumpById(ids: ById<KeyCount>, row: ScannedRow, map: Counts, key: string, points: number): void {
  const slot = ids.slot(row);
  let entry = ids.get(slot);
  if (entry === undefined) {
    entry = entryOf(map, key);
    ids.set(slot, entry);
  }
  entry.calls++;
  entry.points += points;
}

function bump(map: Counts, key: string, points: number): void {
  const entry = map.get(key);
  if (entry === undefined) map.set(key, { calls: 1, points });
  else {
    entry.calls++;
    entry.points += points;
  }
}

/** The string-valued dimensions and the field of the record each counts. */
const STRING_FIELDS = [
  ['byOperation', 'op'],
  ['byRoute', 'route'],
  ['bySource', 'source'],
  ['bySession', 'session'],
  ['byRepo', 'repo'],
  ['byPhase', 'phase'],
  ['byResource', 'resource'],
  ['byMethod', 'method'],
  ['byProtocol', 'protocol'],
] as const;

export class ApiCounts implements Accumulator<ApiCountsState> {
  byOperation: Counts = new Map();
  byRoute: Counts = new Map();
  byStatus: Counts = new Map();
  bySource: Counts = new Map();
  bySession: Counts = new Map();
  byRepo: Counts = new Map();
  byPhase: Counts = new Map();
  byResource: Counts = new Map();
  byMethod: Counts = new Map();
  byProtocol: Counts = new Map();

  addApi(r: ApiRecord): void {
    if (this.scanned !== undefined) {
      this.addWhileScanned(r, this.scanned);
      return;
    }
    const points = r.cost;
    const status = r.status;
    bump(this.byOperation, r.op ?? NONE, points);
    bump(this.byRoute, r.route, points);
    bump(this.byStatus, status === null ? 'opaque' : statusKey(status), points);
    bump(this.bySource, r.source ?? NONE, points);
    bump(this.bySession, r.session ?? NONE, points);
    bump(this.byRepo, r.repo ?? NONE, points);
    bump(this.byPhase, r.phase ?? NONE, points);
    bump(this.byResource, r.resource, points);
    bump(this.byMethod, r.method, points);
    bump(this.byProtocol, r.protocol, points);
  }

  /**
   * addApi while the scanner's module counts the string dimensions (countScanned): the record
   * read by the full path is counted after the record it holds (commit) and, for a value whose
   * totals the module holds, there.
   */
  private addWhileScanned(r: ApiRecord, counts: ScannedCounts): void {
    counts.commit();
    const points = r.cost;
    for (let c = 0; c < STRING_FIELDS.length; c++) {
      const [dimension, field] = STRING_FIELDS[c]!;
      const key = r[field] ?? NONE;
      if (!counts.add(c, key, points)) bump(this[dimension], key, points);
    }
    this.addStatus(r.status, points);
  }

  /** Entries by the scanner's id of their key, per string dimension (not state: a cache). */
  private readonly ids = STRING_FIELDS.map(([, field]) => new ById<KeyCount>(field));
  /** Entries of byStatus by status + 1 (0: opaque). */
  private readonly byStatusCode: Array<KeyCount | undefined> = [];

  /** The scanner counting the string dimensions in its module, between countScanned and endScanned. */
  private scanned: ScannedCounts | undefined;

  /**
   * From now on the string dimensions of the records the scanner reads (addScanned) are counted
   * in its module, by `counts` (scanner.ts ScannedCounts): JavaScript no longer touches them
   * per record. endScanned() must follow before these counts are read, merged or sent.
   */
  countScanned(counts: ScannedCounts): void {
    counts.start(
      STRING_FIELDS.map(([, field]) => field),
      'cost',
      STRING_FIELDS.map(([dimension]) => this[dimension]),
      NONE,
    );
    this.scanned = counts;
  }

  /** The module's counts written back into the maps (see countScanned). */
  endScanned(): void {
    this.scanned?.stop();
    this.scanned = undefined;
  }

  /**
   * A record the scanner read (`r` is its record, `row` its ids): the same counts as addApi,
   * each entry found by the id of its key instead of by the key, or counted in the scanner's
   * module (countScanned).
   */
  addScanned(r: ApiRecord, row: ScannedRow): void {
    if (this.scanned !== undefined) {
      this.scanned.pending[0] = 1;
      this.addStatus(r.status, r.cost);
      return;
    }
    const points = r.cost;
    const ids = this.ids;
    bumpById(ids[0]!, row, this.byOperation, r.op ?? NONE, points);
    bumpById(ids[1]!, row, this.byRoute, r.route, points);
    bumpById(ids[2]!, row, this.bySource, r.source ?? NONE, points);
    bumpById(ids[3]!, row, this.bySession, r.session ?? NONE, points);
    bumpById(ids[4]!, row, this.byRepo, r.repo ?? NONE, points);
    bumpById(ids[5]!, row, this.byPhase, r.phase ?? NONE, points);
    bumpById(ids[6]!, row, this.byResource, r.resource, points);
    bumpById(ids[7]!, row, this.byMethod, r.method, points);
    bumpById(ids[8]!, row, this.byProtocol, r.protocol, points);
    this.addStatus(r.status, points);
  }

  private addStatus(status: number | null, points: number): void {
    if (status !== null && !(status >= 0 && status < 1000)) {
      bump(this.byStatus, statusKey(status), points);
      return;
    }
    const slot = status === null ? 0 : status + 1;
    let entry = this.byStatusCode[slot];
    if (entry === undefined) {
      entry = entryOf(this.byStatus, status === null ? 'opaque' : statusKey(status));
      this.byStatusCode[slot] = entry;
    }
    entry.calls++;
    entry.points += points;
  }

  /** Distinct known keys of a dimension (NONE left out). */
  known(dimension: Dimension): number {
    let n = 0;
    for (const key of this[dimension].keys()) if (key !== NONE) n++;
    return n;
  }

  merge(other: ApiCounts): void {
    for (const dimension of DIMENSIONS) {
      const mine = this[dimension];
      for (const [key, value] of other[dimension]) {
        const entry = mine.get(key);
        if (entry === undefined) mine.set(key, { ...value });
        else {
          entry.calls += value.calls;
          entry.points += value.points;
        }
      }
    }
  }

  result(): Analysis['api']['counts'] {
    return Object.fromEntries(DIMENSIONS.map((d) => [d, sortCounts(this[d])])) as Analysis['api']['counts'];
  }

  toState(): ApiCountsState {
    const state = {} as ApiCountsState;
    for (const dimension of DIMENSIONS) state[dimension] = this[dimension];
    return state;
  }

  static fromState(state: ApiCountsState): ApiCounts {
    const out = new ApiCounts();
    for (const dimension of DIMENSIONS) out[dimension] = state[dimension];
    return out;
  }
}

function sortCounts(map: Counts): Record<string, KeyCount> {
  const entries = [...map].sort(([ka, a], [kb, b]) => b.calls - a.calls || cmp(ka, kb));
  return Object.fromEntries(
    entries.map(([key, value]) => [key, { calls: value.calls, points: value.points }]),
  );
}
