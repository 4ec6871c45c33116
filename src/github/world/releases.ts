/**
 * A repository's releases (REST "Releases"): each names a tag; a published one whose tag does not
 * exist makes it, at `target_commitish` (a branch or a commit SHA; the default branch by
 * default), as GitHub does; a draft makes no tag until it is published. At most one release a
 * tag. Listed newest first; the latest is the newest that is neither a draft nor a prerelease.
 * Bounds in RELEASE_BOUNDS (docs/limits.md).
 */
import { permissionFlags, roleOf } from './access.ts';
import { longerThan, RELEASE_BOUNDS } from './bounds.ts';
import { GitHubStateError, nodeId, type Release, type Repo, type User } from './objects.ts';
import { validRefName } from './refs.ts';
import type { WorldTime } from './time.ts';

/** What a create or an edit gives; absent fields are kept (an edit) or defaulted (a create). */
export interface ReleaseInput {
  tagName?: string;
  targetCommitish?: string;
  name?: string | null;
  body?: string | null;
  draft?: boolean;
  prerelease?: boolean;
}

/** Makes the tag `name` at the commit `sha` (state.ts `createTag`: a ref, told as a `create`). */
export type MakeTag = (repo: Repo, name: string, sha: string, by: User) => void;

/**
 * Whether `user` sees the release: a published one, anyone; a draft, its author and those who may
 * push (GitHub: "Only users with push access will receive listings for draft releases").
 */
export function releaseVisible(user: User | undefined, repo: Repo, release: Release): boolean {
  if (!release.draft) return true;
  return user !== undefined && (user === release.author || permissionFlags(roleOf(user, repo)).push === true);
}

function refused(message: string, field: string, code?: string): GitHubStateError {
  return new GitHubStateError(422, message, field, code);
}

export class Releases {
  constructor(
    private readonly time: WorldTime,
    private readonly makeTag: MakeTag,
  ) {}

  /** Every release, newest first (by creation; the later made first on a tie). */
  list(repo: Repo): Release[] {
    const cache = repo.releasesList;
    if (cache !== undefined && cache.version === repo.releasesVersion) return cache.items;
    const items = [...repo.releases.values()].sort((a, b) => b.createdAt - a.createdAt || b.id - a.id);
    repo.releasesList = { version: repo.releasesVersion, items };
    return items;
  }

  /** The newest release that is neither a draft nor a prerelease. */
  latest(repo: Repo): Release | undefined {
    return this.list(repo).find((r) => !r.draft && !r.prerelease);
  }

  /** The published release of a tag (a draft has no tag yet). */
  byTag(repo: Repo, tag: string): Release | undefined {
    for (const release of repo.releases.values())
      if (release.tagName === tag && !release.draft) return release;
    return undefined;
  }

  create(repo: Repo, input: ReleaseInput & { tagName: string }, by: User): Release {
    if (repo.releases.size >= RELEASE_BOUNDS.maxPerRepo)
      throw refused(
        `a repository holds at most ${RELEASE_BOUNDS.maxPerRepo} releases (docs/limits.md)`,
        'tag_name',
      );
    const draft = input.draft ?? false;
    this.check(repo, undefined, input);
    const target = input.targetCommitish ?? repo.defaultBranch;
    if (!draft) this.tagIfMissing(repo, input.tagName, target, by);
    const at = this.time.now();
    const id = this.time.id();
    const release: Release = {
      id,
      nodeId: nodeId('RE', id),
      tagName: input.tagName,
      targetCommitish: target,
      name: input.name ?? null,
      body: input.body ?? null,
      draft,
      prerelease: input.prerelease ?? false,
      author: by,
      createdAt: at,
      publishedAt: draft ? null : at,
      updatedAt: at,
      version: 0,
    };
    repo.releases.set(id, release);
    this.stamp(repo, release);
    return release;
  }

  /** An edit: the fields given replaced; publishing a draft makes its tag if it has none. */
  update(repo: Repo, release: Release, input: ReleaseInput, by: User): Release {
    this.check(repo, release, input);
    const tagName = input.tagName ?? release.tagName;
    const target = input.targetCommitish ?? release.targetCommitish;
    const draft = input.draft ?? release.draft;
    if (!draft) this.tagIfMissing(repo, tagName, target, by);
    const at = this.time.now();
    release.tagName = tagName;
    release.targetCommitish = target;
    if (input.name !== undefined) release.name = input.name;
    if (input.body !== undefined) release.body = input.body;
    if (input.prerelease !== undefined) release.prerelease = input.prerelease;
    if (release.draft && !draft) release.publishedAt = at;
    if (draft) release.publishedAt = null;
    release.draft = draft;
    release.updatedAt = at;
    this.stamp(repo, release);
    return release;
  }

  /** A release removed; its tag stays, as on GitHub. */
  delete(repo: Repo, release: Release): void {
    repo.releases.delete(release.id);
    repo.releasesVersion = this.time.bump();
  }

  private stamp(repo: Repo, release: Release): void {
    release.version = repo.releasesVersion = this.time.bump();
  }

  /** GitHub's refusals of a release's fields: a tag's name, one release a tag, the body's length. */
  private check(repo: Repo, self: Release | undefined, input: ReleaseInput): void {
    const tag = input.tagName;
    if (tag !== undefined) {
      if (tag.trim() === '') throw refused("tag_name can't be blank", 'tag_name');
      if (!validRefName(`refs/tags/${tag}`)) throw refused('tag_name is not a valid tag', 'tag_name');
      for (const other of repo.releases.values())
        if (other !== self && other.tagName === tag)
          throw refused('tag_name already exists', 'tag_name', 'already_exists');
    }
    if (input.body != null && longerThan(input.body, RELEASE_BOUNDS.maxBodyChars))
      throw refused(`body is too long (maximum is ${RELEASE_BOUNDS.maxBodyChars} characters)`, 'body');
    if (input.name != null && longerThan(input.name, RELEASE_BOUNDS.maxNameChars))
      throw refused(`name is too long (maximum is ${RELEASE_BOUNDS.maxNameChars} characters)`, 'name');
  }

  /** The tag made at `target` (a branch, `refs/heads/…`, or a commit's full SHA) when there is none. */
  private tagIfMissing(repo: Repo, tag: string, target: string, by: User): void {
    if (repo.tags.has(tag)) return;
    const branch = repo.branches.get(target.replace(/^refs\/heads\//, ''));
    const sha = branch ?? (repo.commits.has(target) ? target : undefined);
    if (sha === undefined) throw refused('target_commitish is invalid', 'target_commitish', 'invalid');
    this.makeTag(repo, tag, sha, by);
  }
}
