/**
 * Reactions in GraphQL: an issue's, a pull request's or an issue comment's `reactionGroups` (one
 * group per content, in the enum's order, as GitHub lists them), and the `Reaction` that
 * `addReaction` and `removeReaction` answer with. The same reactions as REST's (world/reactions.ts).
 */
import type { GitHubState, User } from '../state.ts';
import { GRAPHQL_REACTIONS, type Reaction, type ReactionSubject } from '../world/reactions.ts';
import { UserNode } from './users.ts';

/** GraphQL's `ReactionContent` for a REST content. */
export function graphqlContent(content: Reaction['content']): string {
  return GRAPHQL_REACTIONS.find(([, rest]) => rest === content)![0];
}

export function reactionGroups(state: GitHubState, subject: ReactionSubject, viewer: User) {
  const all = state.reactions.of(subject);
  return GRAPHQL_REACTIONS.map(([name, content]) => {
    const of = all.filter((r) => r.content === content);
    return {
      content: name,
      users: { totalCount: of.length },
      viewerHasReacted: of.some((r) => r.user === viewer),
    };
  });
}

export class ReactionNode {
  readonly __typename = 'Reaction';
  constructor(
    private readonly s: GitHubState,
    private readonly r: Reaction,
  ) {}
  get id() {
    return this.r.nodeId;
  }
  get databaseId() {
    return this.r.id;
  }
  get content() {
    return graphqlContent(this.r.content);
  }
  get createdAt() {
    return this.s.time.iso(this.r.createdAt);
  }
  user() {
    return new UserNode(this.s, this.r.user);
  }
}
