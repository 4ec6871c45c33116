/**
 * The git objects (blobs and trees) the contents and Git data APIs make and read, per repository,
 * as git's bytes (git-objects.ts): a blob or tree made here has the SHA git gives it, and the
 * served bare repositories (src/github/git/repos.ts) write the ones a branch reaches before git
 * answers a clone or fetch.
 *
 * Where an object is read from (docs/github-emulator.md, "Contents and Git data"):
 * - what the API made, and each repository's first README tree, is kept here, in memory;
 * - what only git has (a tree or blob pushed with git, a merge tree `git merge-tree` wrote) is
 *   read on demand from the served bare repository through `reader`, set by the git repositories;
 *   in-process, without them, no push can bring an object, so everything is here.
 * A commit named by SHA alone (fixtures' `head_sha`) has no tree anywhere: its files are unknown.
 */

import { GIT_BOUNDS } from './bounds.ts';
import {
  type GitObjectType,
  type GitTreeEntry,
  type GitTreeMode,
  objectSha,
  parseTree,
  parseTreeEntries,
  readmeTree,
  treeBody,
  treeBodySteps,
  typeOfMode,
} from './git-objects.ts';
import { GitHubStateError, type Repo } from './objects.ts';

/** An object as git stores it; `body` undefined when it is larger than a blob may be read (its size known). */
export interface GitObject {
  type: GitObjectType;
  size: number;
  body: Buffer | undefined;
}

/** Reads objects from the repository's git directory: those it has, by SHA. */
export type GitObjectReader = (
  repo: Repo,
  shas: readonly string[],
  blobBodies: boolean,
) => Map<string, GitObject>;

/** The same read, off the event loop (git's output streamed in): what a merge run ahead uses. */
export type AsyncGitObjectReader = (
  repo: Repo,
  shas: readonly string[],
  blobBodies: boolean,
) => Promise<Map<string, GitObject>>;

/**
 * What a merge computed ahead keeps (`mergeTreesAhead`): its answer, and the trees it made, in the
 * order the synchronous merge would have kept them (`keepMade` keeps them then, so what the
 * store holds, and the bound on it, are as if the merge had run synchronously).
 */
export interface MergeAhead {
  merged: string | undefined | 'unknown';
  made: Buffer[];
}

/**
 * The entry-by-entry merge's steps (`mergeSteps`): before reading trees it names them (a driver
 * off the event loop reads them from git first), and every MERGE_TICK_ENTRIES entries it names
 * none (a driver may let the event loop turn).
 */
type MergeSteps = Generator<readonly string[], string | undefined | 'unknown', void>;
/** Trees `mergeSteps` names at once at most (one git run reads them). */
const MERGE_READ_BATCH = 3_000;
/** Entries merged between two of `mergeSteps`' pauses. */
const MERGE_TICK_ENTRIES = 4_096;
/** Event-loop time a merge run ahead spends before letting other work in (base/turn-slices.ts' slice). */
const MERGE_SLICE_MS = 10;

/** A path's entry in a tree: what `GET contents/{path}` and a tree edit find there. */
export interface PathEntry {
  mode: GitTreeMode;
  sha: string;
}

/** One change of a tree: the path set to an entry, or removed (`entry` null). */
export interface TreeEdit {
  path: string;
  entry: PathEntry | null;
}

interface EditNode {
  entries: Map<string, PathEntry>;
  /** Sub-trees being edited, by name (their entry in `entries` is replaced when written). */
  children: Map<string, EditNode>;
}

