/**
 * The emulator's GraphQL endpoint: `GraphQLEngine` prepares (parse, validate, cost) and executes
 * a request. engine.ts runs it, cost.ts is GitHub's point calculation and node limit, limits.ts
 * bounds documents, schema.ts is the SDL, resolvers.ts and the object types (users, commits,
 * reviews, issues) read the state, mutations.ts changes it.
 */

export type { RateLimitInfo } from './context.ts';
export { GRAPHQL_DOCS, GraphQLEngine, type PreparedQuery, type RejectedQuery } from './engine.ts';
