/**
 * Refs and pushes: every repository's commits (with their parents, so history can be compared)
 * and branches, and what a push changes. A push (a branch created or moved) moves the
 * repository's `pushed_at` forward and bumps the version of everything that embeds the
 * repository object. The Git refs routes (`POST /git/refs`, `PATCH /git/refs/heads/X`), the
 * admin API's pushes and pull requests' commits all come through here.
 */
import { createHash } from 'node:crypto';
import { MinHeap } from '../../base/min-heap.ts';
import { GIT_BOUNDS } from './bounds.ts';
import {
  commitBody,
  type GitCommitContent,
  type GitIdent,
  type GitTagContent,
  objectSha,
  tagBody,
} from './git-objects.ts';
import type { GitStore } from './git-store.ts';
import {
  type Commit,
  type CommitOrigin,
  GitHubStateError,
  nodeId,
  type Repo,
  type TagObject,
  type User,
} from './objects.ts';
import type { WorldTime } from './time.ts';

/** How two commits relate (`GET /compare/A...B`): B's commits not in A, and A's not in B. */
export interface Comparison {
  /** The newest commit both reach (null when their histories never meet). */
  mergeBase: Commit | null;
  /** Commits of the head that the base lacks, oldest first. */
  ahead: Commit[];
  /** Commits of the base that the head lacks. */
  behindBy: number;
  status: 'identical' | 'ahead' | 'behind' | 'diverged';
}

/** What a compare or a pull request's commits list walks at most: GitHub lists 250 commits. */
export const MAX_COMPARE_COMMITS = 250;

export class Refs {
  /**
   * Bumped when a repository is added or pushed to: the version of `GET /user/repos`, whose
   * entries carry `pushed_at`.
   */
  reposVersion = 0;

  constructor(
    private readonly time: WorldTime,
    /** The API's trees and blobs, for merges without git (world/git-store.ts). */
    private readonly gitStore?: GitStore,
  ) {}

  /** A user as git names them: their name (else login) and GitHub's no-reply address. */
  ident(user: User, at: number): GitIdent {
    return {
      name: user.name ?? user.login,
      email: `${user.login}@users.noreply.github.com`,
      seconds: this.time.commitSeconds(at),
    };
  }

  /**
   * A commit the emulator makes, as git would make it: its SHA is git's for these bytes, so a
   * repository served over git holds it (world/git-objects.ts). Its tree is the first parent's (a
   * change of no file) unless given. Making the same commit twice gives the one commit, as in git.
   */
  makeCommit(
    repo: Repo,
    input: {
      message: string;
      at: number;
      parents: string[];
      author: GitIdent;
      committer?: GitIdent;
      tree?: string;
    },
  ): Commit {
    const first = input.parents[0] === undefined ? undefined : repo.commits.get(input.parents[0]);
    const content: GitCommitContent = {
      tree: input.tree ?? first?.tree ?? repo.initialTree,
      parents: input.parents,
      author: input.author,
      committer: input.committer ?? input.author,
      message: input.message,
    };
    const sha = objectSha('commit', commitBody(content));
    return repo.commits.get(sha) ?? this.store(repo, sha, content, input.at, 'made');
  }

  /**
   * A commit a fixture or the admin API names by SHA alone: no git object has that SHA, so it is
   * never in a served repository (nor is any branch that holds it).
   */
  namedCommit(repo: Repo, sha: string, message: string, at: number, parents: string[], author: User): Commit {
    const existing = repo.commits.get(sha);
    if (existing) return existing;
    const who = this.ident(author, at);
    const tree = createHash('sha1').update(`tree:${sha}`).digest('hex');
    return this.store(repo, sha, { tree, parents, author: who, committer: who, message }, at, 'named');
  }

  /** A commit a git push brought (already in the repository): its content as git reads it. */
  pushedCommit(repo: Repo, sha: string, content: GitCommitContent, at: number): Commit {
    return repo.commits.get(sha) ?? this.store(repo, sha, content, at, 'pushed');
  }

