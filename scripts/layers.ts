/**
 * The layers of src/ and which may import which: the one table of allowed edges
 * (docs/architecture.md, "Layers"). `npm test` checks every import in src/ against it
 * (test/layers.test.ts); `npx tsx scripts/layers.ts` prints the violations on their own.
 *
 * A layer may import itself and the layers in its `may` list, nothing else: imports point down.
 * Imports are read with TypeScript's own pre-processor (static, `export … from`, `import type`
 * and dynamic `import()` alike), so a type-only import counts: a type is part of a contract.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface Layer {
  name: string;
  /** What the layer is, for the failure message and the docs. */
  holds: string;
  /** Paths under src/ (a folder ends with '/'); the longest match decides a file's layer. */
  paths: string[];
  /** Layers it may import (besides itself). */
  may: string[];
}

const BASE = 'base';

/** Top to bottom. */
export const LAYERS: Layer[] = [
  {
    name: 'cli',
    holds: 'the fleetbench program: parses flags, calls the library, prints',
    paths: ['cli/'],
    may: [
      'html-report',
      'distributed',
      'matrix',
      'live',
      'run',
      'targets',
      'workload',
      'reference',
      'judge',
      'report',
      'results-format',
      'analyze',
      'github',
      'contract',
      'trace',
      'clock',
      BASE,
    ],
  },
  {
    name: 'api',
    holds: "the public API for target authors (import type { Target } from 'fleetbench')",
    paths: ['index.ts'],
    may: ['targets', 'workload', 'contract', 'github', 'trace', 'clock', BASE],
  },
  {
    name: 'html-report',
    holds: 'the HTML report: it draws a result set (a run or a matrix directory)',
    paths: ['report/html/'],
    may: ['matrix', 'run', 'report', 'results-format', 'analyze', 'trace', BASE],
  },
  {
    name: 'distributed',
    holds: 'segments of runs and matrices, and their merges',
    paths: ['distributed/'],
    may: ['matrix', 'run', 'workload', 'github', 'results-format', 'analyze', 'trace', BASE],
  },
  {
    name: 'matrix',
    holds: 'the matrix runner: scenario × topology × scale, pruning, baseline, compare',
    paths: ['matrix/'],
    may: ['run', 'workload', 'judge', 'report', 'results-format', 'analyze', 'trace', BASE],
  },
  {
    name: 'live',
    holds: "live telemetry of a real-clock run, attached through the engine's attach hook",
    paths: ['live/'],
    may: ['run', 'targets', 'workload', 'judge', 'analyze', 'github', 'contract', 'trace', 'clock', BASE],
  },
  {
    name: 'run',
    holds: 'one run: the engine, judging while it runs, its summary',
    paths: ['run/'],
    may: ['targets', 'workload', 'judge', 'analyze', 'github', 'contract', 'trace', 'clock', BASE],
  },
  {
    name: 'targets',
    holds: 'the systems under test as the engine opens them: reference, ao, http, module',
    paths: ['targets/'],
    may: ['workload', 'reference', 'github', 'contract', 'trace', 'clock', BASE],
  },
  {
    name: 'workload',
    holds: 'scenarios and what a run does to a target: executors, world, spawner, faults',
    paths: ['workload/'],
    may: ['github', 'contract', 'trace', 'clock', BASE],
  },
  {
    name: 'reference',
    holds: 'the reference control plane, embedded or served',
    paths: ['reference/'],
    may: ['github', 'contract', 'trace', 'clock', BASE],
  },
  {
    name: 'contract',
    holds: 'the Target interface and the http target protocol, which targets and the reference implement',
    paths: ['targets/types.ts', 'targets/protocol.ts'],
    may: ['trace', BASE],
  },
  {
    name: 'judge',
    holds: 'budgets and verdicts',
    paths: ['judge/'],
    may: ['report', 'results-format', 'analyze', 'trace', BASE],
  },
  {
    name: 'report',
    holds: 'reporters: terminal, JSON, Markdown, HTML',
    paths: ['report/'],
    may: ['results-format', 'analyze', 'trace', BASE],
  },
  {
    name: 'results-format',
    holds: 'the baseline.json format: the matrix writes it, the judge, compare and reports read it',
    paths: ['matrix/baseline.ts'],
    may: ['analyze', BASE],
  },
  {
    name: 'analyze',
    holds: 'metrics from a trace',
    paths: ['analyze/'],
    may: ['trace', BASE],
  },
  {
    name: 'github',
    holds: 'the GitHub emulator',
    paths: ['github/'],
    may: ['trace', 'clock', BASE],
  },
  {
    name: 'trace',
    holds: 'the canonical trace format: schema, writer, reader, importers',
    paths: ['trace/'],
    may: [BASE],
  },
  { name: 'clock', holds: 'virtual and real clocks', paths: ['clock/'], may: [BASE] },
  {
    name: BASE,
    holds: 'leaf helpers every layer may use (errors, limits, validation, rng, durations, distributions)',
    paths: [
      'errors.ts',
      'version.ts',
      'limits.ts',
      'validation.ts',
      'json-schema.ts',
      'yaml-input.ts',
      'input-file.ts',
      'output-dir.ts',
      'rng.ts',
      'cache-dir.ts',
      'http-body.ts',
      'safe-name.ts',
      'distribution.ts',
      'duration.ts',
    ],
    may: [],
  },
];

