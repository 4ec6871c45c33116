/** What every GraphQL resolver receives (the state, the viewer, the rate limit) and how it refuses. */

import { GraphQLError } from 'graphql';
import type { SearchBudget } from '../search.ts';
import { type GitHubState, GitHubStateError, type Repo, type User } from '../state.ts';
import type { EditWork } from '../world/git-store.ts';

export interface RateLimitInfo {
  limit: number;
  cost: number;
  remaining: number;
  used: number;
  resetAt: string;
  nodeCount: number;
}

export interface GqlContext {
  state: GitHubState;
  viewer: User;
  rate: RateLimitInfo;
  /** The repository a mutation changed (owner/name), for the trace's `repo`. */
  touched?: string;
  /** What is left of this request's search work (its `search` fields share it). */
  searchBudget?: SearchBudget;
  /**
   * What this request's `createCommitOnBranch` mutations have done (they share it: aliases repeat
   * one mutation, and its variables, as often as the document allows): tree edit work, and the
   * characters of file contents taken (docs/limits.md).
   */
  gitWork?: { edit: EditWork; contentChars: number };
}

export function notFound(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { type: 'NOT_FOUND' } });
}

/** GitHub's GraphQL enums are its REST values upper-cased. */
export const upper = (s: string) => s.toUpperCase();

/** A mutation's arguments: GitHub's `input` object, with its optional `clientMutationId`. */
export type MutationInput<T> = { input: T & { clientMutationId?: string | null } };

export function unprocessable(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { type: 'UNPROCESSABLE' } });
}

/** Runs a state change; its refusal becomes GitHub's GraphQL error. */
export function change<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (error instanceof GitHubStateError) {
      throw error.status === 404 ? notFound(error.message) : unprocessable(error.message);
    }
    throw error;
  }
}

/** A repository by node id; it becomes the trace record's `repo`. */
export function repoById(ctx: GqlContext, id: string): Repo {
  const entity = ctx.state.nodes.get(id);
  if (entity === undefined || !('fullName' in entity))
    throw notFound(`Could not resolve to a Repository with the global id of '${id}'.`);
  ctx.touched = entity.fullName;
  return entity;
}