  private store(
    repo: Repo,
    sha: string,
    content: GitCommitContent,
    at: number,
    origin: CommitOrigin,
  ): Commit {
    const commit: Commit = {
      sha,
      nodeId: nodeId('C', this.time.id()),
      message: content.message,
      createdAt: at,
      parents: [...content.parents],
      tree: content.tree,
      author: content.author,
      committer: content.committer,
      origin,
      checkRuns: [],
      checkSuites: [],
      statuses: [],
      version: this.time.bump(),
    };
    repo.commits.set(sha, commit);
    return commit;
  }

  /** The commit a branch name, a tag name or a SHA names in the repository (a branch first, as git's `heads` before `tags`). */
  commit(repo: Repo, ref: string): Commit | undefined {
    const tag = repo.tags.get(ref);
    const sha = repo.branches.get(ref) ?? (tag === undefined ? ref : this.peel(repo, tag));
    return sha === undefined ? undefined : repo.commits.get(sha);
  }

  /** What a SHA is in the repository, if it has it: a commit, an annotated tag, or a tree or blob of the API's (git-store). */
  objectType(repo: Repo, sha: string): 'commit' | 'tag' | 'tree' | 'blob' | undefined {
    if (repo.commits.has(sha)) return 'commit';
    if (repo.tagObjects.has(sha)) return 'tag';
    const object = this.gitStore?.get(repo, sha);
    return object?.type === 'tree' || object?.type === 'blob' ? object.type : undefined;
  }

  /** The commit an annotated tag leads to (through tags of tags), or the SHA itself; undefined for a tag of a tree or blob. */
  peel(repo: Repo, sha: string): string | undefined {
    let at = sha;
    // A chain of tags is finite (each tag's SHA hashes the one it names), but a bound keeps it so.
    for (let hops = 0; hops < 100; hops++) {
      const tag = repo.tagObjects.get(at);
      if (tag === undefined) return repo.commits.has(at) ? at : undefined;
      at = tag.object;
    }
    return undefined;
  }

  /**
   * `POST /git/tags`: an annotated tag object (no ref: `POST /git/refs` with `refs/tags/NAME`
   * makes the tag), its SHA git's for these bytes. Its object must be one the repository has.
   * Making the same tag twice gives the one object.
   */
  makeTag(repo: Repo, content: GitTagContent, origin: TagObject['origin'] = 'made'): TagObject {
    if (this.objectType(repo, content.object) !== content.type)
      throw new GitHubStateError(422, 'Object does not exist');
    const body = tagBody(content);
    const sha = objectSha('tag', body);
    const existing = repo.tagObjects.get(sha);
    if (existing) return existing;
    // Kept with the API's other objects: within their bound (docs/limits.md), 403 past it.
    this.gitStore?.put(repo, 'tag', body);
    this.time.bump();
    return this.keepTag(repo, sha, content, origin);
  }

  /** A tag a push brought (git has the object): as git reads it. */
  pushedTag(repo: Repo, sha: string, content: GitTagContent): TagObject {
    return repo.tagObjects.get(sha) ?? this.keepTag(repo, sha, content, 'pushed');
  }

  private keepTag(repo: Repo, sha: string, content: GitTagContent, origin: TagObject['origin']): TagObject {
    const tag: TagObject = {
      sha,
      tag: content.tag,
      message: content.message,
      tagger: content.tagger,
      objectType: content.type,
      object: content.object,
      origin,
    };
    repo.tagObjects.set(sha, tag);
    return tag;
  }

  /**
   * Sets, moves or deletes (`sha` null) a tag, as a push or the refs routes do: no push of a
   * branch, so no pull request moves and \`pushed_at\` stays.
   */
  setTag(repo: Repo, name: string, sha: string | null): void {
    if (sha === null) repo.tags.delete(name);
    else repo.tags.set(name, sha);
    this.time.bump();
  }

