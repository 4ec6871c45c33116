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
import { MinHeap } from '../base/min-heap.ts';

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
}

export interface SimResult {
  /** Each cycle's duration: its start to its last call's end (0 without calls). */
  durations: number[];
  /** Each cycle's busiest second: the most of its requests that start within 1 s. */
  bursts: number[];
  /** Each cycle's spread: from its sessions' first request to the last of those (0 under 3 sessions). */
  spreads: number[];
  /** When each chain's last call was answered (its start for a chain without calls). */
  chainEnds: number[];
}

/** Most of `times` (sorted) within any window of `windowMs`. */
function densest(times: number[], windowMs: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
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

/** Simulates the chains on one timeline: each cycle's duration and busiest second. */
export function simulateCycles(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  t: ClientTimes,
): SimResult {
  const ends = cycles.map((c) => c.startMs);
  const chainEnds = chains.map((c) => c.startMs);
  const requests = cycles.map(() => [] as number[]);
  const firsts = cycles.map(() => [] as number[]);
  const pending = cycles.map(() => [] as number[]);
  const running = cycles.map(() => 0);
  const cores = Math.max(1, t.cores);
  // Timed events: a call asks for its launch (0), its request is answered (2).
  const events = new MinHeap<{ chain: number; call: number; kind: 0 | 2 }>();
  // The CPU, shared by processor sharing: every job in flight gets min(1, cores / n) of a core, so
  // each has received the same service `served` since the start; a job ends when it reaches its mark.
  // A launch is CPU of the control plane's own thread, on the same cores: one at a time (the lane).
  const jobs = new MinHeap<{ chain: number; call: number; launch: boolean }>();
  const lane: Array<{ chain: number; call: number }> = [];
  let launching = false;
  let served = 0;
  let servedAt = 0;
  const rate = () => (jobs.size === 0 ? 0 : Math.min(1, cores / jobs.size));
  const advance = (to: number) => {
    served += (to - servedAt) * rate();
    servedAt = to;
  };
  const nextLaunch = () => {
    const next = lane.shift();
    launching = next !== undefined;
    if (next) jobs.push(served + t.launchMsPerCall, { ...next, launch: true });
  };

  const startChain = (i: number, at: number) => {
    const chain = chains[i]!;
    if (chain.latenciesMs.length === 0) return;
    if (chain.cycle >= 0) running[chain.cycle]!++;
    events.push(at, { chain: i, call: 0, kind: 0 });
  };
  for (const [i, chain] of chains.entries()) {
    if (chain.cycle < 0) {
      startChain(i, chain.startMs);
      continue;
    }
    const cycle = cycles[chain.cycle]!;
    if (cycle.parallel > 0 && running[chain.cycle]! >= cycle.parallel) pending[chain.cycle]!.push(i);
    else startChain(i, cycle.startMs);
  }

  while (events.size > 0 || jobs.size > 0) {
    const nextJob = jobs.size > 0 ? servedAt + (jobs.peekKey() - served) / rate() : Number.POSITIVE_INFINITY;
    const nextEvent = events.peekKey();
    if (nextJob <= nextEvent) {
      // A process's CPU is done: its wait, then its request.
      advance(nextJob);
      const job = jobs.pop()!;
      if (job.launch) {
        // Launched: the process's own CPU, and the lane's next launch.
        jobs.push(served + t.cpuMsPerCall, { chain: job.chain, call: job.call, launch: false });
        nextLaunch();
        continue;
      }
      const chain = chains[job.chain]!;
      const requestAt = nextJob + t.waitMsPerCall;
      if (chain.cycle >= 0) {
        requests[chain.cycle]!.push(requestAt);
        if (job.call === 0) firsts[chain.cycle]!.push(requestAt);
      }
      events.push(requestAt + chain.latenciesMs[job.call]!, { chain: job.chain, call: job.call, kind: 2 });
      continue;
    }
    const time = events.peekKey();
    const event = events.pop()!;
    const chain = chains[event.chain]!;
    if (event.kind === 0) {
      advance(time);
      lane.push({ chain: event.chain, call: event.call });
      if (!launching) nextLaunch();
    } else if (event.call + 1 < chain.latenciesMs.length) {
      events.push(time, { chain: event.chain, call: event.call + 1, kind: 0 });
    } else {
      chainEnds[event.chain] = time;
      if (chain.cycle < 0) continue;
      ends[chain.cycle] = Math.max(ends[chain.cycle]!, time);
      running[chain.cycle]!--;
      const next = pending[chain.cycle]!.shift();
      if (next !== undefined) startChain(next, time);
    }
  }
  return {
    durations: ends.map((end, i) => end - cycles[i]!.startMs),
    bursts: requests.map((times) =>
      densest(
        times.sort((a, b) => a - b),
        1_000,
      ),
    ),
    spreads: firsts.map((times) => spreadOf(times)),
    chainEnds,
  };
}

/**
 * The client times that make the simulated cycles most like the recorded ones: CPU and wait by
 * the cycles' durations (least squares on their logs, so a 2 s cycle counts as much as a 20 s
 * one), the launch by how far apart their sessions' first requests are, each fitted with the others held, on grids that get
 * finer. Cycles without calls are left out (nothing to fit).
 */
export function fitClientTimes(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  observedMs: readonly number[],
  observedSpreads: readonly number[],
  cores: number,
): { cpuMsPerCall: number; waitMsPerCall: number; launchMsPerCall: number; modelled: SimResult } {
  const withCalls = [
    ...new Set(chains.filter((c) => c.cycle >= 0 && c.latenciesMs.length > 0).map((c) => c.cycle)),
  ];
  const sim = (cpu: number, wait: number, launch: number) =>
    simulateCycles(cycles, chains, {
      cores,
      cpuMsPerCall: cpu,
      waitMsPerCall: wait,
      launchMsPerCall: launch,
    });
  const logError = (model: readonly number[], observed: readonly number[]) => {
    let sum = 0;
    for (const i of withCalls) {
      const d = Math.log(Math.max(1, model[i]!)) - Math.log(Math.max(1, observed[i]!));
      sum += d * d;
    }
    return sum;
  };
  const range = (from: number, to: number, step: number) => {
    const out: number[] = [];
    for (let v = Math.max(0, from); v <= to; v += step) out.push(Math.round(v * 10) / 10);
    return out;
  };
  let best = { cpu: 0, wait: 0, launch: 0 };
  const fitDurations = (cpus: number[], waits: number[]) => {
    let score = Number.POSITIVE_INFINITY;
    for (const cpu of cpus)
      for (const wait of waits) {
        const s = logError(sim(cpu, wait, best.launch).durations, observedMs);
        if (s < score) {
          score = s;
          best = { ...best, cpu, wait };
        }
      }
  };
  const fitLaunch = (launches: number[]) => {
    let score = Number.POSITIVE_INFINITY;
    for (const launch of launches) {
      // How far apart a cycle's sessions make their first requests: the launches, one at a time.
      const s = logError(
        sim(best.cpu, best.wait, launch).spreads.map((b) => b + 100),
        observedSpreads.map((b) => b + 100),
      );
      if (s < score) {
        score = s;
        best = { ...best, launch };
      }
    }
  };
  if (withCalls.length > 0) {
    // The launch and the CPU time both stretch a cycle: each is fitted again once the other moved.
    for (let round = 0; round < 3; round++) {
      fitDurations(range(0, 2_000, 50), range(0, 3_000, 100));
      fitLaunch(range(0, 400, 10));
    }
    fitDurations(range(best.cpu - 100, best.cpu + 100, 10), range(best.wait - 200, best.wait + 200, 20));
    fitDurations(range(best.cpu - 10, best.cpu + 10, 1), range(best.wait - 20, best.wait + 20, 2));
    fitLaunch(range(best.launch - 10, best.launch + 10, 1));
  }
  return {
    cpuMsPerCall: best.cpu,
    waitMsPerCall: best.wait,
    launchMsPerCall: best.launch,
    modelled: sim(best.cpu, best.wait, best.launch),
  };
}
