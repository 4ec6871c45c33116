/**
 * Poll cycles inferred from traffic (docs/model.md#cycles-from-traffic): a control plane measured
 * from outside (`--target command`, an imported trace) has api records with no cycle id and no
 * `poll.cycle` spans. A control plane that polls starts a burst of calls at every tick of its
 * interval; one that works a task after another starts them when a task starts or ends. So:
 *
 * 1. **The bursts.** The calls by start, cut where nothing is in flight for a while (1 s to 64 s:
 *    each is tried, and the one whose bursts line up best is kept).
 * 2. **The period.** Where the bursts' starts line up: for each candidate period (1 % apart,
 *    MIN_PERIOD_MS to MAX_PERIOD_MS), how close their phases are (the Rayleigh z, n·R²: R is 1
 *    when every burst starts at the same phase, about 1/√n for n bursts at random). The period is
 *    the longest whose z is near the best (a period's halves and thirds line up too). It is kept
 *    only if the bursts near its phase are more than chance would put there over all the
 *    candidates tried (a binomial tail, below CHANCE); then fitted to the bursts' ticks (least
 *    squares). Ticks a loop skipped after an overrun, or bursts off the grid, lower z but do not
 *    move it.
 * 3. **The cycles.** The longest chain of those bursts each a whole number of periods (1 to 4,
 *    ±20 %) after the one before, or the first after a restart (`controlplane.ready`): the loop's
 *    ticks, on its grid as it drifts. Each cycle is its tick's burst with the bursts after it that
 *    start within a quarter of a period of its end (a cycle whose calls wait on a busy machine),
 *    up to the next tick. Bursts off the grid (a spawn's calls between two ticks) are no cycle.
 *
 * Pure, and n log n in the calls (times the few hundred candidate periods, for the bursts); src/learn/trace.ts gives it a trace's calls and turns what it
 * finds into cycles the rest of `model learn` reads as declared ones.
 */

/** The shortest and longest poll interval looked for. */
export const MIN_PERIOD_MS = 5_000;
export const MAX_PERIOD_MS = 30 * 60_000;
/** Calls needed at least to look for a period. */
export const MIN_CALLS = 8;
/** Candidate periods, this much apart (a ratio). */
const PERIOD_STEP = 1.01;
/**
 * When bursts line up on a period beyond chance: counted near their phase (within ALIGNED_ARC of
 * the circle either way), as many as n bursts at random would put there (each with odds
 * 2·ALIGNED_ARC) with odds below CHANCE over every candidate period tried (the binomial tail,
 * times the candidates). Traffic that passes by chance is also turned away by the cycles it would
 * make: their ticks MIN_ON_GRID of its bursts, holding MIN_COVERED of its calls.
 */
const ALIGNED_ARC = 0.05;
const CHANCE = 0.01;
/** The share of the best z a longer candidate needs to be the period (not one of its halves). */
const Z_NEAR_BEST = 0.85;
/** The share of the bursts aligned on a period that a multiple of it must still align to be the period. */
const MULTIPLE_ALIGNED = 0.8;
/** Calls in flight this share of the time: a busy loop's cycles run into each other (said when no period is found). */
const BUSY_SHARE = 0.7;
/** The quiet times (ms) the bursts are cut at while the period is looked for: the one that lines up best is kept. */
const QUIET_STEPS = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000];
/** The cycles found must hold this share of the control plane's calls, at least, and their ticks this share of its bursts. */
const MIN_COVERED = 0.5;
const MIN_ON_GRID = 0.6;
/** A gap counts as a whole number of periods within this share of one. */
const GRID_TOLERANCE = 0.2;
/**
 * The share of its grid's ticks from the first cycle to the last that a loop kept: one that
 * overran skips a few, but gaps of 1 to MAX_SKIP periods ±GRID_TOLERANCE fit nearly any traffic
 * when most ticks are missing.
 */
const MIN_TICKS_KEPT = 0.7;
/** A loop that overran waits up to this many periods for its next tick. */
const MAX_SKIP = 4;
/** Cycles at least, for a period to be believed. */
const MIN_CYCLES = 8;

