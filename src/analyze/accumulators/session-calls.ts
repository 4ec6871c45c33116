/**
 * GitHub calls as the edges finisher (edges.ts) needs them: per session (calls, points by
 * resource, writes (REST, GraphQL mutations), the end of its last call, and each write's (method, route) with its
 * times, for writes made again after a restart) and for the calls no session was attributed to
 * (the control plane's own overhead); calls and points per second of run time, for the active
 * window. Memory: one tally per session, plus 8 bytes per write that carries a session.
 */
import type { ScannedRow } from '../../trace/scanner.ts';
import type { ApiRecord } from '../../trace/schema.ts';
import { SecondSeries } from '../bins.ts';
import type { Accumulator } from './accumulator.ts';
import { addTo, ById } from './accumulator.ts';

export interface CallTally {
  calls: number;
  points: number;
  /** Points by rate-limit resource: the two every control plane uses as fields (a map per call cost a third of this file's time). */
  corePoints: number;
  graphqlPoints: number;
  otherPoints: Map<string, number>;
  writes: number;
  /** The latest end (t + dur) of its calls; -Infinity before the first. */
  lastEnd: number;
  /** `METHOD route` of each write (a mutation's `graphql OPERATION`) → its start times (file order; sorted when read). */
  writeTimes: Map<string, number[]>;
}

/** A tally's points by resource (the resources it used). */
export function pointsByResource(tally: CallTally): Map<string, number> {
  const out = new Map(tally.otherPoints);
  if (tally.corePoints > 0) out.set('core', tally.corePoints);
  if (tally.graphqlPoints > 0) out.set('graphql', tally.graphqlPoints);
  return out;
}

export interface SessionCallsState {
  bySession: Map<string, CallTally>;
  unattributed: CallTally;
  handover: CallTally;
  unserved: Map<string, number>;
  callsPerSecond: Float64Array;
  pointsPerSecond: Float64Array;
}

/** Distinct paths the unserved calls are counted by; the rest are `(other)`. */
export const MAX_UNSERVED_PATHS = 50;
export const UNSERVED_OTHER = '(other)';

/** GraphQL's refusal of a field its schema lacks, as the emulator records it (graphql-js's words). */
const GRAPHQL_UNDEFINED_FIELD = /^Field '(\w{1,100})' doesn't exist on type '(\w{1,100})'/;

/**
 * Whether a GitHub call asked for what the emulator does not serve: a path no route matches (its
 * record's route is `(unmatched)`), or a GraphQL field its schema lacks.
 */
export function isUnserved(r: Pick<ApiRecord, 'service' | 'route' | 'protocol' | 'error'>): boolean {
  if (r.service !== 'github') return false;
  if (r.route === '(unmatched)') return true;
  return r.protocol === 'graphql' && r.error !== undefined && GRAPHQL_UNDEFINED_FIELD.test(r.error);
}

/**
 * What an unserved call is counted by: `METHOD path` for a path no route matches (its error is
 * `Not Found: PATH`), numbers and SHAs made placeholders so one route is one entry
 * (`POST /repos/o/r/issues/{n}/reactions`); `GraphQL Type.field` for a field the schema lacks
 * (`GraphQL Mutation.addReaction`).
 */
export function unservedKey(r: Pick<ApiRecord, 'method' | 'error' | 'protocol'>): string {
  if (r.protocol === 'graphql') {
    const field = GRAPHQL_UNDEFINED_FIELD.exec(r.error ?? '');
    if (field !== null) return `GraphQL ${field[2]}.${field[1]}`;
  }
  const said = r.error?.startsWith('Not Found: ') ? r.error.slice(11) : '(path not recorded)';
  const path = said
    .replace(/^\/api\/v3(?=\/)/, '')
    .replace(/\/[0-9a-f]{40}(?=\/|$)/g, '/{sha}')
    .replace(/\/\d+(?=\/|$)/g, '/{n}')
    .slice(0, 200);
  return `${r.method} ${path}`;
}

