/**
 * How long a poll cycle takes as its calls grow, and how bunched its calls are
 * (docs/model.md#cycle-time). Each call is a client process (agent-orchestrator's `gh`): it is
 * started by the control plane one at a time (a single lane: node forks its children from its one
 * thread), each launch `launchMs` of that thread's CPU; then the process needs `cpuMs` of CPU.
 * Launches and processes share the machine's cores fairly (processor sharing, as an OS schedules
 * them: ten processes started together on 2 cores all finish together, five times later; a launch
 * among twenty running processes gets a tenth of a core), so a busy cycle launches more slowly,
 * which is what spreads its requests. Then `waitMs` that is not CPU (TLS, the network), then its
 * request. A session's calls run one after another, at most
 * `parallel` sessions of a cycle at once. The reference replays exactly this in virtual time
 * (src/reference/client-time.ts); here it runs on a plain timeline so that `model learn` can fit
 * the three client times to the cycles a trace recorded.
 */
/** One session's calls in one cycle (or its spawn): their request latencies, in order. */
export interface Chain {
  /** The cycle it belongs to (an index into the cycles), or -1 for a spawn's calls. */
  cycle: number;
  /** When it may start (a spawn's first call; a cycle's chains start with the cycle). */
  startMs: number;
  latenciesMs: number[];
}

export interface SimCycle {
  startMs: number;
  /** Sessions polled at once: 0 for all. */
  parallel: number;
}

export interface ClientTimes {
  cores: number;
  cpuMsPerCall: number;
  waitMsPerCall: number;
  launchMsPerCall: number;
  /**
   * The machine's other work: this many runnable tasks beside the client's, always there, sharing
   * the cores (its load average; 0: the client's alone).
   */
  load?: number;
}

export interface SimResult {
  /** Each cycle's duration: its start to its last call's end (0 without calls). */
  durations: number[];
  /** Each cycle's spread: from its sessions' first request to the last of those (0 under 3 sessions). */
  spreads: number[];
  /** When each chain's last call was answered (its start for a chain without calls). */
  chainEnds: number[];
}

/** From the first to the last of `times`, when there are at least 3 of them (0 otherwise). */
export function spreadOf(times: readonly number[]): number {
  if (times.length < 3) return 0;
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const t of times) {
    min = Math.min(min, t);
    max = Math.max(max, t);
  }
  return max - min;
}

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
      const ps = seqs[parent]!;
      // Every comparison runs on every step, ties or not: one V8 first meets after it has compiled
      // this would deoptimize it (docs/performance.md, `model learn`).
      const older = ps < seq;
      if (pk < key || (pk === key && older)) break;
      keys[i] = pk;
      seqs[i] = ps;
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
      let mk = keys[l]!;
      let ms = seqs[l]!;
      if (r < n) {
        const rk = keys[r]!;
        const rs = seqs[r]!;
        const older = rs < ms;
        if (rk < mk || (rk === mk && older)) {
          m = r;
          mk = rk;
          ms = rs;
        }
      }
      const older = seq < ms;
      if (key < mk || (key === mk && older)) break;
      keys[i] = mk;
      seqs[i] = ms;
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
  // Plain indexed loops and typed arrays: this runs once per chains array (three times a fit),
  // not often enough for V8 to optimise it, over every chain of the trace for the fit figures.
  const chainCount = chains.length;
  const running = new Int32Array(cycles.length);
  const left = new Int32Array(cycles.length);
  const pending: number[][] = [];
  for (let c = 0; c < cycles.length; c++) pending.push([]);
  /** The chains that start on their own (not pending), in index order, and when each starts. */
  const starts: number[] = [];
  const startAtOf = new Float64Array(chainCount);
  const chainCycle = new Int32Array(chainCount);
  const latencyFrom = new Int32Array(chainCount);
  const latencyCount = new Int32Array(chainCount);
  const chainStart = new Float64Array(chainCount);
  let latencyTotal = 0;
  for (let i = 0; i < chainCount; i++) {
    const chain = chains[i]!;
    const calls = chain.latenciesMs.length;
    chainCycle[i] = chain.cycle;
    chainStart[i] = chain.startMs;
    latencyFrom[i] = latencyTotal;
    latencyCount[i] = calls;
    latencyTotal += calls;
    if (chain.cycle >= 0 && calls > 0) left[chain.cycle]!++;
    if (chain.cycle < 0) {
      if (calls > 0) {
        starts.push(i);
        startAtOf[i] = chain.startMs;
      }
      continue;
    }
    const cycle = cycles[chain.cycle]!;
    if (cycle.parallel > 0 && running[chain.cycle]! >= cycle.parallel) pending[chain.cycle]!.push(i);
    else if (calls > 0) {
      running[chain.cycle]!++;
      starts.push(i);
      startAtOf[i] = cycle.startMs;
    }
  }
  // By time, then index: already so when every chain starts no earlier than the one before it
  // (the indices only grow), as a window's cycles' chains do; a spawn's may not.
  let inOrder = true;
  for (let k = 1; k < starts.length && inOrder; k++)
    inOrder = startAtOf[starts[k - 1]!]! <= startAtOf[starts[k]!]!;
  if (!inOrder) starts.sort((a, b) => startAtOf[a]! - startAtOf[b]! || a - b);
  const startAts = new Float64Array(starts.length);
  const startChains = new Int32Array(starts.length);
  for (let k = 0; k < starts.length; k++) {
    startChains[k] = starts[k]!;
    startAts[k] = startAtOf[starts[k]!]!;
  }
  const latencies = new Float64Array(latencyTotal);
  for (let i = 0; i < chainCount; i++) latencies.set(chains[i]!.latenciesMs, latencyFrom[i]!);
  const pendingFrom = new Int32Array(cycles.length + 1);
  for (let c = 0; c < cycles.length; c++) pendingFrom[c + 1] = pendingFrom[c]! + pending[c]!.length;
  const pendingChains = new Int32Array(pendingFrom[cycles.length]!);
  for (let c = 0; c < cycles.length; c++) pendingChains.set(pending[c]!, pendingFrom[c]!);
  const cycleStart = new Float64Array(cycles.length);
  for (let c = 0; c < cycles.length; c++) cycleStart[c] = cycles[c]!.startMs;
  const plan: StartPlan = {
    startAts,
    startChains,
    pendingChains,
    pendingFrom,
    running,
    left,
    chainCycle,
    latencyFrom,
    latencyCount,
    latencies,
    chainStart,
    cycleStart,
  };
  startPlans.set(chains, { cycles, plan });
  return plan;
}

