/**
 * The cycle-time simulation as it was before it was reshaped for V8's compiler (2026-12-07,
 * docs/performance.md `model learn`): src/learn/cycle-time.ts's FlatHeap, startPlan and
 * simulateCycles at that commit, unchanged but for their names. test/cycle-time-sim.test.ts holds
 * the reshaped simulation to this one's figures and early stops, over random inputs.
 */
import type { Chain, ClientTimes, SimCycle, SimResult, SimScore } from '../../src/learn/cycle-time.ts';

/**
 * A min-heap of (key, a, b) by key, ties in insertion order (as src/base/min-heap.ts orders them),
 * in typed arrays of a fixed capacity: the simulation pushes and pops millions of these while a
 * model is fitted, and each chain has at most one entry in a heap at a time, so the chains' count
 * bounds it. The arrays are the module's, reused from one simulation to the next (`reset`).
 */
class FlatHeap {
  private keys = new Float64Array(0);
  private seqs = new Float64Array(0);
  private as = new Int32Array(0);
  private bs = new Int32Array(0);
  private seq = 0;
  size = 0;
  /** The last popped entry's payload. */
  a = 0;
  b = 0;

  /** Empties the heap for a simulation of at most `capacity` entries at once. */
  reset(capacity: number): void {
    if (this.keys.length < capacity) {
      this.keys = new Float64Array(capacity);
      this.seqs = new Float64Array(capacity);
      this.as = new Int32Array(capacity);
      this.bs = new Int32Array(capacity);
    }
    this.size = 0;
    this.seq = 0;
  }

  peekKey(): number {
    return this.size > 0 ? this.keys[0]! : Number.POSITIVE_INFINITY;
  }

  push(key: number, a: number, b: number): void {
    const { keys, seqs, as, bs } = this;
    const seq = this.seq++;
    // Sift up with a hole: parents move down until the new entry's place is found.
    let i = this.size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pk = keys[parent]!;
      if (pk < key || (pk === key && seqs[parent]! < seq)) break;
      keys[i] = pk;
      seqs[i] = seqs[parent]!;
      as[i] = as[parent]!;
      bs[i] = bs[parent]!;
      i = parent;
    }
    keys[i] = key;
    seqs[i] = seq;
    as[i] = a;
    bs[i] = b;
  }

  /** Removes the smallest entry; its payload is then in `a` and `b`. */
  pop(): void {
    const { keys, seqs, as, bs } = this;
    this.a = as[0]!;
    this.b = bs[0]!;
    const n = --this.size;
    if (n === 0) return;
    const key = keys[n]!;
    const seq = seqs[n]!;
    const a = as[n]!;
    const b = bs[n]!;
    // Sift the last entry down from the root, with a hole.
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let m = l;
      if (r < n && (keys[r]! < keys[l]! || (keys[r] === keys[l] && seqs[r]! < seqs[l]!))) m = r;
      const mk = keys[m]!;
      if (key < mk || (key === mk && seq < seqs[m]!)) break;
      keys[i] = mk;
      seqs[i] = seqs[m]!;
      as[i] = as[m]!;
      bs[i] = bs[m]!;
      i = m;
    }
    keys[i] = key;
    seqs[i] = seq;
    as[i] = a;
    bs[i] = b;
  }
}

/**
 * What every simulation of the same cycles and chains starts from (computed once per chains
 * array): the chains in flat typed arrays, so that the simulation's loop reads no objects.
 */
interface StartPlan {
  /** Chains that start with their cycle (or, a spawn's, at their own time): by time, then index. */
  startAts: Float64Array;
  startChains: Int32Array;
  /** Per cycle, its chains beyond its `parallel` limit, in order (they start as others end): `pendingChains[pendingFrom[c]..pendingFrom[c + 1]]`. */
  pendingChains: Int32Array;
  pendingFrom: Int32Array;
  running: Int32Array;
  left: Int32Array;
  /** Per chain: its cycle (-1 for a spawn's), where its latencies start in `latencies`, how many. */
  chainCycle: Int32Array;
  latencyFrom: Int32Array;
  latencyCount: Int32Array;
  latencies: Float64Array;
  /** Each chain's start (a spawn's own time; a cycle's chains start with it): where its end starts from. */
  chainStart: Float64Array;
  cycleStart: Float64Array;
}

const startPlans = new WeakMap<readonly Chain[], { cycles: readonly SimCycle[]; plan: StartPlan }>();

