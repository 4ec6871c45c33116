/**
 * A run's plan from what was asked (src/run/request.ts `planFromOptions`): the one place that
 * decides what a run is. `fleetbench run` only fills its options from flags (run-cli.test.ts,
 * distributed-run.test.ts and the live-* tests drive the same plans through the CLI).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { planMatrix } from '../src/matrix/run.ts';
import { planRun } from '../src/run/plan.ts';
import { planFromOptions, type RunOptions } from '../src/run/request.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

/** The plan, and what it told the user while it was made. */
function plan(options: Omit<RunOptions, 'warn' | 'notice'>) {
  const warnings: string[] = [];
  const notices: string[] = [];
  const made = planFromOptions({
    env: {},
    ...options,
    warn: (m) => warnings.push(m),
    notice: (m) => notices.push(m),
  });
  return { plan: made, warnings, notices };
}

describe('planFromOptions', () => {
  it('a virtual-time run: its directory names the overrides, no telemetry, no segment, a report', () => {
    const { plan: p, warnings } = plan({ ref: 'S2-T1-5', set: ['sessions.count=2'], seed: '4' });
    expect(p.scenario).toMatchObject({ name: 'S2-T1-5', seed: 4, clock: 'virtual' });
    expect(p.cell).toBe('S2-T1-5');
    expect(p.target).toMatchObject({ kind: 'reference' });
    expect(p.changed).toEqual(['sessions.count=2', 'seed=4']);
    expect(p.outDir).toBe(join('fleetbench-out', 'runs', 'S2-T1-5--sessions.count=2--seed=4'));
    expect(p.report).toBe(true);
    expect(p.telemetry).toBeUndefined();
    expect(p.segment).toBeUndefined();
    expect(p.github).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('is the plan planRun makes of the same scenario, plus what the request adds', () => {
    const asked = plan({ ref: 'chaos-codex-c4', out: join(dir, 'c4'), report: false }).plan;
    const alone = planRun('chaos-codex-c4', [], join(dir, 'c4'));
    expect(asked.scenario).toEqual(alone.scenario);
    expect(asked.target).toEqual(alone.target);
    expect(asked.outDir).toBe(alone.outDir);
    expect(asked.report).toBe(false);
  });

  it('live-run settings on a virtual-time run are warned about, in order, before any later refusal', () => {
    const warnings: string[] = [];
    expect(() =>
      planFromOptions({
        ref: 'S2-T1-5',
        env: {},
        metricsPort: 9,
        otlpExport: 'http://127.0.0.1:1',
        segment: '0/2',
        warn: (m) => warnings.push(m),
      }),
    ).toThrow(/run: segment 0\/2 asked, but a virtual-time run is not split/);
    expect(warnings).toEqual([
      '--metrics-port has no effect with the virtual clock (add --clock real; docs/live-runs.md)',
      '--otlp-export has no effect with the virtual clock (add --clock real; docs/live-runs.md)',
    ]);
  });

  it('a real-clock run: telemetry as asked (linger 15 s by default), the clock and target in its directory', () => {
    const { plan: p } = plan({
      ref: 'S2-T1-5',
      clock: 'real',
      metricsPort: 0,
      otlpExport: 'http://127.0.0.1:4318',
      progress: false,
    });
    expect(p.outDir).toBe(join('fleetbench-out', 'runs', 'S2-T1-5--real-reference'));
    expect(p.telemetry).toEqual({
      progress: false,
      metricsPort: 0,
      otlpExport: 'http://127.0.0.1:4318',
      metricsLingerSeconds: 15,
    });
  });

  it('a shared GitHub: refused in virtual time and without its admin token; with one, the run is told where GitHub is', () => {
    expect(() => plan({ ref: 'S2-T1-5', github: 'http://127.0.0.1:9' })).toThrow(
      '--github: a shared emulator runs on the real clock; add --clock real (docs/distributed.md)',
    );
    expect(() => plan({ ref: 'S2-T1-5', clock: 'real', github: 'http://127.0.0.1:9/' })).toThrow(
      /--github: the emulator's admin token is needed/,
    );
    expect(() => plan({ ref: 'S2-T1-5', clock: 'real', github: 'ftp://127.0.0.1:9/' })).toThrow(
      /--github: expected the emulator's base URL/,
    );
    const { plan: p, notices } = plan({
      ref: 'S2-T1-5',
      clock: 'real',
      github: 'http://127.0.0.1:9/',
      env: { FLEETBENCH_GITHUB_ADMIN_TOKEN: 'from-env' },
    });
    expect(p.github).toEqual({ url: 'http://127.0.0.1:9', adminToken: 'from-env', snapshots: true });
    expect(notices).toEqual([
      "GitHub is the shared emulator at http://127.0.0.1:9: it records the API calls (github serve --trace), not this run's trace (docs/distributed.md)",
    ]);
  });

  it("a segment (from the Indexed Job's environment): its share, the common start agreed through the shared directory, its own directory, no report", () => {
    const shared = join(dir, 'segmented');
    const segment = (index: number) =>
      plan({
        ref: 'S2-T1-5',
        clock: 'real',
        target: 'http://127.0.0.1:7070',
        github: 'http://127.0.0.1:9',
        githubAdminToken: 'token',
        out: shared,
        env: { JOB_COMPLETION_INDEX: String(index), FLEETBENCH_SEGMENTS: '3' },
      });
    const first = segment(0);
    const second = segment(1);
    // The first segment sets the start 10 s ahead in segments/run-start.json; the others read it.
    const agreed = JSON.parse(readFileSync(join(shared, 'segments', 'run-start.json'), 'utf8'));
    for (const [i, { plan: p, notices }] of [first, second].entries()) {
      expect(p.segment).toEqual({ index: i, count: 3 });
      expect(p.epochMs).toBe(agreed.startAtMs);
      expect(p.outDir).toBe(join(shared, 'segments', `run-${i}-of-3`));
      expect(p.segmentRecord).toEqual({
        path: join(shared, 'segments', `run-${i}-of-3.json`),
        runId: `S2-T1-5-${agreed.iso}`,
      });
      expect(p.report).toBe(false);
      // Only segment 0 brackets the run with /rate_limit snapshots.
      expect(p.github).toEqual({ url: 'http://127.0.0.1:9', adminToken: 'token', snapshots: i === 0 });
      expect(notices).toEqual([]);
    }
    // Planning writes no record: the segment process does, when it starts (run-segment.ts).
    expect(readdirSync(join(shared, 'segments'))).toEqual(['run-start.json']);
    expect(existsSync(first.plan.outDir)).toBe(false);
  });
});

describe('one planner', () => {
  it('a matrix unit is planned by planRun: a bad override fails at plan time, naming it', () => {
    expect(() => planMatrix({ selection: 'S2-T1-5', overrides: ['sessions.count=0'], outDir: dir })).toThrow(
      /sessions\.count/,
    );
  });

  it('src/cli/run.ts is option wiring and printing: at most 250 lines, no scenario, segment or GitHub of its own', () => {
    const text = readFileSync(join(import.meta.dirname, '..', 'src', 'cli', 'run.ts'), 'utf8');
    expect(text.split('\n').length - 1).toBeLessThanOrEqual(250);
    for (const planner of [
      'resolveScenarioRef',
      'parseOverride',
      'planRunSegment',
      'parseEmulatorUrl',
      'parseTarget',
    ])
      expect(text).not.toContain(planner);
  });
});
