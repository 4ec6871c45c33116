/**
 * The Prometheus endpoint of a live run, through the CLI as a user runs it: after the run it
 * stays up for --metrics-linger with the final values and the budgets' verdicts (so the last
 * scrape sees them), promtool-clean; and the live-only flags warn when the clock is virtual.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { PROMTOOL, promtoolCheck, promtoolCheckRules, systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-linger-');

const promtool = systemTool(PROMTOOL, ['--version'], 'prometheus');

interface LingeringRun {
  /** GET /metrics while the endpoint lingers after the run. */
  text: string;
  runId: string;
  code: number | null;
  stderr: string;
  /** ms from the first linger scrape to the endpoint's close. */
  lingeredMs: number;
  closed: boolean;
}

/** `fleetbench run S2-T1-1 --clock real --metrics-port 0 --metrics-linger N`, scraped while it lingers. */
async function lingeringRun(name: string, args: string[], lingerS: number): Promise<LingeringRun> {
  const out = join(dir, name);
  const child = spawn(
    process.execPath,
    [
      BIN,
      'run',
      'S2-T1-1',
      '--clock',
      'real',
      '--set',
      'polling.interval=500ms',
      ...args,
      '--metrics-port',
      '0',
      '--metrics-linger',
      String(lingerS),
      '--no-progress',
      '--no-report',
      '--out',
      out,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
  );
  let stderr = '';
  const lingering = new Promise<string>((resolve) =>
    child.stderr.on('data', (d) => {
      stderr += d;
      const m = new RegExp(`final metrics stay up at (\\S+) for ${lingerS} s`).exec(stderr);
      if (m) resolve(m[1]!);
    }),
  );
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 150_000);
  try {
    const url = await lingering;
    const lingerStart = performance.now();
    const text = await (await fetch(url)).text();
    const code = await exited;
    const lingeredMs = performance.now() - lingerStart;
    const closed = await fetch(url).then(
      () => false,
      () => true,
    );
    const header = JSON.parse(readFileSync(join(out, 'trace.jsonl'), 'utf8').split('\n')[0]!) as {
      runId: string;
    };
    return { text, runId: header.runId, code, stderr, lingeredMs, closed };
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
  }
}

/** The `run_id` label of each series of `family` in an exposition. */
const runIds = (text: string, family: string) =>
  [...text.matchAll(new RegExp(`^${family}\\{[^}]*run_id="([^"]+)"`, 'gm'))].map((m) => m[1]!);

