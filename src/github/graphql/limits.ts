/**
 * GraphQL documents bounded before anything recursive touches them: at most
 * GRAPHQL_LIMITS.maxTokens tokens (graphql-js's parser stops there) and selection sets nested at
 * most GRAPHQL_LIMITS.maxDepth deep (fragments followed), so a query nested thousands deep is an
 * error answer, never a stack overflow in validation or execution. GitHub's own node limit
 * (500,000) is checked with the cost, in cost.ts.
 */
import { type DocumentNode, GraphQLError, Kind, parse, type SelectionSetNode } from 'graphql';
import { GRAPHQL_LIMITS } from '../../base/limits.ts';

/** Parses with the token limit; a query too deep for the parser itself is a GraphQLError too. */
export function parseBounded(query: string): DocumentNode {
  let document: DocumentNode;
  try {
    document = parse(query, { maxTokens: GRAPHQL_LIMITS.maxTokens });
  } catch (error) {
    if (error instanceof RangeError) throw tooDeep();
    throw error;
  }
  const depth = maxDepth(document);
  if (depth > GRAPHQL_LIMITS.maxDepth) throw tooDeep(depth);
  return document;
}

function tooDeep(depth?: number): GraphQLError {
  return new GraphQLError(
    `Query has depth of ${depth ?? 'more than ' + GRAPHQL_LIMITS.maxDepth}, which exceeds max depth of ${GRAPHQL_LIMITS.maxDepth}`,
  );
}

/**
 * The deepest selection-set nesting of any operation, fragments expanded (iterative, no
 * recursion). A fragment is expanded again only at a depth deeper than any it was expanded at
 * before (a spread adds no depth, so nothing new can come of a shallower or equal one): linear in
 * the document, whatever its fragments spread, and a cycle (validation's to report) stops itself.
 */
function maxDepth(document: DocumentNode): number {
  const fragments = new Map<string, SelectionSetNode>();
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION)
      fragments.set(definition.name.value, definition.selectionSet);
  let deepest = 0;
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    const expandedAt = new Map<string, number>();
    const stack: Array<{ set: SelectionSetNode; depth: number }> = [
      { set: definition.selectionSet, depth: 1 },
    ];
    while (stack.length > 0) {
      const { set, depth } = stack.pop()!;
      if (depth > deepest) deepest = depth;
      // Past the limit the answer is known.
      if (deepest > GRAPHQL_LIMITS.maxDepth) return deepest;
      for (const selection of set.selections) {
        if (selection.kind === Kind.FRAGMENT_SPREAD) {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          if (fragment === undefined || (expandedAt.get(name) ?? 0) >= depth) continue;
          expandedAt.set(name, depth);
          stack.push({ set: fragment, depth });
        } else if (selection.selectionSet) {
          stack.push({
            set: selection.selectionSet,
            depth: selection.kind === Kind.FIELD ? depth + 1 : depth,
          });
        }
      }
    }
  }
  return deepest;
}