export class GitStore {
  /** Set by the served git repositories (src/github/git/repos.ts); undefined in-process. */
  reader: GitObjectReader | undefined = undefined;
  /** The same, asynchronous: set with `reader`. */
  asyncReader: AsyncGitObjectReader | undefined = undefined;
  private readonly byRepo = new Map<number, Map<string, GitObject>>();
  private bytes = 0;
  /**
   * Trees read from git, by repository and SHA (a tree never changes): a tree edit or a path walk
   * that comes back to one does not run git again. Emptied whole past 64 MiB.
   */
  private readonly readTrees = new Map<string, GitObject>();
  private readTreeBytes = 0;
  /**
   * The sizes of blobs read from git, by repository and SHA (a listing gives every blob's size: a
   * recursive tree of 100,000 files asked again must not run git over them again). Emptied whole
   * past READ_SIZE_CACHE_ENTRIES.
   */
  private readonly readSizes = new Map<string, number>();
  /**
   * Answers made from a tree and nothing else (a recursive listing), by a key naming the tree:
   * a tree never changes, so neither do they. Emptied whole past READ_TREE_CACHE_BYTES.
   */
  private readonly treeAnswers = new Map<string, string>();
  /** Trees parsed (`tree`), by repository and SHA, and their entries counted. */
  private readonly parsedTrees = new Map<string, readonly GitTreeEntry[]>();
  private parsedTreeEntries = 0;
  private treeAnswerBytes = 0;

  /** Keeps an object the API made (or knows to be in the repository); its SHA. */
  put(repo: Repo, type: GitObjectType, body: Buffer): string {
    const sha = objectSha(type, body);
    const objects = this.objectsOf(repo);
    if (objects.has(sha)) return sha;
    const cost = keepingCost(body.length);
    if (this.bytes + cost > GIT_BOUNDS.maxStoreBytes)
      throw new GitHubStateError(
        403,
        `the emulator keeps at most ${GIT_BOUNDS.maxStoreBytes} bytes of objects made through the API (docs/limits.md)`,
      );
    this.bytes += cost;
    objects.set(sha, { type, size: body.length, body });
    return sha;
  }

  /** The bytes the bound on objects made (GIT_BOUNDS.maxStoreBytes) counts as kept so far. */
  keptBytes(): number {
    return this.bytes;
  }

  /** How many objects are kept here, over every repository (what the bounds on one edit are seen by). */
  objectCount(): number {
    let count = 0;
    for (const objects of this.byRepo.values()) count += objects.size;
    return count;
  }

  /** The objects kept here for the repository (what the served git repository must be given). */
  made(repo: Repo, sha: string): GitObject | undefined {
    return this.objectsOf(repo).get(sha);
  }

  /** An object of the repository: kept here, else read from git; undefined when neither has it. */
  get(repo: Repo, sha: string): GitObject | undefined {
    return this.getMany(repo, [sha]).get(sha);
  }

  /**
   * Several objects at once (one read of git for those not kept here); without `blobBodies` a
   * blob only git has is given by its size (a listing's sizes read no file).
   */
  getMany(repo: Repo, shas: readonly string[], blobBodies = true): Map<string, GitObject> {
    const found = new Map<string, GitObject>();
    const objects = this.objectsOf(repo);
    const missing: string[] = [];
    for (const sha of shas) {
      const key = `${repo.id}:${sha}`;
      const kept = objects.get(sha) ?? this.readTrees.get(key);
      const size = blobBodies || kept !== undefined ? undefined : this.readSizes.get(key);
      if (kept !== undefined) found.set(sha, kept);
      else if (size !== undefined) found.set(sha, { type: 'blob', size, body: undefined });
      else if (/^[0-9a-f]{40}$/.test(sha)) missing.push(sha);
    }
    if (missing.length > 0 && this.reader !== undefined)
      this.keepRead(repo, this.reader(repo, missing, blobBodies), found);
    return found;
  }

  /** Objects read from git kept in the caches of reads (sizes, trees), and added to `found`. */
  private keepRead(repo: Repo, read: Map<string, GitObject>, found: Map<string, GitObject>): void {
    for (const [sha, object] of read) {
      found.set(sha, object);
      if (object.type === 'blob') {
        if (this.readSizes.size >= READ_SIZE_CACHE_ENTRIES) this.readSizes.clear();
        this.readSizes.set(`${repo.id}:${sha}`, object.size);
      }
      if (object.type !== 'tree') continue;
      if (this.readTreeBytes + object.size > READ_TREE_CACHE_BYTES) {
        this.readTrees.clear();
        this.readTreeBytes = 0;
      }
      this.readTrees.set(`${repo.id}:${sha}`, object);
      this.readTreeBytes += object.size;
    }
  }