describe('fleetbench run --metrics-linger', () => {
  it('keeps /metrics up after the run with final values and budget verdicts', async () => {
    // A steady window from 500 ms holds three 500 ms poll intervals: the headroom projections are judged.
    const run = await lingeringRun(
      'live',
      ['--set', 'duration=2s', '--set', 'markers.steady-start=500ms'],
      3,
    );
    const { text } = run;
    expect(run.code, run.stderr).not.toBe(130);
    expect([0, 99]).toContain(run.code);
    const id = run.runId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(text).toMatch(
      new RegExp(`^fleetbench_run_finished\\{run_id="${id}",scenario="S2-T1-1"\\} 1$`, 'm'),
    );
    expect(text).toMatch(
      new RegExp(
        `^fleetbench_run_info\\{run_id="${id}",scenario="S2-T1-1",target="reference",clock="real"\\} 1$`,
        'm',
      ),
    );
    expect(text).toMatch(
      new RegExp(`^fleetbench_run_time_scale\\{run_id="${id}",scenario="S2-T1-1"\\} 1$`, 'm'),
    );
    expect(text).toMatch(/^fleetbench_budget_passed\{budget="[^"]+"\} [01]$/m);
    expect(text).toMatch(/^fleetbench_budget_within_limit\{budget="[^"]+",metric="[^"]+",.*\} [01]$/m);
    // Base units in the names, ratios 0–1: the Track B headroom rows are ratios, no unit label.
    const headroom =
      /^fleetbench_budget_measured_ratio\{[^}]*metric="scorecard\.rest-core-headroom"[^}]*\} (\S+)$/m.exec(
        text,
      );
    expect(headroom).not.toBeNull();
    // Headroom left of the whole limit: at most 1 (negative when the projection exceeds it).
    expect(Number.isFinite(Number(headroom![1]))).toBe(true);
    expect(Number(headroom![1])).toBeLessThanOrEqual(1);
    expect(text).toMatch(
      /^fleetbench_budget_limit_ratio\{[^}]*metric="scorecard\.rest-core-headroom"[^}]*\} 0\.4$/m,
    );
    expect(text).toMatch(/^fleetbench_budget_measured_per_second\{[^}]*metric="scorecard\.max-1s"/m);
    expect(text).not.toMatch(/unit="/);
    expect(text).toMatch(/^fleetbench_api_call_duration_seconds_bucket\{resource="core",le="\+Inf"\} \d+$/m);
    // The final values carry every call the trace has: those answered after the planned end
    // (in flight then) and the closing /rate_limit bracket too.
    const counted = [...text.matchAll(/^fleetbench_api_calls_total\{[^}]*\} (\d+)$/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    const traced = readFileSync(join(dir, 'live', 'trace.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{"kind":"api"')).length;
    expect(counted).toBe(traced);
    if (!promtool.skip) {
      promtool.require();
      expect(promtoolCheck(text)).toEqual({ code: 0, problems: '' });
    }
    // The Grafana dashboard in examples/ is built on names the endpoint serves, and its queries
    // are valid PromQL (promtool checks them as recording rules).
    const served = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]!));
    const dashboard = readFileSync(new URL('../examples/grafana-dashboard.json', import.meta.url), 'utf8');
    const used = new Set(
      [...dashboard.matchAll(/fleetbench_[a-z_]+/g)]
        .map((m) => m[0].replace(/_(bucket|sum|count)$/, ''))
        .filter((name) => !name.endsWith('_')),
    );
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !served.has(name))).toEqual([]);
    const exprs = [...dashboard.matchAll(/"expr": ("(?:[^"\\]|\\.)*")/g)].map(
      (m) => JSON.parse(m[1]!) as string,
    );
    // Rates of counters are per run second: divided by the time scale.
    for (const expr of exprs.filter((e) => e.includes('rate(') && e.includes('_total')))
      expect(expr).toContain('fleetbench_run_time_scale');
    if (!promtool.skip) {
      const rules = join(dir, 'dashboard-rules.yml');
      writeFileSync(
        rules,
        stringify({
          groups: [
            { name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:expr_${i}`, expr })) },
          ],
        }),
      );
      const check = promtoolCheckRules(rules);
      expect(check.code, check.problems).toBe(0);
    }
    // It waited, then closed.
    expect(run.lingeredMs).toBeGreaterThan(2_000);
    expect(run.closed).toBe(true);
  }, 180_000);

  it('tells two runs apart by run id, and says the time scale', async () => {
    const first = await lingeringRun('first', ['--set', 'duration=1500ms'], 1);
    const second = await lingeringRun('second', ['--set', 'duration=3s', '--time-scale', '2'], 1);
    expect(first.runId).not.toBe(second.runId);
    for (const run of [first, second]) {
      expect([0, 99], run.stderr).toContain(run.code);
      // Every run-level series carries the run's id; the others join on fleetbench_run_info.
      for (const family of [
        'fleetbench_run_info',
        'fleetbench_run_time_scale',
        'fleetbench_run_elapsed_seconds',
        'fleetbench_run_duration_seconds',
        'fleetbench_run_finished',
      ])
        expect(runIds(run.text, family), family).toEqual([run.runId]);
    }
    expect(second.text).toMatch(/^fleetbench_run_time_scale\{[^}]*\} 2$/m);
  }, 180_000);

  it('warns when a live-only flag has no effect (virtual clock)', async () => {
    const r = await cli([
      'run',
      'S2-T1-1',
      '--metrics-port',
      '0',
      '--no-report',
      '--out',
      join(dir, 'virtual'),
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /warning: --metrics-port has no effect with the virtual clock \(add --clock real/,
    );
  });
});
