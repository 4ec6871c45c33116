/**
 * Turns zod issues into the one-line messages users read: `sessions.count: expected a positive
 * integer`. Shared by every schema-validated input (traces, scenarios, fixtures, budgets).
 */
import type { z } from 'zod';
import { didYouMean } from './closest-names.ts';

export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      // Zod's default text starts with "Invalid input"; a schema's own message is kept as written.
      return issue.message.startsWith('Invalid input') ? `expected ${issue.expected}` : issue.message;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
    case 'invalid_value':
      return issue.message.startsWith('Invalid')
        ? `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`
        : issue.message;
    case 'invalid_union':
      if ('note' in issue && issue.note === 'No matching discriminator') return 'unknown or missing kind';
      return issue.message;
    default:
      return issue.message;
  }
}

/**
 * The issue a user can act on inside a union: of `a string, or a mapping of keys` (the scenario's
 * `target`), the one branch the value was of the right type for, its own issue with the union's
 * path before it (`target.kill: expected one of …`, not `target: Invalid input`). Any other issue,
 * or a union no single branch's type fits, is returned as it is.
 */
export function specificIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union' || !('errors' in issue) || !Array.isArray(issue.errors)) return issue;
  const fitting = issue.errors.filter(
    (branch) => branch.length > 0 && !branch.some((i) => i.code === 'invalid_type' && i.path.length === 0),
  );
  if (fitting.length !== 1) return issue;
  const inner = specificIssue(fitting[0]![0]!);
  return { ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue;
}

/** All issues, one per line, each `path: reason` (or just the reason at the root). With the
 * schema, an unknown field names the known one it is closest to (`Did you mean 'strategy'?`). */
export function describeZodIssues(
  issues: readonly z.core.$ZodIssue[],
  max = 5,
  schema?: z.ZodType,
): string[] {
  return issues.slice(0, max).map((given) => {
    const issue = specificIssue(given);
    const path = issuePath(issue.path);
    let reason = describeIssue(issue);
    if (schema && issue.code === 'unrecognized_keys' && issue.keys.length === 1)
      reason += didYouMean(issue.keys[0]!, knownKeysAt(schema, issue.path));
    return path ? `${path}: ${reason}` : reason;
  });
}

type Def = {
  type: string;
  innerType?: unknown;
  in?: unknown;
  element?: unknown;
  options?: unknown[];
  shape?: unknown;
};
const defOf = (schema: unknown): Def | undefined => (schema as { _zod?: { def?: Def } })?._zod?.def;

/**
 * The field names a schema's object at `path` has (through defaults, optionals, pipes, arrays and
 * the options of a union), for suggestions; none when it cannot tell.
 */
export function knownKeysAt(schema: unknown, path: readonly PropertyKey[]): string[] {
  const objects = objectsAt(schema, path, 0);
  return [...new Set(objects.flatMap((shape) => Object.keys(shape)))];
}

function objectsAt(
  schema: unknown,
  path: readonly PropertyKey[],
  depth: number,
): Array<Record<string, unknown>> {
  const def = defOf(schema);
  if (!def || depth > 64) return [];
  switch (def.type) {
    case 'default':
    case 'optional':
    case 'nullable':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return objectsAt(def.innerType, path, depth + 1);
    case 'pipe':
      return objectsAt(def.in, path, depth + 1);
    case 'union':
      return (def.options ?? []).flatMap((o) => objectsAt(o, path, depth + 1));
    case 'array':
      return path.length === 0 ? [] : objectsAt(def.element, path.slice(1), depth + 1);
    case 'object': {
      const shape = (schema as { shape: Record<string, unknown> }).shape;
      if (path.length === 0) return [shape];
      const next = shape[String(path[0])];
      return next === undefined ? [] : objectsAt(next, path.slice(1), depth + 1);
    }
    default:
      return [];
  }
}

export function describeZodError(error: z.ZodError): string {
  return describeZodIssues(error.issues, 1)[0] ?? 'invalid';
}
