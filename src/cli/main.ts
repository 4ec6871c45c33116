/**
 * The `fleetbench` program. Each command lives in its own file under src/cli/ and exports
 * `register(program)`; this file only wires them and turns errors into exit codes.
 */
import { Command, CommanderError } from 'commander';
import { ExitCode, isFleetbenchError } from '../errors.ts';
import { VERSION } from '../version.ts';
import { register as registerAnalyze } from './analyze.ts';
import { register as registerBudgets } from './budgets.ts';
import { register as registerCheck } from './check.ts';
import { register as registerCompare } from './compare.ts';
import { register as registerDemo } from './demo.ts';
import { register as registerGithub } from './github.ts';
import { register as registerImport } from './import.ts';
import { register as registerK8s } from './k8s.ts';
import { register as registerMatrix } from './matrix.ts';
import { register as registerMerge } from './merge.ts';
import { configureOutput } from './output.ts';
import { register as registerReference } from './reference.ts';
import { register as registerReport } from './report.ts';
import { register as registerRun } from './run.ts';
import { register as registerScenarios } from './scenarios.ts';
import { register as registerSchema } from './schema.ts';
import { register as registerSummarize } from './summarize.ts';

export function buildProgram(): Command {
  const program = new Command('fleetbench')
    .description(
      'Benchmark, budget and chaos-test AI-agent control planes: GitHub API quota, start and recovery speed, park/wake turnover.',
    )
    .version(VERSION, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .configureHelp({ sortSubcommands: true })
    .option('--no-color', 'plain text even on a terminal (NO_COLOR=1 does the same)')
    .option('-q, --quiet', 'no progress lines or notices on stderr (results, warnings and errors still show)')
    .hook('preAction', () => {
      const options = program.opts<{ color: boolean; quiet?: boolean }>();
      configureOutput({ quiet: options.quiet === true, colour: options.color });
    })
    .exitOverride();
  registerAnalyze(program);
  registerBudgets(program);
  registerCheck(program);
  registerCompare(program);
  registerDemo(program);
  registerImport(program);
  registerGithub(program);
  registerK8s(program);
  registerMatrix(program);
  registerMerge(program);
  registerReport(program);
  registerReference(program);
  registerRun(program);
  registerScenarios(program);
  registerSchema(program);
  registerSummarize(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  // `fleetbench analyze t.jsonl | head`: a closed pipe ends the output, it is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(ExitCode.ok);
    throw error;
  });
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end up here with exit code 0; usage errors were already printed.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.badInput;
    }
    if (isFleetbenchError(error)) {
      process.stderr.write(`fleetbench: ${error.message}\n`);
      if (error.hint) process.stderr.write(`  hint: ${error.hint}\n`);
      return error.exitCode;
    }
    process.stderr.write(
      `fleetbench: internal error (please report it):\n${(error as Error)?.stack ?? String(error)}\n`,
    );
    return ExitCode.internal;
  }
}