/** How the fit scores a simulation, so that a candidate already worse than the best stops early. */
export interface SimScore {
  /** The recorded figure per cycle (a duration, or a spread) the simulated one is scored against. */
  observed: readonly number[];
  /** What is compared: the cycles' durations, or their spreads (each + 100 ms). */
  figure: 'durations' | 'spreads';
  /** The simulation stops (returning undefined) once its error is surely above this. */
  above: number;
}

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
 * The share of a core each job gets with `n` jobs in flight, `rates[n]` (0 for none), for the
 * cores and load it was made for: one array read per step instead of a division, and no division
 * whose results V8 first sees whole (2 / 2) and then not (2 / 3): that cost the simulation a
 * deoptimization and a second compile of 50-100 ms in every learn (docs/performance.md).
 */
let rates = new Float64Array(0);
let ratesCores = Number.NaN;
let ratesLoad = Number.NaN;

function ratesFor(cores: number, load: number, jobs: number): Float64Array {
  if (rates.length <= jobs || cores !== ratesCores || load !== ratesLoad) {
    rates = new Float64Array(Math.max(jobs + 1, rates.length));
    ratesCores = cores;
    ratesLoad = load;
    for (let n = 1; n < rates.length; n++) rates[n] = Math.min(1, cores / (n + load));
  }
  return rates;
}

/** Each figure array a score is made against, as doubles (one array type for the simulation to read). */
const observedAsDoubles = new WeakMap<readonly number[], Float64Array>();
const NO_FIGURES = new Float64Array(0);

function doubles(figures: readonly number[]): Float64Array {
  let out = observedAsDoubles.get(figures);
  if (out === undefined) {
    out = Float64Array.from(figures);
    observedAsDoubles.set(figures, out);
  }
  return out;
}

/**
 * Simulates the chains on one timeline: each cycle's duration and spread, each chain's end. With
 * `score`, returns undefined as soon as the cycles done so far are worse than `score.above`.
 */