  /** The commit a branch points at (a new branch starts from the default branch's). */
  tip(repo: Repo, branch: string): string | undefined {
    return repo.branches.get(branch) ?? repo.branches.get(repo.defaultBranch);
  }

  /**
   * A push to the repository (a branch created or moved): `pushed_at` moves forward, and with it
   * every representation that embeds the repository object. `updated_at` does not (GitHub
   * answers repositories whose `updated_at` is earlier than their `pushed_at`).
   */
  pushed(repo: Repo, at: number): void {
    if (at > repo.pushedAt) repo.pushedAt = at;
    const v = this.time.bump();
    repo.pushVersion = v;
    repo.pullsVersion = v;
    this.reposVersion = v;
  }

  /**
   * The commit a push of a branch brings (the admin API's): a new one on the branch's tip (the
   * default branch's for a new branch), or one the repository has, or one named by SHA alone.
   */
  pushedTip(repo: Repo, input: { branch: string; sha?: string; message?: string }, author: User): Commit {
    const at = this.time.now();
    const parent = this.tip(repo, input.branch);
    const parents = parent ? [parent] : [];
    const message = input.message ?? `Update ${input.branch}`;
    return input.sha === undefined
      ? this.makeCommit(repo, { message, at, parents, author: this.ident(author, at) })
      : this.namedCommit(repo, input.sha, message, at, parents, author);
  }

  /**
   * `POST /git/refs`: a branch at a commit the repository has. GitHub's refusals, in its words: a
   * name of fewer than three components, one git would not take, a SHA it does not have, a ref
   * that exists. A tag is createTagRef's (REST dispatches); here (GraphQL's createRef) it is
   * refused saying so, as is any other namespace.
   */
  createRef(repo: Repo, ref: string, sha: string): string {
    if (ref.split('/').length < 3 || !ref.startsWith('refs/'))
      throw new GitHubStateError(
        422,
        'Reference name must contain at least three slash-separated components.',
      );
    if (!validRefName(ref)) throw new GitHubStateError(422, `${ref} is not a valid ref name.`);
    const branch = branchOfRef(ref);
    if (tagOfRef(ref) !== undefined)
      throw new GitHubStateError(422, `${ref}: the emulator makes a tag through REST only (POST …/git/refs)`);
    if (branch === undefined)
      throw new GitHubStateError(
        422,
        `${ref}: the emulator models branches and tags only (refs/heads/NAME, refs/tags/NAME)`,
      );
    if (!repo.commits.has(sha)) throw new GitHubStateError(422, 'Object does not exist');
    if (repo.branches.has(branch)) throw new GitHubStateError(422, 'Reference already exists');
    if (repo.branches.size >= GIT_BOUNDS.maxBranches)
      throw new GitHubStateError(
        422,
        `a repository holds at most ${GIT_BOUNDS.maxBranches} branches made through the API (docs/limits.md)`,
      );
    repo.branches.set(branch, sha);
    this.pushed(repo, this.time.now());
    return branch;
  }

  /**
   * `POST /git/refs` with `refs/tags/NAME`: a tag of a commit or of an annotated tag the
   * repository has (its name checked as a branch's is).
   */
  createTagRef(repo: Repo, ref: string, sha: string): string {
    if (!validRefName(ref)) throw new GitHubStateError(422, `${ref} is not a valid ref name.`);
    const name = tagOfRef(ref);
    if (name === undefined) throw new GitHubStateError(422, `${ref} is not a valid ref name.`);
    const type = this.objectType(repo, sha);
    if (type === undefined) throw new GitHubStateError(422, 'Object does not exist');
    if (repo.tags.has(name)) throw new GitHubStateError(422, 'Reference already exists');
    if (repo.tags.size >= GIT_BOUNDS.maxTags)
      throw new GitHubStateError(
        422,
        `a repository holds at most ${GIT_BOUNDS.maxTags} tags made through the API (docs/limits.md)`,
      );
    this.setTag(repo, name, sha);
    return name;
  }

