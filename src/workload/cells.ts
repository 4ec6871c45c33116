/**
 * The A2 cost matrix (docs/scenarios.md#the-a2-cost-matrix): scenarios S1–S6 × topologies T1 (concentrated: one repo) and
 * T2 (spread: N/5 repos, at least 2) × scales 1, 5, 10, 25, 50 (scale 1 is T1 only), 54 cells.
 * A cell id reads `S2-T1-50`; its scenario is scenarios/a2/S2.yaml with the topology and the
 * session count filled in.
 */
import { fileURLToPath } from 'node:url';

export const A2_SCENARIOS = {
  S1: 'Cold start',
  S2: 'Quiet steady state',
  S3: 'Spawn storm',
  S4: 'Review backlog burst',
  S5: 'Cache flush',
  S6: 'Dashboard enrichment',
} as const;
export type A2Scenario = keyof typeof A2_SCENARIOS;

export const TOPOLOGIES = { T1: 'concentrated', T2: 'spread' } as const;
export type TopologyId = keyof typeof TOPOLOGIES;

export const SCALES = [1, 5, 10, 25, 50] as const;

export const PRIORITY_CELLS = [
  'S2-T1-1',
  'S2-T1-5',
  'S2-T1-50',
  'S2-T2-50',
  'S1-T1-50',
  'S3-T1-25',
  'S4-T1-10',
] as const;

export interface Cell {
  id: string;
  scenario: A2Scenario;
  topology: TopologyId;
  scale: number;
}

const CELL_ID = /^(S[1-6])-(T[12])-(\d+)$/;

export function parseCellId(id: string): Cell | undefined {
  const match = CELL_ID.exec(id);
  if (!match) return undefined;
  const [, scenario, topology, scaleText] = match;
  const scale = Number(scaleText);
  if (!(SCALES as readonly number[]).includes(scale)) return undefined;
  if (scale === 1 && topology === 'T2') return undefined;
  return { id, scenario: scenario as A2Scenario, topology: topology as TopologyId, scale };
}

/** Every cell, in matrix order: scenario, then topology, then scale. */
export function allCells(): Cell[] {
  const cells: Cell[] = [];
  for (const scenario of Object.keys(A2_SCENARIOS) as A2Scenario[]) {
    for (const topology of Object.keys(TOPOLOGIES) as TopologyId[]) {
      for (const scale of SCALES) {
        const cell = parseCellId(`${scenario}-${topology}-${scale}`);
        if (cell) cells.push(cell);
      }
    }
  }
  return cells;
}

/** `S2-T1-50: Quiet steady state, concentrated, 50 sessions` */
export function cellTitle(cell: Cell): string {
  return `${A2_SCENARIOS[cell.scenario]}, ${TOPOLOGIES[cell.topology]}, ${cell.scale} session${cell.scale === 1 ? '' : 's'}`;
}

export function cellScenarioFile(cell: Cell): string {
  return fileURLToPath(new URL(`../../scenarios/a2/${cell.scenario}.yaml`, import.meta.url));
}

/** The overrides that turn the base scenario file into the cell. */
export function cellOverrides(cell: Cell): Array<{ path: string[]; value: unknown }> {
  return [
    { path: ['name'], value: cell.id },
    { path: ['description'], value: cellTitle(cell) },
    { path: ['sessions', 'count'], value: cell.scale },
    { path: ['topology', 'layout'], value: TOPOLOGIES[cell.topology] },
  ];
}
