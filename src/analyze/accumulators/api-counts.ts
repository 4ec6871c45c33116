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

function bump(map: Counts, key: string, points: number): void {
  const entry = map.get(key);
  if (entry === undefined) map.set(key, { calls: 1, points });
  else {
    entry.calls++;
    entry.points += points;
  }
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
