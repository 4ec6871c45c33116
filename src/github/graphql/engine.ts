/**
 * GraphQL over the emulator state, with the real `graphql` package: parse and validate (cached
 * per query text), GitHub's cost (cost.ts) computed on the AST before execution, then a
 * synchronous execution whose resolvers (resolvers.ts) read the same state REST does. Names the
 * operation for the trace, anonymous ones by the fields they ask for.
 */
import {
  buildSchema,
  type DocumentNode,
  executeSync,
  type FieldNode,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  type OperationDefinitionNode,
  OverlappingFieldsCanBeMergedRule,
  specifiedRules,
  validate,
} from 'graphql';
import { LruMap } from '../../base/lru-map.ts';
import type { GitHubState, User } from '../state.ts';
import type { GqlContext, RateLimitInfo } from './context.ts';
import { costOf, primaryPoints } from './cost.ts';
import { githubQueryError } from './errors.ts';
import { parseBounded } from './limits.ts';
import { root } from './resolvers.ts';
import { SDL } from './schema.ts';

export const GRAPHQL_DOCS = 'https://docs.github.com/graphql';

/**
 * graphql-js's rules minus OverlappingFieldsCanBeMerged: GitHub's server accepts
 * `...on Issue{state} ...on PullRequest{state}` (two different enums under one name), and
 * `gh issue view` sends exactly that.
 */
const VALIDATION_RULES = specifiedRules.filter((rule) => rule !== OverlappingFieldsCanBeMergedRule);

/** A request that parsed, validated and was costed: ready to charge and execute. */
export interface PreparedQuery {
  ok: true;
  document: DocumentNode;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
  /** What the trace records as `op`: operationName, else the executed operation's own name. */
  opName: string | undefined;
  /** Primary-limit points: at least 1. */
  cost: number;
  nodeCount: number;
  mutation: boolean;
  /** A mutation that creates content (addComment, addPullRequestReview): content-creation limits apply. */
  contentCreating: boolean;
  /** owner/name when the query addresses exactly one repository. */
  repo?: string;
}

/** A request answered without execution: bad JSON (400) or a query GitHub would refuse (200). */
export interface RejectedQuery {
  ok: false;
  status: number;
  body: string;
  error: string;
  /** operationName, else the document's first named operation, when there is one to name. */
  opName?: string;
}

interface CachedDocument {
  /** Parsed; invalid when `errors` is set (kept to name the errors' paths). */
  document?: DocumentNode;
  errors?: readonly GraphQLError[];
  /** The first named operation, so even a query that failed validation can be grouped by name. */
  firstOperationName?: string;
}

function errorsBody(errors: readonly Record<string, unknown>[]): string {
  return JSON.stringify({ errors });
}

/**
 * The schema, and each query text's parse and validation, depend on nothing but the SDL and the
 * text, so every engine in a process shares them. A matrix child runs one emulator per cell, and
 * building the schema in each cost ~25 ms of CPU: 0.76 s of `matrix --cells all`, and the
 * queries' parses another 0.1 s (docs/performance.md, "The matrix's fixed costs per cell").
 */
let sharedSchema: GraphQLSchema | undefined;
/** Parsed and validated documents by query text, the least recently used forgotten (docs/limits.md). */
const documents = new LruMap<string, CachedDocument>(1_000);

export class GraphQLEngine {
  readonly schema: GraphQLSchema;

  constructor() {
    sharedSchema ??= buildSchema(SDL);
    this.schema = sharedSchema;
  }

