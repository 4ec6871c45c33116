/**
 * The world's repositories as real bare git repositories, for git's smart HTTP routes
 * (smart-http.ts). A repository is made the first time git asks for it, under a directory given
 * to the server or a private temporary one removed at close, one directory per repository id
 * (never a name from the fixtures in a path).
 *
 * The world stays the truth; the git repository follows it:
 * - Before each git request the repository is brought to the world (`sync`): every commit the
 *   emulator made that git lacks is written as a loose object (its bytes are git's: world/git-objects.ts),
 *   and every branch is set where the world has it (`git update-ref --stdin`, one transaction).
 *   A branch whose history holds a commit named by SHA alone (fixtures' `head_sha`, the admin
 *   API's `sha`) has no git object and is left out.
 * - After a push (`git receive-pack`, run by `git http-backend`), the refs git then has are
 *   compared with those before it: the new commits are read (`git log`) into the world and each
 *   branch created, moved or deleted there as the admin API's push-branch does.
 *
 * Requests for one repository that change it (a sync, a push and its import) run one at a time;
 * a fetch holds the repository only while it is brought to the world.
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetbenchError } from '../../base/errors.ts';
import { makeDirectories } from '../../base/safe-write.ts';
import type { GitHubState } from '../state.ts';
import { GIT_BOUNDS } from '../world/bounds.ts';
import {
  commitBody,
  type GitIdent,
  type GitObjectType,
  type GitTagContent,
  looseObject,
  objectSha,
  parseTree,
  readmeTree,
  tagBody,
  typeOfMode,
} from '../world/git-objects.ts';
import type { GitObject } from '../world/git-store.ts';
import { type Commit, GitHubStateError, type Repo, type User } from '../world/objects.ts';
import { validRefName } from '../world/refs.ts';

/** A branch a push created (`before` null), moved, or deleted (`after` null). */
export interface BranchUpdate {
  branch: string;
  before: string | null;
  after: string | null;
}

interface Entry {
  dir: string;
  /** What git's branches are (as last set or read): compared with the world's before each request. */
  gitRefs: Map<string, string>;
  /** What git's tags are (as last set or read), the same way: a commit's or an annotated tag's SHA. */
  gitTags: Map<string, string>;
  /** Commits (and the README tree) already written, or known to be in git. */
  stored: Set<string>;
  /** Whether each commit's whole history is in git or can be written there. */
  servable: Map<string, boolean>;
  /** The tail of the repository's queue: work that changes it runs one at a time. */
  queue: Promise<unknown>;
}

const ZERO_SHA = '0'.repeat(40);

/**
 * What receive-pack refuses that GitHub refuses (git runs it once per ref a push updates): a
 * branch named HEAD (`git branch HEAD` is refused the same way), and deleting the default branch
 * (receive.denyDeleteCurrent covers only a checked-out branch, and a bare repository has none).
 */
const UPDATE_HOOK = `#!/bin/sh
# fleetbench: what GitHub refuses in a push (the update hook runs once per ref).
if [ "$1" = refs/heads/HEAD ]; then
  echo "refusing to create a branch named HEAD" >&2
  exit 1
fi
if [ "$3" = ${ZERO_SHA} ] && [ "$1" = "$(git symbolic-ref HEAD)" ]; then
  echo "refusing to delete the current branch: $1" >&2
  exit 1
fi
exit 0
`;

/** What one push may do (docs/limits.md): `GIT_BOUNDS`' numbers, or smaller ones in a test. */
export interface PushBounds {
  /** Branches and tags one push creates, moves or deletes. */
  maxRefUpdates: number;
  maxBranches: number;
  maxTags: number;
}

export const PUSH_BOUNDS: PushBounds = {
  maxRefUpdates: GIT_BOUNDS.maxPushRefUpdates,
  maxBranches: GIT_BOUNDS.maxBranches,
  maxTags: GIT_BOUNDS.maxTags,
};

/**
 * receive-pack's pre-receive hook: the whole push refused, before any ref moves, when it updates
 * more refs than a push may or leaves the repository with more branches or tags than it may hold
 * (what the API refuses past `GIT_BOUNDS`). It runs once per push, with every update on its input
 * (\`OLD NEW REF\`), and stops reading at the first line past the bound. A push of 20,000 new
 * branches took git 44 s, each listed by every later `matching-refs` answer, and nothing stopped
 * the next one (docs/limits.md).
 */
