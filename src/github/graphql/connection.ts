/** GitHub's cursor connections: `first`/`last`/`after`/`before` over a list, nodes, edges and pageInfo. */
export interface ConnArgs {
  first?: number | null;
  last?: number | null;
  after?: string | null;
  before?: string | null;
}

export function cursor(index: number): string {
  return Buffer.from(`cursor:${index + 1}`).toString('base64');
}

function fromCursor(text: string | null | undefined): number | undefined {
  if (!text) return undefined;
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  if (!decoded.startsWith('cursor:')) return undefined;
  const n = Number(decoded.slice(7));
  return Number.isInteger(n) ? n - 1 : undefined;
}

export function connection<T>(
  items: readonly T[],
  args: ConnArgs,
  wrap: (item: T) => unknown,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  let start = 0;
  let end = items.length;
  const after = fromCursor(args.after);
  const before = fromCursor(args.before);
  if (after !== undefined) start = Math.max(start, after + 1);
  if (before !== undefined) end = Math.min(end, before);
  if (args.first != null) end = Math.min(end, start + args.first);
  if (args.last != null) start = Math.max(start, end - args.last);
  if (end < start) end = start;
  const slice = items.slice(start, end);
  return {
    totalCount: items.length,
    nodes: () => slice.map(wrap),
    edges: () => slice.map((item, i) => ({ cursor: cursor(start + i), node: wrap(item) })),
    pageInfo: {
      hasNextPage: end < items.length,
      hasPreviousPage: start > 0,
      startCursor: slice.length > 0 ? cursor(start) : null,
      endCursor: slice.length > 0 ? cursor(end - 1) : null,
    },
    ...extra,
  };
}

export const EMPTY_CONNECTION = (args: ConnArgs) => connection([], args, (x) => x);