/**
 * Counts `n` calls of `key` in `into`: the MAX_UNSERVED_PATHS first keys in string order each
 * have their own count, the rest go to UNSERVED_OTHER. Kept by order of the keys, not of arrival,
 * so a file split across threads gives the same counts as read whole.
 */
function addUnserved(into: Map<string, number>, key: string, n: number): void {
  const own = into.get(key);
  if (own !== undefined) {
    into.set(key, own + n);
    return;
  }
  const kept = into.size - (into.has(UNSERVED_OTHER) ? 1 : 0);
  if (kept >= MAX_UNSERVED_PATHS && key !== UNSERVED_OTHER) {
    let last: string | undefined;
    for (const k of into.keys()) if (k !== UNSERVED_OTHER && (last === undefined || k > last)) last = k;
    if (last !== undefined && key < last) {
      into.set(UNSERVED_OTHER, (into.get(UNSERVED_OTHER) ?? 0) + (into.get(last) ?? 0));
      into.delete(last);
    } else key = UNSERVED_OTHER;
  }
  into.set(key, (into.get(key) ?? 0) + n);
}

/** A tally of no calls yet. */
export const newTally = (): CallTally => ({
  calls: 0,
  points: 0,
  corePoints: 0,
  graphqlPoints: 0,
  otherPoints: new Map(),
  writes: 0,
  lastEnd: Number.NEGATIVE_INFINITY,
  writeTimes: new Map(),
});

/**
 * A write, as `api.totals.writes` counts them: a REST POST, PATCH, PUT or DELETE, or a GraphQL
 * mutation. A GraphQL request is always a POST; what tells a mutation is its secondary cost, 5
 * points against a query's 1 (GitHub's "secondary rate limits" points, which the emulator
 * charges; a mutation refused before it was charged costs 0 and is not counted). A control plane
 * that writes through `gh` (whose `pr create`, `issue comment`, … are mutations) writes so.
 */
export function isWrite(r: Pick<ApiRecord, 'protocol' | 'method' | 'secondaryCost'>): boolean {
  if (r.protocol === 'graphql') return r.secondaryCost >= 5;
  if (r.protocol !== 'rest') return false;
  const m = r.method;
  return m === 'POST' || m === 'PATCH' || m === 'PUT' || m === 'DELETE';
}

/** What a write is compared by across a restart: `METHOD route`, or a mutation's operation. */
export function writeKey(r: Pick<ApiRecord, 'protocol' | 'method' | 'route' | 'op'>): string {
  return r.protocol === 'graphql' ? `graphql ${r.op ?? r.route}` : `${r.method} ${r.route}`;
}

function mergeTally(into: CallTally, from: CallTally): void {
  into.calls += from.calls;
  into.points += from.points;
  into.corePoints += from.corePoints;
  into.graphqlPoints += from.graphqlPoints;
  for (const [resource, points] of from.otherPoints) addTo(into.otherPoints, resource, points);
  into.writes += from.writes;
  if (from.lastEnd > into.lastEnd) into.lastEnd = from.lastEnd;
  for (const [key, times] of from.writeTimes) {
    const mine = into.writeTimes.get(key);
    if (mine) for (const t of times) mine.push(t);
    else into.writeTimes.set(key, [...times]);
  }
}

export class SessionCalls implements Accumulator<SessionCallsState> {
  bySession = new Map<string, CallTally>();
  unattributed = newTally();
  /**
   * The handover's calls (`source: harness`: a command target's work and setup commands, with
   * their own token): the user's, handing work over, so neither a session's nor the control
   * plane's overhead, and not in the active window's rates (docs/command-target.md).
   */
  handover = newTally();
  /**
   * Calls the emulator does not serve (`isUnserved`: a path no route matches, a GraphQL field its
   * schema lacks), by `unservedKey`: whoever made them met a refusal there that GitHub may not
   * give (docs/command-target.md).
   */
  unserved = new Map<string, number>();
  callsPerSecond = new SecondSeries();
  pointsPerSecond = new SecondSeries();
  // The last session's tally: calls of one session often come in a row.
  private lastSession: string | undefined;
  private lastTally: CallTally | undefined;

