/**
 * The cached bundle bin/fleetbench.js starts from (bin/cli-bundle.js): built from the sources,
 * reused while they are unchanged, rebuilt when one changes, never taken from a directory others
 * can write, and equal in behaviour to running the sources through tsx.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildBundle, bundlePaths, freshBundle, runEntry } from '../../bin/cli-bundle.js';
import { runCli } from '../helpers/cli.ts';
import { scratchDir } from '../helpers/tmp.ts';

const dir = scratchDir();

function file(root: string, path: string, text: string): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), text);
}

async function run(main: string): Promise<string> {
  const mod = (await import(pathToFileURL(main).href)) as { main(): Promise<string> };
  return mod.main();
}

describe('the CLI bundle cache', () => {
  it('bundles the sources, keeps module-relative paths and lazy imports, and rebuilds on a change', async () => {
    const root = join(dir, 'project');
    file(root, 'data.txt', 'data\n');
    file(
      root,
      'src/cli/main.ts',
      [
        "import { readFileSync } from 'node:fs';",
        "import { helper } from '../lib/helper.ts';",
        'export async function main(): Promise<string> {',
        "  const data = readFileSync(new URL('../../data.txt', import.meta.url), 'utf8').trim();",
        "  const { lazy } = await import('../lib/lazy.ts');",
        "  return [data, helper(), lazy()].join(' ');",
        '}',
      ].join('\n'),
    );
    file(root, 'src/lib/helper.ts', "export const helper = (): string => 'helper-1';\n");
    file(root, 'src/lib/lazy.ts', "export const lazy = (): string => 'lazy';\n");
    // A child process's entry (a matrix slot), run for its effect when imported.
    file(
      root,
      'src/matrix/child.ts',
      "import { helper } from '../lib/helper.ts';\n(globalThis as Record<string, unknown>).childSaw = helper();\n",
    );
    const paths = bundlePaths(root);
    expect(freshBundle(paths)).toBeUndefined();

    const first = await buildBundle(paths);
    expect(first).toBeDefined();
    expect(await run(first!)).toBe('data helper-1 lazy');
    // The dynamic import stays a chunk of its own, loaded on use.
    expect(readdirSync(dirname(first!)).some((name) => /^lazy-.*\.mjs$/.test(name))).toBe(true);
    expect(freshBundle(paths)).toBe(first);
    // The child's entry comes from the same bundle (sharing the helper's chunk), not through tsx.
    expect(readdirSync(dirname(first!))).toContain('matrix-child.mjs');
    await runEntry('matrix-child', paths);
    expect((globalThis as Record<string, unknown>).childSaw).toBe('helper-1');

    file(root, 'src/lib/helper.ts', "export const helper = (): string => 'helper-2';\n");
    expect(freshBundle(paths)).toBeUndefined();
    const second = await buildBundle(paths);
    expect(second).not.toBe(first);
    expect(await run(second!)).toBe('data helper-2 lazy');
    expect(freshBundle(paths)).toBe(second);

    // A cache directory others can write is never used: code found there is not run.
    chmodSync(paths.cacheDir, 0o777);
    expect(freshBundle(paths)).toBeUndefined();
    expect(await buildBundle(paths)).toBeUndefined();
    chmodSync(paths.cacheDir, 0o700);
    expect(freshBundle(paths)).toBe(second);
  });

  it('checks sizes and modification times once the contents were found unchanged, and hashes again when one differs', async () => {
    const root = join(dir, 'stamped');
    file(
      root,
      'src/cli/main.ts',
      "import { helper } from '../lib/helper.ts';\nexport const main = async (): Promise<string> => helper();\n",
    );
    file(root, 'src/lib/helper.ts', "export const helper = (): string => 'helper-1';\n");
    const paths = bundlePaths(root);
    const built = await buildBundle(paths);
    expect(built).toBeDefined();
    const age = (path: string, seconds: number) => {
      const at = Date.now() / 1000 - seconds;
      utimesSync(join(root, path), at, at);
    };
    const stamps = () => (JSON.parse(readFileSync(paths.manifest, 'utf8')) as { stamps?: unknown[] }).stamps;
    // Just written: too recent to vouch for, so the contents are hashed and nothing is recorded.
    expect(freshBundle(paths)).toBe(built);
    expect(stamps()).toBeUndefined();
    age('src/cli/main.ts', 3600);
    age('src/lib/helper.ts', 3600);
    expect(freshBundle(paths)).toBe(built);
    // The two sources' and bin/cli-bundle.js's own (the key hashes it: a change to it rebuilds).
    expect(stamps()).toHaveLength(3);
    expect(freshBundle(paths)).toBe(built);
    const manifest = JSON.parse(readFileSync(paths.manifest, 'utf8')) as { stamps: string[] };
    const selfStamp = manifest.stamps[2];
    writeFileSync(
      paths.manifest,
      JSON.stringify({ ...manifest, stamps: [...manifest.stamps.slice(0, 2), '0:0'] }),
    );
    expect(freshBundle(paths)).toBe(built);
    expect(stamps()).toEqual([...manifest.stamps.slice(0, 2), selfStamp]);
    // The same size, an old time of its own: the stamp differs, the contents are hashed again.
    file(root, 'src/lib/helper.ts', "export const helper = (): string => 'helper-2';\n");
    age('src/lib/helper.ts', 1800);
    expect(freshBundle(paths)).toBeUndefined();
    // Back to what was bundled, at yet another time: unchanged contents, the bundle is current.
    file(root, 'src/lib/helper.ts', "export const helper = (): string => 'helper-1';\n");
    age('src/lib/helper.ts', 900);
    expect(freshBundle(paths)).toBe(built);
    expect(await run(built!)).toBe('helper-1');
  });

  it('runs the real CLI the same way from the bundle and through tsx', async () => {
    const sample = new URL('../../examples/sample-trace.jsonl', import.meta.url).pathname;
    const [bundled, tsx] = await Promise.all([
      runCli(['analyze', '--json', sample]),
      runCli(['analyze', '--json', sample], { env: { FLEETBENCH_BUNDLE: '0' } }),
    ]);
    expect(bundled.code).toBe(0);
    expect(tsx.code).toBe(0);
    expect(bundled.stderr).toBe('');
    expect(JSON.parse(bundled.stdout)).toEqual(JSON.parse(tsx.stdout));
    const bundle = freshBundle();
    expect(bundle).toBeDefined();
    // The processes the CLI starts have their entries in the same bundle.
    for (const entry of ['matrix-child.mjs', 'reference-worker.mjs', 'ao-child.mjs'])
      expect(readdirSync(dirname(bundle!))).toContain(entry);
    // yaml is compiled in from its ES module build (docs/contributing.md): no chunk imports the
    // package's CommonJS entry, and YAML read and written through it is the same.
    for (const name of readdirSync(dirname(bundle!)).filter((n) => n.endsWith('.mjs')))
      expect(readFileSync(join(dirname(bundle!), name), 'utf8'), name).not.toMatch(/from\s*["']yaml["']/);
    const model = join(dir, 'model.yaml');
    const learned = await runCli([
      'model',
      'learn',
      'test/fixtures/ao/learn-quiet.trace.jsonl.gz',
      '-o',
      model,
    ]);
    expect(learned.code, learned.stderr).toBe(0);
    const again = await runCli(['model', 'show', model]);
    expect(again.code, again.stderr).toBe(0);
  });
});
