/**
 * The `fleetbench` program. Each command lives in its own file under src/cli/ and exports
 * `register(program, io)`; this file only wires them and turns errors into exit codes.
 * `main(argv, io)` runs one invocation on the streams and environment it is given and returns
 * the exit code: bin/fleetbench.js passes the process's, tests call it in-process.
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
import { type CliIo, CommandIo } from './output.ts';
import { register as registerReference } from './reference.ts';
import { register as registerReport } from './report.ts';
import { register as registerRun } from './run.ts';
import { register as registerScenarios } from './scenarios.ts';
import { register as registerSchema } from './schema.ts';
import { register as registerSummarize } from './summarize.ts';

export function buildProgram(io: CommandIo): Command {
  const program = new Command('fleetbench')
    // Before the commands are added: subcommands inherit it.
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      getOutHelpWidth: () => (io.stdout.isTTY ? (io.stdout.columns ?? 80) : 80),
      getErrHelpWidth: () => (io.stderr.isTTY ? (io.stderr.columns ?? 80) : 80),
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    })
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
      io.configure({ quiet: options.quiet === true, colour: options.color });
    })
    .exitOverride();
  registerAnalyze(program, io);
  registerBudgets(program, io);
  registerCheck(program, io);
  registerCompare(program, io);
  registerDemo(program, io);
  registerImport(program, io);
  registerGithub(program, io);
  registerK8s(program, io);
  registerMatrix(program, io);
  registerMerge(program, io);
  registerReport(program, io);
  registerReference(program, io);
  registerRun(program, io);
  registerScenarios(program, io);
  registerSchema(program, io);
  registerSummarize(program, io);
  return program;
}

export async function main(argv: string[], given: CliIo): Promise<number> {
  const io = new CommandIo(given);
  const program = buildProgram(io);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return io.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end up here with exit code 0; usage errors were already printed.
      return error.exitCode === 0 ? ExitCode.ok : ExitCode.badInput;
    }
    if (isFleetbenchError(error)) {
      io.stderr.write(`fleetbench: ${error.message}\n`);
      if (error.hint) io.stderr.write(`  hint: ${error.hint}\n`);
      return error.exitCode;
    }
    io.stderr.write(
      `fleetbench: internal error (please report it):\n${(error as Error)?.stack ?? String(error)}\n`,
    );
    return ExitCode.internal;
  }
}
