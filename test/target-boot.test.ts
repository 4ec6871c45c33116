/**
 * A target that boots before the run (Target.boot: a real server's first boot, docs/live-runs.md):
 * under the real clock the run's time starts when it is ready, so the boot is not in the run's
 * duration, and the trace's epoch is the moment it was ready.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const TARGET = new URL('./fixtures/booting-target.ts', import.meta.url).pathname;

describe('a target that boots before the run', () => {
  it('real clock: run time 0 is its ready, the run lasts its duration after it', async () => {
    const out = join(scratchDir('fleetbench-boot-'), 'run');
    const startedWall = Date.now();
    const result = await cli([
      'run',
      'S2-T1-1',
      '--target',
      `module:${TARGET}`,
      '--clock',
      'real',
      '--time-scale',
      '60',
      '--set',
      'duration=2m',
      '--no-progress',
      '--no-budgets',
      '--out',
      out,
    ]);
    expect(result.code, result.stderr).toBe(0);
    const lines = readFileSync(join(out, 'trace.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const header = lines[0];
    const started = lines.find((r) => r.name === 'booting.started');
    // Booted before the run: ready before run time 0, and its wait is not in the run's time.
    expect(started.data.booted).toBe(true);
    expect(header.epochMs).toBeGreaterThanOrEqual(started.data.readyAtWall);
    expect(header.epochMs - startedWall).toBeGreaterThanOrEqual(1_400);
    expect(header.startedAt).toBe(new Date(header.epochMs).toISOString());
    expect(started.t).toBeLessThan(60 * 1_000);
    // The whole duration is the workload's: the footer at 2 run minutes, not 2 minutes less the boot.
    const footer = lines.at(-1);
    expect(footer).toMatchObject({ kind: 'end', reason: 'completed' });
    expect(footer.t).toBeGreaterThanOrEqual(120_000);
  });
});