/** The calls to infer from, column by column (start and duration, ms). */
export interface TrafficCalls {
  size: number;
  t: ArrayLike<number>;
  dur: ArrayLike<number>;
  /** 1 for a call of the control plane's, 0 for one left out (an agent's). */
  own: ArrayLike<number>;
}

export interface InferredCycle {
  t: number;
  end: number;
  /** Its calls, indices into the calls given. */
  calls: number[];
}

export type CycleInference =
  | { found: true; periodMs: number; cycles: InferredCycle[]; bursts: number; offCycleCalls: number }
  | { found: false; why: string };

const seconds = (ms: number) =>
  ms >= 60_000 ? `${Math.round(ms / 6_000) / 10} min` : `${Math.round(ms / 100) / 10} s`;

/**
 * How well the onsets line up on a period: the Rayleigh z, n·R², summed over the segments between
 * restarts (each starts its grid again, at its own phase).
 */
function lineUp(segments: readonly Float64Array[], periodMs: number): { z: number; r: number } {
  const w = (2 * Math.PI) / periodMs;
  let z = 0;
  let total = 0;
  let resultant = 0;
  for (const onsets of segments) {
    let c = 0;
    let s = 0;
    for (const t of onsets) {
      c += Math.cos(w * t);
      s += Math.sin(w * t);
    }
    const length = Math.hypot(c, s);
    if (onsets.length > 0) z += (length * length) / onsets.length;
    total += onsets.length;
    resultant += length;
  }
  return { z, r: total > 0 ? resultant / total : 0 };
}

/**
 * The period the onsets line up on best: of the candidates whose z is near the best one, the
 * longest (a period's halves and thirds line up too), then the best of its neighbours.
 */
function periodOf(
  segments: readonly Float64Array[],
  spanMs: number,
  quietMs: number,
): { periodMs: number; z: number; r: number; aligned: number; tried: number } | undefined {
  // A period longer than a third of the traffic's span cannot show three times, nor one shorter
  // than twice the quiet the bursts were cut at.
  const longest = Math.min(MAX_PERIOD_MS, spanMs / (MIN_CYCLES - 1));
  const candidates: Array<{ periodMs: number; z: number; r: number }> = [];
  for (let p = Math.max(MIN_PERIOD_MS, 2 * quietMs); p <= longest; p *= PERIOD_STEP)
    candidates.push({ periodMs: p, ...lineUp(segments, p) });
  if (candidates.length === 0) return undefined;
  const bestZ = candidates.reduce((a, x) => Math.max(a, x.z), 0);
  let at = 0;
  candidates.forEach((x, i) => {
    if (x.z >= Z_NEAR_BEST * bestZ) at = i;
  });
  // The best of a candidate's neighbours, then sharpened between them: 1 % off the period drifts
  // a tick a tenth of a period in ten ticks, out of the arc the aligned bursts are counted in.
  const bestNear = (i: number) => {
    let near = candidates[i]!;
    for (let k = Math.max(0, i - 3); k <= Math.min(candidates.length - 1, i + 3); k++)
      if (candidates[k]!.z > near.z) near = candidates[k]!;
    const step = (PERIOD_STEP - 1) / 20;
    for (let k = -20; k <= 20; k++) {
      const periodMs = near.periodMs * (1 + k * step);
      const fine = lineUp(segments, periodMs);
      if (fine.z > near.z) near = { periodMs, ...fine };
    }
    return near;
  };
  let chosen = bestNear(at);
  let aligned = alignedCount(segments, chosen.periodMs);
  // Bursts between two ticks (a spawn's) can make a fraction of the period line up better than the
  // period itself, and on a loop that never lags every fraction lines up as well: the period is
  // the longest multiple of the one found that still lines up nearly as many bursts.
  // A multiple is sharpened by the bursts it lines up (z, pulled by bursts off the grid, peaks
  // beside it when they are few).
  const longestMultiple = Math.floor(candidates.at(-1)!.periodMs / chosen.periodMs);
  for (let factor = longestMultiple; factor >= 2; factor--) {
    let wider = factor * chosen.periodMs;
    let widerAligned = alignedCount(segments, wider);
    for (let k = -10; k <= 10; k++) {
      const periodMs = factor * chosen.periodMs * (1 + (k * (PERIOD_STEP - 1)) / 20);
      const n = alignedCount(segments, periodMs);
      if (n > widerAligned) {
        wider = periodMs;
        widerAligned = n;
      }
    }
    if (widerAligned >= MULTIPLE_ALIGNED * aligned) {
      chosen = { periodMs: wider, ...lineUp(segments, wider) };
      aligned = widerAligned;
      break;
    }
  }
  return { ...chosen, aligned, tried: candidates.length };
}

