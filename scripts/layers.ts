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
      'learn',
      'model',
      'distributed',
      'matrix',
      'live',
      'run',
      'html-report',
      'results',
      'targets',
      'workload',
      'reference',
      'contract',
      'judge',
      'report',
      'analyze',
      'github',
      'world',
      'agents',
      'provider',
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
    name: 'distributed',
    holds: 'segments of runs and matrices, and their merges',
    paths: ['distributed/'],
    may: ['matrix', 'run', 'results', 'workload', 'contract', 'github', 'analyze', 'trace', BASE],
  },
  {
    name: 'matrix',
    holds: 'the matrix runner: scenario × topology × scale, pruning, compare',
    paths: ['matrix/'],
    may: ['run', 'results', 'workload', 'judge', 'report', 'analyze', 'trace', BASE],
  },
  {
    name: 'live',
    holds: "live telemetry of a real-clock run, attached through the engine's attach hook",
    paths: ['live/'],
    may: ['run', 'targets', 'workload', 'contract', 'judge', 'analyze', 'github', 'trace', 'clock', BASE],
  },
  {
    name: 'learn',
    holds: 'model learn: a control plane learned from its traces, and the figures a prediction is judged on',
    paths: ['learn/'],
    may: ['model', 'analyze', 'trace', BASE],
  },
  {
    name: 'run',
    holds: 'one run: its plan, the pipeline (engine, judging while it runs, summary, report)',
    paths: ['run/'],
    may: [
      'html-report',
      'results',
      'targets',
      'workload',
      'contract',
      'judge',
      'analyze',
      'github',
      'trace',
      'clock',
      BASE,
    ],
  },
  {
    name: 'html-report',
    holds: 'the HTML report: it draws a result set (a run or a matrix directory)',
    paths: ['report-html/'],
    may: ['results', 'report', 'analyze', 'trace', BASE],
  },
  {
    name: 'results',
    holds: 'what runs leave: summary.json and baseline.json, read back as result sets and judge inputs',
    paths: ['results/'],
    may: ['workload', 'judge', 'report', 'analyze', BASE],
  },
  {
    name: 'targets',
    holds: 'the systems under test as the engine opens them: reference, ao, paperclip, http, module',
    paths: ['targets/'],
    may: [
      'workload',
      'reference',
      'model',
      'contract',
      'github',
      'world',
      'agents',
      'provider',
      'trace',
      'clock',
      BASE,
    ],
  },
  {
    name: 'workload',
    holds: 'scenarios and what a run does to a target: executors, world, spawner, faults',
    paths: ['workload/'],
    may: ['contract', 'github', 'provider', 'trace', 'clock', BASE],
  },
  {
    name: 'reference',
    holds: 'the reference control plane, embedded or served',
    paths: ['reference/'],
    may: ['model', 'contract', 'github', 'trace', 'clock', BASE],
  },
  {
    name: 'model',
    holds: 'the learned model file: its schema, reader and writer (the reference replays it)',
    paths: ['model/'],
    may: [BASE],
  },
  {
    name: 'contract',
    holds:
      "what a run's target names (TargetRef), the Target interface and the http target protocol, which targets and the reference implement",
    paths: ['contract/'],
    may: ['trace', BASE],
  },
  {
    name: 'judge',
    holds: 'budgets and verdicts',
    paths: ['judge/'],
    may: ['report', 'analyze', 'trace', BASE],
  },
  {
    name: 'report',
    holds: 'reporters: terminal, JSON, Markdown',
    paths: ['report/'],
    may: ['analyze', 'trace', BASE],
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
    name: 'world',
    holds:
      "the world a command runs in: github.com and the model hosts as the run's emulators (sandbox, proxy or env), agent launchers, blocked attempts",
    paths: ['world/'],
    may: ['agents', 'github', 'provider', 'trace', 'clock', BASE],
  },
  {
    name: 'agents',
    holds: 'the real agent CLIs (codex, Claude Code, opencode): install, home, one turn, agents try',
    paths: ['agents/'],
    may: ['provider', 'trace', 'clock', BASE],
  },
  {
    name: 'provider',
    holds: 'the model-provider emulator (OpenAI Responses and Chat Completions, Anthropic Messages)',
    paths: ['provider/'],
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
    holds:
      'leaf helpers every layer may use (errors, limits, validation, rng, durations, distributions, a heap)',
    paths: ['base/'],
    may: [],
  },
];

/**
 * Imports against the direction that are still there, each with why and who removes it. The
 * check fails when one of them is gone (so the list only shrinks) and on any other violation.
 */
