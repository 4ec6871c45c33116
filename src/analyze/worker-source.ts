/**
 * How analysis workers are started. Worker threads cannot load the TypeScript sources (they do
 * not inherit the tsx loader when the CLI runs under it; registering tsx in each worker costs it
 * a loader thread of its own, about 30 MB and half a second). Instead the worker's module graph
 * (worker.ts: the line parser, the validators' runtime, the analyzer; no zod, no ajv compiler)
 * is bundled with esbuild (already installed: tsx runs on it) into one CommonJS script that a
 * worker runs directly.
 *
 * Bundling takes a few hundred milliseconds, on the critical path of every parallel run, so the
 * bundle is cached in a private temp directory (cache-dir.ts), next to the list
 * of its input files with their sizes and modification times; it is rebuilt when any of them
 * changes. Should the cache be unwritable the bundle is kept in memory, and should bundling fail
 * altogether, workers fall back to worker.mjs, which registers tsx itself. An installed package
 * has the bundle built ahead of time (dist/analyze-worker.cjs, prebuilt.ts) and needs none of this.
 */
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkerOptions } from 'node:worker_threads';
import type { BuildOptions } from 'esbuild';
import { privateCacheDir } from '../base/cache-dir.ts';
import { prebuiltFile } from '../base/prebuilt.ts';
import { VERSION } from '../base/version.ts';

interface InputStamp {
  path: string;
  size: number;
  mtimeMs: number;
}

const entryPoint = fileURLToPath(new URL('./worker.ts', import.meta.url));
let resolved: { filename: string | URL; options: WorkerOptions } | undefined;

function stamp(path: string): InputStamp {
  const stats = statSync(path);
  return { path, size: stats.size, mtimeMs: stats.mtimeMs };
}

/** The bundle and the list of its inputs, in the private cache directory (see cache-dir.ts). */
function cachePaths(dir: string): { script: string; inputs: string } {
  const key = createHash('sha256')
    .update(`${entryPoint}\0${VERSION}\0${process.version}`)
    .digest('hex')
    .slice(0, 16);
  return { script: join(dir, `worker-${key}.cjs`), inputs: join(dir, `worker-${key}.inputs.json`) };
}

function cached(paths: { script: string; inputs: string }): boolean {
  try {
    const inputs = JSON.parse(readFileSync(paths.inputs, 'utf8')) as InputStamp[];
    statSync(paths.script);
    return inputs.every((input) => {
      const now = stamp(input.path);
      return now.size === input.size && now.mtimeMs === input.mtimeMs;
    });
  } catch {
    return false;
  }
}

/**
 * esbuild's options for the worker's bundle; `importMetaUrl` is the expression that stands for
 * version.ts's import.meta.url (the only import.meta in the worker's graph: it reads package.json).
 */
export function workerBuildOptions(importMetaUrl: string): BuildOptions {
  return {
    entryPoints: [entryPoint],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'silent',
    absWorkingDir: fileURLToPath(new URL('../..', import.meta.url)),
    define: { 'import.meta.url': importMetaUrl },
  };
}

/** The worker's bundle and the files it was built from (null when esbuild fails). */
export function bundleWorker(): { code: string; inputs: string[] } | null {
  try {
    // Loaded lazily: single-threaded runs never pay for it.
    const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
    const result = buildSync({
      ...workerBuildOptions(JSON.stringify(new URL('../base/version.ts', import.meta.url).href)),
      write: false,
      metafile: true,
    });
    const code = result.outputFiles[0]?.text;
    if (code === undefined) return null;
    const root = fileURLToPath(new URL('../..', import.meta.url));
    return { code, inputs: Object.keys(result.metafile.inputs).map((input) => join(root, input)) };
  } catch {
    return null;
  }
}

/** What to pass to `new Worker(...)`. */
export function workerEntry(): { filename: string | URL; options: WorkerOptions } {
  if (resolved) return resolved;
  const prebuilt = prebuiltFile('analyze-worker.cjs');
  if (prebuilt !== undefined) {
    resolved = { filename: prebuilt, options: {} };
    return resolved;
  }
  const dir = privateCacheDir();
  const paths = cachePaths(dir ?? '');
  const usable = dir !== undefined;
  if (usable && cached(paths)) {
    resolved = { filename: paths.script, options: {} };
    return resolved;
  }
  const built = bundleWorker();
  if (built === null) {
    resolved = { filename: new URL('./worker.mjs', import.meta.url), options: {} };
    return resolved;
  }
  try {
    if (!usable) throw new Error('no private cache directory');
    const suffix = `.${process.pid}.tmp`;
    writeFileSync(paths.script + suffix, built.code);
    writeFileSync(paths.inputs + suffix, JSON.stringify(built.inputs.map(stamp)));
    renameSync(paths.script + suffix, paths.script);
    renameSync(paths.inputs + suffix, paths.inputs);
    resolved = { filename: paths.script, options: {} };
  } catch {
    resolved = { filename: built.code, options: { eval: true } };
  }
  return resolved;
}