function startPlan(cycles: readonly SimCycle[], chains: readonly Chain[]): StartPlan {
  const known = startPlans.get(chains);
  if (known && known.cycles === cycles) return known.plan;
  const running = new Int32Array(cycles.length);
  const left = new Int32Array(cycles.length);
  const pending: number[][] = cycles.map(() => []);
  const starts: Array<{ at: number; chain: number }> = [];
  const chainCycle = new Int32Array(chains.length);
  const latencyFrom = new Int32Array(chains.length);
  const latencyCount = new Int32Array(chains.length);
  let latencyTotal = 0;
  for (const [i, chain] of chains.entries()) {
    chainCycle[i] = chain.cycle;
    latencyFrom[i] = latencyTotal;
    latencyCount[i] = chain.latenciesMs.length;
    latencyTotal += chain.latenciesMs.length;
    if (chain.cycle >= 0 && chain.latenciesMs.length > 0) left[chain.cycle]!++;
    if (chain.cycle < 0) {
      if (chain.latenciesMs.length > 0) starts.push({ at: chain.startMs, chain: i });
      continue;
    }
    const cycle = cycles[chain.cycle]!;
    if (cycle.parallel > 0 && running[chain.cycle]! >= cycle.parallel) pending[chain.cycle]!.push(i);
    else if (chain.latenciesMs.length > 0) {
      running[chain.cycle]!++;
      starts.push({ at: cycle.startMs, chain: i });
    }
  }
  starts.sort((a, b) => a.at - b.at || a.chain - b.chain);
  const latencies = new Float64Array(latencyTotal);
  for (const [i, chain] of chains.entries()) latencies.set(chain.latenciesMs, latencyFrom[i]!);
  const pendingFrom = new Int32Array(cycles.length + 1);
  for (const [c, list] of pending.entries()) pendingFrom[c + 1] = pendingFrom[c]! + list.length;
  const plan: StartPlan = {
    startAts: Float64Array.from(starts, (s) => s.at),
    startChains: Int32Array.from(starts, (s) => s.chain),
    pendingChains: Int32Array.from(pending.flat()),
    pendingFrom,
    running,
    left,
    chainCycle,
    latencyFrom,
    latencyCount,
    latencies,
    chainStart: Float64Array.from(chains, (c) => c.startMs),
    cycleStart: Float64Array.from(cycles, (c) => c.startMs),
  };
  startPlans.set(chains, { cycles, plan });
  return plan;
}

/** How the fit scores a simulation, so that a candidate already worse than the best stops early. */

/** The squared difference of logs the fit minimises, one cycle's share. */
function logTerm(model: number, observed: number): number {
  const d = Math.log(Math.max(1, model)) - Math.log(Math.max(1, observed));
  return d * d;
}

/** Partial sums in another order than the final one may differ in the last bits: stop only past this margin. */
const ABORT_MARGIN = 1 + 1e-9;
const ABORT_SLACK = 1e-9;

/** The simulation's event heap, CPU heap and launch lane, reused from one simulation to the next. */
const eventHeap = new FlatHeap();
const jobHeap = new FlatHeap();
let laneChains = new Int32Array(0);
let laneCalls = new Int32Array(0);

/**
 * Simulates the chains on one timeline: each cycle's duration and spread, each chain's end. With
 * `score`, returns undefined as soon as the cycles done so far are worse than `score.above`.
 */
