/**
 * A model is checked for sense when it is read (docs/limits.md, "Learned models"): every number
 * a replay acts on is bounded by what a trace could show, a speed-only model is no polling model,
 * and a replay that makes no call where its model plans some fails (exit 3): none of these passes.
 * The edits are the ones a skeptical user made to a model learned from a real AO run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { learnModel } from '../src/learn/learn.ts';
import { type Model, modelToYaml } from '../src/model/format.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const LEARN = new URL('./fixtures/ao/learn-quiet.trace.jsonl.gz', import.meta.url).pathname;
const PAPERCLIP = new URL('./fixtures/paperclip/chaos-c4.trace.jsonl.gz', import.meta.url).pathname;
const dir = scratchDir('fleetbench-sense-');

let learned: Promise<Model> | undefined;
const model = () => (learned ??= learnModel([LEARN]));

/** The learned model with one YAML line changed, written to a file; returns it and the line number. */
async function edited(name: string, from: RegExp, to: string): Promise<{ file: string; line: number }> {
  const text = modelToYaml(await model());
  expect(text, `${from} is in the model`).toMatch(from);
  const changed = text.replace(from, to);
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, changed);
  const line = changed.split('\n').findIndex((l) => l.includes(to.trim())) + 1;
  return { file, line };
}

const replay = (file: string, ...sets: string[]) =>
  cli([
    'run',
    'S2-T1-5',
    ...['duration=2m', 'polling.strategy=learned', `polling.model=${file}`, ...sets].flatMap((s) => [
      '--set',
      s,
    ]),
    '--out',
    join(dir, 'run'),
  ]);

describe('absurd models are refused when read', () => {
  const cases: Array<[string, RegExp, string, string]> = [
    ['cpu-1e12', /cpuMsPerCall: [\d.]+/, 'cpuMsPerCall: 1000000000000', 'cycleTime.cpuMsPerCall'],
    ['cpu-1e300', /cpuMsPerCall: [\d.]+/, 'cpuMsPerCall: 1e+300', 'cycleTime.cpuMsPerCall'],
    ['negative-mean', /(- operation: PullRequestByNumber\n\s+mean:) 2/, '$1 -1.5', 'mean'],
    ['mean-1e9', /(- operation: PullRequestByNumber\n\s+mean:) 2/, '$1 1000000000', 'mean'],
    ['spread', /cycleSpread: [\d.]+/, 'cycleSpread: 1000000', 'cycleTime.cycleSpread'],
    ['latency', /p95: [\d.]+/, 'p95: 1e+300', 'p95'],
  ];
  for (const [name, from, to, field] of cases) {
    it(`${name}: exit 2 before the run, naming the file, its line and the field`, async () => {
      const text = modelToYaml(await model());
      const changed = text.replace(from, to);
      expect(changed).not.toBe(text);
      const file = join(dir, `${name}.yaml`);
      writeFileSync(file, changed);
      const started = performance.now();
      const run = await replay(file);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(new RegExp(`${name}\\.yaml:\\d+: [^\\n]*${field.replace('.', '\\.')}`));
      expect(run.stderr).toContain('docs/limits.md');
      expect(performance.now() - started).toBeLessThan(30_000);
    });
  }

  it('the line named is the edited one', async () => {
    const { file, line } = await edited('cpu-line', /cpuMsPerCall: [\d.]+/, 'cpuMsPerCall: 1000000000000');
    const run = await replay(file);
    expect(run.stderr).toContain(`cpu-line.yaml:${line}: cycleTime.cpuMsPerCall`);
  });

  it('a speed-only model (a Paperclip trace) is refused as a polling model', async () => {
    const speedOnly = await learnModel([PAPERCLIP]);
    const file = join(dir, 'paperclip.yaml');
    writeFileSync(file, modelToYaml(speedOnly));
    const run = await replay(file);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('no poll cycles to replay');
    expect(run.stderr).toContain('control-plane.model');
  });
});

describe('a replay that makes no call where its model plans some', () => {
  it('fails with exit 3 (an hour of CPU per call: no call in a 2-minute run), never passes', async () => {
    // Within every bound (no longer than an hour), but no call can start in the run.
    const { file } = await edited('slow', /cpuMsPerCall: [\d.]+/, 'cpuMsPerCall: 3000000');
    const out = join(dir, 'slow-run');
    const run = await cli([
      'run',
      'S2-T1-5',
      ...['duration=2m', 'polling.strategy=learned', `polling.model=${file}`].flatMap((s) => ['--set', s]),
      '--out',
      out,
    ]);
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain('made no API call');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary.outcome.reason).toBe('failed');
    expect(summary.budgets).toBeUndefined();
  });
});