  /** Parses the JSON body and the query (both cached by text), validates and costs it. */
  prepare(bodyText: string | undefined): PreparedQuery | RejectedQuery {
    let body: unknown;
    try {
      body = JSON.parse(bodyText ?? '');
    } catch {
      return {
        ok: false,
        status: 400,
        body: JSON.stringify({ message: 'Problems parsing JSON', documentation_url: GRAPHQL_DOCS }),
        error: 'Problems parsing JSON',
      };
    }
    const b = body as { query?: unknown; variables?: unknown; operationName?: unknown } | null;
    if (!b || typeof b !== 'object' || typeof b.query !== 'string') {
      const message = 'A query attribute must be specified and must be a string.';
      return {
        ok: false,
        status: 400,
        body: JSON.stringify({ message, documentation_url: GRAPHQL_DOCS }),
        error: message,
      };
    }
    const variables =
      b.variables && typeof b.variables === 'object' && !Array.isArray(b.variables)
        ? (b.variables as Record<string, unknown>)
        : undefined;
    const operationName =
      typeof b.operationName === 'string' && b.operationName !== '' ? b.operationName : undefined;
    const parsed = this.document(b.query);
    const opName = operationName ?? parsed.firstOperationName;
    if (parsed.errors) {
      const errors = parsed.errors.map((e) => githubQueryError(e, parsed.document));
      return {
        ok: false,
        status: 200,
        body: errorsBody(errors),
        error: errors[0]!.message as string,
        opName,
      };
    }
    const document = parsed.document!;
    const operation = findOperation(document, operationName);
    if (!operation) {
      const message = operationName
        ? `Unknown operation named "${operationName}".`
        : 'Must provide operation name if query contains multiple operations.';
      return { ok: false, status: 200, body: errorsBody([{ message }]), error: message, opName };
    }
    const analysis = costOf(this.schema, document, operation, variables ?? {});
    if (analysis.error) {
      return {
        ok: false,
        status: 200,
        body: errorsBody([{ ...analysis.error }]),
        error: analysis.error.message,
        opName,
      };
    }
    const cost = primaryPoints(analysis.requests);
    return {
      ok: true,
      document,
      variables,
      operationName,
      opName: operationName ?? operation.name?.value ?? anonymousOpName(operation),
      cost,
      nodeCount: analysis.nodes,
      mutation: operation.operation === 'mutation',
      contentCreating: analysis.contentCreating,
      repo: analysis.repo,
    };
  }

  private document(query: string): CachedDocument {
    const hit = documents.get(query);
    if (hit) return hit;
    let entry: CachedDocument;
    try {
      const document = parseBounded(query);
      const errors = validate(this.schema, document, VALIDATION_RULES);
      entry = errors.length > 0 ? { errors, document } : { document };
      for (const def of document.definitions) {
        if (def.kind === Kind.OPERATION_DEFINITION && def.name) {
          entry.firstOperationName = def.name.value;
          break;
        }
      }
    } catch (error) {
      entry = { errors: [error instanceof GraphQLError ? error : new GraphQLError(String(error))] };
    }
    documents.set(query, entry);
    return entry;
  }

  /**
   * Executes a prepared query; `rate` is what the rateLimit field reports (after the charge).
   * `touched` is the repository a mutation changed (owner/name), when there was one.
   */
  execute(
    prepared: PreparedQuery,
    state: GitHubState,
    viewer: User,
    rate: RateLimitInfo,
  ): { body: string; touched?: string; error?: string } {
    const context: GqlContext = { state, viewer, rate };
    const result = executeSync({
      schema: this.schema,
      document: prepared.document,
      rootValue: root,
      contextValue: context,
      variableValues: prepared.variables,
      operationName: prepared.operationName,
    });
    if (!result.errors || result.errors.length === 0) {
      const body = JSON.stringify({ data: result.data });
      return context.touched === undefined ? { body } : { body, touched: context.touched };
    }
    const errors = result.errors.map((e) => githubQueryError(e, prepared.document));
    const body = JSON.stringify({ data: result.data ?? null, errors });
    // The first error names the answer in the trace (a refused mutation, a missing object).
    const error = errors[0]!.message as string;
    return context.touched === undefined ? { body, error } : { body, touched: context.touched, error };
  }
}

/**
 * A name for an anonymous operation (`gh api graphql` sends them): its operation type and the
 * path of single fields it descends, at most three deep (`query repository.pullRequest.reviewThreads`),
 * so `fleetbench analyze` groups such calls by what they ask for instead of lumping them together.
 */
function anonymousOpName(operation: OperationDefinitionNode): string {
  const path: string[] = [];
  let selections = operation.selectionSet.selections;
  // A mutation is named by the mutation field itself (`mutation addComment`).
  const depth = operation.operation === 'mutation' ? 1 : 3;
  while (path.length < depth) {
    const fields = selections.filter(
      (sel): sel is FieldNode =>
        sel.kind === Kind.FIELD && sel.name.value !== '__typename' && sel.name.value !== 'rateLimit',
    );
    if (fields.length !== 1) break;
    const field = fields[0]!;
    path.push(field.name.value);
    if (!field.selectionSet) break;
    selections = field.selectionSet.selections;
  }
  return path.length > 0 ? `${operation.operation} ${path.join('.')}` : operation.operation;
}

function findOperation(
  document: DocumentNode,
  name: string | undefined,
): OperationDefinitionNode | undefined {
  let found: OperationDefinitionNode | undefined;
  for (const def of document.definitions) {
    if (def.kind !== Kind.OPERATION_DEFINITION) continue;
    if (name === undefined) {
      if (found) return undefined;
      found = def;
    } else if (def.name?.value === name) return def;
  }
  return found;
}