export function simulateCyclesBefore(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  t: ClientTimes,
  score?: SimScore,
): SimResult | undefined {
  const plan = startPlan(cycles, chains);
  const { startAts, startChains, pendingChains, pendingFrom, chainCycle, latencyFrom, latencyCount } = plan;
  const { latencies, cycleStart } = plan;
  const cycleCount = cycles.length;
  const ends = Float64Array.from(cycleStart);
  // Each cycle's sessions' first requests: how many, the first and the last (its spread).
  const firstCount = new Int32Array(cycleCount);
  const firstMin = new Float64Array(cycleCount).fill(Number.POSITIVE_INFINITY);
  const firstMax = new Float64Array(cycleCount).fill(Number.NEGATIVE_INFINITY);
  const chainEnds = plan.chainStart.slice();
  /** Per cycle, the next of its pending chains to start. */
  const pendingNext = pendingFrom.slice(0, cycleCount);
  const running = plan.running.slice();
  /** Chains with calls still to finish, per cycle: the cycle's figures are final at 0. */
  const left = plan.left.slice();
  let partial = 0;
  const abortAbove = score ? score.above * ABORT_MARGIN + ABORT_SLACK : Number.POSITIVE_INFINITY;
  const scoreDurations = score?.figure === 'durations';
  const observedFigures = score?.observed;
  const cores = Math.max(1, t.cores);
  const load = Math.max(0, t.load ?? 0);
  const { cpuMsPerCall, waitMsPerCall, launchMsPerCall } = t;
  // Timed events (a = chain, b = call × 2 + kind): a call asks for its launch (0), its request is
  // answered (1). The chains' first calls wait in the plan's starts (time order) until they are
  // due, ahead of any event at the same time (as if all were queued first), so that a candidate
  // the fit stops early never paid for the chains it did not reach.
  const events = eventHeap;
  events.reset(chains.length);
  const startCount = startAts.length;
  let nextStart = 0;
  // The CPU, shared by processor sharing: every job in flight (and each of the machine's `load`
  // other tasks) gets min(1, cores / (n + load)) of a core, so each job has received the same
  // service `served` since the start; a job ends when it reaches its mark. A launch is CPU of the
  // control plane's own thread, on the same cores: one at a time (the lane, a ring of chains).
  // Jobs: a = chain, b = call × 2 + (1 for a launch).
  const jobs = jobHeap;
  jobs.reset(chains.length);
  if (laneChains.length < chains.length + 1) {
    laneChains = new Int32Array(chains.length + 1);
    laneCalls = new Int32Array(chains.length + 1);
  }
  const laneSize = chains.length + 1;
  let laneHead = 0;
  let laneTail = 0;
  let launching = false;
  let served = 0;
  let servedAt = 0;

  while (events.size > 0 || jobs.size > 0 || nextStart < startCount) {
    const rate = jobs.size === 0 ? 0 : Math.min(1, cores / (jobs.size + load));
    const nextJob = jobs.size > 0 ? servedAt + (jobs.peekKey() - served) / rate : Number.POSITIVE_INFINITY;
    const startAt = nextStart < startCount ? startAts[nextStart]! : Number.POSITIVE_INFINITY;
    const eventAt = events.peekKey();
    const nextEvent = Math.min(eventAt, startAt);
    if (nextJob <= nextEvent) {
      // A process's CPU is done: its wait, then its request.
      served += (nextJob - servedAt) * rate;
      servedAt = nextJob;
      jobs.pop();
      const chainIndex = jobs.a;
      const call = jobs.b >> 1;
      if (jobs.b & 1) {
        // Launched: the process's own CPU, and the lane's next launch.
        jobs.push(served + cpuMsPerCall, chainIndex, call << 1);
        launching = laneHead !== laneTail;
        if (launching) {
          jobs.push(served + launchMsPerCall, laneChains[laneHead]!, (laneCalls[laneHead]! << 1) | 1);
          laneHead = laneHead + 1 === laneSize ? 0 : laneHead + 1;
        }
        continue;
      }
      const requestAt = nextJob + waitMsPerCall;
      const c = chainCycle[chainIndex]!;
      if (c >= 0 && call === 0) {
        firstCount[c]!++;
        if (requestAt < firstMin[c]!) firstMin[c] = requestAt;
        if (requestAt > firstMax[c]!) firstMax[c] = requestAt;
      }
      events.push(requestAt + latencies[latencyFrom[chainIndex]! + call]!, chainIndex, (call << 1) | 1);
      continue;
    }
    let time: number;
    let chainIndex: number;
    let kind: number;
    if (startAt <= eventAt) {
      time = startAt;
      chainIndex = startChains[nextStart++]!;
      kind = 0;
    } else {
      time = eventAt;
      events.pop();
      chainIndex = events.a;
      kind = events.b;
    }
    const call = kind >> 1;
    if ((kind & 1) === 0) {
      served += (time - servedAt) * rate;
      servedAt = time;
      if (launching) {
        laneChains[laneTail] = chainIndex;
        laneCalls[laneTail] = call;
        laneTail = laneTail + 1 === laneSize ? 0 : laneTail + 1;
      } else {
        launching = true;
        jobs.push(served + launchMsPerCall, chainIndex, (call << 1) | 1);
      }
    } else if (call + 1 < latencyCount[chainIndex]!) {
      // A cycle still running is at least this long: once that alone is worse than the best so
      // far, the candidate is (a cycle that runs too long is known before it ends).
      const c = chainCycle[chainIndex]!;
      if (scoreDurations && c >= 0) {
        const elapsed = time - cycleStart[c]!;
        const observed = observedFigures![c]!;
        if (elapsed > observed && partial + logTerm(elapsed, observed) > abortAbove) return undefined;
      }
      events.push(time, chainIndex, (call + 1) << 1);
    } else {
      chainEnds[chainIndex] = time;
      const c = chainCycle[chainIndex]!;
      if (c < 0) continue;
      ends[c] = Math.max(ends[c]!, time);
      running[c]!--;
      if (pendingNext[c]! < pendingFrom[c + 1]!) {
        // A pending chain of the cycle starts (one of its running chains ended).
        const next = pendingChains[pendingNext[c]!++]!;
        if (latencyCount[next]! > 0) {
          running[c]!++;
          events.push(time, next, 0);
        }
      }
      if (observedFigures && --left[c]! === 0) {
        const model = scoreDurations
          ? ends[c]! - cycleStart[c]!
          : (firstCount[c]! < 3 ? 0 : firstMax[c]! - firstMin[c]!) + 100;
        const observed = scoreDurations ? observedFigures[c]! : observedFigures[c]! + 100;
        partial += logTerm(model, observed);
        if (partial > abortAbove) return undefined;
      }
    }
  }
  const durations = new Array<number>(cycleCount);
  const spreads = new Array<number>(cycleCount);
  for (let c = 0; c < cycleCount; c++) {
    durations[c] = ends[c]! - cycleStart[c]!;
    spreads[c] = firstCount[c]! < 3 ? 0 : firstMax[c]! - firstMin[c]!;
  }
  return { durations, spreads, chainEnds: Array.from(chainEnds) };
}