  /** Tallies by the scanner's id of their session (not state: a cache of bySession's). */
  private readonly ids = new ById<CallTally>('session');

  /** `row`: the scanner's ids, when the scanner read `r` (the tally found by id). */
  addApi(r: ApiRecord, row?: ScannedRow): void {
    const session = r.session;
    let tally: CallTally;
    if (isUnserved(r)) addUnserved(this.unserved, unservedKey(r), 1);
    if (r.source === 'harness') {
      const h = this.handover;
      h.calls++;
      h.points += r.cost;
      if (isWrite(r)) h.writes++;
      return;
    }
    if (session === undefined) tally = this.unattributed;
    else if (row !== undefined) {
      const slot = this.ids.slot(row);
      tally = this.ids.get(slot) ?? this.tallyOf(session);
      this.ids.set(slot, tally);
    } else if (session === this.lastSession) tally = this.lastTally!;
    else {
      tally = this.tallyOf(session);
      this.lastSession = session;
      this.lastTally = tally;
    }
    const points = r.cost;
    tally.calls++;
    tally.points += points;
    const resource = r.resource;
    if (resource === 'core') tally.corePoints += points;
    else if (resource === 'graphql') tally.graphqlPoints += points;
    else addTo(tally.otherPoints, resource, points);
    const end = r.t + r.dur;
    if (end > tally.lastEnd) tally.lastEnd = end;
    if (isWrite(r)) {
      tally.writes++;
      // Only a session's writes are compared across a restart; the overhead's are only counted.
      if (session !== undefined) {
        const key = writeKey(r);
        const times = tally.writeTimes.get(key);
        if (times) times.push(r.t);
        else tally.writeTimes.set(key, [r.t]);
      }
    }
    this.callsPerSecond.add(r.t, 1);
    this.pointsPerSecond.add(r.t, points);
  }

  private tallyOf(session: string): CallTally {
    let tally = this.bySession.get(session);
    if (tally === undefined) {
      tally = newTally();
      this.bySession.set(session, tally);
    }
    return tally;
  }

  merge(other: SessionCalls): void {
    for (const [session, tally] of other.bySession) {
      const mine = this.bySession.get(session);
      if (mine) mergeTally(mine, tally);
      else {
        // A copy: `other` stays as it was.
        const copy = newTally();
        mergeTally(copy, tally);
        this.bySession.set(session, copy);
      }
    }
    mergeTally(this.unattributed, other.unattributed);
    mergeTally(this.handover, other.handover);
    for (const [key, n] of other.unserved) addUnserved(this.unserved, key, n);
    this.callsPerSecond.merge(other.callsPerSecond);
    this.pointsPerSecond.merge(other.pointsPerSecond);
    this.lastSession = undefined;
    this.lastTally = undefined;
  }

  toState(): SessionCallsState {
    return {
      bySession: this.bySession,
      unattributed: this.unattributed,
      handover: this.handover,
      unserved: this.unserved,
      callsPerSecond: this.callsPerSecond.toState(),
      pointsPerSecond: this.pointsPerSecond.toState(),
    };
  }

  static fromState(state: SessionCallsState): SessionCalls {
    const out = new SessionCalls();
    out.bySession = state.bySession;
    out.unattributed = state.unattributed;
    out.handover = state.handover;
    out.unserved = state.unserved;
    out.callsPerSecond = new SecondSeries(state.callsPerSecond);
    out.pointsPerSecond = new SecondSeries(state.pointsPerSecond);
    return out;
  }

  static transferables(state: SessionCallsState): ArrayBuffer[] {
    return [state.callsPerSecond.buffer as ArrayBuffer, state.pointsPerSecond.buffer as ArrayBuffer];
  }
}
