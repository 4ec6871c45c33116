/**
 * Line numbers for validation errors in YAML input files (scenarios, session profiles): maps a
 * field path to the line of its node, or of the nearest ancestor that has one (an override may
 * have added the leaf).
 */
import { type Document, isMap, isSeq, type LineCounter } from 'yaml';

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