export function preReceiveHook(bounds: PushBounds): string {
  const zero = ZERO_SHA;
  return `#!/bin/sh
# fleetbench: a push's bounds (docs/limits.md); the update hook checks each ref.
n=0; heads=0; tags=0
while read -r old new ref; do
  n=$((n + 1))
  if [ "$n" -gt ${bounds.maxRefUpdates} ]; then
    echo "push refused: more than ${bounds.maxRefUpdates} branches and tags updated in one push (fleetbench docs/limits.md)" >&2
    exit 1
  fi
  case "$ref" in
    refs/heads/*) [ "$old" = ${zero} ] && heads=$((heads + 1)); [ "$new" = ${zero} ] && heads=$((heads - 1)) ;;
    refs/tags/*) [ "$old" = ${zero} ] && tags=$((tags + 1)); [ "$new" = ${zero} ] && tags=$((tags - 1)) ;;
  esac
done
if [ "$heads" -gt 0 ] && [ $(($(git for-each-ref --format=x refs/heads | wc -l) + heads)) -gt ${bounds.maxBranches} ]; then
  echo "push refused: a repository holds at most ${bounds.maxBranches} branches (fleetbench docs/limits.md)" >&2
  exit 1
fi
if [ "$tags" -gt 0 ] && [ $(($(git for-each-ref --format=x refs/tags | wc -l) + tags)) -gt ${bounds.maxTags} ]; then
  echo "push refused: a repository holds at most ${bounds.maxTags} tags (fleetbench docs/limits.md)" >&2
  exit 1
fi
exit 0
`;
}

/** git with nothing of the machine's or the user's configuration, in plain words. */
export function gitEnvironment(home: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
  };
}

export class GitRepositories {
  private rootDir: string | undefined;
  private readonly entries = new Map<number, Entry>();
  private closed = false;

  constructor(
    private readonly state: GitHubState,
    /** Where the repositories go; a private temporary directory (removed at close) when absent. */
    private readonly dir?: string,
  ) {
    if (dir !== undefined) claimGitDir(dir);
    // Both sides of a merge changed files: git merges the trees (merge-tree writes the result).
    state.refs.treeMerger = (repo, base, head) => this.mergeTrees(repo, base, head);
    // A rebase merge's step: git cherry-picks the commit onto a tree (world/refs.ts `pickTree`).
    state.refs.treePicker = (repo, ours, head) => this.pickTree(repo, ours, head);
    // A tree or blob only git has (pushed, or a merge's): read on demand (world/git-store.ts).
    state.gitStore.reader = (repo, shas, blobBodies) => this.readObjects(repo, shas, blobBodies);
    // The same two, off the event loop: a merge computed ahead of the request that needs it
    // (world/refs.ts `prepareMerge`, docs/limits.md "Servers").
    state.refs.asyncTreeMerger = (repo, base, head) => this.mergeTreesAsync(repo, base, head);
    state.refs.asyncTreePicker = (repo, ours, pending, head) => this.pickTreeAsync(repo, ours, pending, head);
    state.gitStore.asyncReader = (repo, shas, blobBodies) => this.readObjectsAsync(repo, shas, blobBodies);
  }

  /** The directory `git http-backend` serves (`GIT_PROJECT_ROOT`), made on first use. */
  get root(): string {
    if (this.rootDir === undefined) {
      if (this.dir !== undefined) this.rootDir = this.dir;
      else {
        this.rootDir = mkdtempSync(join(tmpdir(), 'fleetbench-git-'));
      }
    }
    return this.rootDir;
  }

  /** The repository's directory name under the root (`PATH_INFO`'s first part). */
  static dirName(repo: Repo): string {
    return `${repo.id}.git`;
  }

  /** Runs `work` alone on the repository, after the work queued before it. */
  exclusive<T>(repo: Repo, work: (dir: string) => Promise<T>): Promise<T> {
    const entry = this.entry(repo);
    const run = entry.queue.then(() => work(entry.dir));
    entry.queue = run.catch(() => undefined);
    return run;
  }

