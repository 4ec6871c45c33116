/**
 * How the CLI talks to a person (docs/cli.md): colour on a terminal, and `--quiet`.
 *
 * - Colour only when stdout is a terminal, and never with `NO_COLOR` set (no-color.org),
 *   `--no-color`, or `TERM=dumb`; `FORCE_COLOR` forces it (picocolors decides those). It is
 *   applied to the verdict words of finished text, so a table's columns stay aligned and a
 *   file or pipe gets plain text.
 * - `--quiet`: no progress lines or notices on stderr; results, warnings and errors still show.
 */
import pc from 'picocolors';

const state = {
  quiet: false,
  colour: pc.isColorSupported && (process.stdout.isTTY === true || 'FORCE_COLOR' in process.env),
};

export function configureOutput(options: { quiet?: boolean; colour?: boolean }): void {
  if (options.quiet !== undefined) state.quiet = options.quiet;
  if (options.colour === false) state.colour = false;
}

export function isQuiet(): boolean {
  return state.quiet;
}

/** A notice on stderr (where the metrics are, what the run is doing): silent with --quiet. */
export function notice(text: string): void {
  if (!state.quiet) process.stderr.write(text);
}

const colours = pc.createColors(true);

/** Verdict words as the terminal shows them, coloured when colour is on. */
export function colourVerdicts(text: string): string {
  if (!state.colour) return text;
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
