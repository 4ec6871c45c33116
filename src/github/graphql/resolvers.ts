/**
 * The root resolvers: the Query fields (node lookups, repository, rateLimit, viewer, users) and
 * the mutations, over the object types in users/commits/reviews/issues.ts. Types and fields are
 * declared in schema.ts.
 */
import { GraphQLError } from 'graphql';
import {
  CHECKS_PER_QUERY_CHAR,
  MAX_RESULTS,
  MAX_SEARCH_CHECKS,
  parseSearch,
  runSearch,
  SearchQueryError,
} from '../search.ts';
import type { GitHubState, Issue } from '../state.ts';
import { type ConnArgs, connection } from './connection.ts';
import { type GqlContext, notFound } from './context.ts';
import { IssueNode, PullNode, RepoNode } from './issues.ts';
import { mutationRoot } from './mutations.ts';
import { OwnerNode } from './owners.ts';

function nodeById(state: GitHubState, id: string): unknown {
  const entity = state.nodes.get(id);
  if (entity === undefined) return null;
  if ('login' in entity) return new OwnerNode(state, entity);
  if ('fullName' in entity) return new RepoNode(state, entity);
  if ('issue' in entity) return new PullNode(state, entity);
  return new IssueNode(state, entity);
}

function invalidSearch(message: string): GraphQLError {
  return new GraphQLError(message);
}

/**
 * GitHub's answer to a request that ran out of time (its words, as clients quote them; the
 * request id it names is left out): the searches of one request spent its search budget.
 */
function searchTimeout(): GraphQLError {
  return new GraphQLError(
    'Something went wrong while executing your query. This may be the result of a timeout, or it could be a GitHub bug.',
  );
}

export const root = {
  node(args: { id: string }, ctx: GqlContext) {
    const node = nodeById(ctx.state, args.id);
    if (node === null) throw notFound(`Could not resolve to a node with the global id of '${args.id}'`);
    return node;
  },
  nodes(args: { ids: string[] }, ctx: GqlContext) {
    return args.ids.map((id) => nodeById(ctx.state, id));
  },
  repository(args: { owner: string; name: string }, ctx: GqlContext) {
    const repo = ctx.state.findRepo(args.owner, args.name);
    if (!repo)
      throw notFound(`Could not resolve to a Repository with the name '${args.owner}/${args.name}'.`);
    return new RepoNode(ctx.state, repo);
  },
  rateLimit(_args: unknown, ctx: GqlContext) {
    return ctx.rate;
  },
  viewer(_args: unknown, ctx: GqlContext) {
    return new OwnerNode(ctx.state, ctx.viewer);
  },
  user(args: { login: string }, ctx: GqlContext) {
    const user = ctx.state.findUser(args.login);
    if (!user || user.type === 'Organization')
      throw notFound(`Could not resolve to a User with the login of '${args.login}'.`);
    return new OwnerNode(ctx.state, user);
  },
  /** An organization (gh lists its teams for `--reviewer`); the world models no teams, so none. */
  organization(args: { login: string }, ctx: GqlContext) {
    const org = ctx.state.findUser(args.login);
    if (org?.type !== 'Organization')
      throw notFound(`Could not resolve to an Organization with the login of '${args.login}'.`);
    return new OwnerNode(ctx.state, org);
  },
  repositoryOwner(args: { login: string }, ctx: GqlContext) {
    const user = ctx.state.findUser(args.login);
    return user && user.type !== 'Bot' ? new OwnerNode(ctx.state, user) : null;
  },
  /**
   * Issue and pull request search (REST's query language, search.ts). Other search types find
   * nothing: only issues are modelled. The first 1,000 results are reachable, as on REST.
   */
  search(args: ConnArgs & { query: string; type: string }, ctx: GqlContext) {
    const counts = {
      codeCount: 0,
      discussionCount: 0,
      issueCount: 0,
      repositoryCount: 0,
      userCount: 0,
      wikiCount: 0,
    };
    if (args.type !== 'ISSUE' && args.type !== 'ISSUE_ADVANCED')
      return connection([], args, (x) => x, counts);
    ctx.searchBudget ??= { left: MAX_SEARCH_CHECKS };
    const budget = ctx.searchBudget;
    if (budget.left <= 0) throw searchTimeout();
    let found: Issue[];
    try {
      const parsed = parseSearch(ctx.state, args.query, ctx.viewer);
      // Reading the query was work too: a search that looks at no issue still spends its length.
      budget.left -= args.query.length * CHECKS_PER_QUERY_CHAR;
      const result = runSearch(ctx.state, parsed, undefined, budget);
      if (!result.complete) throw searchTimeout();
      found = result.issues;
    } catch (error) {
      if (error instanceof SearchQueryError) throw invalidSearch(error.message);
      throw error;
    }
    counts.issueCount = found.length;
    return connection(
      found.slice(0, MAX_RESULTS),
      args,
      (issue) => (issue.pull ? new PullNode(ctx.state, issue.pull) : new IssueNode(ctx.state, issue)),
      counts,
    );
  },
  ...mutationRoot,
};