  /**
   * Reads the trees not yet parsed here from git off the event loop (`asyncReader`, one git run
   * for all) and parses them, so that `tree` then finds them without running git.
   */
  private async readTreesAhead(
    repo: Repo,
    shas: readonly string[],
    absent: Set<string>,
    slice: { start: number },
  ): Promise<void> {
    const objects = this.objectsOf(repo);
    // What is here already is taken now: the caches may be emptied while git runs.
    const have = new Map<string, GitObject | undefined>();
    const missing: string[] = [];
    for (const sha of shas) {
      const key = `${repo.id}:${sha}`;
      if (this.parsedTrees.has(key) || have.has(sha)) continue;
      const object = objects.get(sha) ?? this.readTrees.get(key);
      if (object !== undefined || !/^[0-9a-f]{40}$/.test(sha)) have.set(sha, object);
      else missing.push(sha);
    }
    if (missing.length > 0 && this.asyncReader !== undefined) {
      const read = await this.asyncReader(repo, missing, true);
      this.keepRead(repo, read, new Map());
      for (const sha of missing) have.set(sha, read.get(sha));
    }
    // Parsed now, the event loop let turn between slices. One that is no tree here nor in git is
    // what `tree` answers undefined for: it is not asked of git again, synchronously. One parsed
    // before, whose parse was let go meanwhile, is left to `tree`.
    for (const [sha, object] of have)
      if (!(await this.parseAhead(`${repo.id}:${sha}`, object, slice))) absent.add(sha);
  }

  /** An answer made from the tree `key` names alone, made once (`make`: undefined for none). */
  treeAnswer(repo: Repo, key: string, make: () => string | undefined): string | undefined {
    const name = `${repo.id}:${key}`;
    const kept = this.treeAnswers.get(name);
    if (kept !== undefined) return kept;
    const answer = make();
    if (answer === undefined) return undefined;
    if (this.treeAnswerBytes + answer.length > READ_TREE_CACHE_BYTES) {
      this.treeAnswers.clear();
      this.treeAnswerBytes = 0;
    }
    if (answer.length <= READ_TREE_CACHE_BYTES) {
      this.treeAnswers.set(name, answer);
      this.treeAnswerBytes += answer.length;
    }
    return answer;
  }

  /**
   * A tree's entries (shared: never changed by a caller); undefined when the repository has no
   * tree of that SHA. Parsed once and kept (a tree never changes): a tree edit or a walk that
   * meets one tree under many names parsed it each time, 60,000 entries 50 times over in one
   * request. Emptied whole past READ_TREE_CACHE_ENTRIES.
   */
  tree(repo: Repo, sha: string): readonly GitTreeEntry[] | undefined {
    const key = `${repo.id}:${sha}`;
    const kept = this.parsedTrees.get(key);
    if (kept !== undefined) return kept;
    const object = this.get(repo, sha);
    if (object?.type !== 'tree' || object.body === undefined) return undefined;
    const entries = parseTree(object.body);
    if (entries === undefined) return undefined;
    this.keepParsed(key, entries);
    return entries;
  }

  private keepParsed(key: string, entries: readonly GitTreeEntry[]): void {
    if (this.parsedTreeEntries + entries.length > READ_TREE_CACHE_ENTRIES) {
      this.parsedTrees.clear();
      this.parsedTreeEntries = 0;
    }
    this.parsedTrees.set(key, entries);
    this.parsedTreeEntries += entries.length;
  }

  /**
   * `tree` for a tree already read (kept here or read from git), parsed MERGE_TICK_ENTRIES entries
   * at a time, the event loop let turn whenever a slice (MERGE_SLICE_MS) is spent; false when it
   * is no tree (`tree` answers undefined for it).
   */
  private async parseAhead(
    key: string,
    object: GitObject | undefined,
    slice: { start: number },
  ): Promise<boolean> {
    if (object?.type !== 'tree' || object.body === undefined) return false;
    const entries = await parseSliced(object.body, slice);
    if (entries === undefined) return false;
    this.keepParsed(key, entries);
    return true;
  }