  /**
   * `PATCH /git/refs/tags/X`: whether the tag may move to an object the repository has (false:
   * it is there already). As for a branch, without `force` only to a commit that contains the
   * one it named (git refuses to move a tag on a push without `--force` at all; GitHub's API
   * applies its fast-forward rule to the commits the tags lead to).
   */
  checkTagUpdate(repo: Repo, name: string, sha: string, force: boolean): boolean {
    const current = repo.tags.get(name);
    if (current === undefined) throw new GitHubStateError(422, 'Reference does not exist');
    if (this.objectType(repo, sha) === undefined) throw new GitHubStateError(422, 'Object does not exist');
    if (current === sha) return false;
    if (!force) {
      const from = this.peel(repo, current);
      const to = this.peel(repo, sha);
      if (from === undefined || to === undefined || !this.reaches(repo, to, from))
        throw new GitHubStateError(422, 'Update is not a fast forward');
    }
    return true;
  }

  /**
   * `PATCH /git/refs/heads/X`: whether the branch may move to a commit the repository has (false:
   * it is there already); without `force` only forward (the new commit must contain the old one),
   * as GitHub's "fast forward" rule. The move itself is a push (state.ts `branchPushed`).
   */
  checkRefUpdate(repo: Repo, branch: string, sha: string, force: boolean): boolean {
    const current = repo.branches.get(branch);
    if (current === undefined) throw new GitHubStateError(422, 'Reference does not exist');
    if (!repo.commits.has(sha)) throw new GitHubStateError(422, 'Object does not exist');
    if (current === sha) return false;
    if (!force && !this.reaches(repo, sha, current))
      throw new GitHubStateError(422, 'Update is not a fast forward');
    return true;
  }

  /**
   * Merges two trees where both sides changed the same file since their merge base: set by the
   * served git repositories (src/github/git/), which run git's own merge; undefined there means a
   * conflict. Without it (in-process) such a merge conflicts.
   */
  treeMerger: ((repo: Repo, base: Commit, head: Commit) => string | undefined) | undefined = undefined;
  /** The same merge, git run off the event loop: set with `treeMerger`. */
  asyncTreeMerger: ((repo: Repo, base: Commit, head: Commit) => Promise<string | undefined>) | undefined =
    undefined;
  /**
   * git's cherry-pick of `head` onto the tree `ours` (a rebase merge's step, `pickTree`): `head`'s
   * own change, from its first parent to it, applied there, as `git cherry-pick` applies it;
   * undefined on a conflict. Set with `treeMerger`.
   */
  treePicker: ((repo: Repo, ours: string, head: Commit) => string | undefined) | undefined = undefined;
  /**
   * The same pick, git run off the event loop (`prepareRebase`): the trees of `ours` not in the
   * store yet are among `pending` (made by the steps before, not kept yet). Set with `treeMerger`.
   */
  asyncTreePicker:
    | ((
        repo: Repo,
        ours: string,
        pending: ReadonlyMap<string, Buffer>,
        head: Commit,
      ) => Promise<string | undefined>)
    | undefined = undefined;

  /**
   * Merges computed ahead (`prepareMerge`), by repository and tips: what `mergeTrees` answers
   * for them without reading a tree or running git. A merge of two tips never changes (commits
   * and trees are named by their content), so one kept stays right; the oldest go first past
   * MAX_MERGES_AHEAD or MAX_MERGE_AHEAD_BYTES of trees they made.
   */
  private readonly mergesAhead = new Map<
    string,
    { tree: string | undefined; made: Buffer[]; bytes: number }
  >();
  private mergeAheadBytes = 0;
  /** Merges being computed ahead, by the same key. */
  private readonly mergesRunning = new Map<string, Promise<void>>();
  /** Merges computed ahead running now (at most MAX_MERGES_AHEAD_RUNNING), and those waiting their turn. */
  private mergesInPlace = 0;
  private readonly mergesWaiting: (() => void)[] = [];