export function simulateCycles(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  t: ClientTimes,
  score?: SimScore,
): SimResult | undefined {
  const plan = startPlan(cycles, chains);
  const cycleCount = cycles.length;
  const run: SimRun = {
    ends: Float64Array.from(plan.cycleStart),
    firstCount: new Int32Array(cycleCount),
    firstMin: new Float64Array(cycleCount).fill(Number.POSITIVE_INFINITY),
    firstMax: new Float64Array(cycleCount).fill(Number.NEGATIVE_INFINITY),
    chainEnds: plan.chainStart.slice(),
    pendingNext: plan.pendingFrom.slice(0, cycleCount),
    running: plan.running.slice(),
    left: plan.left.slice(),
  };
  const scored = score !== undefined;
  const scoreDurations = scored && score.figure === 'durations';
  const done = runTimeline(
    plan,
    run,
    ratesFor(Math.max(1, t.cores), Math.max(0, t.load ?? 0), chains.length),
    t,
    scored,
    scoreDurations,
    // What a cycle's simulated figure is compared with: its duration, or its spread + 100 ms.
    scored ? doubles(score.observed) : NO_FIGURES,
    scoreDurations ? 0 : 100,
    scored ? score.above * ABORT_MARGIN + ABORT_SLACK : Number.POSITIVE_INFINITY,
  );
  if (!done) return undefined;
  const { ends, firstCount, firstMin, firstMax } = run;
  const durations = new Array<number>(cycleCount);
  const spreads = new Array<number>(cycleCount);
  for (let c = 0; c < cycleCount; c++) {
    durations[c] = ends[c]! - plan.cycleStart[c]!;
    spreads[c] = firstCount[c]! < 3 ? 0 : firstMax[c]! - firstMin[c]!;
  }
  return { durations, spreads, chainEnds: Array.from(run.chainEnds) };
}

/** One simulation's own state (what its plan says it starts from, copied): simulateCycles' result is read from it. */
interface SimRun {
  /** Per cycle: when its last chain ended (its start until one does). */
  ends: Float64Array;
  /** Each cycle's sessions' first requests: how many, the first and the last (its spread). */
  firstCount: Int32Array;
  firstMin: Float64Array;
  firstMax: Float64Array;
  /** When each chain's last call was answered. */
  chainEnds: Float64Array;
  /** Per cycle, the next of its pending chains to start. */
  pendingNext: Int32Array;
  running: Int32Array;
  /** Chains with calls still to finish, per cycle: the cycle's figures are final at 0. */
  left: Int32Array;
}

/**
 * The simulation's loop, on its own (simulateCycles sets it up and reads its results): V8 compiles
 * a hot loop while it runs, before the code around it has run, and then again for the next call;
 * the less there is around the loop, the less is compiled twice, and nothing around it is new to
 * the compiled code (docs/performance.md, `model learn`). False when the score stopped it early.
 */
