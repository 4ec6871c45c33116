/**
 * The `fleetbench` program. Each command lives in its own file under src/cli/ and exports
 * `register(program, io)`; this file only wires them and turns errors into exit codes.
 * `main(argv, io)` runs one invocation on the streams and environment it is given and returns
 * the exit code: bin/fleetbench.js passes the process's, tests call it in-process.
 */
import { Command, CommanderError } from 'commander';
import { ExitCode, isFleetbenchError } from '../base/errors.ts';
import { VERSION } from '../base/version.ts';
import { type CliIo, CommandIo } from './output.ts';

type Register = (program: Command, io: CommandIo) => void;

/**
 * The commands, each loaded only when it is the one asked for: `analyze` then does not load the
 * emulator's GraphQL, the OTLP encoder or the scenario schemas that other commands import at
 * their top (~0.2 s of CPU at every start). `--version` loads none; `--help` and `help` load
 * them all. A mistyped name loads none either: commander's "unknown command" and its "Did you
 * mean" need only the names (loading every command for them took over a second of CPU).
 */
const COMMANDS: Record<string, () => Promise<{ register: Register }>> = {
  agents: () => import('./agents.ts'),
  analyze: () => import('./analyze.ts'),
  budgets: () => import('./budgets.ts'),
  check: () => import('./check.ts'),
  compare: () => import('./compare.ts'),
  demo: () => import('./demo.ts'),
  github: () => import('./github.ts'),
  import: () => import('./import.ts'),
  k8s: () => import('./k8s.ts'),
  matrix: () => import('./matrix.ts'),
  merge: () => import('./merge.ts'),
  model: () => import('./model.ts'),
  provider: () => import('./provider.ts'),
  reference: () => import('./reference.ts'),
  report: () => import('./report.ts'),
  run: () => import('./run.ts'),
  scenarios: () => import('./scenarios.ts'),
  schema: () => import('./schema.ts'),
  summarize: () => import('./summarize.ts'),
  targets: () => import('./targets.ts'),
  world: () => import('./world.ts'),
};

/** The first word of argv that is not an option: the command's name (the global options are flags without values). */
function firstWord(argv: string[]): string | undefined {
  return argv.find((arg) => !arg.startsWith('-'));
}

/** The command argv names, if it is one. */
function commandIn(argv: string[]): string | undefined {
  const name = firstWord(argv);
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? name : undefined;
}

export async function buildProgram(io: CommandIo, argv: string[] = []): Promise<Command> {
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
  const named = commandIn(argv);
  const word = firstWord(argv);
  if (named === undefined && word !== undefined && word !== 'help') {
    // Not a command: commander refuses it, with the nearest names, from the names alone.
    for (const name of Object.keys(COMMANDS)) program.command(name);
    return program;
  }
  const versionOnly = named === undefined && argv.some((arg) => arg === '-V' || arg === '--version');
  const names = named !== undefined ? [named] : versionOnly ? [] : Object.keys(COMMANDS);
  const modules = await Promise.all(names.map((name) => COMMANDS[name]!()));
  for (const module of modules) module.register(program, io);
  return program;
}

export async function main(argv: string[], given: CliIo): Promise<number> {
  const io = new CommandIo(given);
  const program = await buildProgram(io, argv);
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
