import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Baseline } from '../src/results/baseline.ts';
import { scorecardCounts } from '../src/results/checks.ts';
import { PRIORITY_CELLS } from '../src/workload/cells.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

// Whole runs through the real CLI: slow when the shared machine is busy.
describe('fleetbench demo (what npm start runs)', { timeout: 240_000 }, () => {
  it('runs the priority cells, judges them, and writes baseline.md, baseline.json and report.html', async () => {
    const out = join(scratchDir('fleetbench-demo-'), 'out');
    const r = await cli(['demo', '--out', out, '--jobs', '1']);
    expect(r.code, r.stderr).toBe(0);
    const b: Baseline = JSON.parse(readFileSync(join(out, 'baseline.json'), 'utf8'));
    expect(
      b.units
        .map((u) => u.id)
        .slice(0, PRIORITY_CELLS.length)
        .sort(),
    ).toEqual([...PRIORITY_CELLS].sort());
    for (const u of b.units) expect(u.runs[0]!.analysis.scorecard.rows).toHaveLength(7);
    expect(readFileSync(join(out, 'baseline.md'), 'utf8')).toContain(
      '### S2-T1-50: Quiet steady state, concentrated, 50 sessions',
    );
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('fleetbench demo: ');
    expect(html.length).toBeGreaterThan(50_000);
    expect(existsSync(join(out, 'cells', 'S2-T1-50', 'trace.jsonl'))).toBe(true);

    expect(r.stdout).toMatch(/fleetbench demo: \d+ runs in virtual time on 1 job,/);
    expect(r.stdout).toMatch(/S2-T1-50\s+pass\s+\d+/);
    expect(r.stdout).toMatch(
      /Budgets: all 9 runs pass their budgets: the 7 cells on the Track B scorecard \(API cost\), chaos-codex-c4 on native-speed, turnover on turnover\./,
    );
    // The chaos wave and the turnover run are judged on their own budgets, not on Track B.
    const byId = new Map(b.units.map((u) => [u.id, u]));
    for (const id of PRIORITY_CELLS) expect(scorecardCounts(byId.get(id)!.budgets)).toBe(true);
    const wave = byId.get('chaos-codex-c4')!;
    expect(wave.budgets).toEqual(['native-speed']);
    expect(scorecardCounts(wave.budgets)).toBe(false);
    const waveChecks = wave.runs[0]!.checks!;
    expect(waveChecks.every((c) => c.budget === 'native-speed')).toBe(true);
    const cp = waveChecks.find((c) => c.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({ scope: 'adapter=codex', judged: true, verdict: 'pass' });
    expect(cp.measured).toMatch(/^p50 .+ · p95 .+ \(n \d+\)$/);
    const turnover = byId.get('turnover')!;
    expect(turnover.budgets).toEqual(['turnover']);
    expect(scorecardCounts(turnover.budgets)).toBe(false);
    expect(turnover.runs[0]!.checks!.find((c) => c.metric === 'turnover.swaps-done')).toMatchObject({
      budget: 'turnover',
      judged: true,
      verdict: 'pass',
      measured: '100%',
    });
    expect(r.stdout).toMatch(/chaos-codex-c4\s+n\/a: native-speed\s+\d/);
    expect(r.stdout).toContain(`report......: ${join(out, 'report.html')}`);
    expect(r.stdout).toContain(`baseline....: ${join(out, 'baseline.md')}`);
  });

  it('exits 99 when a judged budget is broken (like a failed k6 threshold), 0 with --no-check', async () => {
    const out = join(scratchDir('fleetbench-demo-fail-'), 'out');
    // The naive strategy lists every open PR each cycle: the cells break the REST headroom rule.
    const broken = [
      'demo',
      '--out',
      out,
      '--jobs',
      '1',
      '--set',
      'polling.strategy=naive',
      '--set',
      'duration=6m',
    ];
    const r = await cli(broken);
    expect(r.code, r.stderr).toBe(99);
    expect(r.stdout).toMatch(/Budgets: \d+ of 9 runs fail a judged budget:/);
    expect(r.stdout).toMatch(/S2-T1-50 fails \d of 7 Track B rules: REST core headroom/);
    expect(r.stdout).toContain('next: npx fleetbench matrix');
    const optedOut = await cli([...broken, '--no-check']);
    expect(optedOut.code, optedOut.stderr).toBe(0);
    expect(optedOut.stdout).toMatch(/Budgets: \d+ of 9 runs fail a judged budget:/);
  });
});
