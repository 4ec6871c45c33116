/**
 * The cycle-time fit's simulation (src/learn/cycle-time.ts, docs/model.md#cycle-time) runs in
 * flat typed arrays reused from one simulation to the next, and stops a candidate early once it
 * is surely worse than the best so far. Properties over random cycles, chains and client times:
 * a simulation does not depend on what was simulated before it, a scored simulation that runs to
 * the end gives the unscored one's figures, and one that stops early was surely worse; and the
 * simulation reshaped for V8's compiler (the launch lane's next launch in one place, both figures'
 * terms scored in one place, a table of shares) gives the figures and the early stops of the one
 * before it (test/helpers/cycle-time-before.ts), scored or not.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Chain, type ClientTimes, type SimCycle, simulateCycles } from '../src/learn/cycle-time.ts';
import { simulateCyclesBefore } from './helpers/cycle-time-before.ts';

const times = fc.record({
  cores: fc.integer({ min: 1, max: 4 }),
  load: fc.integer({ min: 0, max: 6 }),
  cpuMsPerCall: fc.integer({ min: 0, max: 400 }),
  waitMsPerCall: fc.integer({ min: 0, max: 400 }),
  launchMsPerCall: fc.integer({ min: 0, max: 60 }),
});

/** Cycles a poll interval apart, some with a cap on sessions at once, and spawns between them. */
const workload = fc
  .record({
    interval: fc.integer({ min: 200, max: 5_000 }),
    cycles: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 6 }),
    chains: fc.array(
      fc.record({
        cycle: fc.integer({ min: -1, max: 5 }),
        startMs: fc.integer({ min: 0, max: 30_000 }),
        latenciesMs: fc.array(fc.integer({ min: 0, max: 2_000 }), { maxLength: 5 }),
      }),
      { maxLength: 40 },
    ),
  })
  .map(({ interval, cycles, chains }) => {
    const simCycles: SimCycle[] = cycles.map((parallel, i) => ({ startMs: i * interval, parallel }));
    const simChains: Chain[] = chains.map((c) => ({
      ...c,
      cycle: c.cycle >= simCycles.length ? c.cycle % simCycles.length : c.cycle,
    }));
    return { cycles: simCycles, chains: simChains };
  });

/** The fit's error of a result against observed durations (each cycle with calls). */
function durationError(durations: readonly number[], observed: readonly number[], withCalls: Set<number>) {
  let total = 0;
  for (const i of withCalls) {
    const d = Math.log(Math.max(1, durations[i]!)) - Math.log(Math.max(1, observed[i]!));
    total += d * d;
  }
  return total;
}

describe('the cycle-time simulation', () => {
  it('property: a simulation gives the same figures whatever was simulated before it', () => {
    fc.assert(
      fc.property(workload, workload, times, times, (a, b, ta, tb) => {
        const first = simulateCycles(a.cycles, a.chains, ta as ClientTimes);
        simulateCycles(b.cycles, b.chains, tb as ClientTimes);
        // The same input again, but as new arrays (not the cached start plan of the first).
        const again = simulateCycles(
          a.cycles.map((c) => ({ ...c })),
          a.chains.map((c) => ({ ...c, latenciesMs: [...c.latenciesMs] })),
          ta as ClientTimes,
        );
        expect(again).toEqual(first);
      }),
      { numRuns: 300 },
    );
  });

  it('property: a scored simulation that runs to the end gives the figures of the unscored one, and one that stops was surely worse', () => {
    fc.assert(
      fc.property(
        workload,
        times,
        fc.array(fc.integer({ min: 1, max: 40_000 }), { minLength: 6, maxLength: 6 }),
        // The bound, around the candidate's whole error: where stopping early could go wrong.
        fc.double({ min: 0.5, max: 1.5, noNaN: true }),
        (w, t, observedAll, factor) => {
          const observed = observedAll.slice(0, w.cycles.length);
          const full = simulateCycles(w.cycles, w.chains, t as ClientTimes)!;
          const withCalls = new Set(
            w.chains.filter((c) => c.cycle >= 0 && c.latenciesMs.length > 0).map((c) => c.cycle),
          );
          const above = durationError(full.durations, observed, withCalls) * factor;
          const scored = simulateCycles(w.cycles, w.chains, t as ClientTimes, {
            observed,
            figure: 'durations',
            above,
          });
          if (scored === undefined)
            expect(durationError(full.durations, observed, withCalls)).toBeGreaterThan(above);
          else expect(scored).toEqual(full);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: the simulation gives the figures and the early stops of the simulation before it was reshaped', () => {
    fc.assert(
      fc.property(
        workload,
        times,
        fc.array(fc.integer({ min: 0, max: 40_000 }), { minLength: 6, maxLength: 6 }),
        fc.constantFrom('durations' as const, 'spreads' as const),
        fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.double({ min: 0, max: 20, noNaN: true })),
        (w, t, observedAll, figure, above) => {
          const observed = observedAll.slice(0, w.cycles.length);
          expect(simulateCycles(w.cycles, w.chains, t as ClientTimes)).toEqual(
            simulateCyclesBefore(w.cycles, w.chains, t as ClientTimes),
          );
          const score = { observed, figure, above };
          expect(simulateCycles(w.cycles, w.chains, t as ClientTimes, score)).toEqual(
            simulateCyclesBefore(w.cycles, w.chains, t as ClientTimes, score),
          );
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
