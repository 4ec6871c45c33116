/**
 * What every YAML input file (scenarios, session profiles, budgets, fixtures) starts with: parsed
 * with line positions, the first syntax error named by its line; and the built-in files of a
 * folder, by name; and the line of a field, for validation errors.
 */
import { existsSync, readdirSync } from 'node:fs';
import { type Document, isAlias, isMap, isSeq, LineCounter, parseDocument, visit } from 'yaml';

export interface YamlInput {
  doc: Document;
  lineCounter: LineCounter;
  /** The document as plain values (undefined when there is an error). */
  value?: unknown;
  /** The first syntax error: its line and the first line of its message. */
  error?: { line: number; message: string };
}

/**
 * Aliases a document may expand, in all (yaml's own bound: a "billion laughs" document of a
 * few hundred bytes would expand to gigabytes).
 */
const MAX_ALIAS_COUNT = 100;

export function parseYamlInput(text: string): YamlInput {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const first = doc.errors[0];
  if (first) {
    const line = first.linePos?.[0]?.line ?? lineCounter.linePos(first.pos[0]).line;
    return { doc, lineCounter, error: { line, message: first.message.split('\n')[0]! } };
  }
  try {
    return { doc, lineCounter, value: doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) };
  } catch (error) {
    // yaml refuses a document whose aliases expand past the bound: bad input, at the first alias.
    let line = 1;
    visit(doc, {
      Alias(_, node) {
        if (isAlias(node) && node.range) line = lineCounter.linePos(node.range[0]).line;
        return visit.BREAK;
      },
    });
    return {
      doc,
      lineCounter,
      error: {
        line,
        message: `${(error as Error).message.split('\n')[0]} (aliases expand past ${MAX_ALIAS_COUNT}: docs/limits.md)`,
      },
    };
  }
}

/** The names of the `.yaml` files in `dir` (none when it is missing), sorted. */
export function yamlFileNames(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

/**
 * Line numbers for validation errors: maps a field path to the line of its node, or of the
 * nearest ancestor that has one (an override may have added the leaf).
 */
export function yamlLineOf(
  doc: Document,
  lineCounter: LineCounter,
): (path: readonly PropertyKey[]) => number | undefined {
  return (path) => {
    for (let n = path.length; n >= 1; n--) {
      const node = doc.getIn(path.slice(0, n) as unknown[], true) as { range?: [number, number] } | undefined;
      if (node && typeof node === 'object' && node.range) return lineCounter.linePos(node.range[0]).line;
      const parent = doc.getIn(path.slice(0, n - 1) as unknown[], true);
      if (isMap(parent) || isSeq(parent)) {
        const item = isMap(parent)
          ? parent.items.find((p) => (p.key as { value?: unknown })?.value === path[n - 1])
          : undefined;
        const key = item?.key as { range?: [number, number] } | undefined;
        if (key?.range) return lineCounter.linePos(key.range[0]).line;
      }
    }
    return undefined;
  };
}
