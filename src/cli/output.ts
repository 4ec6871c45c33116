/**
 * How the CLI talks to a person (docs/cli.md), and the only place it touches the process's
 * streams and environment: `main(argv, io)` is given them (bin/fleetbench.js passes the
 * process's, tests pass buffers), and every command writes through the `CommandIo` it builds.
 *
 * - Colour only when stdout is a terminal, and never with `NO_COLOR` set (no-color.org),
 *   `--no-color`, or `TERM=dumb`; `FORCE_COLOR` forces it (the rule picocolors applies, here
 *   read from the given environment). It is applied to the verdict words of finished text, so
 *   a table's columns stay aligned and a file or pipe gets plain text.
 * - `--quiet`: no progress lines or notices on stderr; results, warnings and errors still show.
 */
import pc from 'picocolors';

/** What a command writes to: a stream of the process, or a buffer in a test. */
export interface CliStream {
  write(text: string): boolean;
  isTTY?: boolean;
  columns?: number;
}

/** What `main` is given: where output goes, and the environment to read. */
export interface CliIo {
  stdout: CliStream;
  stderr: CliStream;
  env: NodeJS.ProcessEnv;
}

/** Whether finished text on `stdout` gets coloured verdicts (picocolors' rule, over `env`). */
export function colourFor(stdout: CliStream, env: NodeJS.ProcessEnv): boolean {
  const tty = stdout.isTTY === true;
  const supported =
    !env.NO_COLOR &&
    (!!env.FORCE_COLOR || (tty && env.TERM !== 'dumb') || !!env.CI || process.platform === 'win32');
  return supported && (tty || 'FORCE_COLOR' in env);
}

/**
 * One invocation's output: the streams and environment it was given, `--quiet` and colour, and
 * the exit code a command sets when it finishes without an error (a judged failure, an
 * interrupted run); `main` returns it.
 */
export class CommandIo implements CliIo {
  readonly stdout: CliStream;
  readonly stderr: CliStream;
  readonly env: NodeJS.ProcessEnv;
  quiet = false;
  colour: boolean;
  exitCode = 0;

  constructor(io: CliIo) {
    this.stdout = io.stdout;
    this.stderr = io.stderr;
    this.env = io.env;
    this.colour = colourFor(io.stdout, io.env);
  }

  configure(options: { quiet?: boolean; colour?: boolean }): void {
    if (options.quiet !== undefined) this.quiet = options.quiet;
    if (options.colour === false) this.colour = false;
  }

  /** A notice on stderr (where the metrics are, what the run is doing): silent with --quiet. */
  notice(text: string): void {
    if (!this.quiet) this.stderr.write(text);
  }

  /** Verdict words as the terminal shows them, coloured when colour is on. */
  colourVerdicts(text: string): string {
    return this.colour ? colourVerdicts(text) : text;
  }
}

const colours = pc.createColors(true);

/** Verdict words coloured (green pass, red failures, yellow warnings). */
export function colourVerdicts(text: string): string {
  return text
    .replace(/✓ (pass|every judged budget holds)\b/g, (m) => colours.green(m))
    .replace(/✗ [^\n│|]*?(?=\s{2}|$|\n)/gm, (m) => colours.red(colours.bold(m)))
    .replace(/\b(over \([^)]*\))/g, (m) => colours.yellow(m))
    .replace(
      /^(\s*)! (.*)$/gm,
      (_m, indent: string, rest: string) => `${indent}${colours.yellow(`! ${rest}`)}`,
    )
    .replace(/(?<=\s)(pass)(?=\s{2}|$)/gm, (m) => colours.green(m))
    .replace(/(?<=\s)(FAIL|fail)(?=\s{2}|$)/gm, (m) => colours.red(colours.bold(m)));
}