  /** The entry at `path` (components joined by `/`) under a tree; the tree itself for ''. */
  entryAt(repo: Repo, treeSha: string, path: string): PathEntry | undefined {
    let entry: PathEntry = { mode: '40000', sha: treeSha };
    if (path === '') return this.tree(repo, treeSha) === undefined ? undefined : entry;
    for (const name of path.split('/')) {
      if (entry.mode !== '40000') return undefined;
      const found = this.tree(repo, entry.sha)?.find((e) => e.name === name);
      if (found === undefined) return undefined;
      entry = { mode: found.mode, sha: found.sha };
    }
    return entry;
  }

  /**
   * A new tree: `base` (a tree SHA, or undefined for an empty tree) with each edit applied in
   * order, as `POST git/trees` with `base_tree` does. A directory left empty is dropped (git
   * writes no empty tree but the root). Refusals (GitHubStateError 422): an object the repository
   * lacks, a path through a file, removing what is not there.
   */
  editTree(
    repo: Repo,
    base: string | undefined,
    edits: readonly TreeEdit[],
    work: EditWork = new EditWork(),
  ): string {
    const root = base === undefined ? work.made() : this.load(repo, base, 'base_tree', work);
    for (const edit of edits) {
      const names = edit.path.split('/');
      let node = root;
      for (let i = 0; i < names.length - 1; i++) {
        const name = names[i]!;
        let child = node.children.get(name);
        if (child === undefined) {
          const existing = node.entries.get(name);
          if (existing !== undefined && existing.mode === '40000')
            child = this.load(repo, existing.sha, 'tree.sha', work);
          else if (edit.entry === null)
            throw new GitHubStateError(422, `tree.path ${edit.path} does not exist`);
          // A file where a directory is wanted is replaced by the directory, as git's index does.
          else child = work.made();
          node.children.set(name, child);
        }
        node = child;
      }
      const leaf = names[names.length - 1]!;
      if (edit.entry === null) {
        if (!node.entries.has(leaf) && !node.children.has(leaf))
          throw new GitHubStateError(422, `tree.path ${edit.path} does not exist`);
        node.entries.delete(leaf);
        node.children.delete(leaf);
      } else {
        node.entries.set(leaf, edit.entry);
        node.children.delete(leaf);
      }
    }
    return this.write(repo, root, true, work);
  }

  private load(repo: Repo, sha: string, field: string, work: EditWork): EditNode {
    const entries = this.tree(repo, sha);
    if (entries === undefined)
      throw new GitHubStateError(422, `${field} ${sha} is not a tree of this repository`);
    work.spend(entries.length + EDIT_WORK_PER_TREE);
    return {
      entries: new Map(entries.map((e) => [e.name, { mode: e.mode, sha: e.sha }])),
      children: new Map(),
    };
  }

  /** Writes the edited trees bottom up; an empty one below the root is dropped ('' for it). */
  private write(repo: Repo, node: EditNode, root: boolean, work: EditWork): string {
    for (const [name, child] of node.children) {
      const sha = this.write(repo, child, false, work);
      if (sha === '') node.entries.delete(name);
      else node.entries.set(name, { mode: '40000', sha });
    }
    node.children.clear();
    if (!root && node.entries.size === 0) return '';
    if (node.entries.size > GIT_BOUNDS.maxTreeEntries)
      throw new GitHubStateError(
        422,
        `a tree holds at most ${GIT_BOUNDS.maxTreeEntries} entries (docs/limits.md)`,
      );
    work.spend(node.entries.size);
    const entries = [...node.entries].map(([name, e]) => ({ name, mode: e.mode, sha: e.sha }));
    return this.put(repo, 'tree', treeBody(entries));
  }

  /**
   * The three-way merge of two trees from their merge base's, entry by entry, as git merges when
   * no file changed on both sides: a name changed on one side only takes that side's, a directory
   * changed on both is merged inside; a file changed differently on both sides is a conflict
   * (undefined: no content merge here). `unknown` when a tree is not readable (a commit named by
   * SHA alone has none).
   */
  mergeTrees(
    repo: Repo,
    ours: string,
    theirs: string,
    base: string | undefined,
  ): string | undefined | 'unknown' {
    const steps = this.mergeSteps(repo, ours, theirs, base, (sha) => this.tree(repo, sha), undefined);
    for (;;) {
      const step = steps.next();
      if (step.done) return step.value;
    }
  }

