/**
 * `fleetbench check` for CI, through the real CLI: the JUnit file (read back with junit2json, a
 * JUnit parser built on xml2js) has one test case per budget row, failures carry the measured
 * value and the limit; the GitHub step summary is appended when GITHUB_STEP_SUMMARY is set; and
 * examples/github-actions.yml runs the commands that exist.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, type TestSuites } from 'junit2json';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-ci-');
const run = join(dir, 'wave');

describe('fleetbench check --junit and the GitHub step summary', () => {
  beforeAll(async () => {
    const r = await cli(['run', 'chaos-codex-c4', '--no-report', '--out', run]);
    expect(r.code, r.stderr).toBe(0);
  }, 120_000);

  it('a breach: one test case per budget row, the failure names the measured value and limit', async () => {
    const budgets = join(dir, 'tight.yaml');
    // One judged row that cannot hold, one report row over its limit, one that holds.
    writeFileSync(
      budgets,
      [
        'name: tight',
        'budgets:',
        '  - metric: restart_recovery_control_plane',
        '    scope: { adapter: codex }',
        '    p95: 1ms',
        '  - metric: restart_recovery',
        '    scope: { adapter: codex }',
        '    p95: 1ms',
        '    mode: report',
        '  - metric: restart_provider_load',
        '    scope: { adapter: codex }',
        '    p95: 10m',
        '    mode: judged',
        '',
      ].join('\n'),
    );
    const junit = join(dir, 'budgets.xml');
    const summary = join(dir, 'step-summary.md');
    writeFileSync(summary, '# earlier step\n');
    const r = await cli(['check', run, '--budgets', budgets, '--junit', junit], {
      env: { GITHUB_STEP_SUMMARY: summary },
    });
    expect(r.code, r.stderr).toBe(99);

    const parsed = (await parse(readFileSync(junit, 'utf8'))) as TestSuites;
    expect(parsed).toMatchObject({ tests: 3, failures: 1, errors: 0 });
    const suite = parsed.testsuite![0]!;
    expect(suite).toMatchObject({ name: 'budgets: tight', tests: 3, failures: 1, skipped: 0 });
    expect(suite.testcase!.map((c) => c.name)).toEqual([
      'restart_recovery_control_plane adapter=codex',
      'restart_recovery adapter=codex (report only)',
      'restart_provider_load adapter=codex',
    ]);
    const [judged, report, holds] = suite.testcase!;
    expect(judged!.failure![0]!.message).toMatch(/^p95 [\d.]+m?s \(limit p95 ≤ 1ms\)$/);
    expect(report!.failure).toBeUndefined();
    expect(report!['system-out']![0]).toMatch(/p95 [\d.]+m?s · limit \(?p95 ≤ 1ms/);
    expect(holds!.failure).toBeUndefined();

    const md = readFileSync(summary, 'utf8');
    expect(md.startsWith('# earlier step\n')).toBe(true);
    expect(md).toMatch(/^## fleetbench check .*: ❌ 1 judged budget breached$/m);
    expect(md).toMatch(/^\| restart_recovery_control_plane \| adapter=codex \| judged \|/m);
  });

  it('a pass, and a misconfigured set is an <error>, not a pass', async () => {
    const ok = join(dir, 'ok.xml');
    const pass = await cli(['check', run, '--budgets', 'native-speed', '--junit', ok], {
      env: { GITHUB_STEP_SUMMARY: '' },
    });
    expect(pass.code, pass.stderr).toBe(0);
    const parsed = (await parse(readFileSync(ok, 'utf8'))) as TestSuites;
    expect(parsed.failures).toBe(0);
    expect(parsed.errors).toBe(0);
    expect(parsed.tests).toBeGreaterThanOrEqual(6);
    expect(
      parsed.testsuite![0]!.testcase!.every((c) => c.classname === 'fleetbench.budgets.native-speed'),
    ).toBe(true);

    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'name: bad\nbudgets:\n  - metric: restart_recovry\n    p95: 4s\n');
    const badXml = join(dir, 'bad.xml');
    const r = await cli(['check', run, '--budgets', bad, '--junit', badXml]);
    expect(r.code).toBe(104);
    expect(existsSync(badXml)).toBe(true);
    {
      const errors = (await parse(readFileSync(badXml, 'utf8'))) as TestSuites;
      expect(errors.errors).toBeGreaterThan(0);
    }
  });

  it('a set that judges nothing (no entry for the adapter, report-only rows) never reads as a pass; --require-judged fails it (exit 99)', async () => {
    const sets = {
      'no-entry':
        'name: no-entry\nper: [adapter]\nbudgets:\n  - { metric: agent_boot, scope: { adapter: gemini }, p95: 4s }\n',
      'report-only': 'name: report-only\nbudgets:\n  - { metric: agent_boot, p95: 1ms, mode: report }\n',
    };
    for (const [name, text] of Object.entries(sets)) {
      const budgets = join(dir, `${name}.yaml`);
      writeFileSync(budgets, text);
      const summary = join(dir, `${name}-summary.md`);
      const lax = await cli(['check', run, '--budgets', budgets], { env: { GITHUB_STEP_SUMMARY: summary } });
      expect(lax.code, lax.stderr).toBe(0);
      expect(lax.stdout).toMatch(
        /verdict: – (no budget for this input: nothing judged|nothing judged: no judged row)/,
      );
      // The step summary said "✅ every judged budget holds" for these.
      const headline = readFileSync(summary, 'utf8').split('\n')[0]!;
      expect(headline).not.toContain('✅');
      expect(headline).toContain('⚠️ nothing judged');

      const junit = join(dir, `${name}.xml`);
      const strict = await cli(['check', run, '--budgets', budgets, '--require-judged', '--junit', junit], {
        env: { GITHUB_STEP_SUMMARY: summary },
      });
      expect(strict.code, `${name}: ${strict.stdout}`).toBe(99);
      expect(strict.stdout).toContain('✗ nothing judged, and judging is required (--require-judged)');
      const parsed = (await parse(readFileSync(junit, 'utf8'))) as TestSuites;
      expect(parsed).toMatchObject({ failures: 1 });
      expect(readFileSync(summary, 'utf8')).toContain('❌ nothing judged, and judging is required');
    }
  });

  it('examples/github-actions.yml runs fleetbench commands that exist, gated on check', async () => {
    const workflow = parseYaml(
      readFileSync(new URL('../examples/github-actions.yml', import.meta.url), 'utf8'),
    ) as { jobs: Record<string, { steps: Array<{ run?: string }> }> };
    const commands = Object.values(workflow.jobs)
      .flatMap((j) => j.steps)
      .flatMap((s) => (s.run ?? '').split('\n'))
      .map((l) => l.trim())
      .filter((l) => l.startsWith('npx fleetbench '));
    expect(commands.some((c) => c.includes(' check ') && c.includes('--junit'))).toBe(true);
    for (const command of commands) {
      const sub = command.split(/\s+/)[2]!;
      const help = await cli([sub, '--help']);
      expect(help.code, `${command}: ${help.stderr}`).toBe(0);
      for (const flag of command.match(/--[a-z-]+/g) ?? []) expect(help.stdout, command).toContain(flag);
    }
  });
});
