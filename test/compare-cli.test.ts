import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Comparison } from '../src/matrix/compare.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-compare-');

// Whole runs through the real CLI: slow when the shared machine is busy.
describe('fleetbench compare (real CLI)', { timeout: 240_000 }, () => {
  const out = join(dir, 'naive');

  it('flags the naive polling strategy against the guarded one as a significant regression', async () => {
    const r = await cli([
      'compare',
      'S2-T1-50',
      'S2-T1-50',
      '--set',
      'duration=6m',
      '--set-b',
      'polling.strategy=naive',
      '--repeat',
      '6',
      '--jobs',
      '1',
      '--out',
      out,
    ]);
    expect(r.code, r.stderr).toBe(99);
    expect(r.stdout).toContain('A: S2-T1-50 --set duration=6m (6 runs a cell, seeds 1,2,3,4,5,6;');
    expect(r.stdout).toContain(
      'B: S2-T1-50 --set duration=6m --set polling.strategy=naive (6 runs a cell, seeds 7,8,9,10,11,12;',
    );
    expect(r.stdout).toMatch(/REST core headroom at 50 sessions \(%, higher is better\) \*.*✗ REGRESSION/);
    expect(r.stdout).toContain('verdict: REGRESSION: B is worse than A beyond run-to-run noise');
  });

  it('works on the two matrix directories it wrote, and says so in JSON', async () => {
    const r = await cli(['compare', join(out, 'A'), join(out, 'B'), '--json']);
    expect(r.code, r.stderr).toBe(99);
    const c: Comparison = JSON.parse(r.stdout);
    expect(c.units.map((u) => [u.id, u.runsA, u.runsB])).toEqual([['S2-T1-50', 6, 6]]);
    expect(c.inconclusive).toBeUndefined();
    const headroom = c.units[0]!.metrics.find((m) => m.def.id === 'scorecard.rest-core-headroom')!;
    expect(headroom.def).toMatchObject({ better: 'higher', judged: true });
    expect(headroom.a).toHaveLength(6);
    expect(headroom.medianB!).toBeLessThan(headroom.medianA!);
    expect(headroom.pAdjusted!).toBeLessThan(0.05);
    expect(c.regressions.map((m) => m.def.id)).toContain('scorecard.rest-core-headroom');
    // A metric neither side has (no turnover in a cost run) is in neither, never "only in B".
    const swaps = c.units[0]!.metrics.find((m) => m.def.id === 'turnover.swaps-done')!;
    expect(swaps).toMatchObject({ verdict: 'in neither', medianA: null, medianB: null });
    const calls = c.units[0]!.metrics.find((m) => m.def.id === 'api.calls')!;
    expect(calls.verdict).toBe('regression');
    expect(calls.change!).toBeGreaterThan(0.5); // naive makes more than 1.5× the calls
  });

  it('two sets of seeds of the same code: nothing significant, exit 0', async () => {
    const r = await cli([
      'compare',
      'S2-T1-5',
      'S2-T1-5',
      '--set',
      'duration=6m',
      '--repeat',
      '6',
      '--jobs',
      '1',
      '--out',
      join(dir, 'same'),
    ]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).not.toContain('REGRESSION');
    expect(r.stdout).toContain('verdict: no judged metric changed beyond run-to-run noise');
  });

  it('three runs a side cannot show a change at α = 0.05: inconclusive, exit 4, with the repeats that could', async () => {
    const r = await cli([
      'compare',
      'S2-T1-50',
      'S2-T1-50',
      '--set',
      'duration=6m',
      '--set-b',
      'polling.strategy=naive',
      '--repeat',
      '3',
      '--jobs',
      '1',
      '--out',
      join(dir, 'three'),
    ]);
    expect(r.code, r.stderr).toBe(4);
    // Headroom fell from about 99.8 % to below -200 %: not "no change", which the data cannot say
    // (rows whose runs are all equal on both sides are, and say so).
    expect(r.stdout).toMatch(
      /REST core headroom at 50 sessions \(%, higher is better\) \*.*inconclusive \(too few runs a side to tell\)/,
    );
    expect(r.stdout).not.toMatch(/REST core headroom.*no change/);
    expect(r.stdout).toMatch(
      /verdict: inconclusive: 3 runs per side cannot show a change at this alpha; use --repeat ≥ [5-9]\b/,
    );
    const json = await cli(['compare', join(dir, 'three', 'A'), join(dir, 'three', 'B'), '--json']);
    expect(json.code).toBe(4);
    const c: Comparison = JSON.parse(json.stdout);
    expect(c.inconclusive).toMatchObject({ runsPerSide: 3 });
    expect(c.inconclusive!.smallestAdjustedP).toBeGreaterThanOrEqual(0.05);
    expect(c.regressions).toEqual([]);
  });

  it('single runs are compared but not judged: inconclusive, exit 4', async () => {
    const r = await cli([
      'compare',
      join(out, 'A', 'cells', 'S2-T1-50', 'seed-1'),
      join(out, 'B', 'cells', 'S2-T1-50', 'seed-7'),
    ]);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stdout).toContain('untested (one run a side)');
    expect(r.stdout).toMatch(
      /verdict: inconclusive: 1 run per side cannot show a change at this alpha; use --repeat ≥ \d+/,
    );
  });

  it('never compares a run that did not complete, whichever run and however it ended: exit 3, named', async () => {
    // B's results, each time with one run made incomplete in one of the ways a run ends short:
    // the comparison must refuse, never pool its partial figures (B already regresses, so a
    // pooled comparison would exit 99 and an A-against-A one 0: 3 is the refusal alone).
    const baseline = JSON.parse(readFileSync(join(out, 'B', 'baseline.json'), 'utf8'));
    const runs = baseline.units[0].runs.length as number;
    let case_ = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: runs - 1 }),
        fc.constantFrom(
          'matrix interrupted',
          'run failed',
          'run interrupted',
          'trace footer failed',
          'trace footer interrupted',
          'trace without footer',
          'trace truncated',
        ),
        fc.constantFrom('baseline', 'summary'),
        async (index, how, form) => {
          const b = structuredClone(baseline);
          const run = b.units[0].runs[index];
          if (how === 'matrix interrupted') b.partial = true;
          else if (how === 'run failed') run.reason = 'failed';
          else if (how === 'run interrupted') run.reason = 'interrupted';
          else if (how === 'trace footer failed') run.analysis.input.footer = 'failed';
          else if (how === 'trace footer interrupted') run.analysis.input.footer = 'interrupted';
          else if (how === 'trace without footer') run.analysis.input.footer = null;
          else run.analysis.input.truncated = true;
          const side = join(dir, `incomplete-${case_++}`);
          mkdirSync(side, { recursive: true });
          if (form === 'baseline') writeFileSync(join(side, 'baseline.json'), JSON.stringify(b));
          else {
            // The same run as a summary.json among completed ones (a directory of run directories).
            const summary = JSON.parse(
              readFileSync(join(out, 'B', 'cells', 'S2-T1-50', `seed-${run.seed}`, 'summary.json'), 'utf8'),
            );
            summary.analysis = run.analysis;
            if (how === 'run failed' || how === 'matrix interrupted')
              summary.outcome = { ...summary.outcome, reason: 'failed', partial: true };
            else if (how === 'run interrupted')
              summary.outcome = { ...summary.outcome, reason: 'interrupted', partial: true };
            mkdirSync(join(side, 'bad'), { recursive: true });
            writeFileSync(join(side, 'bad', 'summary.json'), JSON.stringify(summary));
            cpSync(
              join(out, 'B', 'cells', 'S2-T1-50', `seed-${baseline.units[0].runs[(index + 1) % runs].seed}`),
              join(side, 'good'),
              {
                recursive: true,
              },
            );
          }
          const r = await cli(['compare', join(out, 'A'), side]);
          expect(r.code, `${how} (${form}): ${r.stderr}`).toBe(3);
          expect(r.stderr).toContain('a run that did not complete is not compared');
          expect(r.stdout).toBe('');
        },
      ),
      { numRuns: 12 },
    );
  });

  it('explains what it accepts when a path is not a result', async () => {
    const empty = scratchDir('fleetbench-empty-');
    const r = await cli(['compare', empty, join(out, 'B')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('expected a run directory (with summary.json)');
  });
});