  /** Brings the repository to the world (made first if new). Call inside `exclusive`. */
  async sync(repo: Repo): Promise<void> {
    if (this.closed) throw new Error('the git repositories are closed');
    const entry = this.entry(repo);
    if (!existsSync(join(entry.dir, 'HEAD'))) await this.create(repo, entry);
    const commands: string[] = [];
    const wanted = new Map<string, string>();
    for (const [branch, sha] of repo.branches) {
      if (!validRefName(`refs/heads/${branch}`) || !this.servable(repo, entry, sha)) continue;
      wanted.set(branch, sha);
      if (entry.gitRefs.get(branch) === sha) continue;
      this.writeHistory(repo, entry, sha);
      commands.push(`update refs/heads/${branch} ${sha}`);
    }
    for (const branch of entry.gitRefs.keys())
      if (!wanted.has(branch)) commands.push(`delete refs/heads/${branch}`);
    const wantedTags = new Map<string, string>();
    for (const [tag, sha] of repo.tags) {
      if (!validRefName(`refs/tags/${tag}`) || !this.writeTagged(repo, entry, sha)) continue;
      wantedTags.set(tag, sha);
      if (entry.gitTags.get(tag) !== sha) commands.push(`update refs/tags/${tag} ${sha}`);
    }
    for (const tag of entry.gitTags.keys())
      if (!wantedTags.has(tag)) commands.push(`delete refs/tags/${tag}`);
    if (commands.length === 0) return;
    await run(['update-ref', '--stdin'], entry.dir, `${commands.join('\n')}\n`);
    entry.gitRefs = wanted;
    entry.gitTags = wantedTags;
  }

  /**
   * Writes what a tag names, if git can have it: a commit's history, or an annotated tag the
   * API made and what it names (tags of tags in turn), or a tree or blob of the API's. False
   * when some of it has no git object (a commit named by SHA alone): the tag is left out.
   */
  private writeTagged(repo: Repo, entry: Entry, sha: string): boolean {
    const chain: string[] = [];
    let at = sha;
    for (let hops = 0; hops < 100; hops++) {
      const tag = repo.tagObjects.get(at);
      if (tag === undefined) break;
      chain.push(at);
      at = tag.object;
    }
    if (repo.tagObjects.has(at)) return false;
    if (repo.commits.has(at)) {
      if (!this.servable(repo, entry, at)) return false;
      this.writeHistory(repo, entry, at);
    } else this.writeTree(repo, entry, at);
    // The innermost tag first: git takes an object only once what it names is there.
    for (const tagSha of chain.reverse()) {
      if (entry.stored.has(tagSha)) continue;
      const tag = repo.tagObjects.get(tagSha)!;
      if (tag.origin === 'made')
        writeObject(
          entry.dir,
          'tag',
          tagBody({
            object: tag.object,
            type: tag.objectType,
            tag: tag.tag,
            tagger: tag.tagger,
            message: tag.message,
          }),
        );
      entry.stored.add(tagSha);
    }
    return true;
  }

  /**
   * After a push: what changed in git's branches, with the new commits read into the world and
   * each branch moved there (a deleted default branch is refused by the update hook already).
   */
  async importPush(repo: Repo, pusher?: User): Promise<BranchUpdate[]> {
    const entry = this.entry(repo);
    const before = entry.gitRefs;
    const after = await readRefs(entry.dir, 'heads');
    entry.gitRefs = after;
    const updates: BranchUpdate[] = [];
    for (const [branch, sha] of after)
      if (before.get(branch) !== sha)
        updates.push({ branch, before: before.get(branch) ?? null, after: sha });
    for (const [branch, sha] of before)
      if (!after.has(branch)) updates.push({ branch, before: sha, after: null });
    updates.sort((a, b) => (a.branch < b.branch ? -1 : a.branch > b.branch ? 1 : 0));
    const tagsBefore = entry.gitTags;
    const tagsAfter = await readRefs(entry.dir, 'tags');
    entry.gitTags = tagsAfter;
    const changedTags = [...tagsAfter].filter(([name, sha]) => tagsBefore.get(name) !== sha);
    const tagged = await this.importTagObjects(
      repo,
      entry,
      changedTags.map(([, sha]) => sha),
    );
    const fresh = [...updates.flatMap((u) => (u.after === null ? [] : [u.after])), ...tagged];
    if (fresh.length > 0) {
      for (const commit of await newCommits(entry.dir, fresh, [...before.values()])) {
        this.state.refs.pushedCommit(repo, commit.sha, commit, this.state.time.now());
        entry.stored.add(commit.sha);
        entry.servable.set(commit.sha, true);
      }
    }
    for (const [name, sha] of changedTags) this.state.setTag(repo, name, sha, pusher);
    for (const name of tagsBefore.keys())
      if (!tagsAfter.has(name)) this.state.setTag(repo, name, null, pusher);
    const at = this.state.time.now();
    for (const update of updates) {
      // The pusher (the token's user) is who a `push` webhook names.
      if (update.after !== null) this.state.branchPushed(repo, update.branch, update.after, at, pusher);
      else if (repo.branches.has(update.branch)) {
        try {
          this.state.deleteBranch(repo, update.branch, pusher);
        } catch (error) {
          if (!(error instanceof GitHubStateError)) throw error;
        }
      }
    }
    return updates;
  }

