/** Calls and points of api records by dimension (operation, route, status, session, ...). */
import type { ScannedRow } from '../../trace/scanner.ts';
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

  /** Entries by the scanner's id of their key, per string dimension (not state: a cache). */
  private readonly ids = STRING_FIELDS.map(([, field]) => new ById<KeyCount>(field));
  /** Entries of byStatus by status + 1 (0: opaque). */
  private readonly byStatusCode: Array<KeyCount | undefined> = [];

  /**
   * A record the scanner read (`r` is its record, `row` its ids): the same counts as addApi,
   * each entry found by the id of its key instead of by the key.
   */
  addScanned(r: ApiRecord, row: ScannedRow): void {
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
    const status = r.status;
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
