/**
 * Issue 14, items 6, 7 and 9: the A2 runbook's inputs read the way the runbook means them. The
 * AO rows and bracket captures are written here by hand; every expected figure is worked out in
 * a comment from the runbook's rule, not read back from fleetbench's output.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { analyzeFile } from '../src/analyze/file.ts';
import { readTrace } from '../src/trace/reader.ts';
import type { ApiRecord, BodyRecord } from '../src/trace/schema.ts';
import { resolveScenarioRef } from '../src/workload/builtins.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const RESET = 1_767_229_200; // 2026-01-01T01:00:00Z, one window for the whole run

const row = (end: string, durationMs: number, extra: Record<string, unknown>) =>
  JSON.stringify({
    timestamp: `2026-01-01T00:00:${end}Z`,
    component: 'scm-github',
    operation: 'gh.api.x',
    sessionId: 'ao-1',
    durationMs,
    ...extra,
  });
const api = (endpoint: string) => ({ args: ['api', '-i', endpoint], endpoint, method: 'GET' });

// A: 200 (1 point), starts 10.0 s. B: 200 (1 point), starts 20.0 s. C: `gh pr list` killed by
// SIGKILL (no status). D: `gh api` exited 137 = 128 + 9, killed, `ok` wrongly true. E: a 304 (ok
// false, exit 1): not a failure. F: `gh api` exited 1 with no answer: failed, not killed.
const ROWS = [
  row('10.500', 500, { ...api('repos/o/r/pulls'), ok: true, exitCode: 0, httpStatus: 200 }),
  row('20.300', 300, { ...api('repos/o/r/pulls/1'), ok: true, exitCode: 0, httpStatus: 200 }),
  row('30.000', 1_000, { args: ['pr', 'list'], operation: 'gh.pr.list', ok: false, signal: 'SIGKILL' }),
  row('40.000', 100, { ...api('repos/o/r/issues'), ok: true, exitCode: 137 }),
  row('45.000', 100, { ...api('repos/o/r/pulls'), ok: false, exitCode: 1, httpStatus: 304 }),
  row('50.000', 200, { ...api('repos/o/r/issues/2'), ok: false, exitCode: 1 }),
];

function capture(name: string, capturedAt: string, used: number): string {
  const path = join(dir, name);
  // What `gh api /rate_limit --jq '{ core: .resources.core, captured_at: now | todate }'` prints.
  writeFileSync(
    path,
    `${JSON.stringify({ core: { limit: 5000, used, remaining: 5000 - used, reset: RESET, resource: 'core' }, captured_at: capturedAt }, null, 2)}\n`,
  );
  return path;
}

describe('6. the runbook’s bracket files', () => {
  it('import ao-gh --bracket-before/--bracket-after gives the bracket rows an emulated run gives', async () => {
    const trace = join(dir, 'gh.jsonl');
    writeFileSync(trace, `${ROWS.join('\n')}\n`);
    const before = capture('before.json', '2026-01-01T00:00:00Z', 100);
    const after = capture('after.json', '2026-01-01T00:01:00Z', 105);
    const out = join(dir, 'gh.fleetbench.jsonl');
    const result = await cli([
      'import',
      'ao-gh',
      trace,
      '-o',
      out,
      '--bracket-before',
      before,
      '--bracket-after',
      after,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('and the before and after rate-limit bracket');

    const { analysis } = await analyzeFile(out, { threads: 1 });
    // t = 0 is the "before" capture (00:00:00, before the first call at 10 s); "after" is at 60 s.
    // Same reset: used 105 − 100 = 5 points; the trace saw A and B (1 point each) = 2; 3 unseen.
    expect(analysis.api.bracket).toMatchObject({
      beforeAtMs: 0,
      afterAtMs: 60_000,
      byResource: {
        core: {
          before: { limit: 5000, remaining: 4900, used: 100, reset: RESET },
          after: { limit: 5000, remaining: 4895, used: 105, reset: RESET },
          sameWindow: true,
          deltaBasis: 'same-window',
          deltaUsed: 5,
          tracePoints: 2,
          unseenPoints: 3,
        },
      },
    });

    // The same calls with the snapshots as the emulator writes them (labels.label before/after):
    // the same bracket rows.
    const { records } = await readTrace(out);
    const emulated = createAnalyzer();
    for (const r of records as BodyRecord[]) {
      if (r.kind === 'event' && r.name === 'ratelimit.snapshot') {
        const phase = (r.data as { phase: string }).phase;
        emulated.add({
          ...r,
          labels: { label: phase },
          data: { resources: (r.data as { resources: unknown }).resources },
        });
      } else emulated.add(r);
    }
    expect(emulated.finish().api.bracket!.byResource).toEqual(analysis.api.bracket!.byResource);
  }, 60_000);

  it('a bracket file that cannot be read is an error naming it, before anything is written', async () => {
    const trace = join(dir, 'gh2.jsonl');
    writeFileSync(trace, `${ROWS[0]}\n`);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ core: { limit: 5000, used: 1, remaining: 4999, reset: RESET } }));
    const r = await cli(['import', 'ao-gh', trace, '-o', join(dir, 'never.jsonl'), '--bracket-before', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bad}: rate-limit bracket: captured_at`);
  }, 60_000);
});

describe('9. a gh call killed by a signal is a failure', () => {
  it('signal or exit ≥ 128 is counted as failed and killed; a 304 is not a failure', async () => {
    const trace = join(dir, 'killed.jsonl');
    writeFileSync(trace, `${ROWS.join('\n')}\n`);
    const out = join(dir, 'killed.fleetbench.jsonl');
    const result = await cli(['import', 'ao-gh', trace, '-o', out]);
    expect(result.code).toBe(0);
    const { records } = await readTrace(out);
    const errors = (records as ApiRecord[]).map((r) => r.error ?? null);
    expect(errors).toEqual([null, null, 'signal SIGKILL', 'signal (exit 137)', null, 'exit 1']);
    const { analysis } = await analyzeFile(out, { threads: 1 });
    // Failed: C, D (killed) and F (exit 1, no answer) = 3; killed: C and D = 2. E (304) is not.
    expect(analysis.api.totals).toMatchObject({ failed: 3, killed: 2, errors: 0 });
    const shown = await cli(['analyze', out]);
    expect(shown.stdout).toMatch(
      /failed calls\.+: 3 \(answered ≥ 400, or no answer and the client failed; 2 killed by a signal\)/,
    );
  }, 60_000);
});

describe('7. S5 measures 5 minutes after the restart', () => {
  it('the built-in S5 ends 5 min after its restart', () => {
    // The runbook: restart mid-run, then measure 5 min after it: duration = restart at + 5 min.
    for (const ref of ['S5-T1-1', 'S5-T1-10', 'S5-T2-50']) {
      const s5 = resolveScenarioRef(ref).scenario;
      const restart = s5.faults.find((f) => f.type === 'restart')!;
      expect(restart.atMs, ref).toBeDefined();
      expect(s5.durationMs - restart.atMs!, ref).toBe(5 * 60_000);
    }
  });
});
