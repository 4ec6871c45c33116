/**
 * Running the trace validators from their generated code. The code is what ajv compiles from the
 * published schema (fast-check.ts), as a standalone CommonJS module; evaluating it takes about a
 * millisecond where compiling the schema takes 0.1-0.2 s. So the main thread compiles once (or
 * finds the code cached) and every analysis worker evaluates the same code: no worker compiles,
 * and no worker loads ajv's compiler.
 *
 * The record kinds live here too: the line parser needs them, and what a worker loads should not
 * pull in ajv's compiler (fast-check.ts) or zod (explain.ts).
 */
import { createRequire } from 'node:module';

export const bodyKinds = ['api', 'span', 'event', 'gauge'] as const;
export type BodyKind = (typeof bodyKinds)[number];
/** Kinds whose lines are checked with ajv: the header, the body kinds and the footer. */
export type CheckedKind = 'run' | BodyKind | 'end';
export type KindJsonSchemas = Record<CheckedKind, Record<string, unknown>>;
export const checkedKinds: CheckedKind[] = ['run', 'api', 'span', 'event', 'gauge', 'end'];

export function isBodyKind(kind: unknown): kind is BodyKind {
  return kind === 'api' || kind === 'span' || kind === 'event' || kind === 'gauge';
}

export type FastChecks = Record<CheckedKind, (value: unknown) => boolean>;

/** The only modules generated validators require: ajv's small runtime helpers. */
const RUNTIME = 'ajv/dist/runtime/';

export function loadChecks(code: string): FastChecks {
  const require = createRequire(import.meta.url);
  const module = { exports: {} as Record<string, unknown> };
  const requireRuntime = (id: string) => {
    if (!id.startsWith(RUNTIME)) throw new Error(`generated validator requires ${id}`);
    return require(id) as unknown;
  };
  new Function('module', 'exports', 'require', code)(module, module.exports, requireRuntime);
  const checks = module.exports as unknown as FastChecks;
  for (const kind of checkedKinds) {
    if (typeof checks[kind] !== 'function') throw new Error(`generated validators lack '${kind}'`);
  }
  return checks;
}
