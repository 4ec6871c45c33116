/**
 * `fleetbench scenarios`: what `fleetbench run` and `fleetbench matrix` accept, one line each:
 * the built-in scenarios (scenarios/*.yaml) with their description, and the A2 cells grouped by
 * scenario (docs/scenarios.md).
 */
import type { Command } from 'commander';
import { builtinScenarioNames, resolveScenarioRef } from '../workload/builtins.ts';
import { A2_SCENARIOS, allCells, PRIORITY_CELLS } from '../workload/cells.ts';
import type { CommandIo } from './output.ts';

export function scenarioListing(): string {
  const lines: string[] = ['Built-in scenarios (fleetbench run NAME):'];
  const names = builtinScenarioNames();
  const width = Math.max(...names.map((n) => n.length));
  for (const name of names) {
    const { scenario } = resolveScenarioRef(name);
    lines.push(`  ${name.padEnd(width)}  ${scenario.description}`);
  }
  lines.push('', 'A2 cost matrix cells (fleetbench run CELL; fleetbench matrix runs them all):');
  const cells = allCells();
  for (const [id, title] of Object.entries(A2_SCENARIOS)) {
    const ids = cells.filter((c) => c.scenario === id).map((c) => c.id);
    lines.push(`  ${id}  ${title}: ${ids.join(' ')}`);
  }
  lines.push(
    '',
    `Priority cells (fleetbench demo): ${PRIORITY_CELLS.join(' ')}`,
    'T1: every session on one repo; T2: spread over N/5 repos. Or run your own YAML file: docs/scenarios.md.',
  );
  return `${lines.join('\n')}\n`;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('scenarios')
    .description('list the built-in scenarios and the A2 cells, one line each')
    .option('--json', 'print them as JSON')
    .action((flags: { json?: boolean }) => {
      if (flags.json) {
        const builtins = builtinScenarioNames().map((name) => ({
          name,
          description: resolveScenarioRef(name).scenario.description,
        }));
        const cells = allCells().map((c) => ({
          id: c.id,
          scenario: c.scenario,
          topology: c.topology,
          scale: c.scale,
        }));
        io.stdout.write(`${JSON.stringify({ builtins, cells, priority: PRIORITY_CELLS }, null, 2)}\n`);
        return;
      }
      io.stdout.write(scenarioListing());
    });
}
