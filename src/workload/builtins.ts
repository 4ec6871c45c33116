/**
 * Finding a scenario by what the user typed: a YAML file path, an A2 cell id (`S2-T1-50`), or
 * the name of a built-in scenario in scenarios/ (`turnover`, `chaos-codex-c6`, ...).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { closestNames } from '../base/closest-names.ts';
import { FleetbenchError } from '../base/errors.ts';
import { yamlFileNames } from '../base/yaml-input.ts';
import { allCells, cellOverrides, cellScenarioFile, parseCellId } from './cells.ts';
import { loadScenarioFile, type Override } from './load.ts';
import type { Scenario } from './scenario.ts';

const SCENARIO_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

/** Built-in named scenarios: scenarios/*.yaml (the A2 bases live in scenarios/a2/). */
export function builtinScenarioNames(): string[] {
  return yamlFileNames(SCENARIO_DIR);
}

export interface ResolvedRef {
  scenario: Scenario;
  /** The A2 cell id when the ref was one. */
  cell?: string;
  source: string;
}

export function resolveScenarioRef(ref: string, overrides: Override[] = []): ResolvedRef {
  const cell = parseCellId(ref);
  if (cell) {
    return {
      scenario: loadScenarioFile(cellScenarioFile(cell), [...cellOverrides(cell), ...overrides]),
      cell: cell.id,
      source: `cell ${cell.id}`,
    };
  }
  if (builtinScenarioNames().includes(ref)) {
    const file = `${SCENARIO_DIR}${ref}.yaml`;
    return { scenario: loadScenarioFile(file, overrides), source: `built-in ${ref}` };
  }
  if (existsSync(ref) || /\.(ya?ml)$/i.test(ref) || ref.includes('/')) {
    return { scenario: loadScenarioFile(ref, overrides), source: ref };
  }
  const named = builtinScenarioNames();
  const near = closestNames(ref, [...allCells().map((c) => c.id), ...named]);
  throw new FleetbenchError(
    'E_USAGE',
    `unknown scenario or cell '${ref}'${near.length > 0 ? `. Did you mean ${near.join(' or ')}?` : ''}`,
    {
      hint: 'fleetbench scenarios lists every cell and built-in scenario; or give the path of a scenario YAML file',
    },
  );
}
