/**
 * Only a run that completed is judged (docs/budgets.md#only-a-completed-run-is-judged): `check`
 * of a run cut short (interrupted, a partial summary, a trace whose footer says so or that has
 * none, an interrupted matrix), by directory, trace or summary.json, refuses to judge it, says
 * why and exits 3. Real runs of the pipeline, the real CLI.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeRun } from '../src/run/pipeline.ts';
import { planRun } from '../src/run/plan.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const NAIVE = ['polling.strategy=naive', 'duration=10m'];

/** A naive S2-T1-50 run cut at 2 minutes of its 10 (its steady marker is at 3m). */
async function interruptedRun(out: string): Promise<void> {
  const stop = new AbortController();
  const done = await executeRun(planRun('S2-T1-50', NAIVE, out), {
    signal: stop.signal,
    progressEveryMs: 30_000,
    onProgress: (p) => {
      if (p.t >= 120_000) stop.abort();
    },
  });
  expect(done.outcome.reason).toBe('interrupted');
  expect(done.summary.outcome.partial).toBe(true);
}

describe('check refuses what did not complete', () => {
  const cut = join(dir, 'cut');
  const whole = join(dir, 'whole');
  beforeAll(async () => {
    await interruptedRun(cut);
    await executeRun(planRun('S2-T1-50', NAIVE, whole));
  }, 120_000);

  it('an interrupted run, by directory, trace or summary.json: exit 3, the reason, nothing judged', async () => {
    for (const input of [cut, join(cut, 'trace.jsonl'), join(cut, 'summary.json')]) {
      const result = await cli(['check', input, '--budgets', 'track-b']);
      expect(result.code, `${input}: ${result.stdout}`).toBe(3);
      expect(result.stderr).toMatch(/interrupted/);
      expect(result.stderr).toContain('a run that did not complete is not judged');
      expect(result.stdout).not.toContain('holds');
    }
  });

  it('a completed trace whose footer was edited to reason: failed, or cut off, is refused however it is named', async () => {
    const edited = join(dir, 'edited');
    mkdirSync(edited, { recursive: true });
    copyFileSync(join(whole, 'summary.json'), join(edited, 'summary.json'));
    const lines = readFileSync(join(whole, 'trace.jsonl'), 'utf8').trimEnd().split('\n');
    const footer = JSON.parse(lines.pop()!) as Record<string, unknown>;
    writeFileSync(
      join(edited, 'trace.jsonl'),
      `${[...lines, JSON.stringify({ ...footer, reason: 'failed' })].join('\n')}\n`,
    );
    for (const input of [edited, join(edited, 'trace.jsonl'), join(edited, 'summary.json')]) {
      const result = await cli(['check', input, '--budgets', 'track-b']);
      expect(result.code, `${input}: ${result.stdout}`).toBe(3);
      expect(result.stderr).toContain('reason: failed');
    }
    // No footer at all: read with --lenient it analyses, and is still not judged.
    const cutOff = join(dir, 'no-footer.jsonl');
    writeFileSync(cutOff, `${lines.join('\n')}\n`);
    const lenient = await cli(['check', cutOff, '--budgets', 'track-b', '--lenient']);
    expect(lenient.code).toBe(3);
    expect(lenient.stderr).toContain('no end footer');
  });

  it('the same run, whole, is judged: the naive burn breaches (exit 99)', async () => {
    const result = await cli(['check', whole, '--budgets', 'track-b']);
    expect(result.code, result.stdout).toBe(99);
  });
});