  /**
   * The tree of `head` merged into `base`: one side's when the other changed nothing since their
   * merge base (what most merges are), else the two merged entry by entry, else git's merge
   * (`treeMerger`); undefined when the two conflict. A merge computed ahead (`prepareMerge`) is
   * answered from there, its trees kept now as the merge would have kept them.
   */
  mergeTrees(repo: Repo, baseSha: string, headSha: string): string | undefined {
    const base = repo.commits.get(baseSha);
    const head = repo.commits.get(headSha);
    if (base === undefined || head === undefined) return base?.tree ?? head?.tree;
    if (base.tree === head.tree) return base.tree;
    const mergeBase = this.compare(repo, baseSha, headSha).mergeBase?.tree;
    const plain = plainMerge(base.tree, head.tree, mergeBase);
    if (plain !== undefined) return plain;
    const ahead = this.mergesAhead.get(mergeKey(repo, baseSha, headSha));
    if (ahead !== undefined) return this.answerAhead(repo, ahead);
    // Entry by entry first (world/git-store.ts): what most merges of API-made or pushed trees are,
    // with or without a git directory. A file changed on both sides takes git's content merge
    // (`treeMerger`) when the repository is served, else it conflicts; trees nobody can read (a
    // commit named by SHA alone) take git's, else keep the base's.
    const merged = this.gitStore?.mergeTrees(repo, base.tree, head.tree, mergeBase) ?? 'unknown';
    if (typeof merged === 'string' && merged !== 'unknown') return merged;
    if (this.treeMerger !== undefined) return this.treeMerger(repo, base, head);
    return merged === 'unknown' ? base.tree : undefined;
  }

  /**
   * A rebase merge's step (world/merges.ts): the commit `headSha` replayed onto the tree `ours`
   * as `git rebase` and `git cherry-pick` replay it, a three-way merge whose base is the commit's
   * first parent (not its merge base with the tip: a later commit of a pull request that changes
   * again a line an earlier one changed applies on what that one made). One side's tree when the
   * other changed nothing, else entry by entry, else git's (`treePicker`); undefined on a
   * conflict. The step depends on `ours` and the commit alone, whatever commit holds `ours`: one
   * computed ahead (`prepareRebase`) answers, its trees kept now as the step would have kept them.
   */
  pickTree(repo: Repo, ours: string, headSha: string): string | undefined {
    const head = repo.commits.get(headSha);
    if (head === undefined) return ours;
    const parent = parentTree(repo, head);
    const plain = plainMerge(ours, head.tree, parent);
    if (plain !== undefined) return plain;
    const ahead = this.mergesAhead.get(pickKey(repo, ours, head));
    if (ahead !== undefined) return this.answerAhead(repo, ahead);
    // As `mergeTrees`: entry by entry, else git's (served), else a conflict.
    const merged = this.gitStore?.mergeTrees(repo, ours, head.tree, parent) ?? 'unknown';
    if (typeof merged === 'string' && merged !== 'unknown') return merged;
    if (this.treePicker !== undefined) return this.treePicker(repo, ours, head);
    return merged === 'unknown' ? ours : undefined;
  }

  /** A merge computed ahead, answered: its trees kept in the store now (once: the next answer keeps nothing). */
  private answerAhead(repo: Repo, ahead: { tree: string | undefined; made: Buffer[]; bytes: number }) {
    this.gitStore?.keepMade(repo, ahead.made);
    this.mergeAheadBytes -= ahead.bytes;
    ahead.made = [];
    ahead.bytes = 0;
    return ahead.tree;
  }

