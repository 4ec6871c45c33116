/**
 * Turnover through the real CLI, as a new user tries it: the run prints the turnover window with
 * wake/park percentiles and the state counts, `fleetbench analyze` on its trace agrees, and a
 * bad session profile is reported with its file, line and field.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

/**
 * The lines of one section of the terminal output, from its title to the next title. A missing
 * section fails the test (two missing sections must not compare equal).
 */
function section(output: string, title: string): string {
  const lines = output.split('\n');
  const start = lines.findIndex((l) => l.trim() === `▸ ${title}`);
  if (start < 0) throw new Error(`no section "${title}" in the output:\n${output}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '');
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

describe('fleetbench run turnover', () => {
  it('prints the turnover window with wake/park percentiles and state counts; analyze agrees', async () => {
    const out = join(dir, 'run');
    const run = await cli(['run', 'turnover', '--set', 'turnover.target-rps=50', '--out', out]);
    expect(run.stderr).toBe('');
    // 50 swaps a second is five times the scenario's rate: the laptop pool saturates (awake
    // sessions are all busy, swaps are missed) and the built-in turnover budgets say so.
    expect(run.code).toBe(99);
    expect(run.stdout).toMatch(
      /turnover\.swaps-done\s+\(all\)\s+judged\s+1\s+[\d.]+%\s+value ≥ 99%\s+✗ FAIL/,
    );
    const window = section(run.stdout, 'Turnover window');
    expect(window).toMatch(/swaps done \/ asked\.*: [\d,]+ \/ 15,000/);
    expect(window).toMatch(
      /turnover_window\s+count\s+per s\s+failures\s+errors\s+p50\s+p90\s+p95\s+p99\s+max/,
    );
    for (const row of ['park', 'time to wake', 'wake first touch', 'step'])
      expect(window).toMatch(new RegExp(`\\n\\s+${row}\\s+[\\d,]+\\s+[\\d.]+\\s+\\d+\\s+\\d+\\s+[\\d.]+m?s`));
    for (const state of ['awake', 'parked', 'waking', 'parking'])
      expect(window).toMatch(new RegExp(`\\n\\s+${state}\\s+[\\d,]+`));
    expect(window).toMatch(/\n\s+total\s+2,000\s+2,000/);
    // A turnover run makes no GitHub sessions: the cost sections are left to `analyze`.
    expect(run.stdout).not.toContain('Track B scorecard');
    expect(run.stdout).toContain('▸ Turnover (whole run)');

    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    const [analyzed, json] = await Promise.all([
      cli(['analyze', join(out, 'trace.jsonl')]),
      cli(['analyze', join(out, 'trace.jsonl'), '--json']),
    ]);
    expect(analyzed.code).toBe(0);
    for (const title of ['Turnover window', 'Turnover (whole run)', 'Actor failures'])
      expect(section(analyzed.stdout, title)).toBe(section(run.stdout, title));
    expect(JSON.parse(json.stdout).turnover).toEqual(summary.analysis.turnover);
    // The numbers behind the table: 50 asked every second of the 5-minute window.
    expect(summary.analysis.turnover.window.swaps.asked).toBe(15_000);
    expect(summary.analysis.turnover.window.durationMs).toBeCloseTo(300_000, 6);
  }, 240_000);

  const profile = (steps: string) => `name: broken\nsteps:\n${steps}`;
  const cases: Array<[string, string, RegExp]> = [
    [
      'an unknown operation',
      profile('  - name: a\n    think: 2s\n    ops:\n      - ingset: 5MB\n'),
      /profile\.yaml:6: steps\[0\]\.ops\[0\]: unknown operation 'ingset' \(expected one of ingest, cpu, disk-write/,
    ],
    [
      'an unknown field',
      profile('  - name: a\n    thinks: 2s\n    ops:\n      - cpu: 1s\n'),
      /profile\.yaml:4: steps\[0\]: unknown field 'thinks'/,
    ],
    [
      'a disk read before any write',
      profile(
        '  - name: a\n    think: 2s\n    ops:\n      - cpu: 1s\n  - name: b\n    think: 2s\n    ops:\n      - disk-read: 5MB\n      - disk-write: 5MB\n',
      ),
      /profile\.yaml:10: steps\[1\]\.ops\[0\]: disk-read before any disk-write/,
    ],
    [
      'a memory touch before any fill',
      profile('  - name: a\n    think: 2s\n    ops:\n      - memory-touch: 5MB\n'),
      /profile\.yaml:6: steps\[0\]\.ops\[0\]: memory-touch before any memory-fill or ingest/,
    ],
    [
      'duplicate step names',
      profile(
        '  - name: edit\n    think: 2s\n    ops:\n      - cpu: 1s\n  - name: edit\n    think: 2s\n    ops:\n      - cpu: 1s\n',
      ),
      /profile\.yaml:7: steps\[1\]\.name: duplicate step name 'edit' \(also steps\[0\]\)/,
    ],
    [
      'a bad size',
      profile('  - name: a\n    think: 2s\n    ops:\n      - disk-write: 5 parsecs\n'),
      /profile\.yaml:6: steps\[0\]\.ops\[0\]\.disk-write: expected a positive size like 64MB or 1\.5GiB, got "5 parsecs"/,
    ],
  ];

  it('names the file, line and field of every kind of bad session profile, with no stack trace', async () => {
    const results = await Promise.all(
      cases.map(async ([name, text], i) => {
        const caseDir = join(dir, `profile-${i}`);
        mkdirSync(caseDir, { recursive: true });
        writeFileSync(join(caseDir, 'profile.yaml'), text);
        writeFileSync(
          join(caseDir, 'scenario.yaml'),
          'name: bad-profile\nturnover:\n  registered: 10\n  awake: 2\n  target-rps: 1\n  profile: profile.yaml\n',
        );
        return {
          name,
          result: await cli(['run', join(caseDir, 'scenario.yaml'), '--out', join(caseDir, 'out')]),
        };
      }),
    );
    results.forEach(({ name, result }, i) => {
      expect(result.code, name).toBe(2);
      expect(result.stderr, name).toMatch(cases[i]![2]);
      expect(result.stderr, name).not.toMatch(/at .*\.ts:\d+/);
    });
  }, 180_000);

  it('an unknown profile name points at the scenario line; turnover fields are checked too', async () => {
    const file = join(dir, 'unknown-profile.yaml');
    writeFileSync(
      file,
      'name: x\nturnover:\n  registered: 10\n  awake: 2\n  target-rps: 1\n  profile: nope\n',
    );
    const [unknown, tooMany] = await Promise.all([
      cli(['run', file]),
      cli(['run', 'turnover', '--set', 'turnover.awake=5000']),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      `${file}:6: turnover.profile: unknown profile 'nope' (built-in: coding-session, personal-assistant-light; or the path of a profile YAML file)`,
    );
    expect(tooMany.code).toBe(2);
    // The value came from --set: the message names the flag, not the scenario file's line.
    expect(tooMany.stderr).toMatch(
      /^fleetbench: --set turnover\.awake=5000: must not exceed turnover\.registered \(scenario .*turnover\.yaml\)/,
    );
  }, 180_000);
});
