/**
 * GitHub's GraphQL cost, computed on the AST before execution (docs.github.com, "Rate limits and
 * node limits for the GraphQL API"): add up the requests needed to fill each connection, assuming
 * each reaches its `first`/`last`, nested connections multiplied by their parents' sizes; divide
 * by 100, round, minimum 1 (a query that selects only `rateLimit` costs 1 too: the field adds
 * nothing, the call has its minimum). Every connection needs `first` or `last` (1 to 100), and
 * a query may touch at most 500,000 nodes.
 *
 * The walk is linear in the document's size: a named fragment's tally (requests and nodes per
 * unit of its parent's multiplier, and the fields it would expand to) is computed once and
 * scaled at every spread, so a fragment spread twice by a fragment spread twice by ... costs one
 * walk of each fragment, not 2^n. What such a document would expand to is still counted, and past
 * GRAPHQL_LIMITS.maxExpandedFields the query is refused, as GitHub refuses oversized queries.
 */
import {
  type DocumentNode,
  type FieldNode,
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
import { GRAPHQL_LIMITS } from '../../base/limits.ts';
import { CONTENT_CREATING_MUTATIONS } from './mutations.ts';

const MAX_NODES = 500_000;

/** Primary-limit points for a query needing `requests` requests: "the minimum point value of a call to the GraphQL API is 1", a rateLimit-only call too. */
export function primaryPoints(requests: number): number {
  return Math.max(1, Math.round(requests / 100));
}

export interface QueryError {
  type: string;
  message: string;
  path?: string[];
}

export interface QueryCost {
  requests: number;
  nodes: number;
  contentCreating: boolean;
  repo?: string;
  error?: QueryError;
}

/**
 * What a selection set adds per unit of its parent's multiplier: the connection requests and
 * nodes, and the fields it expands to (fragments expanded), which is what walking it without
 * memoisation would visit.
 */
interface Tally {
  requests: number;
  nodes: number;
  fields: number;
}

const EMPTY: Readonly<Tally> = { requests: 0, nodes: 0, fields: 0 };

/** Thrown inside the walk to stop it; caught in costOf. */
class Refusal {
  constructor(readonly error: QueryError) {}
}

export function costOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): QueryCost {
  const out: QueryCost = { requests: 0, nodes: 0, contentCreating: false };
  const rootType = operation.operation === 'mutation' ? schema.getMutationType() : schema.getQueryType();
  if (!rootType) return out;
  if (operation.operation === 'mutation') {
    for (const sel of operation.selectionSet.selections)
      if (sel.kind === Kind.FIELD && CONTENT_CREATING_MUTATIONS.has(sel.name.value))
        out.contentCreating = true;
  }
  const walk = new CostWalk(schema, document, operationVariables(operation, variables));
  let total: Tally;
  try {
    total = walk.selectionSet(operation.selectionSet, rootType, []);
  } catch (error) {
    if (error instanceof Refusal) {
      out.error = error.error;
      return out;
    }
    throw error;
  }
  if (total.fields > GRAPHQL_LIMITS.maxExpandedFields) {
    out.error = tooLarge(total.fields);
    return out;
  }
  out.requests = total.requests;
  out.nodes = total.nodes;
  if (out.nodes > MAX_NODES) {
    out.error = {
      type: 'MAX_NODE_LIMIT_EXCEEDED',
      message: `This query requests up to ${Number.isFinite(out.nodes) ? out.nodes : 'more than 10^300'} possible nodes which exceeds the maximum limit of ${MAX_NODES}.`,
    };
    return out;
  }
  if (walk.repos.size === 1) out.repo = [...walk.repos][0];
  return out;
}

/** The operation's variables: those sent, and the defaults of declared ones left out. */
function operationVariables(
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): Record<string, unknown> {
  const vars: Record<string, unknown> = {};
  for (const def of operation.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    if (name in variables) vars[name] = variables[name];
    else if (def.defaultValue) vars[name] = valueFromASTUntyped(def.defaultValue, {});
  }
  return vars;
}

/**
 * One walk of a document's selections, tallying requests, nodes and fields. Each named fragment
 * is walked once and its tally reused wherever it is spread, and every selection set visited
 * counts against a cap: the walk's own work is linear in the document's size.
 */
class CostWalk {
  /** The repositories the document names (`repository(owner:, name:)`). */
  readonly repos = new Set<string>();
  private readonly fragments = new Map<string, FragmentDefinitionNode>();
  /** Tallies of named fragments; undefined while one is being walked (validation forbids cycles). */
  private readonly fragmentTallies = new Map<string, Tally | undefined>();
  /** Whether a fragment asks for a connection's items, each found once. */
  private readonly itemsMemo = new Map<string, boolean>();
  /** Selection sets walked: the bound on this walk's work. */
  private visits = 0;

  constructor(
    private readonly schema: GraphQLSchema,
    document: DocumentNode,
    private readonly vars: Record<string, unknown>,
  ) {
    for (const def of document.definitions)
      if (def.kind === Kind.FRAGMENT_DEFINITION) this.fragments.set(def.name.value, def);
  }

