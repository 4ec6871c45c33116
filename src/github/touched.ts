/**
 * What one request named (a repository, pull requests, issues, branches, commits), gathered by
 * the REST route's parameters or the GraphQL resolvers while the state answers it; attribution
 * by content (attribution.ts) reads it to find the one session the request was for.
 */
export interface Touched {
  repo?: string;
  pulls: number[];
  issues: number[];
  branches: string[];
  shas: string[];
}

/** Nothing named yet: a new request's start. */
export function newTouched(): Touched {
  return { pulls: [], issues: [], branches: [], shas: [] };
}