/**
 * Imports against the direction that are still there, each with why and who removes it. The
 * check fails when one of them is gone (so the list only shrinks) and on any other violation.
 */
export const KNOWN_VIOLATIONS: Array<{ file: string; imports: string; why: string }> = [];

export interface ImportEdge {
  /** Importing file, relative to src/ ('/' separators). */
  file: string;
  line: number;
  /** The specifier as written. */
  specifier: string;
  /** Imported file, relative to src/. */
  target: string;
}

export interface Violation extends ImportEdge {
  from: string;
  to: string;
  message: string;
}

const posix = (p: string) => p.split(sep).join('/');

/** The layer a file (relative to src/) belongs to, or undefined when no layer claims it. */
export function layerOf(file: string, layers: Layer[] = LAYERS): Layer | undefined {
  let best: Layer | undefined;
  let bestLength = -1;
  for (const layer of layers) {
    for (const path of layer.paths) {
      const hit = path.endsWith('/') ? file.startsWith(path) : file === path;
      if (hit && path.length > bestLength) {
        best = layer;
        bestLength = path.length;
      }
    }
  }
  return best;
}

/** Every relative import of every source file under `srcDir`. */
export function importEdges(srcDir: string): ImportEdge[] {
  const root = resolve(srcDir);
  const edges: ImportEdge[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (/\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
        edges.push(...fileImports(root, path));
    }
  };
  walk(root);
  return edges;
}

export function fileImports(root: string, path: string, text = readFileSync(path, 'utf8')): ImportEdge[] {
  const info = ts.preProcessFile(text, true, true);
  const file = posix(relative(root, path));
  const out: ImportEdge[] = [];
  for (const imported of info.importedFiles) {
    const specifier = imported.fileName;
    if (!specifier.startsWith('.')) continue;
    const target = posix(relative(root, resolve(dirname(path), specifier)));
    if (target.startsWith('..')) continue;
    const line = text.slice(0, imported.pos).split('\n').length;
    out.push({ file, line, specifier, target });
  }
  return out;
}

/** Imports that go against the table: an unclaimed file, or an edge the importer's layer may not take. */
export function violations(edges: ImportEdge[], layers: Layer[] = LAYERS): Violation[] {
  const out: Violation[] = [];
  for (const edge of edges) {
    const from = layerOf(edge.file, layers);
    const to = layerOf(edge.target, layers);
    const where = `src/${edge.file}:${edge.line} imports '${edge.specifier}'`;
    if (!from || !to) {
      const missing = from ? edge.target : edge.file;
      out.push({
        ...edge,
        from: from?.name ?? '?',
        to: to?.name ?? '?',
        message: `${where}: src/${missing} is in no layer (add it to LAYERS in scripts/layers.ts)`,
      });
      continue;
    }
    if (from === to || from.may.includes(to.name)) continue;
    out.push({
      ...edge,
      from: from.name,
      to: to.name,
      message: `${where}: layer '${from.name}' may not import layer '${to.name}' (${from.name} may import: ${from.may.join(', ') || 'nothing'}; see docs/architecture.md#layers)`,
    });
  }
  return out;
}

/** Layers named in a `may` list that do not exist, and cycles among the layers themselves. */
export function tableProblems(layers: Layer[] = LAYERS): string[] {
  const names = new Set(layers.map((l) => l.name));
  const problems: string[] = [];
  for (const layer of layers)
    for (const name of layer.may)
      if (!names.has(name)) problems.push(`layer '${layer.name}' may import '${name}', which is no layer`);
  const state = new Map<string, 'visiting' | 'done'>();
  const byName = new Map(layers.map((l) => [l.name, l]));
  const visit = (name: string, path: string[]) => {
    if (state.get(name) === 'done') return;
    if (state.get(name) === 'visiting') {
      problems.push(`layers import in a circle: ${[...path.slice(path.indexOf(name)), name].join(' → ')}`);
      return;
    }
    state.set(name, 'visiting');
    for (const next of byName.get(name)?.may ?? []) visit(next, [...path, name]);
    state.set(name, 'done');
  };
  for (const layer of layers) visit(layer.name, []);
  return problems;
}

const isKnown = (v: ImportEdge) => KNOWN_VIOLATIONS.some((k) => k.file === v.file && k.imports === v.target);

/** Violations not on the known list, and known ones that are gone (the list is stale). */
export function checkLayers(srcDir: string): { violations: Violation[]; stale: string[] } {
  const found = violations(importEdges(srcDir));
  const stale = KNOWN_VIOLATIONS.filter(
    (k) => !found.some((v) => v.file === k.file && v.target === k.imports),
  ).map(
    (k) =>
      `src/${k.file} no longer imports src/${k.imports}: remove it from KNOWN_VIOLATIONS in scripts/layers.ts`,
  );
  return { violations: found.filter((v) => !isKnown(v)), stale };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const srcDir = join(dirname(import.meta.filename), '..', 'src');
  const problems = [...tableProblems()];
  const { violations: found, stale } = checkLayers(srcDir);
  problems.push(...found.map((v) => v.message), ...stale);
  for (const p of problems) console.log(p);
  console.log(
    problems.length === 0 ? 'layers: every import points down' : `layers: ${problems.length} problem(s)`,
  );
  process.exitCode = problems.length === 0 ? 0 : 1;
}