  selectionSet(set: SelectionSetNode, parent: GraphQLNamedType | undefined | null, path: string[]): Tally {
    if (++this.visits > GRAPHQL_LIMITS.maxTokens) throw new Refusal(tooLarge(Number.POSITIVE_INFINITY));
    const tally: Tally = { requests: 0, nodes: 0, fields: 0 };
    const add = (t: Tally) => {
      tally.requests += t.requests;
      tally.nodes += t.nodes;
      tally.fields += t.fields;
    };
    for (const sel of set.selections) {
      if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? this.schema.getType(sel.typeCondition.name.value) : parent;
        add(this.selectionSet(sel.selectionSet, type, path));
      } else if (sel.kind === Kind.FRAGMENT_SPREAD) {
        add(this.fragment(sel.name.value, path));
      } else {
        tally.fields++;
        add(this.field(sel, parent, path));
      }
    }
    return tally;
  }

  /** A field's own cost: a connection multiplies its children by its page size. */
  private field(sel: FieldNode, parent: GraphQLNamedType | undefined | null, path: string[]): Tally {
    const name = sel.name.value;
    if (name.startsWith('__') || !parent || !(isObjectType(parent) || isInterfaceType(parent))) return EMPTY;
    const field = parent.getFields()[name];
    if (!field) return EMPTY;
    const type = getNamedType(field.type);
    const here = [...path, sel.alias?.value ?? name];
    let first: unknown;
    let last: unknown;
    let owner: unknown;
    let repoName: unknown;
    for (const arg of sel.arguments ?? []) {
      const value = valueFromASTUntyped(arg.value, this.vars);
      if (arg.name.value === 'first') first = value;
      else if (arg.name.value === 'last') last = value;
      else if (arg.name.value === 'owner') owner = value;
      else if (arg.name.value === 'name') repoName = value;
    }
    if (name === 'repository' && typeof owner === 'string' && typeof repoName === 'string')
      this.repos.add(`${owner}/${repoName}`);
    const children = sel.selectionSet ? this.selectionSet(sel.selectionSet, type, here) : EMPTY;
    if (!type.name.endsWith('Connection')) return children;
    const set = sel.selectionSet;
    const size = connectionSize(name, here, first, last, () => set !== undefined && this.selectsItems(set));
    return {
      requests: 1 + size * children.requests,
      nodes: size + size * children.nodes,
      fields: children.fields,
    };
  }

  private fragment(name: string, path: string[]): Tally {
    if (this.fragmentTallies.has(name)) return this.fragmentTallies.get(name) ?? EMPTY;
    const frag = this.fragments.get(name);
    if (!frag) return EMPTY;
    this.fragmentTallies.set(name, undefined);
    const tally = this.selectionSet(
      frag.selectionSet,
      this.schema.getType(frag.typeCondition.name.value),
      path,
    );
    this.fragmentTallies.set(name, tally);
    return tally;
  }

  /** Whether a selection set asks for a connection's items (nodes or edges), fragments followed once each. */
  private selectsItems(set: SelectionSetNode): boolean {
    return set.selections.some((sel) => {
      if (sel.kind === Kind.FIELD) return sel.name.value === 'nodes' || sel.name.value === 'edges';
      if (sel.kind === Kind.INLINE_FRAGMENT) return this.selectsItems(sel.selectionSet);
      const name = sel.name.value;
      const known = this.itemsMemo.get(name);
      if (known !== undefined) return known;
      this.itemsMemo.set(name, false);
      const frag = this.fragments.get(name);
      const found = frag !== undefined && this.selectsItems(frag.selectionSet);
      this.itemsMemo.set(name, found);
      return found;
    });
  }
}

/** `first`/`last` of a connection, refused as GitHub refuses a missing or out-of-range one. */
function connectionSize(
  name: string,
  path: string[],
  first: unknown,
  last: unknown,
  wantsItems: () => boolean,
): number {
  const argument = typeof first === 'number' ? 'first' : typeof last === 'number' ? 'last' : undefined;
  if (argument === undefined) {
    // Asking only for totalCount/pageInfo needs no bounds (gh does this); it fetches no nodes.
    if (!wantsItems()) return 0;
    throw new Refusal({
      type: 'MISSING_PAGINATION_BOUNDARIES',
      path,
      message: `You must provide a \`first\` or \`last\` value to properly paginate the \`${name}\` connection.`,
    });
  }
  const size = (argument === 'first' ? first : last) as number;
  if (size > 100) {
    throw new Refusal({
      type: 'EXCESSIVE_PAGINATION',
      path,
      message: `Requesting ${size} records on the \`${name}\` connection exceeds the \`${argument}\` limit of 100 records.`,
    });
  }
  if (size < 1) {
    // "Values of first and last must be within 1-100."
    throw new Refusal({
      type: 'INVALID_PAGINATION',
      path,
      message: `\`${argument}\` on the \`${name}\` connection must be within 1-100 (got ${size}).`,
    });
  }
  return size;
}

/** A document whose fragments expand past the bound: refused before anything runs. */
function tooLarge(fields: number): QueryError {
  const size = Number.isFinite(fields) ? fields.toLocaleString('en-US') : 'more than that';
  return {
    type: 'MAX_COMPLEXITY_EXCEEDED',
    message: `Query has complexity of ${size}, which exceeds max complexity of ${GRAPHQL_LIMITS.maxExpandedFields.toLocaleString('en-US')} (its fields, fragments expanded)`,
  };
}
