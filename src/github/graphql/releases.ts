/**
 * A repository's releases in GraphQL (`Repository.releases`, `release(tagName:)`,
 * `latestRelease`): what `gh release list` and `gh release view` ask for. The releases and their
 * rules are world/releases.ts's, as REST's are; a draft is seen only by those REST shows it to.
 */
import type { GitHubState, Release, Repo } from '../state.ts';
import { releaseVisible } from '../world/releases.ts';
import { type ConnArgs, connection } from './connection.ts';
import type { GqlContext } from './context.ts';
import { UserNode } from './users.ts';

export class ReleaseNode {
  readonly __typename = 'Release';
  constructor(
    private readonly s: GitHubState,
    private readonly repo: Repo,
    private readonly release: Release,
  ) {}
  get id() {
    return this.release.nodeId;
  }
  get databaseId() {
    return this.release.id;
  }
  get name() {
    return this.release.name;
  }
  get tagName() {
    return this.release.tagName;
  }
  get description() {
    return this.release.body;
  }
  get isDraft() {
    return this.release.draft;
  }
  get isPrerelease() {
    return this.release.prerelease;
  }
  get isLatest() {
    return this.s.releases.latest(this.repo) === this.release;
  }
  get createdAt() {
    return this.s.time.iso(this.release.createdAt);
  }
  get publishedAt() {
    return this.release.publishedAt === null ? null : this.s.time.iso(this.release.publishedAt);
  }
  get updatedAt() {
    return this.s.time.iso(this.release.updatedAt);
  }
  get url() {
    const tag = this.release.tagName.split('/').map(encodeURIComponent).join('/');
    return `${this.s.webUrl}/${this.repo.fullName}/releases/tag/${tag}`;
  }
  author() {
    return new UserNode(this.s, this.release.author);
  }
}

/** `Repository.releases(orderBy:)`: newest first by default (CREATED_AT DESC), or by NAME. */
export function releasesConnection(
  s: GitHubState,
  repo: Repo,
  args: ConnArgs & { orderBy?: { field: string; direction: string } | null },
  ctx: GqlContext,
) {
  let items = s.releases.list(repo).filter((r) => releaseVisible(ctx?.viewer, repo, r));
  const order = args.orderBy;
  if (order?.field === 'NAME') {
    const sign = order.direction === 'DESC' ? -1 : 1;
    items = [...items].sort((a, b) => sign * ((a.name ?? '') < (b.name ?? '') ? -1 : 1));
  } else if (order?.direction === 'ASC') items = [...items].reverse();
  return connection(items, args, (r) => new ReleaseNode(s, repo, r));
}

/** `Repository.release(tagName:)`: the release of a tag (a draft's too, to whom it is visible). */
export function releaseByTag(s: GitHubState, repo: Repo, tagName: string, ctx: GqlContext) {
  const found = s.releases
    .list(repo)
    .find((r) => r.tagName === tagName && releaseVisible(ctx?.viewer, repo, r));
  return found === undefined ? null : new ReleaseNode(s, repo, found);
}