  /**
   * The annotated tags among pushed tags' SHAs (and the tags they name in turn) read into the
   * world (\`git cat-file --batch\`); returns the commits the tags lead to, for the push's import.
   */
  private async importTagObjects(repo: Repo, entry: Entry, shas: readonly string[]): Promise<string[]> {
    const commits: string[] = [];
    let pending = [...new Set(shas)];
    for (let hops = 0; hops < 100 && pending.length > 0; hops++) {
      const out = await runBytes(['cat-file', '--batch'], entry.dir, `${pending.join('\n')}\n`);
      const next: string[] = [];
      for (const { sha, type, body } of batchObjects(out)) {
        if (type === 'commit') commits.push(sha);
        if (type !== 'tag') continue;
        const content = parseTagBody(body);
        if (content === undefined) continue;
        this.state.refs.pushedTag(repo, sha, content);
        entry.stored.add(sha);
        if (content.type === 'commit') commits.push(content.object);
        else if (content.type === 'tag' && !repo.tagObjects.has(content.object)) next.push(content.object);
      }
      pending = next;
    }
    return commits;
  }

  /** Removes a temporary root (a given directory stays, with its repositories). */
  close(): void {
    this.closed = true;
    if (this.state.refs.treeMerger !== undefined) this.state.refs.treeMerger = undefined;
    this.state.refs.treePicker = undefined;
    this.state.refs.asyncTreeMerger = undefined;
    this.state.refs.asyncTreePicker = undefined;
    this.state.refs.forgetMergesAhead();
    this.state.gitStore.reader = undefined;
    this.state.gitStore.asyncReader = undefined;
    if (this.rootDir !== undefined && this.dir === undefined)
      rmSync(this.rootDir, { recursive: true, force: true });
  }

  private entry(repo: Repo): Entry {
    let entry = this.entries.get(repo.id);
    if (entry === undefined) {
      entry = {
        dir: join(this.root, GitRepositories.dirName(repo)),
        gitRefs: new Map(),
        gitTags: new Map(),
        stored: new Set(),
        servable: new Map(),
        queue: Promise.resolve(),
      };
      this.entries.set(repo.id, entry);
    }
    return entry;
  }

  private async create(repo: Repo, entry: Entry): Promise<void> {
    if (!validRefName(`refs/heads/${repo.defaultBranch}`))
      throw new GitHubStateError(
        404,
        `${repo.fullName}'s default branch '${repo.defaultBranch}' is not a name git takes`,
      );
    // A directory left by an earlier server is started afresh: the world starts afresh too.
    rmSync(entry.dir, { recursive: true, force: true });
    await run(['init', '--bare', '--quiet', `--initial-branch=${repo.defaultBranch}`, entry.dir], this.root);
    const config: [string, string][] = [
      ['http.receivepack', 'true'],
      // GitHub checks what it is pushed.
      ['receive.fsckObjects', 'true'],
      // No gc in the background, outliving the request (or the server).
      ['gc.auto', '0'],
      ['receive.autogc', 'false'],
      ['core.logAllRefUpdates', 'false'],
    ];
    for (const [key, value] of config) await run(['config', key, value], entry.dir);
    for (const [name, text] of [
      ['update', UPDATE_HOOK],
      ['pre-receive', preReceiveHook(PUSH_BOUNDS)],
    ] as const) {
      const hook = join(entry.dir, 'hooks', name);
      writeFileSync(hook, text);
      chmodSync(hook, 0o755);
    }
    entry.gitRefs = new Map();
    entry.gitTags = new Map();
  }

  /** Whether every commit in the history of `sha` is in git or can be written there. */
  private servable(repo: Repo, entry: Entry, sha: string): boolean {
    const known = entry.servable.get(sha);
    if (known !== undefined) return known;
    // Depth first without recursion: a history can be thousands of commits deep.
    const stack: { sha: string; expanded: boolean }[] = [{ sha, expanded: false }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      if (entry.servable.has(top.sha)) {
        stack.pop();
        continue;
      }
      const commit = repo.commits.get(top.sha);
      if (commit === undefined || commit.origin !== 'made') {
        entry.servable.set(top.sha, commit?.origin === 'pushed');
        stack.pop();
        continue;
      }
      if (!top.expanded) {
        top.expanded = true;
        for (const parent of commit.parents)
          if (!entry.servable.has(parent)) stack.push({ sha: parent, expanded: false });
        continue;
      }
      entry.servable.set(
        top.sha,
        commit.parents.every((p) => entry.servable.get(p) === true),
      );
      stack.pop();
    }
    return entry.servable.get(sha)!;
  }

