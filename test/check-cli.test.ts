/**
 * `fleetbench run` with budgets, `fleetbench check` and `fleetbench budgets derive`, through the
 * real CLI as a user runs them: the tables, the exit codes (0, 99, 104), the messages.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const wave = join(dir, 'wave');

describe('fleetbench run + check', () => {
  it('check reads a matrix: every run of baseline.json pools into one aggregate', async () => {
    const out = join(dir, 'matrix');
    const m = await cli([
      'matrix',
      '--cells',
      'chaos-codex-c4',
      '--repeat',
      '2',
      '--out',
      out,
      '--jobs',
      '1',
    ]);
    expect(m.code, m.stderr).toBe(0);
    const one = await cli([
      'check',
      join(out, 'cells', 'chaos-codex-c4', 'seed-1'),
      '--budgets',
      'native-speed',
      '--json',
    ]);
    const both = await cli(['check', out, '--budgets', 'native-speed', '--json']);
    expect(both.code, both.stderr).toBe(0);
    type CheckJson = {
      verdicts: Array<{
        inputs: string[];
        rows: Array<{ metric: string; scope: { adapter?: string }; n: number }>;
      }>;
    };
    const row = (stdout: string) =>
      (JSON.parse(stdout) as CheckJson).verdicts[0]!.rows.find(
        (r) => r.metric === 'restart_recovery_control_plane' && r.scope.adapter === 'codex',
      )!;
    expect(row(both.stdout).n).toBeGreaterThan(row(one.stdout).n);
    expect((JSON.parse(both.stdout) as CheckJson).verdicts[0]!.inputs).toEqual([
      `${join(out, 'baseline.json')} chaos-codex-c4#1`,
      `${join(out, 'baseline.json')} chaos-codex-c4#2`,
    ]);
  }, 120_000);

  it('run chaos-codex-c6, then check: restart, first-activity and boot rows, judged and report marked', async () => {
    const run = await cli(['run', 'chaos-codex-c6', '--out', wave]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Budgets: native-speed');
    expect(run.stdout).toContain('verdict: ✓ every judged budget holds');

    const check = await cli(['check', wave]);
    expect(check.code).toBe(0);
    const lines = check.stdout.split('\n');
    const rowOf = (metric: string, scope: string) =>
      lines
        .find((l) => l.trim().startsWith(`${metric} `) && l.includes(` ${scope} `))
        ?.trim()
        .split(/\s{2,}/);
    // metric, scope, mode, n, p50, p95, limit, verdict
    expect(rowOf('restart_recovery_control_plane', 'adapter=codex')).toEqual([
      'restart_recovery_control_plane',
      'adapter=codex',
      'judged',
      expect.stringMatching(/^\d+$/),
      expect.stringMatching(/s$/),
      expect.stringMatching(/s$/),
      'p50 ≤ 2.5s · p95 ≤ 4s',
      '✓ pass',
    ]);
    expect(rowOf('restart_recovery', 'adapter=codex')?.slice(2, 3)).toEqual(['report']);
    expect(rowOf('restart_recovery', 'adapter=codex')?.at(-1)).toMatch(/^(ok|over \(.*\))$/);
    expect(rowOf('restart_provider_load', 'adapter=codex')?.slice(2)).toEqual([
      'report',
      expect.any(String),
      expect.any(String),
      expect.any(String),
      '–',
      'reported',
    ]);
    for (const metric of ['time_to_first_activity', 'agent_boot']) {
      for (const start of ['cold', 'warm']) {
        expect(rowOf(metric, `adapter=codex start=${start}`)?.slice(2, 3)).toEqual(['judged']);
      }
    }
    // The recoveries to the agent's first activity: report-only, never judged.
    for (const metric of ['restart_recovery_to_activity', 'restart_provider_to_activity'])
      expect(rowOf(metric, 'adapter=codex')?.slice(2, 3)).toEqual(['report']);
    expect(check.stdout).toContain(
      // The other adapters' rows (the two first-activity recovery rows each among them),
      // Paperclip's (docs/paperclip.md#budgets) included.
      '22 rows not shown: no adapter=claude in this run; no adapter=opencode in this run',
    );
    // --json: the verdict document.
    const json = await cli(['check', join(wave, 'trace.jsonl'), '--budgets', 'native-speed', '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout);
    expect(doc.verdicts[0]).toMatchObject({ budget: 'native-speed', verdict: 'pass', judgedBreaches: 0 });
  });

  it('a slowed control plane: the run exits 99, its breaches are in the trace, check agrees', async () => {
    const out = join(dir, 'slow');
    const run = await cli([
      'run',
      'chaos-codex-c6',
      '--set',
      'control-plane.recovery-delay=3s',
      '--out',
      out,
    ]);
    expect(run.code).toBe(99);
    expect(run.stdout).toMatch(
      /restart_recovery_control_plane\s+adapter=codex\s+judged.*✗ FAIL \(p50, p95\)/,
    );
    expect(run.stdout).toMatch(/the full restart is [\d.]+s of which provider load [\d.]+s/);
    const { records, stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
    const breaches = records.filter(
      (r): r is Extract<typeof r, { kind: 'event' }> => r.kind === 'event' && r.name === 'budget.breach',
    );
    expect(breaches.map((b) => `${b.labels?.metric} ${b.labels?.stat} ${b.labels?.mode}`)).toEqual(
      expect.arrayContaining([
        'restart_recovery_control_plane p50 judged',
        'restart_recovery_control_plane p95 judged',
      ]),
    );
    const check = await cli(['check', out, '--budgets', 'native-speed']);
    expect(check.code).toBe(99);
  });

  it('misconfigured budgets exit 104 with the file and line', async () => {
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, 'name: u\nbudgets:\n  - metric: restart_recovry\n    p95: 4s\n');
    const a = await cli(['check', wave, '--budgets', unknown]);
    expect(a.code).toBe(104);
    expect(a.stderr).toContain(`${unknown}:3: budgets[0]: unknown metric 'restart_recovry'`);

    const nothing = join(dir, 'nothing.yaml');
    writeFileSync(
      nothing,
      'name: n\nbudgets:\n  - { metric: agent_boot, scope: { adapter: claude }, p95: 4s }\n',
    );
    // A scope that matches nothing (claude in a codex wave) is no samples, not misconfigured.
    const b = await cli(['check', wave, '--budgets', nothing]);
    expect(b.code).toBe(0);
    expect(b.stdout).toContain('no samples');
    expect(b.stdout).toContain('– no samples: nothing judged');
    const required = await cli(['check', wave, '--budgets', nothing, '--require-samples']);
    expect(required.code).toBe(99);
    expect(required.stdout).toContain('FAIL (no samples; required)');

    const c = await cli(['check', wave, '--budgets', 'native-sped']);
    expect(c.code).toBe(104);
    expect(c.stderr).toMatch(
      /unknown budget set 'native-sped': not a built-in \(native-speed, paperclip-baseline, track-b, turnover\) and no such file\. Did you mean 'native-speed'\?/,
    );

    // A run scenario naming a bad budget fails before it runs.
    const scenario = join(dir, 'bad-budgets.yaml');
    writeFileSync(scenario, `name: bad\nsessions: { count: 1 }\nbudgets: [${unknown}]\n`);
    const d = await cli(['run', scenario, '--out', join(dir, 'never')]);
    expect(d.code).toBe(104);
    expect(d.stderr).toContain('unknown metric');
  });

  it('budgets derive writes a file that check reads back: × 1.2, rounded up to 0.5 s', async () => {
    const file = join(dir, 'derived.yaml');
    const derive = await cli(['budgets', 'derive', wave, '-o', file, '--name', 'from-wave']);
    expect(derive.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^name: from-wave$/m);
    const limits = [...text.matchAll(/^\s+p(?:50|95): (\d+(?:\.\d+)?)s$/gm)].map((m) => Number(m[1]));
    expect(limits.length).toBeGreaterThan(10);
    for (const limit of limits) expect((limit * 2) % 1).toBe(0);
    const check = await cli(['check', wave, '--budgets', file]);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(0);
  });
});
