/**
 * What the primary rate limit needs (burn, projection, bracket): points per second by resource,
 * the points no session was charged for, the largest x-ratelimit-limit seen, one window per
 * (resource, x-ratelimit-reset), and calls without x-ratelimit-* per second. Answered calls only.
 */
import type { ApiRecord } from '../../trace/schema.ts';
import { SecondSeries } from '../bins.ts';
import type { ResetWindowAcc } from '../burn.ts';
import type { Accumulator } from './accumulator.ts';

export interface RateLimitState {
  sharedPoints: Map<string, Float64Array>;
  rlLimits: Map<string, number>;
  resetWindows: Map<string, ResetWindowAcc>;
  unwindowedCalls: Map<string, Float64Array>;
  unwindowedPoints: Map<string, Float64Array>;
  pointsPerSecond: Map<string, Float64Array>;
  beyondSeries: number;
}

/** Per-resource shortcuts for the hot path (not state: rebuilt on demand). */
interface HotResource {
  points: SecondSeries;
  unwindowedCalls: SecondSeries | undefined;
  unwindowedPoints: SecondSeries | undefined;
  rlLimit: number;
  lastReset: number;
  lastWindow: ResetWindowAcc | undefined;
}

function seriesOf(map: Map<string, SecondSeries>, key: string): SecondSeries {
  let series = map.get(key);
  if (series === undefined) {
    series = new SecondSeries();
    map.set(key, series);
  }
  return series;
}

const seriesState = (map: Map<string, SecondSeries>) =>
  new Map([...map].map(([key, series]) => [key, series.toState()]));
const seriesFromState = (map: Map<string, Float64Array>) =>
  new Map([...map].map(([key, values]) => [key, new SecondSeries(values)]));

export class RateLimit implements Accumulator<RateLimitState> {
  /** Points of calls without a session, per second (a projection's window takes its share). */
  sharedPoints = new Map<string, SecondSeries>();
  rlLimits = new Map<string, number>();
  /** Keyed `resource \0 reset`, in order of first sight. */
  resetWindows = new Map<string, ResetWindowAcc>();
  unwindowedCalls = new Map<string, SecondSeries>();
  unwindowedPoints = new Map<string, SecondSeries>();
  pointsPerSecond = new Map<string, SecondSeries>();
  /** Calls too late in the run for the per-second series. */
  beyondSeries = 0;
  private hotName: string | undefined;
  private hot: HotResource | undefined;
  private readonly hotByName = new Map<string, HotResource>();

  addApi(r: ApiRecord): void {
    if (r.status === null) return;
    const resource = r.resource;
    const points = r.cost;
    const t = r.t;
    if (r.session === undefined) seriesOf(this.sharedPoints, resource).add(t, points);
    const hot = resource === this.hotName ? this.hot! : this.hotFor(resource);
    if (!hot.points.add(t, points)) this.beyondSeries++;
    const rl = r.rl;
    if (rl === undefined) {
      if (hot.unwindowedCalls === undefined) {
        hot.unwindowedCalls = seriesOf(this.unwindowedCalls, resource);
        hot.unwindowedPoints = seriesOf(this.unwindowedPoints, resource);
      }
      hot.unwindowedCalls.add(t, 1);
      hot.unwindowedPoints!.add(t, points);
      return;
    }
    if (rl.limit > hot.rlLimit) {
      hot.rlLimit = rl.limit;
      this.rlLimits.set(resource, rl.limit);
    }
    const used = rl.used ?? rl.limit - rl.remaining;
    let window = hot.lastReset === rl.reset ? hot.lastWindow : undefined;
    if (window === undefined) {
      const key = `${resource}\u0000${rl.reset}`;
      window = this.resetWindows.get(key);
      if (window === undefined) {
        window = {
          resource,
          reset: rl.reset,
          calls: 0,
          points: 0,
          limit: rl.limit,
          usedMax: used,
          remainingMin: rl.remaining,
        };
        this.resetWindows.set(key, window);
      }
      hot.lastReset = rl.reset;
      hot.lastWindow = window;
    }
    window.calls++;
    window.points += points;
    if (rl.limit > window.limit) window.limit = rl.limit;
    if (window.usedMax === null || used > window.usedMax) window.usedMax = used;
    if (rl.remaining < window.remainingMin) window.remainingMin = rl.remaining;
  }

  private hotFor(resource: string): HotResource {
    let hot = this.hotByName.get(resource);
    if (hot === undefined) {
      hot = {
        points: seriesOf(this.pointsPerSecond, resource),
        unwindowedCalls: undefined,
        unwindowedPoints: undefined,
        rlLimit: this.rlLimits.get(resource) ?? Number.NEGATIVE_INFINITY,
        lastReset: Number.NaN,
        lastWindow: undefined,
      };
      this.hotByName.set(resource, hot);
    }
    this.hotName = resource;
    this.hot = hot;
    return hot;
  }

  merge(other: RateLimit): void {
    this.hotByName.clear();
    this.hotName = undefined;
    this.hot = undefined;
    for (const [key, value] of other.rlLimits) {
      const mine = this.rlLimits.get(key);
      if (mine === undefined || value > mine) this.rlLimits.set(key, value);
    }
    for (const [key, w] of other.resetWindows) {
      const mine = this.resetWindows.get(key);
      if (mine === undefined) this.resetWindows.set(key, { ...w });
      else {
        mine.calls += w.calls;
        mine.points += w.points;
        mine.limit = Math.max(mine.limit, w.limit);
        if (w.usedMax !== null && (mine.usedMax === null || w.usedMax > mine.usedMax))
          mine.usedMax = w.usedMax;
        mine.remainingMin = Math.min(mine.remainingMin, w.remainingMin);
      }
    }
    for (const [target, source] of [
      [this.unwindowedCalls, other.unwindowedCalls],
      [this.unwindowedPoints, other.unwindowedPoints],
      [this.pointsPerSecond, other.pointsPerSecond],
      [this.sharedPoints, other.sharedPoints],
    ] as const) {
      for (const [key, series] of source) seriesOf(target, key).merge(series);
    }
    this.beyondSeries += other.beyondSeries;
  }

  toState(): RateLimitState {
    return {
      sharedPoints: seriesState(this.sharedPoints),
      rlLimits: this.rlLimits,
      resetWindows: this.resetWindows,
      unwindowedCalls: seriesState(this.unwindowedCalls),
      unwindowedPoints: seriesState(this.unwindowedPoints),
      pointsPerSecond: seriesState(this.pointsPerSecond),
      beyondSeries: this.beyondSeries,
    };
  }

  static fromState(state: RateLimitState): RateLimit {
    const out = new RateLimit();
    out.sharedPoints = seriesFromState(state.sharedPoints);
    out.rlLimits = state.rlLimits;
    out.resetWindows = state.resetWindows;
    out.unwindowedCalls = seriesFromState(state.unwindowedCalls);
    out.unwindowedPoints = seriesFromState(state.unwindowedPoints);
    out.pointsPerSecond = seriesFromState(state.pointsPerSecond);
    out.beyondSeries = state.beyondSeries;
    return out;
  }

  static transferables(state: RateLimitState): ArrayBuffer[] {
    const out: ArrayBuffer[] = [];
    for (const map of [
      state.unwindowedCalls,
      state.unwindowedPoints,
      state.pointsPerSecond,
      state.sharedPoints,
    ])
      for (const values of map.values()) out.push(values.buffer as ArrayBuffer);
    return out;
  }
}
