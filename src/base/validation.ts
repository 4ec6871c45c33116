/**
 * Turns zod issues into the one-line messages users read: `sessions.count: expected a positive
 * integer`. Shared by every schema-validated input (traces, scenarios, fixtures, budgets).
 */
import type { z } from 'zod';

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

/** All issues, one per line, each `path: reason` (or just the reason at the root). */
export function describeZodIssues(issues: readonly z.core.$ZodIssue[], max = 5): string[] {
  return issues.slice(0, max).map((issue) => {
    const path = issuePath(issue.path);
    return path ? `${path}: ${describeIssue(issue)}` : describeIssue(issue);
  });
}

export function describeZodError(error: z.ZodError): string {
  return describeZodIssues(error.issues, 1)[0] ?? 'invalid';
}