export const KNOWN_VIOLATIONS: Array<{ file: string; imports: string; why: string }> = [];

/**
 * Import cycles and mixed folders still there, each with why; like KNOWN_VIOLATIONS the lists
 * only shrink (the check fails when one is gone and still listed).
 */
export const KNOWN_CYCLES: Array<{ files: string[]; why: string }> = [];

export const KNOWN_FOLDER_PROBLEMS: Array<{ folder: string; why: string }> = [];

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

/** The folder under src/ a file is in (`.` for files at its root). */
const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : '.');

/**
 * Folders that hold files of more than one layer: a layer is a folder, so a newcomer reading
 * the tree folder by folder reads the layers.
 */
export function folderProblems(files: readonly string[], layers: Layer[] = LAYERS): string[] {
  const byFolder = new Map<string, Set<string>>();
  for (const file of files) {
    const layer = layerOf(file, layers);
    if (!layer) continue;
    const folder = folderOf(file);
    const names = byFolder.get(folder) ?? new Set<string>();
    names.add(layer.name);
    byFolder.set(folder, names);
  }
  return [...byFolder]
    .filter(([, names]) => names.size > 1)
    .map(
      ([folder, names]) =>
        `src/${folder === '.' ? '' : `${folder}/`} holds ${names.size} layers (${[...names].join(', ')}): one folder per layer`,
    );
}

/** Circles of imports among files (strongly connected components of more than one file). */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const graph = new Map<string, string[]>();
  for (const e of edges) graph.set(e.file, [...(graph.get(e.file) ?? []), e.target]);
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  // Tarjan's algorithm, iterative so a long chain of imports cannot overflow the stack.
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; i: number }> = [{ node: root, i: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.get(frame.node) ?? [];
      if (frame.i < targets.length) {
        const to = targets[frame.i++]!;
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, i: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) cycles.push(component.sort());
      }
    }
  }
  return cycles.sort((a, b) => (a[0]! < b[0]! ? -1 : 1));
}

const isKnown = (v: ImportEdge) => KNOWN_VIOLATIONS.some((k) => k.file === v.file && k.imports === v.target);

/** Violations not on the known list, and known ones that are gone (the list is stale). */
export function checkLayers(srcDir: string): {
  violations: Violation[];
  stale: string[];
  folders: string[];
  cycles: string[];
} {
  const edges = importEdges(srcDir);
  const found = violations(edges);
  const files = [...new Set(edges.flatMap((e) => [e.file, e.target]))];
  const folders = folderProblems(files).filter(
    (p) => !KNOWN_FOLDER_PROBLEMS.some((k) => p.startsWith(k.folder)),
  );
  const cycles = importCycles(edges)
    .filter((c) => !KNOWN_CYCLES.some((k) => k.files.join(' ') === c.join(' ')))
    .map((c) => `import cycle: ${c.map((f) => `src/${f}`).join(' ↔ ')} (a file imports what imports it)`);
  const stale = KNOWN_VIOLATIONS.filter(
    (k) => !found.some((v) => v.file === k.file && v.target === k.imports),
  ).map(
    (k) =>
      `src/${k.file} no longer imports src/${k.imports}: remove it from KNOWN_VIOLATIONS in scripts/layers.ts`,
  );
  const knownGone = [
    ...KNOWN_CYCLES.filter((k) => !importCycles(edges).some((c) => c.join(' ') === k.files.join(' '))).map(
      (k) =>
        `the import cycle ${k.files.join(' ↔ ')} is gone: remove it from KNOWN_CYCLES in scripts/layers.ts`,
    ),
    ...KNOWN_FOLDER_PROBLEMS.filter((k) => !folderProblems(files).some((p) => p.startsWith(k.folder))).map(
      (k) => `${k.folder} holds one layer now: remove it from KNOWN_FOLDER_PROBLEMS in scripts/layers.ts`,
    ),
  ];
  return { violations: found.filter((v) => !isKnown(v)), stale: [...stale, ...knownGone], folders, cycles };
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const srcDir = join(dirname(import.meta.filename), '..', 'src');
  const problems = [...tableProblems()];
  const { violations: found, stale, folders, cycles } = checkLayers(srcDir);
  problems.push(...found.map((v) => v.message), ...stale, ...folders, ...cycles);
  for (const p of problems) console.log(p);
  console.log(
    problems.length === 0 ? 'layers: every import points down' : `layers: ${problems.length} problem(s)`,
  );
  process.exitCode = problems.length === 0 ? 0 : 1;
}