function runTimeline(
  plan: StartPlan,
  run: SimRun,
  shares: Float64Array,
  t: ClientTimes,
  scored: boolean,
  scoreDurations: boolean,
  observedFigures: Float64Array,
  figureShift: number,
  abortAbove: number,
): boolean {
  const { startAts, startChains, pendingChains, pendingFrom, chainCycle, latencyFrom, latencyCount } = plan;
  const { latencies, cycleStart } = plan;
  const { ends, firstCount, firstMin, firstMax, chainEnds, pendingNext, running, left } = run;
  const chainCount = plan.chainStart.length;
  let partial = 0;
  const { cpuMsPerCall, waitMsPerCall, launchMsPerCall } = t;
  // Timed events (a = chain, b = call × 2 + kind): a call asks for its launch (0), its request is
  // answered (1). The chains' first calls wait in the plan's starts (time order) until they are
  // due, ahead of any event at the same time (as if all were queued first), so that a candidate
  // the fit stops early never paid for the chains it did not reach.
  const events = eventHeap;
  events.reset(chainCount);
  const startCount = startAts.length;
  let nextStart = 0;
  // The CPU, shared by processor sharing: every job in flight (and each of the machine's `load`
  // other tasks) gets min(1, cores / (n + load)) of a core, so each job has received the same
  // service `served` since the start; a job ends when it reaches its mark. A launch is CPU of the
  // control plane's own thread, on the same cores: one at a time (the lane, a ring of chains).
  // Jobs: a = chain, b = call × 2 + (1 for a launch).
  const jobs = jobHeap;
  jobs.reset(chainCount);
  if (laneChains.length < chainCount + 1) {
    laneChains = new Int32Array(chainCount + 1);
    laneCalls = new Int32Array(chainCount + 1);
  }
  const lanedChains = laneChains;
  const lanedCalls = laneCalls;
  const laneSize = chainCount + 1;
  let laneHead = 0;
  let laneTail = 0;
  let launching = false;
  let served = 0;
  let servedAt = 0;

  while (laneHead !== laneTail || events.size > 0 || jobs.size > 0 || nextStart < startCount) {
    // The lane's next launch, when none is running: the step before queued a call, or ended a
    // launch. (One place for it, whichever step it follows: code V8 first meets after it has
    // compiled the loop would deoptimize it.)
    if (!launching && laneHead !== laneTail) {
      launching = true;
      jobs.push(served + launchMsPerCall, lanedChains[laneHead]!, (lanedCalls[laneHead]! << 1) | 1);
      laneHead = laneHead + 1 === laneSize ? 0 : laneHead + 1;
    }
    const rate = shares[jobs.size]!;
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
        // Launched: the process's own CPU (the lane's next launch starts at the next step).
        jobs.push(served + cpuMsPerCall, chainIndex, call << 1);
        launching = false;
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
      // The call joins the lane; it is launched at the next step if no launch is running.
      lanedChains[laneTail] = chainIndex;
      lanedCalls[laneTail] = call;
      laneTail = laneTail + 1 === laneSize ? 0 : laneTail + 1;
    } else {
      const c = chainCycle[chainIndex]!;
      // A cycle's term of the score (logTerm of `termModel` against `termObserved`): a bound while
      // it runs (1), its own once it is done (2); none (0). Both are scored at one place below: a
      // call V8 first meets after it has compiled the loop (an overrun comes later than a cycle's
      // end) would deoptimize it.
      let termKind = 0;
      let termModel = 0;
      let termObserved = 0;
      if (call + 1 < latencyCount[chainIndex]!) {
        // A cycle still running is at least this long: once that alone is worse than the best so
        // far, the candidate is (a cycle that runs too long is known before it ends).
        if (scoreDurations && c >= 0) {
          const elapsed = time - cycleStart[c]!;
          const observed = observedFigures[c]!;
          if (elapsed > observed) {
            termKind = 1;
            termModel = elapsed;
            termObserved = observed;
          }
        }
        events.push(time, chainIndex, (call + 1) << 1);
      } else {
        chainEnds[chainIndex] = time;
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
        if (scored && --left[c]! === 0) {
          // Both figures are computed, one is kept: each expression runs from the first scored
          // simulation on, so none is new to V8 once the fit moves from durations to spreads.
          const duration = ends[c]! - cycleStart[c]!;
          const spread = (firstCount[c]! < 3 ? 0 : firstMax[c]! - firstMin[c]!) + 100;
          termKind = 2;
          termModel = scoreDurations ? duration : spread;
          termObserved = observedFigures[c]! + figureShift;
        }
      }
      if (termKind !== 0) {
        const total = partial + logTerm(termModel, termObserved);
        if (termKind === 2) partial = total;
        if (total > abortAbove) return false;
      }
    }
  }
  return true;
}

/** One trace's recorded cycles, for the fit: simulated on its own timeline, machine and load. */
export interface FitGroup {
  cycles: SimCycle[];
  chains: Chain[];
  /** Each cycle's recorded duration and spread (SimResult's). */
  observed: number[];
  spreads: number[];
  cores: number;
  /** The machine's other work while the trace ran (ClientTimes.load). */
  load: number;
}

export interface FittedClientTimes {
  cpuMsPerCall: number;
  waitMsPerCall: number;
  launchMsPerCall: number;
  /** The groups simulated with the fitted times, their results one after another. */
  modelled: SimResult;
}

/**
 * The client times that make the simulated cycles most like the recorded ones: CPU and wait by
 * the cycles' durations (least squares on their logs, so a 2 s cycle counts as much as a 20 s
 * one), the launch by how far apart their sessions' first requests are, each fitted with the
 * others held, on grids that get finer. Cycles without calls are left out (nothing to fit). A
 * candidate stops being simulated once the cycles it has done are already worse than the best so
 * far (the result is the exhaustive search's, found in a fraction of the time).
 */
