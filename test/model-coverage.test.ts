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
import { runFigures } from '../src/learn/figures.ts';
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

/** How the recorded S4-T1-5 run was made (test/fixtures/ao/README.md), less `target=ao`. */
const HELD_OUT_SETS = ['polling.interval=30s', 'duration=6m', 'markers.steady-start=2m', 'faults.0.at=2m30s'];

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

describe('a model replays its own teaching trace', () => {
  // Each cell run by the reference, learned, and replayed with the same settings: what the replay
  // needs is what the model saw. S3-T2-10 and S4-T1-5 were refused as unseen (`working → working`),
  // and a forced S3 replay had an EXTRAPOLATED header over a coverage of 1.
  const cells: Array<[string, string[]]> = [
    ['S3-T2-10', []],
    ['S4-T1-5', []],
    ['S1-T1-5', ['duration=6m']],
    ['S2-T2-10', ['duration=6m']],
    ['S5-T1-5', ['duration=8m', 'faults.0.at=4m']],
    ['S6-T1-5', ['duration=6m']],
  ];
  for (const [cell, sets] of cells)
    it(`${cell}: coverage 1, nothing refused, nothing said to be extrapolated`, async () => {
      const source = await runRef(cell, sets, join(dir, `self-${cell}`));
      const model = await learnModel([source.outcome.tracePath]);
      const file = join(dir, `self-${cell}.yaml`);
      writeFileSync(file, modelToYaml(model));
      const out = join(dir, `self-${cell}-replay`);
      const run = await cli([
        'run',
        cell,
        ...sets.flatMap((s) => ['--set', s]),
        ...learned(file),
        '--no-budgets',
        '--out',
        out,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toContain('EXTRAPOLATED');
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
      expect(summary.analysis.model).toMatchObject({ coverage: 1, extrapolated: [] });
      expect(summary.analysis.model.sessionCycles).toBeGreaterThan(20);
      // The replay ends where its teaching run did: every session in the same state.
      expect(runFigures(summary.analysis).finalStates).toEqual(runFigures(source.analysis).finalStates);
    });

  it('a real agent-orchestrator run (S4-T1-5) too', async () => {
    const { file } = await modelFile('S4-T1-5');
    const { analysis } = await runRef('S4-T1-5', [
      ...HELD_OUT_SETS,
      'polling.strategy=learned',
      `polling.model=${file}`,
    ]);
    expect(analysis.model).toMatchObject({ coverage: 1, extrapolated: [] });
  });
});

describe('what the whole replay is beyond: repositories, interval, client time', () => {
  it('more repositories than its traces had, or an interval far from theirs, is refused, naming it and what to learn from', async () => {
    const { file, model } = await modelFile('learn-quiet');
    expect(model.coverage).toMatchObject({ repos: 2, intervalMs: { min: 10_000, max: 10_000 } });
    const repos = await cli(['run', 'S2-T2-50', ...learned(file)]);
    expect(repos.code, repos.stderr).toBe(2);
    expect(repos.stderr).toContain('repositories 10: 10 repositories, more than the 2 its traces had');
    expect(repos.stderr).toContain('--set topology.repos=10');
    for (const interval of ['5m', '2s']) {
      const far = await cli(['run', 'S2-T1-10', ...learned(file), '--set', `polling.interval=${interval}`]);
      expect(far.code, far.stderr).toBe(2);
      expect(far.stderr).toMatch(/interval \d+ s: a poll interval of \d+ s, more than 4 times from the 10 s/);
    }
    // Three times the teaching run's interval is what the held-out cells run at: covered.
    const near = await runRef('S2-T1-10', [
      'duration=3m',
      'polling.strategy=learned',
      `polling.model=${file}`,
    ]);
    expect(near.analysis.model?.coverage).toBe(1);
  });

  it('a model with no client time is refused; a machine told to one whose client time is not CPU is named', async () => {
    const { model } = await modelFile('learn-quiet');
    const write = (name: string, cycleTime: Partial<Model['cycleTime']>) => {
      const file = join(dir, name);
      writeFileSync(file, modelToYaml({ ...model, cycleTime: { ...model.cycleTime, ...cycleTime } }));
      return file;
    };
    const none = { cpuMsPerCall: 0, launchMsPerCall: 0, spawnCpuMs: 0 };
    const zero = write('zero-client.yaml', { ...none, waitMsPerCall: 0 });
    const refused = await cli(['run', 'S2-T1-10', ...learned(zero)]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('client time: no client time');
    const waitOnly = write('wait-only.yaml', { ...none, waitMsPerCall: 300 });
    expect((await cli(['run', 'S2-T1-10', ...learned(waitOnly), '--set', 'duration=1m'])).code).toBe(0);
    const told = await cli(['run', 'S2-T1-10', ...learned(waitOnly), '--set', 'host.load=18']);
    expect(told.code).toBe(2);
    expect(told.stderr).toContain('host: the machine told (host.load 18) changes nothing');
    // Allowed, every session-cycle is made beyond the model, and the summary says so.
    const out = join(dir, 'zero-allowed');
    const allowed = await cli([
      'run',
      'S2-T1-10',
      ...learned(zero),
      '--set',
      'duration=3m',
      '--allow-extrapolation',
      '--no-budgets',
      '--out',
      out,
    ]);
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(allowed.stderr.split('\n')[0]).toContain('EXTRAPOLATED');
    const coverage = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')).analysis.model;
    expect(coverage.coverage).toBe(0);
    expect(coverage.extrapolated).toEqual([{ part: 'client time', sessionCycles: coverage.sessionCycles }]);
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
      repos: 2,
      intervalMs: { min: 10_000, max: 10_000 },
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
