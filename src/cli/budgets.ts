/**
 * `fleetbench budgets derive|list`: budget files from a baseline run, and the built-in sets.
 */
import type { Command } from 'commander';
import { parseDuration } from '../base/duration.ts';
import { FleetbenchError } from '../base/errors.ts';
import { writeOutputFile } from '../base/safe-write.ts';
import { budgetYaml, builtinBudgetNames, deriveBudgets, resolveBudgets } from '../judge/index.ts';
import { type LoadedInput, loadInputs } from '../results/judge-inputs.ts';
import { refuseOutputOverInput } from './options.ts';
import type { CommandIo } from './output.ts';

interface DeriveFlags {
  factor: string;
  round: string;
  by: string;
  name: string;
  output?: string;
  lenient?: boolean;
}

export function register(program: Command, io: CommandIo): void {
  const budgets = program
    .command('budgets')
    .description('budget files: derive them from a baseline run, list the built-in sets');
  budgets
    .command('derive')
    .description('a budget file from a baseline: each p50/p95 × factor, rounded up (3.1 s × 1.2 → 4 s)')
    .argument('<baseline...>', 'run directories, traces or summary.json files (several: pooled)')
    .option('--factor <x>', 'multiply each baseline value', '1.2')
    .option('--round <duration>', 'round up to a multiple of this', '0.5s')
    .option('--by <labels>', 'label keys each budget is scoped by', 'adapter,start')
    .option('--name <name>', 'the budget set name', 'derived')
    .option('-o, --output <file>', 'write the file here (default: print it)')
    .option('--lenient', 'skip bad trace lines (counted) instead of failing')
    .addHelpText(
      'after',
      '\nExample:\n  fleetbench run chaos-codex-c6 --out runs/base\n  fleetbench budgets derive runs/base -o budgets.yaml\n  fleetbench check runs/new --budgets budgets.yaml',
    )
    .action(async (paths: string[], flags: DeriveFlags) => {
      const factor = Number(flags.factor);
      if (!(Number.isFinite(factor) && factor > 0))
        throw new FleetbenchError('E_USAGE', `--factor: expected a positive number, got '${flags.factor}'`);
      const roundMs = parseDuration(flags.round);
      if (roundMs === undefined)
        throw new FleetbenchError('E_USAGE', `--round: expected a duration like 0.5s, got '${flags.round}'`);
      if (flags.output) refuseOutputOverInput('-o', flags.output, paths);
      const inputs: LoadedInput[] = [];
      for (const path of paths) inputs.push(...(await loadInputs(path, { lenient: flags.lenient })));
      const derived = deriveBudgets(inputs, {
        factor,
        roundMs,
        by: flags.by
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        name: flags.name,
        baseline: inputs.map((i) => i.analysis.run.runId ?? i.name).join(', '),
      });
      if (derived.file.budgets.length === 0) {
        throw new FleetbenchError(
          'E_RESULTS',
          `${paths.join(', ')}: no speed samples to derive budgets from`,
        );
      }
      const text = budgetYaml(derived);
      for (const note of derived.skipped) io.stderr.write(`fleetbench: left out: ${note}\n`);
      if (flags.output) {
        writeOutputFile(flags.output, text);
        io.stderr.write(`fleetbench: wrote ${derived.file.budgets.length} budgets to ${flags.output}\n`);
      } else io.stdout.write(text);
    });
  budgets
    .command('list')
    .description('the built-in budget sets')
    .action(() => {
      const names = builtinBudgetNames();
      const width = Math.max(...names.map((n) => n.length)) + 1;
      for (const name of names) {
        const set = resolveBudgets(name);
        const count = `${set.entries.length} budgets`.padEnd(11);
        io.stdout.write(`${name.padEnd(width)} ${count} ${set.description ?? ''}\n`);
      }
    });
}