  /**
   * `mergeTrees` of the two tips computed ahead, off the event loop (docs/limits.md, "Servers"):
   * in a served repository its trees are read from git and git merges asynchronously, and the
   * synchronous `mergeTrees` then answers from what this kept. A promise that settles (never
   * rejects) once it is kept; undefined when there is nothing to compute ahead: not served (in
   * process the world holds every tree), kept already, or a merge that reads no tree.
   */
  prepareMerge(repo: Repo, baseSha: string, headSha: string): Promise<void> | undefined {
    const store = this.gitStore;
    if (store?.asyncReader === undefined || this.asyncTreeMerger === undefined) return undefined;
    const key = mergeKey(repo, baseSha, headSha);
    if (this.mergesAhead.has(key)) return undefined;
    const running = this.mergesRunning.get(key);
    if (running !== undefined) return running;
    const base = repo.commits.get(baseSha);
    const head = repo.commits.get(headSha);
    if (base === undefined || head === undefined || base.tree === head.tree) return undefined;
    const mergeBase = this.compare(repo, baseSha, headSha).mergeBase?.tree;
    if (plainMerge(base.tree, head.tree, mergeBase) !== undefined) return undefined;
    const gitMerge = this.asyncTreeMerger;
    const work = (async () => {
      await this.mergeSlot();
      try {
        const { merged, made } = await store.mergeTreesAhead(repo, base.tree, head.tree, mergeBase);
        // As `mergeTrees`: git's merge when entry by entry could not (served, so git is there).
        const tree =
          typeof merged === 'string' && merged !== 'unknown' ? merged : await gitMerge(repo, base, head);
        this.keepMergeAhead(key, tree, made);
      } finally {
        this.mergeSlotFreed();
      }
    })()
      .catch(() => {
        // Not kept: the synchronous merge runs it as before, and says why it fails, if it does.
      })
      .finally(() => this.mergesRunning.delete(key));
    this.mergesRunning.set(key, work);
    return work;
  }

  /**
   * A rebase merge's steps computed ahead, off the event loop (docs/limits.md, "Servers"): each of
   * `commits` picked in turn onto the tree the step before made, from `ontoSha` (the base's tip)
   * on, as `makeMerge` will pick them (`pickTree`). A step needs only that tree and the commit, not
   * the commit the merge will make of it (which does not exist yet): git picks onto a stand-in
   * commit of that tree. Each step is kept as a merge computed ahead is (`pickKey`), and
   * `pickTree` answers from it. The steps stop at a conflict, or at one not kept. A promise that
   * settles (never rejects); undefined when there is nothing to compute.
   */
  prepareRebase(repo: Repo, ontoSha: string, commits: readonly string[]): Promise<void> | undefined {
    const store = this.gitStore;
    const gitPick = this.asyncTreePicker;
    const onto = repo.commits.get(ontoSha);
    if (store?.asyncReader === undefined || gitPick === undefined || onto === undefined) return undefined;
    if (commits.length === 0) return undefined;
    const key = `${repo.id} rebase ${ontoSha} ${commits.join(' ')}`;
    const running = this.mergesRunning.get(key);
    if (running !== undefined) return running;
    const work = (async () => {
      let tree = onto.tree;
      // The trees the steps made and not yet kept in the store: the next steps read them from here.
      const pending = new Map<string, Buffer>();
      for (const sha of commits) {
        const head = repo.commits.get(sha);
        if (head === undefined) return;
        const parent = parentTree(repo, head);
        let next = plainMerge(tree, head.tree, parent);
        if (next === undefined) {
          const stepKey = pickKey(repo, tree, head);
          if (!this.mergesAhead.has(stepKey)) {
            await this.mergeSlot();
            try {
              const ours = tree;
              const { merged, made } = await store.mergeTreesAhead(repo, ours, head.tree, parent, pending);
              const result =
                typeof merged === 'string' && merged !== 'unknown'
                  ? merged
                  : await gitPick(repo, ours, pending, head);
              this.keepMergeAhead(stepKey, result, made);
            } finally {
              this.mergeSlotFreed();
            }
          }
          const kept = this.mergesAhead.get(stepKey);
          if (kept === undefined) return;
          for (const body of kept.made) pending.set(objectSha('tree', body), body);
          next = kept.tree;
        }
        if (next === undefined) return;
        tree = next;
      }
    })()
      .catch(() => {
        // Not kept: the synchronous merge computes the steps as before.
      })
      .finally(() => this.mergesRunning.delete(key));
    this.mergesRunning.set(key, work);
    return work;
  }