  /** Writes the commits the emulator made in the history of `sha` that git lacks. */
  private writeHistory(repo: Repo, entry: Entry, sha: string): void {
    const pending = [sha];
    while (pending.length > 0) {
      const next = pending.pop()!;
      if (entry.stored.has(next)) continue;
      const commit = repo.commits.get(next);
      entry.stored.add(next);
      if (commit === undefined || commit.origin !== 'made') continue;
      if (commit.tree === repo.initialTree && !entry.stored.has(commit.tree)) {
        const readme = readmeTree(repo.readme);
        writeObject(entry.dir, 'blob', readme.blob);
        writeObject(entry.dir, 'tree', readme.tree);
        entry.stored.add(commit.tree);
      }
      this.writeTree(repo, entry, commit.tree);
      writeObject(entry.dir, 'commit', commitBody(commit));
      pending.push(...commit.parents);
    }
  }

  /**
   * Writes the trees and blobs the API made (world/git-store.ts) that a tree reaches and git
   * lacks; an object the store does not hold is git's already (pushed, merged by git, the README).
   */
  private writeTree(
    repo: Repo,
    entry: Entry,
    treeSha: string,
    madeAhead?: ReadonlyMap<string, Buffer>,
  ): void {
    const pending = [treeSha];
    while (pending.length > 0) {
      const sha = pending.pop()!;
      if (entry.stored.has(sha)) continue;
      entry.stored.add(sha);
      const ahead = madeAhead?.get(sha);
      const object =
        ahead === undefined ? this.state.gitStore.made(repo, sha) : { type: 'tree' as const, body: ahead };
      if (object?.body === undefined) continue;
      writeObject(entry.dir, object.type, object.body);
      if (object.type !== 'tree') continue;
      for (const child of parseTree(object.body) ?? [])
        if (typeOfMode(child.mode) !== 'commit') pending.push(child.sha);
    }
  }

  /**
   * Objects git has, read for the contents and Git data APIs (\`git cat-file --batch\`, one run
   * for all): a blob larger than GIT_BOUNDS.maxBlobBytes is given by type and size only, never
   * read, and every blob so without \`blobBodies\`. Nothing when the repository was never served
   * (then the world holds every object).
   */
  private readObjects(repo: Repo, shas: readonly string[], blobBodies: boolean): Map<string, GitObject> {
    const entry = this.readable(repo);
    if (entry === undefined) return new Map();
    const git = (args: string[], input: string, maxBuffer: number) =>
      execFileSync('git', args, {
        cwd: entry.dir,
        env: gitEnvironment(this.root),
        input,
        maxBuffer,
        stdio: ['pipe', 'pipe', 'ignore'],
        timeout: 60_000,
      });
    const found = new Map<string, GitObject>();
    const sizes = git(['cat-file', '--batch-check'], `${shas.join('\n')}\n`, 1024 * 1024 * 1024);
    const { readable, budget } = sortBySize(sizes, blobBodies, found);
    if (readable.length === 0) return found;
    keepBodies(git(['cat-file', '--batch'], `${readable.join('\n')}\n`, budget + 1024), found);
    return found;
  }

  /** `readObjects`, git run off the event loop (its output read as it comes). */
  private async readObjectsAsync(
    repo: Repo,
    shas: readonly string[],
    blobBodies: boolean,
  ): Promise<Map<string, GitObject>> {
    const entry = this.readable(repo);
    if (entry === undefined) return new Map();
    const git = (args: string[], input: string, maxBuffer: number) =>
      new Promise<Buffer>((resolve, reject) => {
        const child = execFile(
          'git',
          args,
          { cwd: entry.dir, env: gitEnvironment(this.root), maxBuffer, encoding: 'buffer', timeout: 60_000 },
          (error, stdout) => (error ? reject(error) : resolve(stdout)),
        );
        child.stdin?.on('error', () => {});
        child.stdin?.end(input);
      });
    const found = new Map<string, GitObject>();
    const sizes = await git(['cat-file', '--batch-check'], `${shas.join('\n')}\n`, 1024 * 1024 * 1024);
    const { readable, budget } = sortBySize(sizes, blobBodies, found);
    if (readable.length === 0) return found;
    keepBodies(await git(['cat-file', '--batch'], `${readable.join('\n')}\n`, budget + 1024), found);
    return found;
  }

  /** The repository's entry when git can be read there (served, not closed). */
  private readable(repo: Repo): Entry | undefined {
    const entry = this.entries.get(repo.id);
    if (entry === undefined || this.closed || !existsSync(join(entry.dir, 'HEAD'))) return undefined;
    return entry;
  }

