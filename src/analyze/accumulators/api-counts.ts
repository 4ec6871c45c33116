/** Calls and points of api records by dimension (operation, route, status, session, ...). */
import type { ApiRecord } from '../../trace/schema.ts';
import { cmp } from '../figures.ts';
import type { Analysis, KeyCount } from '../schema.ts';
import type { Accumulator } from './accumulator.ts';

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

  /**
   * Per dimension, the last key and its entry: consecutive records mostly share a protocol,
   * method, status, resource and phase, and the scanner hands over the same string for the same
   * bytes, so the comparison is cheaper than the map lookup. Not state: entries are only ever
   * mutated in place, so the cache stays true across merges.
   */
  private readonly lastKeys: Array<string | undefined> = new Array(DIMENSIONS.length).fill(undefined);
  private readonly lastEntries: Array<KeyCount | undefined> = new Array(DIMENSIONS.length).fill(undefined);

  private bump(dimension: number, map: Counts, key: string, points: number): void {
    let entry = this.lastKeys[dimension] === key ? this.lastEntries[dimension] : map.get(key);
    if (entry === undefined) {
      entry = { calls: 1, points };
      map.set(key, entry);
    } else {
      entry.calls++;
      entry.points += points;
    }
    this.lastKeys[dimension] = key;
    this.lastEntries[dimension] = entry;
  }

  addApi(r: ApiRecord): void {
    const points = r.cost;
    const status = r.status;
    this.bump(0, this.byOperation, r.op ?? NONE, points);
    this.bump(1, this.byRoute, r.route, points);
    this.bump(2, this.byStatus, status === null ? 'opaque' : statusKey(status), points);
    this.bump(3, this.bySource, r.source ?? NONE, points);
    this.bump(4, this.bySession, r.session ?? NONE, points);
    this.bump(5, this.byRepo, r.repo ?? NONE, points);
    this.bump(6, this.byPhase, r.phase ?? NONE, points);
    this.bump(7, this.byResource, r.resource, points);
    this.bump(8, this.byMethod, r.method, points);
    this.bump(9, this.byProtocol, r.protocol, points);
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
