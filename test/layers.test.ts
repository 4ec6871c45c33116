import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkLayers,
  fileImports,
  folderProblems,
  importCycles,
  KNOWN_CYCLES,
  KNOWN_FOLDER_PROBLEMS,
  KNOWN_VIOLATIONS,
  LAYERS,
  type Layer,
  layerOf,
  tableProblems,
  violations,
} from '../scripts/layers.ts';

const SRC = join(import.meta.dirname, '..', 'src');

describe('import direction (scripts/layers.ts, docs/architecture.md#layers)', () => {
  it('the layer table names only layers and has no circle', () => {
    expect(tableProblems()).toEqual([]);
  });

  it('every import in src/ points down the layers, no folder holds two layers, no import cycle', () => {
    const { violations: found, stale, folders, cycles } = checkLayers(SRC);
    // The messages name the file, the line, the import and the rule.
    expect([...found.map((v) => v.message), ...stale, ...folders, ...cycles]).toEqual([]);
  });

  it('each known violation, cycle and mixed folder says why it is still there', () => {
    for (const known of [...KNOWN_VIOLATIONS, ...KNOWN_CYCLES, ...KNOWN_FOLDER_PROBLEMS])
      expect(known.why.length).toBeGreaterThan(20);
  });

  it('fails on a folder that holds two layers', () => {
    expect(folderProblems(['contract/types.ts', 'contract/target-ref.ts'])).toEqual([]);
    const layers: Layer[] = [
      { name: 'a', holds: '', paths: ['x/a.ts'], may: [] },
      { name: 'b', holds: '', paths: ['x/'], may: [] },
    ];
    expect(folderProblems(['x/a.ts', 'x/b.ts'], layers)).toEqual([
      'src/x/ holds 2 layers (a, b): one folder per layer',
    ]);
  });

  it('fails on a cycle of imports inside a folder, type-only imports included', () => {
    const edges = [
      ...fileImports(SRC, join(SRC, 'workload', 'one.ts'), "import type { T } from './two.ts';"),
      ...fileImports(SRC, join(SRC, 'workload', 'two.ts'), "import { x } from './three.ts';"),
      ...fileImports(SRC, join(SRC, 'workload', 'three.ts'), "export * from './one.ts';"),
      ...fileImports(SRC, join(SRC, 'workload', 'four.ts'), "import { x } from './one.ts';"),
    ];
    expect(importCycles(edges)).toEqual([['workload/one.ts', 'workload/three.ts', 'workload/two.ts']]);
  });

  it('fails on an upward import and names the file, the line, the import and the rule', () => {
    const text =
      "import type { Clock } from '../clock/clock.ts';\nimport { runScenario } from '../run/engine.ts';\n";
    const edges = fileImports(SRC, join(SRC, 'workload', 'forbidden.ts'), text);
    expect(edges.map((e) => e.target)).toEqual(['clock/clock.ts', 'run/engine.ts']);
    const found = violations(edges);
    expect(found).toHaveLength(1);
    expect(found[0]!.message).toBe(
      "src/workload/forbidden.ts:2 imports '../run/engine.ts': layer 'workload' may not import layer 'run' " +
        `(workload may import: ${layerOf('workload/x.ts')!.may.join(', ')}; see docs/architecture.md#layers)`,
    );
  });

  it('counts type-only, re-export and dynamic imports', () => {
    const text = [
      "import type { Target } from '../targets/index.ts';",
      "export { HttpTarget } from '../targets/http.ts';",
      "const m = await import('../cli/main.ts');",
    ].join('\n');
    const found = violations(fileImports(SRC, join(SRC, 'reference', 'forbidden.ts'), text));
    expect(found.map((v) => `${v.line} ${v.from}→${v.to}`)).toEqual([
      '1 reference→targets',
      '2 reference→targets',
      '3 reference→cli',
    ]);
  });

  it('the contract is a folder of its own: the reference implements it without importing targets', () => {
    expect(layerOf('contract/types.ts')?.name).toBe('contract');
    expect(layerOf('targets/http.ts')?.name).toBe('targets');
    const ok = violations(
      fileImports(SRC, join(SRC, 'reference', 'x.ts'), "import type { Target } from '../contract/types.ts';"),
    );
    expect(ok).toEqual([]);
    const up = violations(
      fileImports(SRC, join(SRC, 'reference', 'x.ts'), "import type { Target } from '../targets/index.ts';"),
    );
    expect(up.map((v) => `${v.from}→${v.to}`)).toEqual(['reference→targets']);
  });

  it('a file no layer claims is reported, and a circle in the table is found', () => {
    const found = violations(fileImports(SRC, join(SRC, 'newdir', 'x.ts'), "import '../errors.ts';"));
    expect(found[0]!.message).toContain('src/newdir/x.ts is in no layer');
    const circular: Layer[] = [
      { name: 'a', holds: '', paths: ['a/'], may: ['b'] },
      { name: 'b', holds: '', paths: ['b/'], may: ['a'] },
    ];
    expect(tableProblems(circular)).toEqual(['layers import in a circle: a → b → a']);
    expect(tableProblems([{ name: 'a', holds: '', paths: [], may: ['nope'] }])).toEqual([
      "layer 'a' may import 'nope', which is no layer",
    ]);
  });

  it('every layer says what it holds', () => {
    for (const layer of LAYERS) expect(layer.holds, layer.name).not.toBe('');
  });
});
