import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/reader.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

describe('fleetbench run', () => {
  it('says why the steady window has no polling floor: no cycle started in it, not unattributed calls', async () => {
    // Cycles every 100 s, the steady marker at 3m00s, the run ends at 3m05s: the cycle at 100 s
    // has session calls, none starts in the steady window.
    const r = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'polling.interval=100s',
      '--set',
      'duration=3m05s',
      '--out',
      join(dir, 'no-steady-cycle'),
    ]);
    // A short run projects poorly to 50 sessions: it may fail a budget; the message is what is checked.
    expect([0, 99], r.stderr).toContain(r.code);
    expect(r.stdout).toMatch(
      /polling floor \(steady\)\.+: – \(no poll cycle with session calls started from 3m00s, the steady marker, to the end; whole run: p50 \d/,
    );
    expect(r.stdout).not.toContain('carry a session and a cycle');
  });

  it('runs a cell, writes trace.jsonl and summary.json, and prints the scorecard', async () => {
    const out = join(dir, 'cell');
    const result = await cli(['run', 'S2-T1-5', '--out', out]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // The compact summary, then the Track B budgets judged with their limits.
    expect(result.stdout).toMatch(/▸ Run\n {4}scenario\.\.: S2-T1-5 · virtual clock · seed 1\n/);
    expect(result.stdout).toMatch(/sessions\.\.: 5 started, 0 dropped · final: 5 pr_open/);
    expect(result.stdout).toMatch(/polling floor \(steady\)\.+: p50 \d/);
    expect(result.stdout).toContain('Budgets: track-b');
    expect(result.stdout).toMatch(
      // A headroom projected from 5 sessions to 50 says so beside its value.
      /scorecard\.rest-core-headroom\s+\(all\)\s+judged\s+1\s+[\d.]+% \(projected to 50 sessions; measured [\d.]+% at 5\)\s+value ≥ 40%\s+✓ pass/,
    );
    expect(result.stdout).toContain('verdict: ✓ every judged budget holds');
    // The HTML report beside the summary, for this run and its verdict.
    expect(result.stdout).toContain(`report...: ${join(out, 'report.html')}`);
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('S2-T1-5: Quiet steady state, concentrated, 5 sessions');
    expect(html).toContain('"kind":"run"');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    expect(summary).toMatchObject({
      kind: 'fleetbench-run',
      outcome: { reason: 'completed', sessionsStarted: 5, partial: false },
    });
    expect(summary.scenario).toMatchObject({
      name: 'S2-T1-5',
      cell: 'S2-T1-5',
      polling: { strategy: 'guarded' },
    });
    expect(summary.analysis.run.sessions).toBe(5);
    const { stats } = await readTrace(join(out, 'trace.jsonl'));
    expect(stats.footer?.reason).toBe('completed');
    expect(summary.analysis.input.records.api).toBe(stats.counts.api);
  });

  it('a run too short for a steady window: the projections not judged, with why and what would judge them (exit 0); the default judges', async () => {
    // Cut below S2's own marker (3m), the run has none; 50 s holds no poll interval after every
    // session began polling, so there is no steady window at all.
    const short = await cli(['run', 'S2-T1-5', '--set', 'duration=50s', '--out', join(dir, 'short')]);
    expect(short.code, short.stderr).toBe(0);
    expect(short.stdout).toMatch(
      /scorecard\.rest-core-headroom\s+\(all\)\s+judged\s+0\s+not judged .*– not judged/,
    );
    expect(short.stdout).toContain(
      'scorecard.rest-core-headroom (all): not judged: the run has no steady window: no steady.start marker, and no poll cycle began after every session was polling',
    );
    // The advice names no marker the run does not have.
    expect(short.stdout).toContain('once every session is polling');
    expect(short.stdout).not.toContain("this scenario's steady.start marker");
    expect(short.stdout).toMatch(
      /1,296\/h of 5,000 over the whole run, its start included · headroom 74\.08 % \(not judged\)/,
    );
    // Never "every judged budget holds" while two judged rows were not judged.
    expect(short.stdout).toContain(
      'verdict: ✓ 5 of 7 judged rows hold; 2 not judged (2 the run cannot support)',
    );
    expect(short.stdout).not.toContain('every judged budget holds');
    // Samples required: a projection the run cannot support fails.
    const required = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'duration=50s',
      '--require-judged',
      '--out',
      join(dir, 'short-required'),
    ]);
    expect(required.code).toBe(99);
    expect(required.stdout).toContain('✗ FAIL (not judged; required)');
    // The default duration (20 minutes, the marker at 3m) judges them, from the steady window.
    const full = await cli(['run', 'S2-T1-5', '--out', join(dir, 'full'), '--json']);
    expect(full.code, full.stderr).toBe(0);
    const summary = JSON.parse(full.stdout);
    // From the first poll cycle at or after the marker.
    const window = summary.analysis.api.projection.window;
    expect(window).toMatchObject({ basis: 'steady', judged: true });
    expect(window.fromMs).toBeGreaterThanOrEqual(180_000);
    expect(window.fromMs).toBeLessThan(180_000 + window.neededMs);
    const headroom = summary.budgets[0].rows.find(
      (r: { metric: string }) => r.metric === 'scorecard.rest-core-headroom',
    );
    expect(headroom).toMatchObject({ status: 'pass' });
    expect(headroom.value).toBeGreaterThan(40);
  });

  it('--set overrides reach the run and --json prints summary.json', async () => {
    const out = join(dir, 'naive');
    const result = await cli([
      'run',
      'S2-T1-5',
      '--set',
      'polling.strategy=naive',
      '--set',
      // A minute of steady window (from 3m): the projection is judged from it.
      'duration=4m',
      '--seed',
      '9',
      '--out',
      out,
      '--json',
    ]);
    // Naive polling projected to 50 sessions breaks the Track B headroom budget the cell names:
    // the run judges it (exit 99, like k6's failed thresholds) and says which row in summary.json.
    expect(result.code).toBe(99);
    const printed = JSON.parse(result.stdout);
    const headroom = printed.budgets[0].rows.find(
      (r: { metric: string }) => r.metric === 'scorecard.rest-core-headroom',
    );
    expect(headroom).toMatchObject({ status: 'fail', mode: 'judged' });
    expect(headroom.value).toBeLessThan(40);
    expect(printed.scenario).toMatchObject({ seed: 9, durationMs: 240_000, polling: { strategy: 'naive' } });
    expect(printed.analysis.api.counts.byOperation['pr-state'].calls).toBeGreaterThan(0);
  });

  const badInput: Array<[string, string[], string | (() => string), RegExp]> = [
    [
      'an unknown cell id: the closest ones, and where the list is',
      ['run', 'S7-T1-50'],
      '',
      /unknown scenario or cell 'S7-T1-50'\. Did you mean S1-T1-50 or S2-T1-50 or S3-T1-50\?\n {2}hint: fleetbench scenarios lists every cell/,
    ],
    [
      'a mistyped scenario name: did you mean',
      ['run', 'chaos-codx-c4'],
      '',
      /unknown scenario or cell 'chaos-codx-c4'\. Did you mean chaos-codex-c4 or chaos-codex-c6\?/,
    ],
    ['scale 1 spread is not a cell', ['run', 'S2-T2-1'], '', /unknown scenario or cell 'S2-T2-1'/],
    [
      'a bad --set value names the field',
      ['run', 'S2-T1-5', '--set', 'sessions.count=-1'],
      '',
      /^fleetbench: --set sessions\.count=-1: expected a positive integer \(scenario .*S2\.yaml\)/,
    ],
    [
      'an unknown field, with the one meant',
      ['run', 'S2-T1-5', '--set', 'polling.strateg=naive'],
      '',
      /^fleetbench: --set polling\.strateg=naive: unknown field 'strateg'\. Did you mean 'strategy'\?/,
    ],
    [
      'an unknown field of an executor (a union of kinds), with the one meant',
      ['run', 'chaos-codex-c4', '--set', 'executors.0.concurency=3'],
      '',
      /^fleetbench: --set executors\.0\.concurency=3: executors\[0\]: unknown field 'concurency'\. Did you mean 'concurrency'\?/,
    ],
    [
      'an unknown top-level field, with the one meant',
      ['run', 'S2-T1-5', '--set', 'pollin.strategy=naive'],
      '',
      /^fleetbench: --set pollin\.strategy: no scenario field 'pollin'\. Did you mean 'polling'\?/,
    ],
    ['a malformed --set', ['run', 'S2-T1-5', '--set', 'sessions.count'], '', /--set expects key=value/],
    ['a missing file', ['run', 'nope/missing.yaml'], '', /nope\/missing\.yaml: no such file/],
  ];

  it.each(badInput)('%s', async (_name, args, _unused, expected) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(expected);
    expect(result.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it('a scenario file with a bad field reports file:line: path: reason', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'name: bad\nsessions:\n  count: 3\nfaults:\n  - type: restart\n    kind: warm\n');
    const result = await cli(['run', file]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${file}:6: faults[0].kind: expected one of "hard", "graceful", "hot"`);
    writeFileSync(file, 'name: bad\nsessions: [1, 2\n');
    const yaml = await cli(['run', file]);
    expect(yaml.code).toBe(2);
    expect(yaml.stderr).toMatch(new RegExp(`${file}:\\d+: YAML: `));
  });
});