  /**
   * `mergeTrees` computed off the event loop (docs/limits.md, "Servers"): the trees it reads come
   * from git asynchronously, and its own work stops every MERGE_SLICE_MS to let the event loop
   * turn (60 directories of 1,000 files merged both sides held the loop 2.8 s, most of it 120
   * synchronous runs of git). Nothing is kept: the trees it made are given back, for `keepMade`.
   * `pending` holds trees made by merges computed ahead before it and not kept yet (a rebase
   * merge's steps before this one), read from there as the synchronous merge reads them from here.
   */
  async mergeTreesAhead(
    repo: Repo,
    ours: string,
    theirs: string,
    base: string | undefined,
    pending?: ReadonlyMap<string, Buffer>,
  ): Promise<MergeAhead> {
    const made: Buffer[] = [];
    const absent = new Set<string>();
    /** `pending`'s trees parsed, for this merge only: the repository does not hold them yet. */
    const parsed = new Map<string, readonly GitTreeEntry[]>();
    const treeOf = (sha: string) => (absent.has(sha) ? undefined : (parsed.get(sha) ?? this.tree(repo, sha)));
    const steps = this.mergeSteps(repo, ours, theirs, base, treeOf, made);
    const slice = { start: performance.now() };
    for (;;) {
      const step = steps.next();
      if (step.done) return { merged: step.value, made };
      const fromRepo: string[] = [];
      for (const sha of step.value) {
        const body = pending?.get(sha);
        if (body === undefined) fromRepo.push(sha);
        else if (!parsed.has(sha)) {
          const entries = await parseSliced(body, slice);
          if (entries === undefined) absent.add(sha);
          else parsed.set(sha, entries);
        }
      }
      // Reading may wait for git, or not (every tree read already): the slice is timed either way.
      if (fromRepo.length > 0) await this.readTreesAhead(repo, fromRepo, absent, slice);
      await turnWhenSpent(slice);
    }
  }

  /** Keeps the trees a merge computed ahead made (`mergeTreesAhead`), in its order, as `put` would have. */
  keepMade(repo: Repo, made: readonly Buffer[]): void {
    for (const body of made) this.put(repo, 'tree', body);
  }

  /**
   * `mergeTrees`' work, one step at a time (MergeSteps), reading trees with `treeOf`: each tree
   * made is kept (`put`), or, given `made`, added to it (a merge computed ahead keeps nothing).
   */
  private *mergeSteps(
    repo: Repo,
    ours: string,
    theirs: string,
    base: string | undefined,
    treeOf: (sha: string) => readonly GitTreeEntry[] | undefined,
    made: Buffer[] | undefined,
  ): MergeSteps {
    if (ours === theirs || base === theirs) return ours;
    if (base === ours) return theirs;
    yield base === undefined ? [ours, theirs] : [base, ours, theirs];
    const o = base === undefined ? [] : treeOf(base);
    const a = treeOf(ours);
    const b = treeOf(theirs);
    if (o === undefined || a === undefined || b === undefined) return 'unknown';
    const byName = (entries: readonly GitTreeEntry[]) => new Map(entries.map((e) => [e.name, e]));
    const mo = byName(o);
    yield [];
    const ma = byName(a);
    yield [];
    const mb = byName(b);
    yield [];
    const same = (x: GitTreeEntry | undefined, y: GitTreeEntry | undefined) =>
      x === undefined ? y === undefined : y !== undefined && x.mode === y.mode && x.sha === y.sha;
    const names = new Set([...ma.keys(), ...mb.keys()]);
    yield [];
    // The directories changed on both sides are merged inside: their trees named all at once,
    // so that a driver reads them from git in one run rather than one run each.
    let inside: string[] = [];
    let sinceTick = 0;
    for (const name of names) {
      if (++sinceTick === MERGE_TICK_ENTRIES) {
        sinceTick = 0;
        yield [];
      }
      const [eo, ea, eb] = [mo.get(name), ma.get(name), mb.get(name)];
      if (same(ea, eb) || same(eo, eb) || same(eo, ea)) continue;
      if (ea?.mode !== '40000' || eb?.mode !== '40000' || (eo !== undefined && eo.mode !== '40000')) break;
      inside.push(ea.sha, eb.sha);
      if (eo !== undefined) inside.push(eo.sha);
      if (inside.length >= MERGE_READ_BATCH) {
        yield inside;
        inside = [];
      }
    }
    if (inside.length > 0) yield inside;
    const merged: GitTreeEntry[] = [];
    sinceTick = 0;
    for (const name of names) {
      if (++sinceTick === MERGE_TICK_ENTRIES) {
        sinceTick = 0;
        yield [];
      }
      const eo = mo.get(name);
      const ea = ma.get(name);
      const eb = mb.get(name);
      let pick: GitTreeEntry | undefined;
      if (same(ea, eb) || same(eo, eb)) pick = ea;
      else if (same(eo, ea)) pick = eb;
      else if (ea?.mode === '40000' && eb?.mode === '40000' && (eo === undefined || eo.mode === '40000')) {
        const inner = yield* this.mergeSteps(repo, ea.sha, eb.sha, eo?.sha, treeOf, made);
        if (inner === undefined || inner === 'unknown') return inner;
        pick = { mode: '40000', name, sha: inner };
      } else return undefined;
      if (pick !== undefined) merged.push({ ...pick, name });
    }
    const body = yield* treeBodySteps(merged);
    if (made === undefined) return this.put(repo, 'tree', body);
    made.push(body);
    return objectSha('tree', body);
  }

