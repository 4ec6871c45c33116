/**
 * A learned model knows what it never saw (docs/model.md#coverage): learned from recorded real
 * agent-orchestrator runs (test/fixtures/ao/), a replay that needs states or events the traces
 * never showed is refused, naming them and the teaching scenario that shows them; allowed, the
 * run says what it extrapolated on its first line, in its summary (`analysis.model.coverage`) and
 * in its report. A replay of cells the `learn` teaching run covers is made from seen profiles only.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { learnModel } from '../src/learn/learn.ts';
import { type Model, modelToYaml } from '../src/model/format.ts';
import { cli } from './helpers/cli.ts';
import { runRef } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const fixture = (name: string) => new URL(`./fixtures/ao/${name}.trace.jsonl.gz`, import.meta.url).pathname;
const dir = scratchDir('fleetbench-coverage-');

const models = new Map<string, Promise<Model>>();
async function modelFile(trace: string): Promise<{ file: string; model: Model }> {
  let learned = models.get(trace);
  if (!learned) {
    learned = learnModel([fixture(trace)]);
    models.set(trace, learned);
  }
  const model = await learned;
  const file = join(dir, `${trace}.yaml`);
  writeFileSync(file, modelToYaml(model));
  return { file, model };
}

const learned = (file: string) => ['--set', 'polling.strategy=learned', '--set', `polling.model=${file}`];

describe('a replay that needs what its model never saw', () => {
  for (const trace of ['S2-T1-50-quiet', 'S4-T1-5']) {
    it(`learned from ${trace} (PRs open at spawn), a spawn storm is refused, naming the unseen states and the teaching scenario`, async () => {
      const { file } = await modelFile(trace);
      const out = join(dir, `refused-${trace}`);
      const run = await cli(['run', 'S3-T2-10', ...learned(file), '--out', out]);
      expect(run.code, run.stderr).toBe(2);
      // A session polled before its PR opens stays in spawning: the model never saw one.
      expect(run.stderr).toContain('spawning → spawning');
      expect(run.stderr).toContain('never saw');
      expect(run.stderr).toMatch(/teaching scenario `learn`/);
      expect(run.stderr).toContain('--allow-extrapolation');
    });
  }

  it('with --allow-extrapolation it runs, and the first line, the summary and the report say what was extrapolated', async () => {
    const { file } = await modelFile('S2-T1-50-quiet');
    const out = join(dir, 'allowed');
    const run = await cli([
      'run',
      'S3-T2-10',
      ...learned(file),
      '--set',
      'duration=6m',
      '--allow-extrapolation',
      '--no-budgets',
      '--out',
      out,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const first = run.stderr.split('\n')[0]!;
    expect(first).toContain('polling learned:');
    expect(first).toContain('EXTRAPOLATED');
    expect(first).toContain('spawning → spawning');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    const coverage = summary.analysis.model;
    expect(coverage.coverage).toBeLessThan(1);
    expect(coverage.coverage).toBeGreaterThanOrEqual(0);
    expect(coverage.extrapolated.map((e: { part: string }) => e.part)).toContain('spawning → spawning');
    const extrapolated = coverage.extrapolated.reduce(
      (n: number, e: { sessionCycles: number }) => n + e.sessionCycles,
      0,
    );
    expect(coverage.coverage).toBeCloseTo(1 - extrapolated / coverage.sessionCycles, 3);
    // The report: the terminal summary and `analyze` name the extrapolated parts.
    expect(run.stdout).toContain('Learned model');
    expect(run.stdout).toMatch(/extrapolated: spawning → spawning/);
    const analyze = await cli(['analyze', join(out, 'trace.jsonl')]);
    expect(analyze.stdout).toContain('EXTRAPOLATED');
  });

  it('learned from the `learn` teaching run, the held-out cells replay from profiles it saw: coverage 1', async () => {
    const { file } = await modelFile('learn-quiet');
    const cells: Array<[string, string[]]> = [
      ['S2-T1-10', ['duration=3m']],
      ['S3-T2-10', ['duration=6m']],
      ['S4-T1-5', ['duration=4m', 'faults.0.at=1m30s']],
      ['S5-T1-5', ['duration=4m', 'faults.0.at=2m']],
    ];
    for (const [cell, sets] of cells) {
      const { analysis } = await runRef(cell, [...sets, 'polling.strategy=learned', `polling.model=${file}`]);
      expect(analysis.model, cell).toMatchObject({ coverage: 1, extrapolated: [] });
      expect(analysis.model!.sessionCycles, cell).toBeGreaterThan(10);
    }
  });

  it('a restart of a kind the model never saw, or merges, are named too', async () => {
    const { file } = await modelFile('learn-quiet');
    const graceful = await cli(['run', 'S5-T1-5', ...learned(file), '--set', 'faults.0.kind=graceful']);
    expect(graceful.code).toBe(2);
    expect(graceful.stderr).toContain('restart graceful');
    const merges = await cli(['run', 'S2-T1-5', ...learned(file), '--set', 'sessions.merge-after=1m']);
    expect(merges.code).toBe(2);
    expect(merges.stderr).toContain('event merged');
    expect(merges.stderr).toContain('sessions.merge-after');
  });
});

describe('the coverage a model records', () => {
  it('model learn records the events and scale its traces showed; model show prints them', async () => {
    const { file, model } = await modelFile('learn-quiet');
    // The teaching run: 12 sessions spawned, 12 PRs, CI, a review burst on 6, their fixes, a hard restart.
    expect(model.coverage).toEqual({
      events: {
        created: 12,
        'pr-opened': 12,
        'ci-completed': 18,
        'review-posted': 6,
        pushed: 6,
        merged: 0,
        restart: 1,
      },
      restarts: { hard: 1 },
      scale: { sessions: 6, callsPerCycle: expect.any(Number) },
    });
    expect(model.coverage!.scale.callsPerCycle).toBeGreaterThan(6);
    const show = await cli(['model', 'show', file]);
    expect(show.code).toBe(0);
    expect(show.stdout).toMatch(/coverage: sessions polled and staying in pr_open \d+, working \d+/);
    expect(show.stdout).toContain('review-posted 6');
    expect(show.stdout).toContain('never seen: merged');
  });

  it('a model written before coverage was recorded still loads, its coverage told from its profiles', async () => {
    const { model } = await modelFile('S2-T1-50-quiet');
    const { coverage: _dropped, ...older } = model;
    const file = join(dir, 'older.yaml');
    writeFileSync(file, modelToYaml(older as Model));
    const show = await cli(['model', 'show', file]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('an older model');
    const refused = await cli(['run', 'S3-T2-10', ...learned(file)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('spawning → spawning');
  });
});