  /**
   * Waits for one of MAX_MERGES_AHEAD_RUNNING places: a read of a hundred pull requests'
   * `mergeable` starts a hundred jobs, whose merges then run a few at a time, not a hundred git
   * processes at once.
   */
  private mergeSlot(): Promise<void> {
    if (this.mergesInPlace < MAX_MERGES_AHEAD_RUNNING) {
      this.mergesInPlace++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.mergesWaiting.push(resolve));
  }

  private mergeSlotFreed(): void {
    const next = this.mergesWaiting.shift();
    if (next !== undefined) next();
    else this.mergesInPlace--;
  }

  /** Whether the merge of the two tips is being computed ahead now (`prepareMerge`). */
  mergeRunning(repo: Repo, baseSha: string, headSha: string): boolean {
    return this.mergesRunning.has(mergeKey(repo, baseSha, headSha));
  }

  /** Forgets the merges computed ahead (the served repositories closed: git's answers go with them). */
  forgetMergesAhead(): void {
    this.mergesAhead.clear();
    this.mergeAheadBytes = 0;
  }

  private keepMergeAhead(key: string, tree: string | undefined, made: Buffer[]): void {
    const bytes = made.reduce((sum, body) => sum + body.length, 0);
    if (bytes > MAX_MERGE_AHEAD_BYTES) return;
    while (
      this.mergesAhead.size > 0 &&
      (this.mergesAhead.size >= MAX_MERGES_AHEAD || this.mergeAheadBytes + bytes > MAX_MERGE_AHEAD_BYTES)
    ) {
      const [oldest, kept] = this.mergesAhead.entries().next().value as [string, { bytes: number }];
      this.mergesAhead.delete(oldest);
      this.mergeAheadBytes -= kept.bytes;
    }
    this.mergesAhead.set(key, { tree, made, bytes });
    this.mergeAheadBytes += bytes;
  }

  /** Whether `descendant`'s history contains `ancestor`. */
  reaches(repo: Repo, descendant: string, ancestor: string): boolean {
    return descendant === ancestor || this.compare(repo, descendant, ancestor).ahead.length === 0;
  }

  /**
   * The commits of `head` that `base` lacks (oldest first), and how far behind it is: what
   * `compare/base...head` answers and what a pull request from head into base would hold.
   *
   * git's walk: both tips' histories are painted newest first (a commit is always newer than its
   * parents: versions come from one sequence), and the walk stops once everything still queued is
   * reachable from both. Its cost is the commits since the merge base, not the whole history: a
   * repository with ten thousand merges compares a fresh branch in a few steps.
   */
  compare(repo: Repo, base: string, head: string): Comparison {
    const FROM_BASE = 1;
    const FROM_HEAD = 2;
    const BOTH = 3;
    const paint = new Map<string, number>();
    const queue = new MinHeap<Commit>();
    /** Queued commits not yet known to be reachable from both tips: the walk goes on while any. */
    let undecided = 0;
    const reach = (sha: string, flag: number) => {
      const commit = repo.commits.get(sha);
      if (commit === undefined) return;
      const before = paint.get(sha);
      if (before === undefined) {
        paint.set(sha, flag);
        queue.push(-commit.version, commit);
        if (flag !== BOTH) undecided++;
      } else if ((before | flag) !== before) {
        paint.set(sha, before | flag);
        // Still queued (parents are popped after their children): it is now decided.
        if (before !== BOTH && (before | flag) === BOTH) undecided--;
      }
    };
    reach(base, FROM_BASE);
    reach(head, FROM_HEAD);
    const ahead: Commit[] = [];
    let behindBy = 0;
    let mergeBase: Commit | null = null;
    while (queue.size > 0 && (undecided > 0 || mergeBase === null)) {
      const commit = queue.pop()!;
      const flag = paint.get(commit.sha)!;
      if (flag === FROM_HEAD) ahead.push(commit);
      else if (flag === FROM_BASE) behindBy++;
      else mergeBase ??= commit;
      if (flag !== BOTH) undecided--;
      for (const parent of commit.parents) reach(parent, flag);
    }
    ahead.reverse();
    const status =
      ahead.length === 0 && behindBy === 0
        ? 'identical'
        : behindBy === 0
          ? 'ahead'
          : ahead.length === 0
            ? 'behind'
            : 'diverged';
    return { mergeBase, ahead, behindBy, status };
  }
}