  /** Whether an entry's SHA names an object of its mode's type here (a submodule's commit is never checked). */
  hasObject(repo: Repo, entry: PathEntry): boolean {
    const type = typeOfMode(entry.mode);
    if (type === 'commit') return true;
    return this.get(repo, entry.sha)?.type === type;
  }

  private objectsOf(repo: Repo): Map<string, GitObject> {
    let objects = this.byRepo.get(repo.id);
    if (objects === undefined) {
      objects = new Map();
      // The first commit's README tree (state.ts makes it): every repository has it.
      const readme = readmeTree(repo.readme);
      objects.set(readme.blobSha, { type: 'blob', size: readme.blob.length, body: readme.blob });
      objects.set(readme.treeSha, { type: 'tree', size: readme.tree.length, body: readme.tree });
      this.byRepo.set(repo.id, objects);
    }
    return objects;
  }
}

/**
 * A tree's body parsed MERGE_TICK_ENTRIES entries at a time, the event loop let turn whenever a
 * slice is spent; undefined when it is no tree.
 */
async function parseSliced(body: Buffer, slice: { start: number }): Promise<GitTreeEntry[] | undefined> {
  const entries: GitTreeEntry[] = [];
  let at = 0;
  while (at < body.length) {
    at = parseTreeEntries(body, at, MERGE_TICK_ENTRIES, entries);
    if (at < 0) return undefined;
    await turnWhenSpent(slice);
  }
  return entries;
}

/** Lets the event loop turn once a slice of a merge computed ahead is spent (MERGE_SLICE_MS), starting the next. */
async function turnWhenSpent(slice: { start: number }): Promise<void> {
  if (performance.now() - slice.start <= MERGE_SLICE_MS) return;
  await new Promise((resolve) => setImmediate(resolve));
  slice.start = performance.now();
}

/** What the cache of trees read from git holds at most (bytes of tree bodies). */
const READ_TREE_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * What keeping an object of `size` bytes costs, as GIT_BOUNDS.maxStoreBytes counts it: its body,
 * and 640 bytes more (its Buffer, its SHA as a string, its record and map entry: 230-650 bytes
 * measured); a body under 4 KiB twice, as it is a slice of one of Node's shared 8 KiB slabs,
 * which whatever else was cut from it stays with. Counting bodies alone, 100,000 one-line files
 * in one `POST git/trees` counted 900 KB and kept about 28 MB: the 1 GiB bound would have been
 * reached near 30 GB.
 */
