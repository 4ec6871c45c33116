/**
 * The Prometheus endpoint of a live run, through the CLI as a user runs it: after the run it
 * stays up for --metrics-linger with the final values and the budgets' verdicts (so the last
 * scrape sees them), promtool-clean; and the live-only flags warn when the clock is virtual.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { PROMTOOL, promtoolCheck, systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-linger-');

const promtool = systemTool(PROMTOOL, ['--version'], 'prometheus');

describe('fleetbench run --metrics-linger', () => {
  it('keeps /metrics up after the run with final values and budget verdicts', async () => {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'run',
        'S2-T1-1',
        '--clock',
        'real',
        '--set',
        'duration=2s',
        '--set',
        'polling.interval=500ms',
        '--metrics-port',
        '0',
        '--metrics-linger',
        '3',
        '--no-progress',
        '--no-report',
        '--out',
        join(dir, 'live'),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    const lingering = new Promise<string>((resolve) =>
      child.stderr.on('data', (d) => {
        stderr += d;
        const m = /final metrics stay up at (\S+) for 3 s/.exec(stderr);
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
      expect(text).toMatch(/^fleetbench_run_finished\{scenario="S2-T1-1"\} 1$/m);
      expect(text).toMatch(/^fleetbench_budget_passed\{budget="[^"]+"\} [01]$/m);
      expect(text).toMatch(/^fleetbench_budget_within_limit\{budget="[^"]+",metric="[^"]+",.*\} [01]$/m);
      expect(text).toMatch(
        /^fleetbench_api_call_duration_seconds_bucket\{resource="core",le="\+Inf"\} \d+$/m,
      );
      if (!promtool.skip) {
        promtool.require();
        expect(promtoolCheck(text)).toEqual({ code: 0, problems: '' });
      }
      // The Grafana dashboard in examples/ is built on names the endpoint serves.
      const served = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]!));
      const dashboard = readFileSync(new URL('../examples/grafana-dashboard.json', import.meta.url), 'utf8');
      const used = new Set(
        [...dashboard.matchAll(/fleetbench_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')),
      );
      expect(used.size).toBeGreaterThan(10);
      expect([...used].filter((name) => !served.has(name))).toEqual([]);
      const code = await exited;
      expect(code, stderr).not.toBe(130);
      expect([0, 99]).toContain(code);
      // It waited, then closed.
      expect(performance.now() - lingerStart).toBeGreaterThan(2_000);
      await expect(fetch(url)).rejects.toThrow();
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
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
