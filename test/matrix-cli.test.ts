import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pruneCells } from '../src/matrix/prune.ts';
import type { Baseline } from '../src/results/baseline.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-matrix-');
const CELLS = 'S2-T1-1,S2-T1-5,S2-T1-10,S4-T1-1';

function withoutTiming(b: Baseline): Omit<Baseline, 'timing'> {
  const { timing: _timing, ...rest } = b;
  return rest;
}

// Whole runs through the real CLI: slow when the shared machine is busy.
describe('fleetbench matrix (real CLI, virtual time)', { timeout: 240_000 }, () => {
  const out2 = join(dir, 'jobs2');
  let baseline: Baseline;
  let markdown: string;

  it('runs a few cells on 2 child processes and writes baseline.json, baseline.md and run dirs', async () => {
    const r = await cli(['matrix', '--cells', CELLS, '--jobs', '2', '--out', out2]);
    expect(r.stderr).toContain('fleetbench matrix: 4 runs to do');
    expect(r.stderr).toMatch(/S2-T1-5 done in \d+\.\d\d s \(\d\/4 done, \d running, \d left\)/);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('fleetbench matrix: 4 units, 2 jobs');
    expect(r.stdout).toMatch(/S2-T1-10\s+pass\s+\d+/);

    baseline = JSON.parse(readFileSync(join(out2, 'baseline.json'), 'utf8'));
    markdown = readFileSync(join(out2, 'baseline.md'), 'utf8');
    expect(baseline.kind).toBe('fleetbench-baseline');
    expect(baseline.units.map((u) => u.id)).toEqual(['S2-T1-1', 'S2-T1-5', 'S2-T1-10', 'S4-T1-1']);
    expect(baseline.timing.jobs).toBe(2);
    for (const u of baseline.units) {
      expect(u.runs).toHaveLength(1);
      const run = u.runs[0]!;
      expect(run.analysis.run.cell).toBe(u.id);
      expect(run.analysis.run.sessions).toBe(u.cell!.scale);
      expect(run.analysis.api.totals.calls).toBeGreaterThan(0);
      expect(run.analysis.input.file).toBe(`cells/${u.id}/trace.jsonl`);
      expect(existsSync(join(out2, run.dir, 'trace.jsonl'))).toBe(true);
      const summary = JSON.parse(readFileSync(join(out2, run.dir, 'summary.json'), 'utf8'));
      expect(summary.analysis.api.totals).toEqual(run.analysis.api.totals);
    }
    // More sessions, more calls.
    const calls = baseline.units.slice(0, 3).map((u) => u.runs[0]!.analysis.api.totals.calls);
    expect(calls[1]).toBeGreaterThan(calls[0]!);
    expect(calls[2]).toBeGreaterThan(calls[1]!);
  });

  it('baseline.md has one section per cell in the format of docs/matrix.md#the-baseline', () => {
    const headings = markdown.match(/^### .*$/gm);
    expect(headings).toEqual([
      '### S2-T1-1: Quiet steady state, concentrated, 1 session',
      '### S2-T1-5: Quiet steady state, concentrated, 5 sessions',
      '### S2-T1-10: Quiet steady state, concentrated, 10 sessions',
      '### S4-T1-1: Review backlog burst, concentrated, 1 session',
    ]);
    const section = markdown.slice(markdown.indexOf('### S2-T1-5:'), markdown.indexOf('### S2-T1-10:'));
    expect(section).toContain('What this cell tells us: The polling floor');
    const core = baseline.units[1]!.runs[0]!.analysis.api.bracket!.byResource.core!;
    expect(core.before!.used).toBe(0);
    expect(core.deltaUsed).toBe(core.after!.used);
    expect(core.deltaUsed).toBeGreaterThan(0);
    expect(section).toContain(`| core | 0 | ${core.after!.used} | 5,000 | +${core.deltaUsed} |`);
    expect(section).toContain('#### Summary');
    expect(section).toContain('#### Analysis');
    expect(section).toContain('##### Track B scorecard');
    expect(section).toContain('| Track B scorecard | PASS: passes all 7 Track B rules |');
  });

  it('the pruning table is the pure rule applied to the scorecard metrics', () => {
    const expected = pruneCells(
      baseline.units.map((u) => ({
        id: u.id,
        ...u.cell!,
        metrics: Object.fromEntries(u.runs[0]!.analysis.scorecard.rows.map((r) => [r.id, r.measured])),
      })),
    );
    expect(baseline.pruning!.decisions.map((d) => [d.id, d.kept])).toEqual(
      expected.map((d) => [d.id, d.kept]),
    );
    const s4 = baseline.pruning!.decisions.find((d) => d.id === 'S4-T1-1')!;
    expect(s4).toMatchObject({ kept: true, neighbours: [] });
    for (const d of baseline.pruning!.decisions) {
      expect(markdown).toContain(`| ${d.id} | ${d.kept ? 'kept' : 'pruned'}`);
    }
  });

  it('is deterministic: --jobs 1 gives the same baseline (timing aside) and the same traces', async () => {
    const out1 = join(dir, 'jobs1');
    const r = await cli(['matrix', '--cells', CELLS, '--jobs', '1', '--out', out1]);
    expect(r.code, r.stderr).toBe(0);
    const again: Baseline = JSON.parse(readFileSync(join(out1, 'baseline.json'), 'utf8'));
    expect(again.timing.jobs).toBe(1);
    expect(withoutTiming(again)).toEqual(withoutTiming(baseline));
    expect(readFileSync(join(out1, 'baseline.md'), 'utf8')).toBe(markdown);
    expect(readFileSync(join(out1, 'cells/S2-T1-10/trace.jsonl'))).toEqual(
      readFileSync(join(out2, 'cells/S2-T1-10/trace.jsonl')),
    );
  });

  it('a cell failing its budget: exit 0 and says how to fail on it; --check exits 99', async () => {
    // Naive polling breaks the Track B headroom at 50 sessions (judged from 4 minutes' steady window).
    const args = ['matrix', '--cells', 'S2-T1-5', '--set', 'polling.strategy=naive', '--set', 'duration=8m'];
    const measured = await cli([...args, '--out', join(dir, 'naive')]);
    expect(measured.code, measured.stderr).toBe(0);
    expect(measured.stdout).toContain(
      'exit 0 all the same: the matrix measures; --check exits 99 on a judged breach (as demo does by default), for CI',
    );
    const gated = await cli([...args, '--check', '--out', join(dir, 'naive-check')]);
    expect(gated.code).toBe(99);
    expect(gated.stdout).not.toContain('exit 0 all the same');
  });

  it('rejects a bad selection or override before running anything', async () => {
    const bad = await cli(['matrix', '--cells', 'S9-T1-1', '--out', join(dir, 'bad')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("fleetbench: --cells: unknown cell or scenario 'S9-T1-1'");
    const glob = await cli(['matrix', '--cells', 'S2-T3-*', '--out', join(dir, 'bad')]);
    expect(glob.code).toBe(2);
    expect(glob.stderr).toContain("'S2-T3-*' matches no cell");
    const set = await cli([
      'matrix',
      '--cells',
      'S2-T1-1',
      '--set',
      'sessions.count=-1',
      '--out',
      join(dir, 'bad'),
    ]);
    expect(set.code).toBe(2);
    expect(set.stderr).toContain('--set sessions.count=-1: expected a positive integer');
    expect(existsSync(join(dir, 'bad'))).toBe(false);
  });
});