function keepingCost(size: number): number {
  return size + (size < 4096 ? size : 0) + 640;
}
/** Parsed tree entries kept at most (about 200 bytes each). */
const READ_TREE_CACHE_ENTRIES = 500_000;
/** Blob sizes read from git kept at most (about 100 bytes each). */
const READ_SIZE_CACHE_ENTRIES = 500_000;

/**
 * What one request's tree edits may do (GIT_BOUNDS.maxEditWork, docs/limits.md): tree entries
 * read and written, each tree read or made counting EDIT_WORK_PER_TREE more (a tree costs a hash
 * and a body however few its entries). 1,200 paths 2,000 directories deep made 2.4 million trees
 * in one request: 33 s of the event loop and 700 MB. A GraphQL request's mutations share one
 * (aliases repeat a mutation as often as the document allows).
 */
const EDIT_WORK_PER_TREE = 64;

export class EditWork {
  private left: number = GIT_BOUNDS.maxEditWork;

  spend(units: number): void {
    this.left -= units;
    if (this.left < 0)
      throw new GitHubStateError(
        422,
        `a request's tree edits read and write at most ${GIT_BOUNDS.maxEditWork} tree entries, each tree counting ${EDIT_WORK_PER_TREE} more (docs/limits.md)`,
      );
  }

  /** A directory the edit makes. */
  made(): EditNode {
    this.spend(EDIT_WORK_PER_TREE);
    return { entries: new Map(), children: new Map() };
  }
}

/**
 * Why a path is not one git or GitHub takes, or undefined: no empty, `.`, `..` or `.git`
 * component, no NUL, within GIT_BOUNDS' lengths. GitHub's words for a bad component.
 */
export function pathProblem(path: string, field: string): string | undefined {
  if (Buffer.byteLength(path) > GIT_BOUNDS.maxPathBytes)
    return `${field} is longer than ${GIT_BOUNDS.maxPathBytes} bytes (docs/limits.md)`;
  for (const name of path.split('/')) {
    if (name === '' || name === '.' || name === '..' || isDotGit(name) || name.includes('\0'))
      return `${field} contains a malformed path component`;
    if (Buffer.byteLength(name) > GIT_BOUNDS.maxNameBytes)
      return `${field} has a component longer than ${GIT_BOUNDS.maxNameBytes} bytes (docs/limits.md)`;
  }
  return undefined;
}

/**
 * Whether a name is `.git` as git's fsck sees it (hasDotgit, its `is_ntfs_dotgit` and
 * `is_hfs_dotgit`): `.git` in any case, NTFS's spellings of it (trailing dots or spaces, an
 * alternate data stream after `:`, the short name `git~1`) and HFS+'s (code points HFS+ ignores
 * anywhere in it). A tree holding one is refused by every fetch with transfer.fsckObjects, and by
 * GitHub on a push; `.git.`, `git~1` and `.git` with a U+200C inside were taken until 2026-12-07.
 */
function isDotGit(name: string): boolean {
  if (/^(\.git|git~1)[. ]*([:\\].*)?$/is.test(name)) return true;
  return name.replace(HFS_IGNORED, '').toLowerCase() === '.git';
}

/**
 * Whether a name is `.gitmodules` as git's fsck sees it (its `is_ntfs_dotgitmodules` and
 * `is_hfs_dotgitmodules`), which may not be a symbolic link (fsck: gitmodulesSymlink).
 */
export function isDotGitmodules(name: string): boolean {
  if (/^(\.gitmodules|gitmod~[1-4]|gi7eba~[1-9])[. ]*([:\\].*)?$/is.test(name)) return true;
  return name.replace(HFS_IGNORED, '').toLowerCase() === '.gitmodules';
}

/** The code points HFS+ ignores in a name (git's `next_hfs_char`). */
const HFS_IGNORED = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/** Strict base64 (whitespace allowed, as GitHub's own line-wrapped content has): the bytes, or undefined. */
export function decodeBase64(text: string): Buffer | undefined {
  const compact = text.replace(/[\r\n\t ]/g, '');
  if (compact.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) return undefined;
  return Buffer.from(compact, 'base64');
}
