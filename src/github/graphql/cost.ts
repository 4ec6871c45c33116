/**
 * GitHub's GraphQL cost, computed on the AST before execution (docs.github.com, "Rate limits and
 * node limits for the GraphQL API"): add up the requests needed to fill each connection, assuming
 * each reaches its `first`/`last`, nested connections multiplied by their parents' sizes; divide
 * by 100, round, minimum 1 (a query that selects only `rateLimit` costs 1 too: the field adds
 * nothing, the call has its minimum). Every connection needs `first` or `last` (at most 100), and
 * a query may touch at most 500,000 nodes.
 */
import {
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLSchema,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type OperationDefinitionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from 'graphql';
import { CONTENT_CREATING_MUTATIONS } from './mutations.ts';

const MAX_NODES = 500_000;

/** Primary-limit points for a query needing `requests` requests: "the minimum point value of a call to the GraphQL API is 1", a rateLimit-only call too. */
export function primaryPoints(requests: number): number {
  return Math.max(1, Math.round(requests / 100));
}

export interface QueryCost {
  requests: number;
  nodes: number;
  contentCreating: boolean;
  repo?: string;
  error?: { type: string; message: string; path?: string[] };
}

export function costOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): QueryCost {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions)
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  // Defaults of declared variables apply when the request leaves them out.
  const vars: Record<string, unknown> = {};
  for (const def of operation.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    if (name in variables) vars[name] = variables[name];
    else if (def.defaultValue) vars[name] = valueFromASTUntyped(def.defaultValue, {});
  }
  const out: QueryCost = { requests: 0, nodes: 0, contentCreating: false };
  let repos: Set<string> | undefined;
  const rootType = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
  if (!rootType) return out;

  if (operation.operation === 'mutation') {
    for (const sel of operation.selectionSet.selections)
      if (sel.kind === Kind.FIELD && CONTENT_CREATING_MUTATIONS.has(sel.name.value))
        out.contentCreating = true;
  }

  const walk = (
    set: SelectionSetNode,
    parent: GraphQLNamedType | undefined | null,
    mult: number,
    path: string[],
  ) => {
    for (const sel of set.selections) {
      if (out.error) return;
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        walk(sel.selectionSet, type, mult, path);
        continue;
      }
      if (sel.kind === Kind.FRAGMENT_SPREAD) {
        const frag = fragments.get(sel.name.value);
        if (frag) walk(frag.selectionSet, schema.getType(frag.typeCondition.name.value), mult, path);
        continue;
      }
      const name = sel.name.value;
      if (name.startsWith('__') || !parent || !(isObjectType(parent) || isInterfaceType(parent))) continue;
      const field = parent.getFields()[name];
      if (!field) continue;
      const type = getNamedType(field.type);
      const here = [...path, sel.alias?.value ?? name];
      let childMult = mult;
      let first: unknown;
      let last: unknown;
      let owner: unknown;
      let repoName: unknown;
      for (const arg of sel.arguments ?? []) {
        const value = valueFromASTUntyped(arg.value, vars);
        if (arg.name.value === 'first') first = value;
        else if (arg.name.value === 'last') last = value;
        else if (arg.name.value === 'owner') owner = value;
        else if (arg.name.value === 'name') repoName = value;
      }
      if (name === 'repository' && typeof owner === 'string' && typeof repoName === 'string') {
        repos ??= new Set();
        repos.add(`${owner}/${repoName}`);
      }
      if (type.name.endsWith('Connection')) {
        let size = typeof first === 'number' ? first : typeof last === 'number' ? last : undefined;
        // Asking only for totalCount/pageInfo needs no bounds (gh does this); it fetches no nodes.
        if (size === undefined && sel.selectionSet && !selectsItems(sel.selectionSet)) size = 0;
        if (size === undefined) {
          out.error = {
            type: 'MISSING_PAGINATION_BOUNDARIES',
            path: here,
            message: `You must provide a \`first\` or \`last\` value to properly paginate the \`${name}\` connection.`,
          };
          return;
        }
        if (size > 100 || size < 0) {
          out.error = {
            type: 'EXCESSIVE_PAGINATION',
            path: here,
            message: `Requesting ${size} records on the \`${name}\` connection exceeds the \`${typeof first === 'number' ? 'first' : 'last'}\` limit of 100 records.`,
          };
          return;
        }
        out.requests += mult;
        childMult = mult * size;
        out.nodes += childMult;
        if (out.nodes > MAX_NODES) {
          out.error = {
            type: 'MAX_NODE_LIMIT_EXCEEDED',
            message: `This query requests up to ${out.nodes} possible nodes which exceeds the maximum limit of ${MAX_NODES}.`,
          };
          return;
        }
      }
      if (sel.selectionSet) walk(sel.selectionSet, type, childMult, here);
    }
  };
  const selectsItems = (set: SelectionSetNode): boolean =>
    set.selections.some((sel) => {
      if (sel.kind === Kind.FIELD) return sel.name.value === 'nodes' || sel.name.value === 'edges';
      if (sel.kind === Kind.INLINE_FRAGMENT) return selectsItems(sel.selectionSet);
      const frag = fragments.get(sel.name.value);
      return frag !== undefined && selectsItems(frag.selectionSet);
    });
  walk(operation.selectionSet, rootType, 1, []);
  if (repos && repos.size === 1) out.repo = [...repos][0];
  return out;
}
