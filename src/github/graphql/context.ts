/** What every GraphQL resolver receives (the state, the viewer, the rate limit) and how it refuses. */
import { GraphQLError } from 'graphql';
import type { SearchBudget } from '../search.ts';
import type { GitHubState, User } from '../state.ts';

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
}

export function notFound(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { type: 'NOT_FOUND' } });
}

/** GitHub's GraphQL enums are its REST values upper-cased. */
export const upper = (s: string) => s.toUpperCase();
