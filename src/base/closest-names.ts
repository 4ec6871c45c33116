/**
 * Suggestions for a mistyped name (a cell, a `--set` field, a budget set): the known names within
 * a small edit distance, as commands and options get from the CLI parser.
 */
import { distance } from 'fastest-levenshtein';

/** Names within a small edit distance of a mistyped one, closest first (at most 3). */
export function closestNames(typed: string, names: readonly string[]): string[] {
  const wanted = typed.toLowerCase();
  const limit = Math.max(1, Math.min(3, Math.floor(wanted.length / 3)));
  return [...new Set(names)]
    .map((name) => ({ name, d: distance(wanted, name.toLowerCase()) }))
    .filter(({ d }) => d <= limit)
    .sort((a, b) => a.d - b.d || a.name.localeCompare(b.name))
    .slice(0, 3)
    .map(({ name }) => name);
}

/** `. Did you mean 'x' or 'y'?`, or nothing when no known name is close. */
export function didYouMean(typed: string, names: readonly string[]): string {
  const near = closestNames(typed, names);
  return near.length > 0 ? `. Did you mean ${near.map((n) => `'${n}'`).join(' or ')}?` : '';
}
