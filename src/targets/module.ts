/**
 * The `module` target: a user's TypeScript or JavaScript module that implements the Target
 * interface, like a k6 script implements a VU's iteration. `target: module:./my-target.ts`
 * (a path relative to the working directory, or absolute) loads it; TypeScript runs as it is
 * (through tsx). The module's default export (or its `createTarget` export) is a
 * factory that receives a TargetContext and returns the Target; see docs/live-runs.md and
 * examples/module-target.ts.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FleetbenchError } from '../base/errors.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import type { TargetRef } from '../contract/target-ref.ts';
import type { Target } from '../contract/types.ts';
import type { GitHubTransport } from '../github/types.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { Scenario } from '../workload/scenario.ts';

/** What a module target's factory gets from the run. */
export interface TargetContext {
  /** The run's clock: all times and timers (under the virtual clock, never await real I/O). */
  clock: Clock;
  /** Seeded randomness for the target (`rng.fork(name)` per use). */
  rng: Rng;
  /** The run's trace: write spans and events (e.g. `session.state`) here. */
  trace: TraceSink;
  /** The GitHub of this run: the emulator, in-process and (real clock) over HTTP at `url`. */
  github: { transport: GitHubTransport; token: string; url?: string };
  /** The resolved scenario (its polling, sessions, ... settings). */
  scenario: Scenario;
}

export type TargetFactory = (context: TargetContext) => Target | Promise<Target>;

const REQUIRED = ['start', 'stop', 'createSession', 'sessionCounts', 'onSessionState'] as const;

export function modulePath(ref: Extract<TargetRef, { kind: 'module' }>): string {
  return isAbsolute(ref.path) ? ref.path : resolve(process.cwd(), ref.path);
}

/** tsx's isolated import, when tsx is installed (a checkout has it; a package install may not). */
async function tsxImport(): Promise<typeof import('tsx/esm/api').tsImport | undefined> {
  try {
    return (await import('tsx/esm/api')).tsImport;
  } catch {
    return undefined;
  }
}

/**
 * TypeScript goes through tsx's isolated import: the CLI normally runs from compiled modules
 * without tsx's loader registered (bin/cli-bundle.js), and a `.ts` file outside an ESM package (no
 * `"type": "module"` above it) would be CommonJS to Node anyway. tsx is not one of the package's
 * dependencies: without it, a Node that strips types itself (22.18 and later) imports the file
 * directly, and an older one is told how to get tsx. JavaScript is a plain import, with the same
 * fallback for an ES module Node takes for CommonJS.
 */
async function importModule(target: string, path: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(path).href;
  const typescript = /\.[cm]?tsx?$/.test(path);
  if (!typescript) {
    try {
      return (await import(url)) as Record<string, unknown>;
    } catch (error) {
      if (!/require\(\) ES Module|ERR_REQUIRE/.test(String((error as Error)?.message))) throw error;
    }
  }
  const tsImport = await tsxImport();
  if (tsImport === undefined) {
    if (typescript && (process.features as { typescript?: unknown }).typescript)
      return (await import(url)) as Record<string, unknown>;
    throw new FleetbenchError(
      'E_TARGET',
      `target ${target}: loading TypeScript needs tsx, which is not installed`,
      {
        hint: `npm i -D -E ${TSX_PACKAGE} in your project, run on Node 22.18 or later (it strips types itself), or compile the module to JavaScript`,
      },
    );
  }
  const loaded = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  const inner = loaded.default as Record<string, unknown> | undefined;
  // CommonJS interop wraps the exports once more.
  return inner && typeof inner === 'object' && ('default' in inner || 'createTarget' in inner)
    ? inner
    : loaded;
}

/** The tsx release fleetbench is developed with (package.json devDependencies). */
const TSX_PACKAGE = 'tsx@4.23.15';

export async function loadModuleTarget(
  ref: Extract<TargetRef, { kind: 'module' }>,
  context: TargetContext,
): Promise<Target> {
  const target = ref.text;
  const path = modulePath(ref);
  if (!existsSync(path)) throw new FleetbenchError('E_TARGET', `target ${target}: no such file ${path}`);
  let loaded: Record<string, unknown>;
  try {
    loaded = await importModule(target, path);
  } catch (error) {
    if (error instanceof FleetbenchError) throw error;
    throw new FleetbenchError('E_TARGET', `target ${target}: cannot load it: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const factory = (loaded.createTarget ?? loaded.default) as TargetFactory | undefined;
  if (typeof factory !== 'function') {
    throw new FleetbenchError(
      'E_TARGET',
      `target ${target}: the module must export a factory (default export or createTarget) that returns a Target`,
    );
  }
  const instance = await factory(context);
  const missing = REQUIRED.filter(
    (m) => typeof (instance as unknown as Record<string, unknown>)?.[m] !== 'function',
  );
  if (missing.length > 0)
    throw new FleetbenchError(
      'E_TARGET',
      `target ${target}: the Target it returned lacks ${missing.join(', ')}`,
    );
  return instance;
}