/** The odds that `n` points at random put `m` or more within an arc of share `p` (the binomial tail). */
function binomialTail(n: number, m: number, p: number): number {
  if (m <= 0) return 1;
  // In logs: C(n, k) grows past any float for a few thousand bursts.
  let logC = 0;
  for (let k = 1; k <= m; k++) logC += Math.log((n - k + 1) / k);
  let tail = 0;
  for (let k = m; k <= n; k++) {
    tail += Math.exp(logC + k * Math.log(p) + (n - k) * Math.log(1 - p));
    logC += Math.log((n - k) / (k + 1));
  }
  return Math.min(1, tail);
}

/**
 * How many onsets fall in one arc of ALIGNED_ARC of a period either way, at the phase where most
 * do (per segment between restarts): not around their mean phase, which bursts off the grid pull
 * aside.
 */
function alignedCount(segments: readonly Float64Array[], periodMs: number): number {
  let near = 0;
  for (const onsets of segments) {
    const phases = Float64Array.from(
      onsets,
      (t) => (((t % periodMs) + periodMs) % periodMs) / periodMs,
    ).sort();
    const n = phases.length;
    // Each phase's window of width 2·ALIGNED_ARC, wrapping around the circle (the phases twice).
    const around = Float64Array.from({ length: 2 * n }, (_, k) => phases[k % n]! + (k >= n ? 1 : 0));
    let most = 0;
    for (let i = 0, j = 0; i < n; i++) {
      while (j < i + n && around[j]! - around[i]! <= 2 * ALIGNED_ARC) j++;
      most = Math.max(most, j - i);
    }
    near += most;
  }
  return near;
}

/**
 * The period fitted to the ticks the onsets fall on: least squares of onset against tick number,
 * one slope for every segment between restarts, each with its own start. Onsets off the grid are
 * left out; a fit that moves the period by more than 5 % is not trusted.
 */
function refinePeriod(segments: readonly Float64Array[], periodMs: number): number {
  let num = 0;
  let den = 0;
  for (const onsets of segments) {
    const ticks: Array<[number, number]> = [];
    for (const t of onsets) {
      const k = Math.round((t - onsets[0]!) / periodMs);
      if (Math.abs(t - onsets[0]! - k * periodMs) <= GRID_TOLERANCE * periodMs) ticks.push([k, t]);
    }
    const kMean = ticks.reduce((a, [k]) => a + k, 0) / Math.max(1, ticks.length);
    const tMean = ticks.reduce((a, [, t]) => a + t, 0) / Math.max(1, ticks.length);
    for (const [k, t] of ticks) {
      num += (k - kMean) * (t - tMean);
      den += (k - kMean) * (k - kMean);
    }
  }
  const fitted = den > 0 ? num / den : periodMs;
  return fitted > 0 && Math.abs(fitted / periodMs - 1) < 0.05 ? fitted : periodMs;
}

