/**
 * An account as a repository owner (GraphQL `User`, `Organization`, `repositoryOwner`): the user
 * node with its `repositories` connection, what `gh repo list OWNER` asks for. Every repository
 * the world models is its owner's own (no forks, none archived); a private one is listed only to a
 * viewer with a role on it, as REST's `/users/{u}/repos` lists it.
 */
import type { GitHubState, Repo, User } from '../state.ts';
import { type ConnArgs, connection } from './connection.ts';
import type { GqlContext } from './context.ts';
import { RepoNode } from './issues.ts';
import { UserNode } from './users.ts';

interface RepositoriesArgs extends ConnArgs {
  privacy?: 'PUBLIC' | 'PRIVATE' | null;
  isFork?: boolean | null;
  orderBy?: {
    field: 'CREATED_AT' | 'UPDATED_AT' | 'PUSHED_AT' | 'NAME' | 'STARGAZERS';
    direction: 'ASC' | 'DESC';
  } | null;
}

/** The sort key of each of GitHub's RepositoryOrderField values (every repository has 0 stars). */
const ORDER_KEYS: Record<string, (repo: Repo) => number | string> = {
  CREATED_AT: (r) => r.createdAt,
  UPDATED_AT: (r) => r.updatedAt,
  PUSHED_AT: (r) => r.pushedAt,
  NAME: (r) => r.name.toLowerCase(),
  STARGAZERS: () => 0,
};

export class OwnerNode extends UserNode {
  private readonly world: GitHubState;
  private readonly account: User;
  constructor(state: GitHubState, user: User) {
    super(state, user);
    this.world = state;
    this.account = user;
  }

  repositories(args: RepositoriesArgs, ctx: GqlContext) {
    // GitHub's default order is by creation, oldest first; ties by id.
    const key = ORDER_KEYS[args.orderBy?.field ?? 'CREATED_AT'] ?? ORDER_KEYS.CREATED_AT!;
    // A fork is never listed where only forks are asked for: the world has none.
    const repos =
      args.isFork === true
        ? []
        : this.world
            .reposOwnedBy(this.account, ctx.viewer, key, args.orderBy?.direction === 'DESC')
            .filter((r) => args.privacy == null || r.private === (args.privacy === 'PRIVATE'));
    return connection(repos, args, (repo) => new RepoNode(this.world, repo));
  }
}
