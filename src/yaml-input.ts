/**
 * What every YAML input file (scenarios, session profiles, budgets, fixtures) starts with: parsed
 * with line positions, the first syntax error named by its line; and the built-in files of a
 * folder, by name.
 */
import { existsSync, readdirSync } from 'node:fs';
import { type Document, LineCounter, parseDocument } from 'yaml';

export interface YamlInput {
  doc: Document;
  lineCounter: LineCounter;
  /** The first syntax error: its line and the first line of its message. */
  error?: { line: number; message: string };
}

export function parseYamlInput(text: string): YamlInput {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  const first = doc.errors[0];
  if (!first) return { doc, lineCounter };
  const line = first.linePos?.[0]?.line ?? lineCounter.linePos(first.pos[0]).line;
  return { doc, lineCounter, error: { line, message: first.message.split('\n')[0]! } };
}

/** The names of the `.yaml` files in `dir` (none when it is missing), sorted. */
export function yamlFileNames(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}
