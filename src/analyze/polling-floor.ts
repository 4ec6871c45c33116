/**
 * The polling floor (docs/analysis.md): calls per session per poll cycle, and per cycle for
 * calls no session owns, over the whole run and from the steady.start marker on. A pure
 * function of the (key, cycle, resource) counts the analyzer keeps.
 */
import { ALL, type CycleCounts } from './cycles.ts';
import { cmp, round } from './figures.ts';
import type { CycleStarts } from './poll-cycles.ts';
import type { Analysis } from './schema.ts';

/** Key of calls that carry a cycle but no session (repo-level guards, batches). */
export const SHARED = '\u0000shared';

/**
 * @param attributedCalls calls that carried a cycle id
 * @param steadyAt run time of the steady.start marker (not finite: none)
 */
export function pollingFloor(
  polling: CycleCounts,
  cycleStarts: CycleStarts,
  steadyAt: number,
  attributedCalls: number,
): Analysis['api']['pollingFloor'] {
  const perSession = polling.frequencies((key) => key !== SHARED);
  const shared = polling.frequencies((key) => key === SHARED);
  const out = (freqs: Map<string, Map<number, number>>) =>
    Object.fromEntries(
      [...freqs].sort(([a], [b]) => cmp(a, b)).map(([resource, freq]) => [resource, distribution(freq)]),
    );
  let steady: Analysis['api']['pollingFloor']['steady'] = null;
  if (Number.isFinite(steadyAt)) {
    const since = steadyAt;
    const starts = cycleStarts.starts;
    const inSteady = (cycle: number) => (starts.get(cycle) ?? Number.NEGATIVE_INFINITY) >= since;
    const s = polling.frequencies((key) => key !== SHARED, inSteady);
    const sh = polling.frequencies((key) => key === SHARED, inSteady);
    steady = {
      sinceMs: since,
      attributedCalls: s.cells === 0 ? 0 : distribution(s.freq.get(ALL)!).calls,
      sessions: s.keys,
      cycles: s.cycles.size,
      perSessionCycle: s.cells === 0 ? {} : out(s.freq),
      sharedPerCycle: sh.cells === 0 ? {} : out(sh.freq),
    };
  }
  return {
    attributedCalls: attributedCalls,
    sessions: [...polling.rows.keys()].filter((key) => key !== SHARED).length,
    cycles: perSession.cycles.size,
    perSessionCycle: perSession.cells === 0 ? {} : out(perSession.freq),
    sharedPerCycle: shared.cells === 0 ? {} : out(shared.freq),
    steady,
  };
}

function distribution(freq: Map<number, number>): Analysis['api']['pollingFloor']['perSessionCycle'][string] {
  const values = [...freq].sort(([a], [b]) => a - b);
  let cells = 0;
  let calls = 0;
  for (const [value, n] of values) {
    cells += n;
    calls += value * n;
  }
  if (cells === 0) return { cells: 0, calls: 0, p50: null, mean: null, max: null };
  const rank = Math.ceil(cells * 0.5);
  let seen = 0;
  let p50 = 0;
  for (const [value, n] of values) {
    seen += n;
    if (seen >= rank) {
      p50 = value;
      break;
    }
  }
  return { cells, calls, p50, mean: round(calls / cells), max: values[values.length - 1]![0] };
}