export function fitClientTimes(
  groups: readonly FitGroup[],
  sample: readonly FitGroup[] = groups,
  coarse: readonly FitGroup[] = sample,
): FittedClientTimes {
  const modelledGroups = groups;
  /** What the candidates are simulated on: the coarse sample while the grids search, then the sample. */
  let fitted: readonly FitGroup[] = coarse;
  const times = (cpu: number, wait: number, launch: number, g: FitGroup): ClientTimes => ({
    cores: g.cores,
    load: g.load,
    cpuMsPerCall: cpu,
    waitMsPerCall: wait,
    launchMsPerCall: launch,
  });
  /** Each group's cycles with calls, in the order their chains first name them. */
  const cyclesWithCalls = new Map<FitGroup, number[]>();
  const withCalls = (g: FitGroup) => {
    let list = cyclesWithCalls.get(g);
    if (!list) {
      list = [
        ...new Set(g.chains.filter((c) => c.cycle >= 0 && c.latenciesMs.length > 0).map((c) => c.cycle)),
      ];
      cyclesWithCalls.set(g, list);
    }
    return list;
  };
  /** The error of one candidate over every group, or Infinity once it is surely above `above`. */
  const errorOf = (cpu: number, wait: number, launch: number, figure: SimScore['figure'], above: number) => {
    let total = 0;
    for (const g of fitted) {
      const observed = figure === 'durations' ? g.observed : g.spreads;
      const result = simulateCycles(g.cycles, g.chains, times(cpu, wait, launch, g), {
        observed,
        figure,
        above: above - total,
      });
      if (result === undefined) return Number.POSITIVE_INFINITY;
      const model = figure === 'durations' ? result.durations : result.spreads;
      const shift = figure === 'durations' ? 0 : 100;
      for (const i of withCalls(g)) total += logTerm(model[i]! + shift, observed[i]! + shift);
    }
    return total;
  };
  const range = (from: number, to: number, step: number) => {
    const out: number[] = [];
    for (let v = Math.max(0, from); v <= to; v += step) out.push(Math.round(v * 10) / 10);
    return out;
  };
  let best = { cpu: 0, wait: 0, launch: 0 };
  /**
   * The grid's best point (the first in grid order among equals), its points tried nearest the
   * best so far first: a near point scores low at once, and every point worse than it stops early.
   */
  const searchGrid = <P>(points: P[], nearness: (p: P) => number, score: (p: P, above: number) => number) => {
    const order = points.map((p, i) => ({ p, i, d: nearness(p) })).sort((a, b) => a.d - b.d || a.i - b.i);
    let best: { score: number; i: number; p: P } = {
      score: Number.POSITIVE_INFINITY,
      i: -1,
      p: points[0] as P,
    };
    for (const { p, i } of order) {
      const s = score(p, best.score);
      if (s < best.score || (s === best.score && i < best.i)) best = { score: s, i, p };
    }
    return best.p;
  };
  const fitDurations = (cpus: number[], waits: number[]) => {
    const points = cpus.flatMap((cpu) => waits.map((wait) => ({ cpu, wait })));
    const cpuStep = Math.max(1, (cpus.at(-1)! - cpus[0]!) / Math.max(1, cpus.length - 1));
    const waitStep = Math.max(1, (waits.at(-1)! - waits[0]!) / Math.max(1, waits.length - 1));
    const found = searchGrid(
      points,
      (p) => Math.abs(p.cpu - best.cpu) / cpuStep + Math.abs(p.wait - best.wait) / waitStep,
      (p, above) => errorOf(p.cpu, p.wait, best.launch, 'durations', above),
    );
    best = { ...best, cpu: found.cpu, wait: found.wait };
  };
  const fitLaunch = (launches: number[]) => {
    // How far apart a cycle's sessions make their first requests: the launches, one at a time.
    const launch = searchGrid(
      launches,
      (l) => Math.abs(l - best.launch),
      (l, above) => errorOf(best.cpu, best.wait, l, 'spreads', above),
    );
    best = { ...best, launch };
  };
  if (sample.some((g) => withCalls(g).length > 0)) {
    // The launch and the CPU time both stretch a cycle: each is fitted again once the other moved
    // (a round whose launch did not move would only repeat the one before).
    // A sampled fit (a long trace) starts on a grid half as fine (it costs a quarter), on its
    // coarse sample.
    const sampled = sample !== modelledGroups;
    for (let round = 0; round < 3; round++) {
      const launch = best.launch;
      if (sampled) {
        // Two grids, the second around the first's best: a third of one grid as fine.
        fitDurations(range(0, 2_000, 100), range(0, 3_000, 200));
      } else fitDurations(range(0, 2_000, 50), range(0, 3_000, 100));
      fitLaunch(range(0, 400, 10));
      if (best.launch === launch) break;
    }
    if (!sampled) {
      fitDurations(range(best.cpu - 100, best.cpu + 100, 10), range(best.wait - 200, best.wait + 200, 20));
      fitDurations(range(best.cpu - 10, best.cpu + 10, 1), range(best.wait - 20, best.wait + 20, 2));
    } else {
      // A sampled fit (a long trace) refines one time at a time, on the whole sample: near the
      // best every candidate runs nearly all of it before it loses, so each time's line is
      // searched by golden section (about a dozen candidates to the millisecond, not 40).
      fitted = sample;
      best.cpu = searchLine(best.cpu - 100, best.cpu + 100, best.cpu, (cpu, above) =>
        errorOf(cpu, best.wait, best.launch, 'durations', above),
      );
      best.wait = searchLine(best.wait - 200, best.wait + 200, best.wait, (wait, above) =>
        errorOf(best.cpu, wait, best.launch, 'durations', above),
      );
      best.launch = searchLine(best.launch - 10, best.launch + 10, best.launch, (launch, above) =>
        errorOf(best.cpu, best.wait, launch, 'spreads', above),
      );
      return modelledTimes(modelledGroups, best);
    }
    fitLaunch(range(best.launch - 10, best.launch + 10, 1));
  }
  return modelledTimes(modelledGroups, best);
}

