/**
 * What a matrix runs: `--cells priority|all|S2-*-50,S4-T1-10,turnover` expands into units. A
 * unit is one A2 cell (scenario × topology × scale) or one built-in named scenario (a chaos wave,
 * a turnover run); each unit runs once per repeat.
 */

import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { safePathSegment } from '../base/safe-name.ts';
import { builtinScenarioNames } from '../workload/builtins.ts';
import {
  A2_SCENARIOS,
  allCells,
  type Cell,
  cellTitle,
  PRIORITY_CELLS,
  parseCellId,
  TOPOLOGIES,
} from '../workload/cells.ts';

export interface Unit {
  /** `S2-T1-50`, or the built-in scenario's name. */
  id: string;
  /** What `resolveScenarioRef` takes. */
  ref: string;
  cell?: Cell;
}

export const SELECTOR_HELP =
  "'priority' (the 7 priority cells), 'all' (54 cells), cell ids and globs (S2-*-50, S*-T1-*), built-in scenario names or scenario files, comma-separated";

function globToRegExp(glob: string): RegExp {
  const escaped = glob.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^,]*');
  return new RegExp(`^${escaped}$`, 'i');
}

function cellUnit(cell: Cell): Unit {
  return { id: cell.id, ref: cell.id, cell };
}

/**
 * Expands a selector. Order: A2 cells in matrix order (scenario, topology, scale), then named
 * scenarios in the order given. Duplicates are dropped; an item that matches nothing is an error.
 */
export function selectUnits(selector: string): Unit[] {
  const items = selector
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (items.length === 0)
    throw new FleetbenchError('E_USAGE', `--cells: nothing selected (${SELECTOR_HELP})`);
  const cells = allCells();
  const wanted = new Set<string>();
  const named: string[] = [];
  const builtins = builtinScenarioNames();
  for (const item of items) {
    if (item === 'all') {
      for (const c of cells) wanted.add(c.id);
    } else if (item === 'priority') {
      for (const id of PRIORITY_CELLS) wanted.add(id);
    } else if (item.includes('*')) {
      const re = globToRegExp(item);
      const hits = cells.filter((c) => re.test(c.id));
      if (hits.length === 0)
        throw new FleetbenchError('E_USAGE', `--cells: '${item}' matches no cell (${SELECTOR_HELP})`);
      for (const c of hits) wanted.add(c.id);
    } else if (parseCellId(item.toUpperCase())) {
      wanted.add(item.toUpperCase());
    } else if (builtins.includes(item) || isScenarioFile(item)) {
      if (!named.includes(item)) named.push(item);
    } else {
      throw new FleetbenchError(
        'E_USAGE',
        `--cells: unknown cell or scenario '${item}'. Cells look like S2-T1-50: scenarios ${Object.keys(A2_SCENARIOS).join(', ')}, topologies ${Object.keys(TOPOLOGIES).join(', ')}, scales 1, 5, 10, 25, 50 (scale 1 is T1 only)` +
          (builtins.length > 0 ? `; built-in scenarios: ${builtins.join(', ')}` : ''),
      );
    }
  }
  return [
    ...cells.filter((c) => wanted.has(c.id)).map(cellUnit),
    ...named.map((name) => ({
      id: safePathSegment(isScenarioFile(name) ? basename(name).replace(/\.ya?ml$/i, '') : name),
      ref: name,
    })),
  ];
}

function isScenarioFile(item: string): boolean {
  return /\.ya?ml$/i.test(item) && existsSync(item);
}

/** `### S2-T1-50: Quiet steady state, concentrated, 50 sessions` without the hashes. */
export function unitHeading(unit: Unit, description?: string): string {
  if (unit.cell) return `${unit.id}: ${cellTitle(unit.cell)}`;
  return description ? `${unit.id}: ${description}` : unit.id;
}
