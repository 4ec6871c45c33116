/**
 * Random small repositories for the rebase merge's property tests: a base commit of a few files
 * of numbered lines, then a base branch's commits and a topic branch's, each commit setting lines
 * to words or removing files, written with `git fast-import` (fixed dates: the same stream makes
 * the same SHAs anywhere).
 */
import fc from 'fast-check';

/** The files and their lines: fewer make more commits touch the same lines. */
export interface RepoShape {
  paths: readonly string[];
  lines: number;
}

/**
 * One change of a commit: a line of a file set to a word (`o` its first text: a later commit
 * undoes an earlier one's change), or the file removed.
 */
export type Edit = { path: number; line: number; word: string } | { path: number; drop: true };

/** Random commits, `min` to `max` of them, each one to three edits. */
export function randomCommits(shape: RepoShape, min: number, max: number): fc.Arbitrary<Edit[][]> {
  const edit: fc.Arbitrary<Edit> = fc.oneof(
    {
      weight: 7,
      arbitrary: fc.record({
        path: fc.nat(shape.paths.length - 1),
        line: fc.nat(shape.lines - 1),
        word: fc.constantFrom('x', 'y', 'z', 'o'),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({ path: fc.nat(shape.paths.length - 1), drop: fc.constant(true as const) }),
    },
  );
  return fc.array(fc.array(edit, { minLength: 1, maxLength: 3 }), { minLength: min, maxLength: max });
}

/** A file's lines by path; a dropped file is absent (an edit of it brings it back). */
type Files = Map<string, string[]>;

/** A line's text names its file: no two files look alike, so git finds no rename among them. */
const line = (path: string, text: string | number) => `${path} ${text}`;

const fresh = (shape: RepoShape, path: string) =>
  Array.from({ length: shape.lines }, (_, i) => line(path, i));

function applied(shape: RepoShape, files: Files, edits: readonly Edit[]): Files {
  const next = new Map([...files].map(([path, lines]) => [path, [...lines]]));
  for (const change of edits) {
    const path = shape.paths[change.path]!;
    if ('drop' in change) next.delete(path);
    else {
      const lines = next.get(path) ?? fresh(shape, path);
      lines[change.line] = line(path, change.word === 'o' ? change.line : change.word);
      next.set(path, lines);
    }
  }
  return next;
}

/**
 * A `git fast-import` stream: the branch `base` (a commit of every file on `from`, then `main`'s
 * commits) and `topic` (`topic`'s commits on that first commit), each commit holding its files
 * whole, its own author (in another time zone than its committer's) and a message of a title and
 * a body. `stamp` moves every date: two streams of one repository make other commits.
 */
export function importStream(
  shape: RepoShape,
  from: string,
  refs: { base: string; topic: string },
  main: readonly Edit[][],
  topic: readonly Edit[][],
  stamp = 0,
): string {
  const parts: string[] = [];
  const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
  let mark = 0;
  const commit = (ref: string, parent: string, files: Files) => {
    mark++;
    const listed = [...files].map(
      ([path, lines]) => `M 100644 inline ${path}\n${data(`${lines.join('\n')}\n`)}`,
    );
    const at = 1700000000 + stamp + mark;
    parts.push(
      `commit ${ref}\nmark :${mark}\nauthor Dev ${mark} <dev${mark}@example.com> ${at} +0200\ncommitter Agent <agent@example.com> ${at} +0000\n${data(`${ref} ${mark}\n\nbody ${mark}`)}from ${parent}\ndeleteall\n${listed.join('')}`,
    );
    return `:${mark}`;
  };
  const first: Files = new Map(shape.paths.map((path) => [path, fresh(shape, path)]));
  const root = commit(refs.base, from, first);
  for (const [ref, edits] of [
    [refs.topic, topic],
    [refs.base, main],
  ] as const) {
    let files = first;
    let parent = root;
    for (const change of edits) {
      files = applied(shape, files, change);
      parent = commit(ref, parent, files);
    }
    if (edits.length === 0 && ref === refs.topic) parts.push(`reset ${ref}\nfrom ${root}\n\n`);
  }
  return `${parts.join('')}done\n`;
}

/** Whether a later commit sets a line an earlier one set (what a rebase merge's step once refused). */
export function setsAgain(commits: readonly Edit[][]): boolean {
  const set = new Set<string>();
  for (const edits of commits) {
    const lines = edits.flatMap((change) => ('drop' in change ? [] : [`${change.path}:${change.line}`]));
    if (lines.some((l) => set.has(l))) return true;
    for (const l of lines) set.add(l);
  }
  return false;
}