  /** git's merge of two trees (`git merge-tree --write-tree`); undefined on a conflict. */
  private mergeTrees(repo: Repo, base: Commit, head: Commit): string | undefined {
    const entry = this.mergeable(repo, base, head);
    return entry === undefined ? undefined : this.mergeTreeRunSync(entry, base.sha, head.sha);
  }

  /**
   * `mergeTrees`, git run off the event loop: the same answer, but a failure other than a
   * conflict (exit 1) rejects, so that a merge computed ahead is not kept and runs again.
   */
  private mergeTreesAsync(repo: Repo, base: Commit, head: Commit): Promise<string | undefined> {
    const entry = this.mergeable(repo, base, head);
    if (entry === undefined) return Promise.resolve(undefined);
    return this.mergeTreeRun(entry, base.sha, head.sha);
  }

  /**
   * git's cherry-pick of `head` onto the tree `ours` (world/refs.ts `pickTree`): `git merge-tree`
   * of `head` and a stand-in commit of `ours` whose parent is `head`'s first parent, so that
   * their merge base, the merge's base, is that parent, as `git cherry-pick` takes it (none for a
   * root commit: then both sides are added). undefined on a conflict.
   */
  private pickTree(repo: Repo, ours: string, head: Commit): string | undefined {
    const standIn = this.standIn(repo, ours, undefined, head);
    if (standIn === undefined) return undefined;
    return this.mergeTreeRunSync(standIn.entry, standIn.sha, head.sha, PICK_ARGS);
  }

  /**
   * `pickTree`, git run off the event loop (world/refs.ts `prepareRebase`): `ours`' trees not in
   * the store yet are among `pending`; a failure other than a conflict rejects, as
   * `mergeTreesAsync`'s.
   */
  private pickTreeAsync(
    repo: Repo,
    ours: string,
    pending: ReadonlyMap<string, Buffer>,
    head: Commit,
  ): Promise<string | undefined> {
    const standIn = this.standIn(repo, ours, pending, head);
    if (standIn === undefined) return Promise.resolve(undefined);
    return this.mergeTreeRun(standIn.entry, standIn.sha, head.sha, PICK_ARGS);
  }

  /**
   * A commit of the tree `ours` on `head`'s first parent, written to git with what it reaches
   * (its trees not in the store among `pending`), and `head`'s history: what `pickTree` merges
   * with `head`. Nothing reaches it. Undefined when git cannot merge there.
   */
  private standIn(
    repo: Repo,
    ours: string,
    pending: ReadonlyMap<string, Buffer> | undefined,
    head: Commit,
  ): { entry: Entry; sha: string } | undefined {
    const entry = this.entries.get(repo.id);
    if (entry === undefined || this.closed || !this.servable(repo, entry, head.sha)) return undefined;
    this.writeHistory(repo, entry, head.sha);
    this.writeTree(repo, entry, ours, pending);
    const body = commitBody({
      tree: ours,
      parents: head.parents.slice(0, 1),
      author: STAND_IN,
      committer: STAND_IN,
      message: 'fleetbench: a rebase merge step\n',
    });
    writeObject(entry.dir, 'commit', body);
    return { entry, sha: objectSha('commit', body) };
  }

  /** `git merge-tree` of two commits git has; undefined on a conflict (or any failure). */
  private mergeTreeRunSync(entry: Entry, baseSha: string, headSha: string, extra: string[] = []) {
    try {
      const out = execFileSync(
        'git',
        ['merge-tree', '--write-tree', '--no-messages', ...extra, baseSha, headSha],
        {
          cwd: entry.dir,
          env: gitEnvironment(this.root),
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
          timeout: 60_000,
        },
      );
      return out.split('\n')[0]!.trim();
    } catch {
      // Exit 1: the trees conflict.
      return undefined;
    }
  }

  /** `git merge-tree` of two commits git has, off the event loop; undefined on a conflict. */
  private mergeTreeRun(
    entry: Entry,
    baseSha: string,
    headSha: string,
    extra: string[] = [],
  ): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      execFile(
        'git',
        ['merge-tree', '--write-tree', '--no-messages', ...extra, baseSha, headSha],
        { cwd: entry.dir, env: gitEnvironment(this.root), encoding: 'utf8', timeout: 60_000 },
        (error, stdout) => {
          if (error === null) resolve(stdout.split('\n')[0]!.trim());
          else if ((error as { code?: unknown }).code === 1) resolve(undefined);
          else reject(error);
        },
      );
    });
  }

  /** The repository's entry, both histories written to git, when git can merge the two; else undefined. */
  private mergeable(repo: Repo, base: Commit, head: Commit): Entry | undefined {
    const entry = this.entries.get(repo.id);
    if (entry === undefined || this.closed) return undefined;
    if (!this.servable(repo, entry, base.sha) || !this.servable(repo, entry, head.sha)) return undefined;
    this.writeHistory(repo, entry, base.sha);
    this.writeHistory(repo, entry, head.sha);
    return entry;
  }
}

