/**
 * How long a poll cycle takes as its calls grow (docs/model.md#cycle-time). Each call costs its
 * client some CPU time, queued first-come first-served on the machine's cores with every other
 * call in flight (agent-orchestrator's `gh` processes), then some time that is not queued (process
 * start, TLS, the network), then the request itself. A session's calls run one after another, at
 * most `parallel` sessions of a cycle at once. The reference control plane replays exactly this
 * in virtual time (src/reference/polling-learned.ts); here it is simulated on a plain timeline so
 * that `model learn` can fit the two client times to the cycles a trace recorded.
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
}

/** A binary heap of [time, sequence, payload], earliest first, ties in insertion order. */
class EventHeap<T> {
  private readonly items: Array<[number, number, T]> = [];
  private seq = 0;
  get size(): number {
    return this.items.length;
  }
  push(time: number, payload: T): void {
    const items = this.items;
    items.push([time, this.seq++, payload]);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }
  pop(): [number, T] {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && before(items[l]!, items[m]!)) m = l;
        if (r < items.length && before(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return [top[0], top[2]];
  }
}

function before(a: [number, number, unknown], b: [number, number, unknown]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/**
 * Simulates the chains on one timeline and returns each cycle's duration (its start to its last
 * call's end; 0 for a cycle without calls). Chains of one cycle beyond `parallel` start when an
 * earlier one of that cycle ends, in the order given.
 */
export function simulateCycles(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  t: ClientTimes,
): number[] {
  const ends = cycles.map((c) => c.startMs);
  const pending = cycles.map(() => [] as number[]);
  const running = cycles.map(() => 0);
  // Events: a chain wants a core (kind 0) or a chain's call finished (kind 1).
  const heap = new EventHeap<{ chain: number; call: number; kind: 0 | 1 }>();
  const startChain = (i: number, at: number) => {
    const chain = chains[i]!;
    if (chain.latenciesMs.length === 0) return;
    if (chain.cycle >= 0) running[chain.cycle]!++;
    heap.push(at, { chain: i, call: 0, kind: 0 });
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
  // Cores: when each is next free. FIFO: requests are served in event order.
  const coreFree = new Array<number>(Math.max(1, t.cores)).fill(Number.NEGATIVE_INFINITY);
  while (heap.size > 0) {
    const [time, event] = heap.pop();
    const chain = chains[event.chain]!;
    if (event.kind === 0) {
      // The earliest free core serves this call's CPU time, then it waits and makes its request.
      let best = 0;
      for (let c = 1; c < coreFree.length; c++) if (coreFree[c]! < coreFree[best]!) best = c;
      const cpuStart = Math.max(time, coreFree[best]!);
      coreFree[best] = cpuStart + t.cpuMsPerCall;
      const done = cpuStart + t.cpuMsPerCall + t.waitMsPerCall + chain.latenciesMs[event.call]!;
      heap.push(done, { chain: event.chain, call: event.call, kind: 1 });
      continue;
    }
    if (event.call + 1 < chain.latenciesMs.length) {
      heap.push(time, { chain: event.chain, call: event.call + 1, kind: 0 });
      continue;
    }
    if (chain.cycle < 0) continue;
    ends[chain.cycle] = Math.max(ends[chain.cycle]!, time);
    running[chain.cycle]!--;
    const next = pending[chain.cycle]!.shift();
    if (next !== undefined) startChain(next, time);
  }
  return ends.map((end, i) => end - cycles[i]!.startMs);
}

/**
 * The client times that make the simulated cycles closest to the recorded ones (least squares on
 * the log of each duration, so a 2 s cycle counts as much as a 20 s one): a grid, then a finer
 * grid around its best point. Cycles without calls are left out (nothing to fit).
 */
export function fitClientTimes(
  cycles: readonly SimCycle[],
  chains: readonly Chain[],
  observedMs: readonly number[],
  cores: number,
): { cpuMsPerCall: number; waitMsPerCall: number; modelledMs: number[] } {
  const withCalls = new Set(
    chains.filter((c) => c.cycle >= 0 && c.latenciesMs.length > 0).map((c) => c.cycle),
  );
  const score = (cpu: number, wait: number): number => {
    const sim = simulateCycles(cycles, chains, { cores, cpuMsPerCall: cpu, waitMsPerCall: wait });
    let sum = 0;
    for (const i of withCalls) {
      const d = Math.log(Math.max(1, sim[i]!)) - Math.log(Math.max(1, observedMs[i]!));
      sum += d * d;
    }
    return sum;
  };
  let best = { cpu: 0, wait: 0, score: Number.POSITIVE_INFINITY };
  const search = (cpus: number[], waits: number[]) => {
    for (const cpu of cpus)
      for (const wait of waits) {
        const s = score(cpu, wait);
        if (s < best.score) best = { cpu, wait, score: s };
      }
  };
  const range = (from: number, to: number, step: number) => {
    const out: number[] = [];
    for (let v = Math.max(0, from); v <= to; v += step) out.push(Math.round(v * 10) / 10);
    return out;
  };
  if (withCalls.size > 0) {
    search(range(0, 2_000, 50), range(0, 3_000, 100));
    search(range(best.cpu - 50, best.cpu + 50, 5), range(best.wait - 100, best.wait + 100, 10));
    search(range(best.cpu - 5, best.cpu + 5, 1), range(best.wait - 10, best.wait + 10, 1));
  }
  const modelledMs = simulateCycles(cycles, chains, {
    cores,
    cpuMsPerCall: best.cpu,
    waitMsPerCall: best.wait,
  });
  return { cpuMsPerCall: best.cpu, waitMsPerCall: best.wait, modelledMs };
}
