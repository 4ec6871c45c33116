/**
 * Small option parsers every command may use. Kept apart from the command files so that a
 * command importing one does not load another command's module (main.ts loads only the command
 * asked for).
 */
import { existsSync, realpathSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, resolve, sep } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { FleetbenchError } from '../base/errors.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';

/** Commander's parser of an integer option in [min, max]. */
export function integerOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (text: string): number => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `expected an integer >= ${min}`
          : `expected an integer from ${min} to ${max}`,
      );
    return n;
  };
}

/** `--port` of a server: 0 (a free one) to 65535; past that, a usage error, not a failed listen. */
export const portOption = integerOption(0, 65_535);

/** The longest token a flag takes (docs/limits.md): a header value, not a file. */
export const MAX_TOKEN_LENGTH = 1_024;

/**
 * A token a server checks requests against, or that a client sends (`--admin-token`, `--token`):
 * not empty (an empty admin token was accepted, then every admin request got 401), no spaces or
 * control characters (it travels as `Authorization: Bearer TOKEN`), at most 1,024 characters.
 */
export function tokenOption(text: string): string {
  if (text.length === 0) throw new InvalidArgumentError('expected a token, got an empty one');
  if (text.length > MAX_TOKEN_LENGTH)
    throw new InvalidArgumentError(`expected a token of at most ${MAX_TOKEN_LENGTH} characters`);
  if (!/^[\x21-\x7e]+$/.test(text))
    throw new InvalidArgumentError(
      'expected a token of printable ASCII without spaces (it is sent as a header)',
    );
  return text;
}

/** Commander's parser of a positive, finite number. */
export function positiveNumberOption(text: string): number {
  const n = Number(text);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('expected a positive number');
  return n;
}

/** Commander's accumulator for a repeatable option (`--set a=1 --set b=2`). */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function parseCount(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new FleetbenchError('E_USAGE', `${flag}: expected a positive integer, got '${value}'`);
  return Number(value);
}

export function parseSeed(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value))
    throw new FleetbenchError('E_USAGE', `--seed: expected an integer, got '${value}'`);
  return Number(value);
}

/** `--target X` is `--set target=X`, last so it wins. */
export function withTarget(sets: readonly string[], target: string | undefined): string[] {
  return target === undefined ? [...sets] : [...sets, `target=${target}`];
}

export const TARGET_JOBS_NOTE =
  'with --target ao the runs are real-time agent-orchestrator processes, one at a time unless --jobs says otherwise';

/**
 * Cells of a target that runs as processes on this machine (agent-orchestrator) share it with
 * the system under test, whose own processes are what is measured: one at a time by default.
 * Virtual runs: one per core.
 */
export function defaultJobs(target: string | undefined): number {
  if (target === undefined) return availableParallelism();
  return targetInfo(parseTarget(target)).localProcesses ? 1 : availableParallelism();
}

/** The files a run or matrix directory is read from (src/results/). */
const RESULT_FILES = ['trace.jsonl', 'summary.json', 'baseline.json'];

/**
 * An output (`--junit`, `-o`) over one of the command's inputs would replace the record it read
 * with what it made from it: nothing already recorded is lost (docs/limits.md), so it is refused
 * before anything is read. Over means the input file itself, or a run's trace.jsonl,
 * summary.json or baseline.json under an input directory.
 */
export function refuseOutputOverInput(flag: string, output: string, inputs: readonly string[]): void {
  const real = (path: string) => (existsSync(path) ? realpathSync(path) : path);
  const target = real(resolve(output));
  for (const input of inputs) {
    const path = resolve(input);
    if (!existsSync(path)) continue;
    const source = realpathSync(path);
    const over = statSync(path).isDirectory()
      ? RESULT_FILES.includes(basename(target)) && target.startsWith(`${source}${sep}`)
      : target === source;
    if (over)
      throw new FleetbenchError(
        'E_USAGE',
        `${flag} ${output}: is ${statSync(path).isDirectory() ? `a run's ${basename(target)} in ${input}` : 'an input'}, which this command reads: writing there would replace it; write elsewhere`,
      );
  }
}