export function inferCycles(calls: TrafficCalls, readies: readonly number[] = []): CycleInference {
  const order: number[] = [];
  for (let i = 0; i < calls.size; i++) if (calls.own[i]) order.push(i);
  if (order.length < MIN_CALLS)
    return {
      found: false,
      why: `no periodic traffic: ${order.length} calls of the control plane's, too few to look for a period (at least ${MIN_CALLS})`,
    };
  order.sort((a, b) => calls.t[a]! - calls.t[b]! || a - b);

  // 1. The bursts: cut where nothing is in flight for a while.
  const burstsOf = (quietMs: number): InferredCycle[] => {
    const bursts: InferredCycle[] = [];
    let current: InferredCycle | undefined;
    for (const i of order) {
      const t = calls.t[i]!;
      const end = t + calls.dur[i]!;
      if (current && t <= current.end + quietMs) {
        current.calls.push(i);
        current.end = Math.max(current.end, end);
      } else {
        current = { t, end, calls: [i] };
        bursts.push(current);
      }
    }
    return bursts;
  };
  const sortedReadies = [...readies].sort((a, b) => a - b);
  /** The bursts' starts, one array per stretch between restarts. */
  const segmentsOf = (bursts: readonly InferredCycle[]) => {
    const segments: number[][] = [[]];
    let next = 0;
    for (const b of bursts) {
      while (next < sortedReadies.length && sortedReadies[next]! <= b.t) {
        segments.push([]);
        next++;
      }
      segments.at(-1)!.push(b.t);
    }
    return segments.filter((list) => list.length > 0).map((list) => Float64Array.from(list));
  };

  // 2. The period: at each quiet time, where the bursts' starts line up; the best of them.
  const spanMs = calls.t[order.at(-1)!]! - calls.t[order[0]!]!;
  type Found = {
    periodMs: number;
    r: number;
    aligned: number;
    quietMs: number;
    bursts: number;
    odds: number;
  };
  let tried = 0;
  let best: Found | undefined;
  for (const quietMs of QUIET_STEPS) {
    const bursts = burstsOf(quietMs);
    if (bursts.length < MIN_CYCLES) break;
    const period = periodOf(segmentsOf(bursts), spanMs, quietMs);
    if (!period) continue;
    tried += period.tried;
    const odds = binomialTail(bursts.length, period.aligned, 2 * ALIGNED_ARC);
    if (!best || odds < best.odds)
      best = {
        periodMs: period.periodMs,
        r: period.r,
        aligned: period.aligned,
        quietMs,
        bursts: bursts.length,
        odds,
      };
  }
  const found = best && best.odds * tried <= CHANCE ? best : undefined;
  const fineBursts = burstsOf(QUIET_STEPS[0]!);
  const fine = fineBursts.length;
  const busyShare = (bursts: readonly InferredCycle[]) =>
    bursts.reduce((a, b) => a + (b.end - b.t), 0) / Math.max(1, bursts.at(-1)!.end - bursts[0]!.t);
  const noPeriod = `no periodic traffic: ${fine} burst${fine === 1 ? '' : 's'} of calls (nothing in flight for 1 s between them), no period found between ${seconds(MIN_PERIOD_MS)} and ${seconds(MAX_PERIOD_MS)}`;
  if (!found)
    return {
      found: false,
      why: best
        ? `${noPeriod}: the best, ${seconds(best.periodMs)}, lines up ${best.aligned} of ${best.bursts} bursts, as chance would once in ${Math.max(1, Math.round(1 / Math.min(1, best.odds * tried)))} tries${busyShare(fineBursts) >= BUSY_SHARE ? `; calls are in flight ${Math.round(busyShare(fineBursts) * 100)} % of the time: cycles that outlast their interval leave no quiet between them` : ''}`
        : noPeriod,
    };
  // The ticks are looked for among the finest bursts: at a coarser quiet a spawn's calls just
  // before a tick would merge with it into one burst off the grid.
  const bursts = fineBursts;
  const periodMs = refinePeriod(segmentsOf(bursts), found.periodMs);

  // 3. The longest chain of bursts on the loop's grid (n log n: each burst looks back at the
  // bursts a whole number of periods before it, found by binary search): the cycles' onsets.
  const starts = Float64Array.from(bursts, (b) => b.t);
  const firstAtOrAfter = (t: number) => {
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const length = new Int32Array(bursts.length);
  const previous = new Int32Array(bursts.length).fill(-1);
  /** The best chain ending at or before each burst (its end's index), for links across a restart. */
  const bestUpTo = new Int32Array(bursts.length).fill(-1);
  const tolerance = Math.max(1_000, GRID_TOLERANCE * periodMs);
  for (let j = 0; j < bursts.length; j++) {
    length[j] = 1;
    const at = starts[j]!;
    for (let k = 1; k <= MAX_SKIP; k++) {
      const from = firstAtOrAfter(at - k * periodMs - tolerance);
      for (let i = from; i < j && starts[i]! <= at - k * periodMs + tolerance; i++)
        if (length[i]! + 1 > length[j]!) {
          length[j] = length[i]! + 1;
          previous[j] = i;
        }
    }
    // The first burst after a restart may follow the best chain before it: its grid starts again.
    let ready = -1;
    for (const r of sortedReadies) if (r <= at) ready = r;
    if (ready >= 0) {
      const before = firstAtOrAfter(ready) - 1;
      const best = before >= 0 ? bestUpTo[before]! : -1;
      if (best >= 0 && firstAtOrAfter(ready) === j && length[best]! + 1 > length[j]!) {
        length[j] = length[best]! + 1;
        previous[j] = best;
      }
    }
    const prior = j > 0 ? bestUpTo[j - 1]! : -1;
    bestUpTo[j] = prior >= 0 && length[prior]! >= length[j]! ? prior : j;
  }
  const onsets = new Set<number>();
  for (let j = bestUpTo[bursts.length - 1]!; j >= 0; j = previous[j]!) onsets.add(j);
  // Each cycle from its onset, with the bursts after it that start within a quarter of a period
  // of its end (a cycle whose calls wait on a busy machine), up to the next onset.
  const chain: InferredCycle[] = [];
  const quietMs = Math.max(QUIET_STEPS[0]!, Math.min(periodMs / 4, 60_000));
  let current: InferredCycle | undefined;
  let offGrid = 0;
  bursts.forEach((b, j) => {
    if (onsets.has(j)) {
      current = { t: b.t, end: b.end, calls: [...b.calls] };
      chain.push(current);
    } else if (current && b.t <= current.end + quietMs) {
      current.calls.push(...b.calls);
      current.end = Math.max(current.end, b.end);
    } else {
      current = undefined;
      offGrid++;
    }
  });
  if (chain.length < MIN_CYCLES)
    return {
      found: false,
      why: `no periodic traffic: ${bursts.length} bursts, at most ${chain.length} of them ${seconds(periodMs)} apart (at least ${MIN_CYCLES} needed)`,
    };
  if (chain.length < MIN_ON_GRID * (chain.length + offGrid))
    return {
      found: false,
      why: `no periodic traffic: ${chain.length + offGrid} bursts, ${chain.length} of them ${seconds(periodMs)} apart (a poll loop's are nearly all)`,
    };
  const slots = Math.round((chain.at(-1)!.t - chain[0]!.t) / periodMs) + 1;
  if (chain.length < MIN_TICKS_KEPT * slots)
    return {
      found: false,
      why: `no periodic traffic: ${bursts.length} bursts, ${chain.length} of them on a ${seconds(periodMs)} grid of ${slots} ticks (a poll loop skips few: at least ${Math.round(MIN_TICKS_KEPT * 100)} % kept)`,
    };
  const inCycles = chain.reduce((n, c) => n + c.calls.length, 0);
  if (inCycles < MIN_COVERED * order.length)
    return {
      found: false,
      why: `no periodic traffic: ${bursts.length} bursts, the ${chain.length} of them ${seconds(periodMs)} apart hold ${Math.round((100 * inCycles) / order.length)} % of the calls (at least ${Math.round(MIN_COVERED * 100)} % for a poll loop)`,
    };
  return {
    found: true,
    periodMs,
    cycles: chain,
    bursts: bursts.length,
    offCycleCalls: order.length - inCycles,
  };
}