/**
 * \`git cat-file --batch-check\`'s answer sorted: the objects to read whole (and the bytes they
 * take), and the blobs given by size only (larger than a blob may be read, or no body asked)
 * added to \`found\`.
 */
function sortBySize(
  sizes: Buffer,
  blobBodies: boolean,
  found: Map<string, GitObject>,
): { readable: string[]; budget: number } {
  const readable: string[] = [];
  let budget = 0;
  for (const line of sizes.toString('latin1').split('\n')) {
    const [sha, type, size] = line.split(' ');
    if (sha === undefined || size === undefined) continue;
    if (type !== 'blob' && type !== 'tree' && type !== 'commit') continue;
    const bytes = Number(size);
    if (type === 'blob' && (!blobBodies || bytes > GIT_BOUNDS.maxBlobBytes))
      found.set(sha, { type, size: bytes, body: undefined });
    else {
      readable.push(sha);
      budget += bytes + 64;
    }
  }
  return { readable, budget };
}

/** \`git cat-file --batch\`'s objects added to \`found\`, each body copied out of the whole output (which is then let go). */
function keepBodies(out: Buffer, found: Map<string, GitObject>): void {
  for (const { sha, type, body } of batchObjects(out))
    if (type !== 'missing')
      found.set(sha, { type: type as GitObjectType, size: body.length, body: Buffer.from(body) });
}

/** Marks a directory of repositories fleetbench made: only such a directory is written into again. */
const MARKER = '.fleetbench-git';

/**
 * A `--git-dir` taken for the repositories: made (0700) when absent; an existing one must be
 * empty or one fleetbench made (its marker), never a link, since repositories in it are replaced
 * by the world's at the next start.
 */
function claimGitDir(dir: string): void {
  const stat = lstatSync(dir, { throwIfNoEntry: false });
  if (stat?.isSymbolicLink())
    throw new FleetbenchError('E_USAGE', `--git-dir ${dir} is a symbolic link: give the directory itself`);
  if (stat !== undefined && !stat.isDirectory())
    throw new FleetbenchError('E_USAGE', `--git-dir ${dir} is not a directory`);
  if (stat === undefined) makeDirectories(dir, 0o700);
  else if (!existsSync(join(dir, MARKER)) && readdirSync(dir).length > 0)
    throw new FleetbenchError(
      'E_USAGE',
      `--git-dir ${dir} holds files fleetbench did not write: give an empty or new directory (its repositories are replaced by the world's)`,
    );
  writeFileSync(
    join(dir, MARKER),
    'bare git repositories of fleetbench github serve, one per repository id\n',
  );
}

/** A loose object, written whole under its SHA unless git has it already. */
function writeObject(dir: string, type: GitObjectType, body: Buffer): void {
  const sha = objectSha(type, body);
  const folder = join(dir, 'objects', sha.slice(0, 2));
  const path = join(folder, sha.slice(2));
  if (existsSync(path)) return;
  makeDirectories(folder);
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, looseObject(type, body), { mode: 0o444 });
  renameSync(temporary, path);
}

/** Who the stand-in commit of a rebase merge's step computed ahead names (`mergeOntoAsync`): no one's. */
const STAND_IN: GitIdent = { name: 'fleetbench', email: 'fleetbench@localhost', seconds: 0 };
/** A pick's merge of a root commit has no base: both sides' files are added (as `git cherry-pick` adds them). */
const PICK_ARGS = ['--allow-unrelated-histories'];

/** Runs git in `cwd`; its standard output. */
export async function run(
  args: string[],
  cwd: string,
  input?: string,
  maxBuffer = 64 * 1024 * 1024,
): Promise<string> {
  return (await runBytes(args, cwd, input, maxBuffer)).toString('utf8');
}

/** Runs git in `cwd`; its standard output as bytes (for \`cat-file --batch\`, whose bodies are any bytes). */
function runBytes(
  args: string[],
  cwd: string,
  input?: string,
  maxBuffer = 64 * 1024 * 1024,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      args,
      { cwd, env: gitEnvironment(cwd), maxBuffer, encoding: 'buffer', timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`git ${args[0]}: ${stderr.toString().trim() || error.message}`));
        else resolve(stdout);
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