/**
 * The integer in [lo, hi] (lo at least 0) where `score` is least, by golden-section search from
 * `start` (a score near its least at the middle of the range): the candidates' scores are compared
 * against the best so far, so each stops once it is surely worse. Ties go to the smaller value.
 */
function searchLine(
  lo: number,
  hi: number,
  start: number,
  score: (v: number, above: number) => number,
): number {
  lo = Math.max(0, Math.round(lo));
  hi = Math.round(hi);
  const seen = new Map<number, number>();
  let best = { v: Math.round(start), s: Number.POSITIVE_INFINITY };
  const at = (v: number) => {
    let s = seen.get(v);
    if (s === undefined) {
      s = score(v, best.s);
      seen.set(v, s);
      if (s < best.s || (s === best.s && v < best.v)) best = { v, s };
    }
    return s;
  };
  at(best.v);
  const ratio = (Math.sqrt(5) - 1) / 2;
  while (hi - lo > 2) {
    const a = Math.round(hi - ratio * (hi - lo));
    const b = Math.round(lo + ratio * (hi - lo));
    const [sa, sb] = [at(a), at(b)];
    // Both surely worse than the best so far (stopped early, Infinity): it lies between them.
    if (sa === Number.POSITIVE_INFINITY && sb === Number.POSITIVE_INFINITY) [lo, hi] = [a, b];
    else if (sa <= sb) hi = b;
    else lo = a;
  }
  for (let v = lo; v <= hi; v++) at(v);
  return best.v;
}

/** The fitted times, with every group simulated on them (the fit figures compare every cycle). */
function modelledTimes(
  groups: readonly FitGroup[],
  best: { cpu: number; wait: number; launch: number },
): FittedClientTimes {
  const modelled: SimResult = { durations: [], spreads: [], chainEnds: [] };
  for (const g of groups) {
    const result = simulateCycles(g.cycles, g.chains, {
      cores: g.cores,
      load: g.load,
      cpuMsPerCall: best.cpu,
      waitMsPerCall: best.wait,
      launchMsPerCall: best.launch,
    })!;
    for (const d of result.durations) modelled.durations.push(d);
    for (const d of result.spreads) modelled.spreads.push(d);
    for (const d of result.chainEnds) modelled.chainEnds.push(d);
  }
  return {
    cpuMsPerCall: best.cpu,
    waitMsPerCall: best.wait,
    launchMsPerCall: best.launch,
    modelled,
  };
}

/** Calls the fit simulates at most (each candidate simulates them all): a long trace is sampled. */
export const FIT_MAX_CALLS = 5_000;
/** A sampled fit's windows, spread evenly over the traces' calls. */
const FIT_WINDOWS = 8;
/**
 * A sampled fit's grids search a smaller sample still (3 of its windows' size, about 1,500 calls):
 * they only find where the best is; the refinements around it run on the whole sample.
 */
const FIT_COARSE_CALLS = 1_500;
const FIT_COARSE_WINDOWS = 3;

