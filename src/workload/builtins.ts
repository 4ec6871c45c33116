/**
 * Finding a scenario by what the user typed: a YAML file path, an A2 cell id (`S2-T1-50`), or
 * the name of a built-in scenario in scenarios/ (`turnover`, `chaos-codex-c6`, ...).
 */
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { FleetbenchError } from '../errors.ts';
import { allCells, cellOverrides, cellScenarioFile, parseCellId } from './cells.ts';
import { loadScenarioFile, type Override } from './load.ts';
import type { Scenario } from './scenario.ts';

const SCENARIO_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

/** Built-in named scenarios: scenarios/*.yaml (the A2 bases live in scenarios/a2/). */
export function builtinScenarioNames(): string[] {
  if (!existsSync(SCENARIO_DIR)) return [];
  return readdirSync(SCENARIO_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
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
  const byScenario = new Map<string, string[]>();
  for (const c of allCells()) byScenario.set(c.scenario, [...(byScenario.get(c.scenario) ?? []), c.id]);
  const lines = [...byScenario.values()].map((ids) => `  ${ids.join(' ')}`);
  const named = builtinScenarioNames();
  throw new FleetbenchError(
    'E_USAGE',
    `unknown scenario or cell '${ref}'. Valid cell ids:\n${lines.join('\n')}` +
      (named.length > 0 ? `\nBuilt-in scenarios: ${named.join(', ')}` : '') +
      '\nOr give the path of a scenario YAML file.',
  );
}
