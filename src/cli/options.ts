/**
 * Small option parsers every command may use. Kept apart from the command files so that a
 * command importing one does not load another command's module (main.ts loads only the command
 * asked for).
 */

/** Commander's accumulator for a repeatable option (`--set a=1 --set b=2`). */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