/** Merges computed ahead kept at once (`Refs.prepareMerge`), and the bytes of trees they made. */
const MAX_MERGES_AHEAD = 1_000;
const MAX_MERGE_AHEAD_BYTES = 256 * 1024 * 1024;
/** Merges computed ahead at once (each runs git): the rest wait their turn. */
const MAX_MERGES_AHEAD_RUNNING = 4;

function mergeKey(repo: Repo, baseSha: string, headSha: string): string {
  return `${repo.id} ${baseSha} ${headSha}`;
}

/** A rebase merge's step (`pickTree`, `prepareRebase`): `head` picked onto the tree `ours`. */
function pickKey(repo: Repo, ours: string, head: Commit): string {
  return `${repo.id} pick ${ours} ${head.sha}`;
}

/** The tree of a commit's first parent: the base its own change is taken from (none for a root commit). */
function parentTree(repo: Repo, commit: Commit): string | undefined {
  const parent = commit.parents[0];
  return parent === undefined ? undefined : repo.commits.get(parent)?.tree;
}

/**
 * The merge of two trees that needs no reading of either: the one when both are the same, or
 * when the other changed nothing since their merge base's tree; undefined when they must be merged.
 */
function plainMerge(ours: string, theirs: string, mergeBase: string | undefined): string | undefined {
  if (ours === theirs) return ours;
  if (mergeBase !== undefined && theirs === mergeBase) return ours;
  if (mergeBase !== undefined && ours === mergeBase) return theirs;
  return undefined;
}

/** The longest ref name taken (git's own limit is the file system's; GitHub's branch names stay far below). */
export const MAX_REF_CHARS = 255;

/**
 * git's ref name rules (`git check-ref-format`): no control characters, space, `~^:?*[\`, `..`,
 * `@{` or `//`, no component starting with `.` or ending with `.lock`, no trailing `/` or `.`,
 * not `@` alone; and for a branch (`refs/heads/…`), not `HEAD` nor a name starting with `-`.
 */
export function validRefName(ref: string): boolean {
  if (ref.length > MAX_REF_CHARS || ref === '@') return false;
  if (/[\x00-\x20\x7f~^:?*[\\]|\.\.|@\{|\/\//.test(ref)) return false;
  if (ref.endsWith('/') || ref.endsWith('.')) return false;
  if (!ref.split('/').every((part) => part !== '' && !part.startsWith('.') && !part.endsWith('.lock')))
    return false;
  // A branch git will not make (`git check-ref-format --branch`): `HEAD`, or one starting with `-`.
  const branch = branchOfRef(ref);
  return branch === undefined || (branch !== 'HEAD' && !branch.startsWith('-'));
}

/** `refs/tags/X` → `X`; undefined for anything else. */
export function tagOfRef(ref: string): string | undefined {
  if (!ref.startsWith('refs/tags/') || ref.length === 'refs/tags/'.length) return undefined;
  return ref.slice('refs/tags/'.length);
}

/** `refs/heads/X` → `X`; undefined for anything else (tags are tagOfRef's; other namespaces are not modelled). */
export function branchOfRef(ref: string): string | undefined {
  if (!ref.startsWith('refs/heads/') || ref.length === 'refs/heads/'.length) return undefined;
  return ref.slice('refs/heads/'.length);
}
