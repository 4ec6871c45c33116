/**
 * The pruning rule (docs/matrix.md#pruning): after one full run of the matrix, keep only the cells whose
 * scorecard metrics differ by more than 15% from an adjacent scale point; the others tell
 * nothing their neighbours do not. Pure: cells and their metric values in, a decision with its
 * reason per cell out (docs/matrix.md#pruning).
 *
 * - Adjacent scale points are the next smaller and next larger scale of the same scenario and
 *   topology among the cells given. Scale 1 exists only as T1 (one session uses one repo in
 *   either layout), so S·-T1-1 is the scale-1 point of the T2 line as well.
 * - Two adjacent values differ by |x − n| / max(|x|, |n|): relative to the larger of the two, so
 *   the change is the same seen from either cell (100 vs 86.5 is 13.5% both ways, and both
 *   cells are pruned or both kept). 0 against 0 or null against null is no difference; a value
 *   against null is an infinite one (a value against 0 is 100%).
 * - A cell with no adjacent point in the run is kept (nothing to compare with).
 * - If every cell of a (scenario, topology) line would go, its largest scale is kept so the
 *   scenario stays in the matrix (flagged `representative`).
 */

export const PRUNE_THRESHOLD = 0.15;

export interface PruneCell {
  id: string;
  scenario: string;
  topology: string;
  scale: number;
  /** Scorecard metric id → measured value (median over repeats). */
  metrics: Record<string, number | null>;
}

export interface PruneDifference {
  metric: string;
  neighbour: string;
  value: number | null;
  neighbourValue: number | null;
  /** |x − n| / max(|x|, |n|) (0 for 0 vs 0 and null vs null; Infinity for a value vs null). */
  relative: number;
}

export interface PruneDecision {
  id: string;
  kept: boolean;
  /** Kept only so its line is not empty. */
  representative: boolean;
  neighbours: string[];
  /** The largest difference found (against any neighbour, on any metric). */
  largest: PruneDifference | null;
  reason: string;
}

/** The change between two adjacent scale points, symmetric: relative to the larger of the two. */
export function relativeDifference(value: number | null, neighbour: number | null): number {
  if (value === null || neighbour === null) return value === neighbour ? 0 : Number.POSITIVE_INFINITY;
  const larger = Math.max(Math.abs(value), Math.abs(neighbour));
  return larger === 0 ? 0 : Math.abs(value - neighbour) / larger;
}

/** The cells of one scale line, by scale; lines without a scale-1 cell borrow the scenario's. */
function lineOf(scenario: string, topology: string, cells: PruneCell[]): PruneCell[] {
  const line = cells.filter((c) => c.scenario === scenario && c.topology === topology);
  if (!line.some((c) => c.scale === 1)) {
    const one = cells.find((c) => c.scenario === scenario && c.scale === 1);
    if (one) line.push(one);
  }
  return line.sort((a, b) => a.scale - b.scale);
}

function neighboursOf(cell: PruneCell, cells: PruneCell[]): PruneCell[] {
  const topologies = [...new Set(cells.filter((c) => c.scenario === cell.scenario).map((c) => c.topology))];
  const out: PruneCell[] = [];
  for (const topology of topologies) {
    const line = lineOf(cell.scenario, topology, cells);
    const i = line.indexOf(cell);
    if (i < 0) continue;
    for (const n of [line[i - 1], line[i + 1]]) if (n && !out.includes(n)) out.push(n);
  }
  return out;
}

/** The percentage that decided, to one decimal (13.5%, not a rounded 14%). */
const pct = (x: number) => (Number.isFinite(x) ? `${Math.round(1000 * x) / 10}%` : '∞');
const show = (v: number | null) => (v === null ? 'none' : String(Math.round(v * 100) / 100));

function describe(d: PruneDifference): string {
  return `${d.metric} ${show(d.value)} vs ${show(d.neighbourValue)} at ${d.neighbour} (${pct(d.relative)})`;
}

export function pruneCells(cells: PruneCell[], threshold = PRUNE_THRESHOLD): PruneDecision[] {
  const decisions = cells.map((cell): PruneDecision => {
    const neighbours = neighboursOf(cell, cells);
    if (neighbours.length === 0) {
      return {
        id: cell.id,
        kept: true,
        representative: false,
        neighbours: [],
        largest: null,
        reason: 'no adjacent scale point in this run: nothing to compare with',
      };
    }
    let largest: PruneDifference | null = null;
    for (const n of neighbours) {
      const metrics = new Set([...Object.keys(cell.metrics), ...Object.keys(n.metrics)]);
      for (const metric of [...metrics].sort()) {
        const value = cell.metrics[metric] ?? null;
        const neighbourValue = n.metrics[metric] ?? null;
        const relative = relativeDifference(value, neighbourValue);
        if (largest === null || relative > largest.relative) {
          largest = { metric, neighbour: n.id, value, neighbourValue, relative };
        }
      }
    }
    const kept = largest !== null && largest.relative > threshold;
    const names = neighbours.map((n) => n.id).join(' and ');
    return {
      id: cell.id,
      kept,
      representative: false,
      neighbours: neighbours.map((n) => n.id),
      largest,
      reason: kept
        ? `differs by more than ${pct(threshold)}: ${describe(largest!)}`
        : `within ${pct(threshold)} of ${names} on every scorecard metric${largest ? ` (largest: ${describe(largest)})` : ''}`,
    };
  });

  // A line that would lose every cell keeps its largest scale.
  const byLine = new Map<string, number[]>();
  cells.forEach((c, i) => {
    const key = `${c.scenario}\u0000${c.topology}`;
    byLine.set(key, [...(byLine.get(key) ?? []), i]);
  });
  for (const indices of byLine.values()) {
    if (indices.some((i) => decisions[i]!.kept)) continue;
    const top = indices.reduce((best, i) => (cells[i]!.scale > cells[best]!.scale ? i : best));
    const d = decisions[top]!;
    const c = cells[top]!;
    decisions[top] = {
      ...d,
      kept: true,
      representative: true,
      reason: `kept to represent ${c.scenario}-${c.topology}: every cell of that line is within ${pct(threshold)} of its neighbours (${d.reason.replace(/^within [^ ]+ of /, 'here: ')})`,
    };
  }
  return decisions;
}
