/** Users, bots and organizations (one node class, `__typename` from the account type) and labels. */

import { webProfile } from '../shapes.ts';
import type { GitHubState, Label, Repo, User } from '../state.ts';

export class UserNode {
  readonly __typename: string;
  readonly id: string;
  readonly databaseId: number;
  readonly login: string;
  readonly name: string | null;
  readonly email = '';
  readonly url: string;
  readonly resourcePath: string;
  constructor(state: GitHubState, user: User) {
    this.__typename = user.type;
    this.id = user.nodeId;
    this.databaseId = user.id;
    this.login = user.login;
    this.name = user.name;
    this.url = webProfile(state, user);
    this.resourcePath = `/${user.login}`;
  }
  avatarUrl(): string {
    return `https://avatars.githubusercontent.com/u/${this.databaseId}?v=4`;
  }
  /** An organization's teams: the world models none (review requests go to users). */
  teams() {
    return {
      totalCount: 0,
      nodes: [],
      pageInfo: { hasNextPage: false, hasPreviousPage: false, startCursor: null, endCursor: null },
    };
  }
}

export function actor(state: GitHubState, user: User | null | undefined): UserNode | null {
  return user ? new UserNode(state, user) : null;
}

export { association } from '../world/access.ts';

export class LabelNode {
  readonly __typename = 'Label';
  readonly id: string;
  readonly name: string;
  readonly color: string;
  readonly description: string | null;
  readonly url: string;
  constructor(state: GitHubState, repo: Repo, label: Label) {
    this.id = label.nodeId;
    this.name = label.name;
    this.color = label.color;
    this.description = label.description;
    this.url = `${state.webUrl}/${repo.fullName}/labels/${encodeURIComponent(label.name)}`;
  }
}