/**
 * The objects of \`git cat-file --batch\`'s output, in order: each \`SHA TYPE SIZE\` line and
 * its body (a view of \`out\`), or \`SHA missing\` with an empty one.
 */
function batchObjects(out: Buffer): { sha: string; type: string; body: Buffer }[] {
  const objects: { sha: string; type: string; body: Buffer }[] = [];
  let at = 0;
  while (at < out.length) {
    const newline = out.indexOf(0x0a, at);
    if (newline < 0) break;
    const [sha, type, size] = out.toString('latin1', at, newline).split(' ');
    const bytes = type === 'missing' ? 0 : Number(size);
    objects.push({ sha: sha!, type: type!, body: out.subarray(newline + 1, newline + 1 + bytes) });
    at = type === 'missing' ? newline + 1 : newline + 1 + bytes + 1;
  }
  return objects;
}

/** The repository's branches (\`heads\`) or tags, and what each names (a commit's, or an annotated tag's, SHA). */
export async function readRefs(dir: string, namespace: 'heads' | 'tags'): Promise<Map<string, string>> {
  const prefix = `refs/${namespace}/`;
  const out = await run(['for-each-ref', '--format=%(objectname) %(refname)', prefix], dir);
  const refs = new Map<string, string>();
  for (const line of out.split('\n')) {
    if (line === '') continue;
    const space = line.indexOf(' ');
    refs.set(line.slice(space + 1 + prefix.length), line.slice(0, space));
  }
  return refs;
}

/** An annotated tag's fields from git's bytes (\`object\`, \`type\`, \`tag\`, \`tagger\`, the message); undefined when malformed. */
export function parseTagBody(body: Buffer): GitTagContent | undefined {
  const text = body.toString('utf8');
  const split = text.indexOf('\n\n');
  const head = split < 0 ? text : text.slice(0, split);
  const message = split < 0 ? '' : text.slice(split + 2).replace(/\n+$/, '');
  const field = (name: string) =>
    head
      .split('\n')
      .find((line) => line.startsWith(`${name} `))
      ?.slice(name.length + 1);
  const object = field('object');
  const type = field('type');
  const tag = field('tag');
  if (object === undefined || tag === undefined) return undefined;
  if (type !== 'commit' && type !== 'tree' && type !== 'blob' && type !== 'tag') return undefined;
  // \`NAME <EMAIL> SECONDS ZONE\`; an old tag may have no tagger at all.
  const who = /^(.*?) ?<([^>]*)> (\d+)/.exec(field('tagger') ?? '');
  const tagger = who
    ? { name: who[1]!, email: who[2]!, seconds: Number(who[3]) }
    : { name: '', email: '', seconds: 0 };
  return { object, type, tag, tagger, message };
}

/** A commit's fields as `newCommits` reads them (dates `SECONDS ZONE`: `--date=raw`). */
const LOG_FIELDS = ['%H', '%P', '%T', '%an', '%ae', '%ad', '%cn', '%ce', '%cd', '%B'];

/** The commits of `tips` not in the history of `known`, parents first, as git stores them. */
async function newCommits(
  dir: string,
  tips: string[],
  known: string[],
): Promise<(ReturnType<typeof commitOf> & { sha: string })[]> {
  const revisions = [...tips, ...known.map((sha) => `^${sha}`)].join('\n');
  const out = await run(
    [
      'log',
      '-z',
      '--topo-order',
      '--reverse',
      '--date=raw',
      `--format=${LOG_FIELDS.join('%x00')}`,
      '--stdin',
    ],
    dir,
    `${revisions}\n`,
    1024 * 1024 * 1024,
  );
  const fields = out.split('\0');
  const commits: (ReturnType<typeof commitOf> & { sha: string })[] = [];
  for (let i = 0; i + LOG_FIELDS.length <= fields.length; i += LOG_FIELDS.length) {
    const f = fields.slice(i, i + LOG_FIELDS.length);
    commits.push({ sha: f[0]!.replace(/^\n/, ''), ...commitOf(f) });
  }
  return commits;
}

function commitOf(f: string[]) {
  const ident = (name: string, email: string, date: string): GitIdent => {
    const [seconds, zone] = date.split(' ');
    const who: GitIdent = { name, email, seconds: Number(seconds) };
    if (zone !== undefined && zone !== '+0000' && /^[+-]\d{4}$/.test(zone)) who.zone = zone;
    return who;
  };
  return {
    parents: f[1] === '' ? [] : f[1]!.split(' '),
    tree: f[2]!,
    author: ident(f[3]!, f[4]!, f[5]!),
    committer: ident(f[6]!, f[7]!, f[8]!),
    message: f[9]!.replace(/\n+$/, ''),
  };
}
