/**
 * Git's object format (blob, tree, commit), hashed here so that every commit the emulator makes
 * is a real git commit: its SHA is the SHA-1 git gives the same bytes, and the bare repositories
 * the git smart HTTP routes serve (src/github/git/) hold exactly these objects. Nothing here runs
 * git; the repositories check it (`git fsck` in the tests).
 *
 * Format (git's `Documentation/technical/hash-function-transition.txt`, "Object format"): an
 * object is `TYPE SIZE\0BODY`; a tree's body is its entries sorted by name (a directory's name
 * compared as if followed by `/`), each `MODE NAME\0` and the 20 raw bytes of the entry's SHA; a
 * commit's body is `tree`, one `parent` line each, `author` and `committer` as
 * `NAME <EMAIL> SECONDS ZONE` (`+0000` unless a pushed commit's author or committer had another),
 * an empty line and the message.
 */
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';

export type GitObjectType = 'blob' | 'tree' | 'commit' | 'tag';

/** Someone who wrote or committed a commit, at a time (whole seconds since the Unix epoch, UTC). */
export interface GitIdent {
  name: string;
  email: string;
  seconds: number;
  /**
   * git's time zone of the date (`+HHMM` or `-HHMM`), absent for `+0000`: a pushed commit's, kept
   * when a rebase merge makes its commit again with its author.
   */
  zone?: string;
}

/** What makes a commit's bytes (and so its SHA). */
export interface GitCommitContent {
  tree: string;
  parents: readonly string[];
  author: GitIdent;
  committer: GitIdent;
  /** Without the trailing newline git adds. */
  message: string;
}

/**
 * A tree entry's mode as git stores it: a file, an executable file, a symbolic link, a directory
 * (git writes `40000`; GitHub's API shows it `040000`), a submodule's commit.
 */
export type GitTreeMode = '100644' | '100755' | '120000' | '40000' | '160000';

export const GIT_TREE_MODES: readonly GitTreeMode[] = ['100644', '100755', '120000', '40000', '160000'];

export interface GitTreeEntry {
  mode: GitTreeMode;
  name: string;
  sha: string;
}

/** What an entry of each mode points at. */
export function typeOfMode(mode: GitTreeMode): 'blob' | 'tree' | 'commit' {
  return mode === '40000' ? 'tree' : mode === '160000' ? 'commit' : 'blob';
}

/** An identity's date as GitHub writes it (`2026-01-01T00:00:00Z`). */
export function gitDate(ident: GitIdent): string {
  return `${new Date(ident.seconds * 1000).toISOString().slice(0, 19)}Z`;
}

/** The object as git stores it before compression: `TYPE SIZE\0BODY`. */
export function objectBytes(type: GitObjectType, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body]);
}

export function objectSha(type: GitObjectType, body: Buffer): string {
  return createHash('sha1').update(objectBytes(type, body)).digest('hex');
}

/** A loose object's file content (zlib of `TYPE SIZE\0BODY`). */
export function looseObject(type: GitObjectType, body: Buffer): Buffer {
  return deflateSync(objectBytes(type, body));
}

