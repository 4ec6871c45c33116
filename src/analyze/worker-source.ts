/**
 * How analysis workers are started. Worker threads do not inherit the tsx loader the CLI runs
 * under; registering tsx in each worker costs it a loader thread of its own (about 30 MB and
 * half a second). Instead the worker's module graph (worker.ts: the line parser, ajv, the
 * analyzer; no zod) is bundled once per process with esbuild (already installed: tsx runs on
 * it) into one CommonJS script that a worker evaluates directly. Nothing is written to disk.
 * Should bundling fail, workers fall back to worker.mjs, which registers tsx itself.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { WorkerOptions } from 'node:worker_threads';

let bundled: string | null | undefined;

function bundle(): string | null {
  try {
    // Loaded lazily: single-threaded runs never pay for it.
    const { buildSync } = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
    const result = buildSync({
      entryPoints: [fileURLToPath(new URL('./worker.ts', import.meta.url))],
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      write: false,
      logLevel: 'silent',
      // The only import.meta in the worker's graph is version.ts reading package.json.
      define: { 'import.meta.url': JSON.stringify(new URL('../version.ts', import.meta.url).href) },
    });
    return result.outputFiles[0]?.text ?? null;
  } catch {
    return null;
  }
}

/** What to pass to `new Worker(...)`: a bundled script to evaluate, or the tsx bootstrap file. */
export function workerEntry(): { filename: string | URL; options: WorkerOptions } {
  if (bundled === undefined) bundled = bundle();
  if (bundled !== null) return { filename: bundled, options: { eval: true } };
  return { filename: new URL('./worker.mjs', import.meta.url), options: {} };
}