/**
 * What the client times are fitted on: every recorded cycle, or for traces with more than
 * `maxCalls` calls in cycles, FIT_WINDOWS windows of consecutive cycles spread evenly over them
 * (with the spawns that started within each), a trace's windows on its own timeline (what ran
 * between them left out). A fit then costs the same whatever the trace's length; the model's fit
 * figures still compare every cycle.
 */
export function fitWindows(
  groups: readonly FitGroup[],
  maxCalls = FIT_MAX_CALLS,
  windowCount = FIT_WINDOWS,
): readonly FitGroup[] {
  const callsPerCycle = groups.map((g) => {
    const calls = g.cycles.map(() => 0);
    for (const chain of g.chains) if (chain.cycle >= 0) calls[chain.cycle]! += chain.latenciesMs.length;
    return calls;
  });
  const total = callsPerCycle.reduce((a, list) => a + list.reduce((x, y) => x + y, 0), 0);
  if (total <= maxCalls) return groups;
  const perWindow = Math.floor(maxCalls / windowCount);
  // Every cycle in order, with the calls before it.
  const order: Array<{ group: number; cycle: number; before: number }> = [];
  let before = 0;
  for (const [group, list] of callsPerCycle.entries())
    for (const [cycle, n] of list.entries()) {
      order.push({ group, cycle, before });
      before += n;
    }
  // The cycles each window takes, per group, in order.
  const taken = groups.map(() => [] as number[]);
  let next = 0;
  for (let w = 0; w < windowCount; w++) {
    const target = Math.floor((w * total) / windowCount);
    while (
      next < order.length &&
      order[next]!.before + callsPerCycle[order[next]!.group]![order[next]!.cycle]! <= target
    )
      next++;
    if (next >= order.length) break;
    const { group, cycle: first } = order[next]!;
    const calls = callsPerCycle[group]!;
    let last = first;
    let sum = calls[first]!;
    while (last + 1 < calls.length && sum < perWindow) sum += calls[++last]!;
    for (let c = first; c <= last; c++) taken[group]!.push(c);
    // The next window starts after this one.
    while (next < order.length && order[next]!.group === group && order[next]!.cycle <= last) next++;
  }
  const windows: FitGroup[] = [];
  groups.forEach((g, group) => {
    const cycles = taken[group]!;
    if (cycles.length === 0) return;
    /** Each of the group's cycles' place in the window, -1 for one it does not take. */
    const index = new Int32Array(g.cycles.length).fill(-1);
    cycles.forEach((c, k) => {
      index[c] = k;
    });
    // A spawn belongs to a window when it started between the window's first and last cycle.
    const spans: Array<[number, number]> = [];
    for (const c of cycles) {
      const at = g.cycles[c]!.startMs;
      const span = spans.at(-1);
      if (span && c > 0 && index[c - 1]! >= 0) span[1] = at;
      else spans.push([at, at]);
    }
    windows.push({
      cycles: cycles.map((c) => g.cycles[c]!),
      chains: windowChains(g.chains, index, spans),
      observed: cycles.map((c) => g.observed[c]!),
      spreads: cycles.map((c) => g.spreads[c]!),
      cores: g.cores,
      load: g.load,
    });
  });
  return windows;
}

/**
 * A window's chains, in the group's order: those of the cycles it takes (`index`: each cycle's
 * place in the window, -1 for one it does not take), renumbered, and the spawns that started
 * within one of its spans of consecutive cycles. A function of its own: the loop over every
 * chain of a long trace is compiled alone, not with the whole of fitWindows.
 */
export function windowChains(
  chains: readonly Chain[],
  index: Int32Array,
  spans: ReadonlyArray<readonly [number, number]>,
): Chain[] {
  const out: Chain[] = [];
  for (let n = 0; n < chains.length; n++) {
    const chain = chains[n]!;
    if (chain.cycle >= 0) {
      const k = index[chain.cycle]!;
      if (k >= 0) out.push({ ...chain, cycle: k });
      continue;
    }
    for (const [from, to] of spans)
      if (chain.startMs >= from && chain.startMs <= to) {
        out.push(chain);
        break;
      }
  }
  return out;
}

/** The coarse sample of a sampled fit (fitClientTimes' `coarse`): fewer windows, fewer calls. */
export function coarseFitWindows(groups: readonly FitGroup[]): readonly FitGroup[] {
  return fitWindows(groups, FIT_COARSE_CALLS, FIT_COARSE_WINDOWS);
}