export function treeBody(entries: readonly GitTreeEntry[]): Buffer {
  const steps = treeBodySteps(entries);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Entries `treeBodySteps` keys or writes between two of its pauses. */
const TREE_BODY_TICK = 4_096;

/**
 * `treeBody` a part at a time: it pauses (yields nothing) every TREE_BODY_TICK entries keyed or
 * written, so that a merge computed ahead lets the event loop turn while it writes a tree of
 * 60,000 entries (100-200 ms whole); the sort is one step.
 */
export function* treeBodySteps(entries: readonly GitTreeEntry[]): Generator<readonly never[], Buffer, void> {
  // git's order: names by bytes, a directory's as if it ended with `/`. Each key is made once (its
  // UTF-8 bytes as Latin-1 characters compare as the bytes do), not twice at each comparison: a
  // tree of 60,000 entries made two million buffers to sort.
  const keyed: { e: GitTreeEntry; key: string }[] = [];
  for (const e of entries) {
    keyed.push({
      e,
      key: Buffer.from(e.mode === '40000' ? `${e.name}/` : e.name, 'utf8').toString('latin1'),
    });
    if (keyed.length % TREE_BODY_TICK === 0) yield [];
  }
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  yield [];
  let size = 0;
  for (const { e } of keyed) size += e.mode.length + Buffer.byteLength(e.name) + 22;
  const body = Buffer.allocUnsafe(size);
  let at = 0;
  let written = 0;
  for (const { e } of keyed) {
    at += body.write(`${e.mode} ${e.name}\0`, at, 'utf8');
    at += body.write(e.sha, at, 'hex');
    if (++written % TREE_BODY_TICK === 0) yield [];
  }
  return body;
}

/**
 * A tree's entries from its body (the inverse of `treeBody`); undefined when the bytes are not a
 * tree (a mode git does not write, a truncated entry).
 */
export function parseTree(body: Buffer): GitTreeEntry[] | undefined {
  const entries: GitTreeEntry[] = [];
  return parseTreeEntries(body, 0, Number.POSITIVE_INFINITY, entries) < 0 ? undefined : entries;
}

/**
 * `parseTree` a part at a time: at most `count` entries from byte `at` added to `entries`;
 * where the next entry starts (the body's length once all are read), or -1 when the bytes are
 * not a tree. A merge computed ahead parses a 60,000-entry tree so, between turns of the event loop.
 */
export function parseTreeEntries(body: Buffer, at: number, count: number, entries: GitTreeEntry[]): number {
  for (let read = 0; at < body.length && read < count; read++) {
    const space = body.indexOf(0x20, at);
    const nul = space < 0 ? -1 : body.indexOf(0, space);
    if (nul < 0 || nul + 21 > body.length) return -1;
    const mode = body.toString('latin1', at, space) as GitTreeMode;
    if (!GIT_TREE_MODES.includes(mode)) return -1;
    entries.push({
      mode,
      name: body.toString('utf8', space + 1, nul),
      sha: body.toString('hex', nul + 1, nul + 21),
    });
    at = nul + 21;
  }
  return at;
}

function identLine(role: 'author' | 'committer' | 'tagger', who: GitIdent): string {
  // git refuses `<`, `>` and newlines in a name or an e-mail address.
  const clean = (text: string) => text.replace(/[<>\n]/g, '').trim();
  return `${role} ${clean(who.name)} <${clean(who.email)}> ${who.seconds} ${who.zone ?? '+0000'}\n`;
}

export function commitBody(content: GitCommitContent): Buffer {
  let text = `tree ${content.tree}\n`;
  for (const parent of content.parents) text += `parent ${parent}\n`;
  text += identLine('author', content.author);
  text += identLine('committer', content.committer);
  return Buffer.from(`${text}\n${content.message}\n`);
}

/** What makes an annotated tag's bytes (and so its SHA): git's `tag` object. */
export interface GitTagContent {
  /** The object tagged, and its type. */
  object: string;
  type: 'commit' | 'tree' | 'blob' | 'tag';
  /** The tag's name (not the ref's: `v1.0`, not `refs/tags/v1.0`). */
  tag: string;
  tagger: GitIdent;
  /** Without the trailing newline git adds. */
  message: string;
}

/** An annotated tag's body: `object`, `type`, `tag`, `tagger`, an empty line and the message (git's `mktag` format). */
export function tagBody(content: GitTagContent): Buffer {
  const head = `object ${content.object}\ntype ${content.type}\ntag ${content.tag}\n`;
  return Buffer.from(`${head}${identLine('tagger', content.tagger)}\n${content.message}\n`);
}

/** The tree of a repository's first commit: a README naming it, nothing else. */
export function readmeTree(readme: string): { blob: Buffer; blobSha: string; tree: Buffer; treeSha: string } {
  const blob = Buffer.from(readme);
  const blobSha = objectSha('blob', blob);
  const tree = treeBody([{ mode: '100644', name: 'README.md', sha: blobSha }]);
  return { blob, blobSha, tree, treeSha: objectSha('tree', tree) };
}

/** The committer of what GitHub itself makes (merge commits, the web editor's): `GitHub <noreply@github.com>`. */
export const GITHUB_COMMITTER = { name: 'GitHub', email: 'noreply@github.com' } as const;
