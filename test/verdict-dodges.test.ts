/**
 * A measured breach never passes (docs/analysis.md#the-track-b-scorecard): the ways a naive
 * 50-session run that burns 16,000-18,000 points an hour against Track B's 5,000/h token used to
 * exit 0 ("every judged budget holds"), each through the real CLI: a steady marker at or after
 * the end (refused, exit 2; `matrix --check` too), a scenario without a marker, a trace whose
 * marker was removed or whose one poll cycle declares a 15-minute interval, a raised rate limit.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Analysis } from '../src/analyze/schema.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const NAIVE = ['--set', 'polling.strategy=naive', '--set', 'duration=10m'];

type Row = Analysis['scorecard']['rows'][number];
const coreRow = (analysis: Analysis): Row =>
  analysis.scorecard.rows.find((r) => r.id === 'rest-core-headroom')!;

/**
 * A trace's lines with `edit` applied to each parsed record (undefined drops the line), its
 * footer's counts made to agree: an edit a user could make and the reader accepts.
 */
function editTrace(from: string, to: string, edit: (record: Record<string, unknown>) => unknown): void {
  const lines = readFileSync(from, 'utf8').trimEnd().split('\n');
  const records: Array<Record<string, unknown>> = [];
  for (const line of lines) {
    const edited = edit(JSON.parse(line) as Record<string, unknown>) as Record<string, unknown> | undefined;
    if (edited !== undefined) records.push(edited);
  }
  const counts: Record<string, number> = { api: 0, span: 0, event: 0, gauge: 0 };
  for (const r of records) if (typeof r.kind === 'string' && r.kind in counts) counts[r.kind]!++;
  const footer = records[records.length - 1]!;
  if (footer.kind === 'end') footer.counts = counts;
  writeFileSync(to, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

describe('a measured breach never passes', () => {
  const naive = join(dir, 'naive');
  beforeAll(async () => {
    const run = await cli(['run', 'S2-T1-50', ...NAIVE, '--out', naive]);
    expect(run.code, run.stderr).toBe(99);
  }, 120_000);

  it('a steady marker at or after the end is refused: exit 2, naming it (run and matrix --check); one too close to it judges another window: exit 99', async () => {
    for (const at of ['10m', '30m']) {
      const run = await cli(['run', 'S2-T1-50', ...NAIVE, '--set', `markers.steady-start=${at}`]);
      expect(run.code, run.stdout).toBe(2);
      expect(run.stderr).toMatch(/markers\.steady-start=.*the steady\.start marker at /);
    }
    const late = await cli(['matrix', '--cells', 'S2-T2-50', ...NAIVE, '--set', 'markers.steady-start=10m']);
    expect(late.code, late.stdout).toBe(2);
    expect(late.stderr).toContain('markers.steady-start');
    // 10-15 s before the end: shorter than a poll interval, so the window is the one every session
    // polled in, and the burn breaches there.
    const close = await cli(['run', 'S2-T1-50', ...NAIVE, '--set', 'markers.steady-start=9m50s']);
    expect(close.code, close.stdout).toBe(99);
    expect(close.stdout).toMatch(/steady window: the steady window from the steady\.start marker at 9m50s/);
    const matrix = await cli([
      'matrix',
      '--cells',
      'S2-T2-50',
      ...NAIVE,
      '--set',
      'markers.steady-start=9m45s',
      '--check',
      '--out',
      join(dir, 'matrix'),
    ]);
    expect(matrix.code, matrix.stdout).toBe(99);
  }, 120_000);

  it('a scenario without a steady marker is judged from the first poll cycle after every session was polling: exit 99', async () => {
    const file = join(dir, 's2-no-marker.yaml');
    writeFileSync(
      file,
      readFileSync(new URL('../scenarios/a2/S2.yaml', import.meta.url), 'utf8').replace(
        /markers:\n {2}steady-start: 3m\n/,
        '',
      ),
    );
    expect(readFileSync(file, 'utf8')).not.toContain('steady-start');
    const out = join(dir, 'no-marker');
    const run = await cli([
      'run',
      file,
      '--set',
      'sessions.count=50',
      '--set',
      'polling.strategy=naive',
      '--set',
      'duration=15m',
      '--out',
      out,
    ]);
    expect(run.code, run.stdout).toBe(99);
    const analysis = (JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { analysis: Analysis })
      .analysis;
    expect(analysis.api.projection.window).toMatchObject({ basis: 'all-active', judged: true });
    expect(coreRow(analysis).verdict).toBe('fail');

    // Too short to hold a poll interval once every session polls: not judged, and the advice
    // names no marker the scenario does not have.
    const short = join(dir, 'no-marker-short');
    const brief = await cli([
      'run',
      file,
      '--set',
      'sessions.count=50',
      '--set',
      'duration=40s',
      '--out',
      short,
    ]);
    const window = (JSON.parse(readFileSync(join(short, 'summary.json'), 'utf8')) as { analysis: Analysis })
      .analysis.api.projection.window!;
    expect(window.judged).toBe(false);
    expect(window.advice).not.toMatch(/marker/);
    expect(brief.stdout).not.toMatch(/run past .*marker/);
  }, 120_000);

  it('check of the trace with its marker removed, or one poll cycle declaring 15 minutes: exit 99', async () => {
    const trace = join(naive, 'trace.jsonl');
    const unmarked = join(dir, 'unmarked.jsonl');
    editTrace(trace, unmarked, (r) => (r.name === 'steady.start' ? undefined : r));
    const a = await cli(['check', unmarked, '--budgets', 'track-b']);
    expect(a.code, a.stdout).toBe(99);
    expect(a.stdout).not.toMatch(/every judged budget holds/);

    // The marker late in the run and one cycle saying it runs every 15 minutes: the interval a
    // window must hold is the cycles' measured median (30 s), never the largest declared.
    const declared = join(dir, 'declared-interval.jsonl');
    let first = true;
    editTrace(trace, declared, (r) => {
      if (r.name === 'steady.start') return { ...r, t: 585_000 };
      if (r.name === 'poll.cycle' && first) {
        first = false;
        return { ...r, data: { ...(r.data as object), intervalMs: 900_000 } };
      }
      return r;
    });
    const b = await cli(['check', declared, '--budgets', 'track-b']);
    expect(b.code, b.stdout).toBe(99);
  });

  it('rows not judged: the headline counts them, JUnit skips them with the reason, the step summary says so, --require-judged fails them', async () => {
    const out = join(dir, 'short');
    const run = await cli(['run', 'S2-T1-5', '--set', 'duration=50s', '--out', out]);
    expect(run.code, run.stderr).toBe(0);
    const junit = join(dir, 'short.xml');
    const summaryFile = join(dir, 'step-summary.md');
    const check = await cli(['check', out, '--junit', junit], { env: { GITHUB_STEP_SUMMARY: summaryFile } });
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('verdict: ✓ 5 of 7 judged rows hold; 2 not judged');
    expect(check.stdout).not.toContain('every judged budget holds');
    const xml = readFileSync(junit, 'utf8');
    expect(xml).toMatch(
      /name="scorecard\.rest-core-headroom \(all\)"[^>]*>\s*<skipped message="not judged: the run has no steady window/,
    );
    expect(xml).toMatch(/skipped="2"/);
    const summary = readFileSync(summaryFile, 'utf8');
    expect(summary).toContain('✅ 5 of 7 judged rows hold; ⚠️ 2 not judged');
    expect(summary).not.toContain('every judged budget holds');
    const strict = await cli(['check', out, '--require-judged']);
    expect(strict.code).toBe(99);
    expect(strict.stdout).toContain('✗ FAIL (not judged; required)');
  }, 60_000);

  it('a raised rate limit is reported beside the row, and the row is judged on the 5,000/h token: exit 99', async () => {
    const out = join(dir, 'raised');
    const run = await cli(['run', 'S2-T1-50', ...NAIVE, '--set', 'github.limits.core=1000000', '--out', out]);
    expect(run.code, run.stdout).toBe(99);
    const analysis = (JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { analysis: Analysis })
      .analysis;
    const row = coreRow(analysis);
    expect(row.verdict).toBe('fail');
    expect(row.measured).toBeLessThan(0);
    expect(row.runLimit).toBe(1_000_000);
    expect(row.runLimitHeadroom).toBeGreaterThan(95);
    expect(run.stdout).toContain("the run's limit was 1,000,000/h");
  }, 60_000);

  it('turnover: a steady window below the minimum is refused for a judged run (exit 2); checked, a row that holds in it is not judged, one that breaches fails', async () => {
    const rps = ['--set', 'turnover.target-rps=50'];
    for (const steady of ['30s', '5s']) {
      const short = await cli(['run', 'turnover', ...rps, '--set', `turnover.steady=${steady}`]);
      expect(short.code, short.stdout).toBe(2);
      expect(short.stderr).toMatch(
        /turnover\.steady: the steady turnover window is too small to judge a row that passes in it/,
      );
    }
    // The built-in window (5 minutes) breaches four rows.
    const full = join(dir, 'turnover-50');
    const run = await cli(['run', 'turnover', ...rps, '--out', full]);
    expect(run.code, run.stdout).toBe(99);
    // Its turnover.done marker moved to 30 s after the fill: the window stays where the swaps were.
    const moved = join(dir, 'turnover-moved.jsonl');
    let fillDone = 0;
    editTrace(join(full, 'trace.jsonl'), moved, (r) => {
      if (r.name === 'turnover.fill.done') fillDone = r.t as number;
      return r.name === 'turnover.done' ? { ...r, t: fillDone + 30_000 } : r;
    });
    const check = await cli(['check', moved, '--budgets', 'turnover']);
    expect(check.code, check.stdout).toBe(99);

    // Run unjudged with a 30 s window, then checked: the rows that hold are not judged.
    const unjudged = join(dir, 'turnover-30s');
    const small = await cli([
      'run',
      'turnover',
      ...rps,
      '--set',
      'turnover.steady=30s',
      '--no-budgets',
      '--out',
      unjudged,
    ]);
    expect(small.code, small.stderr).toBe(0);
    const checked = await cli(['check', unjudged, '--budgets', 'turnover']);
    expect(checked.code, checked.stdout).toBe(0);
    expect(checked.stdout).toMatch(/turnover\.park\.p95 +\(all\) +judged .*– not judged/);
    expect(checked.stdout).toContain(
      'the steady turnover window is too small to judge a row that passes in it: 30 s long',
    );
    expect(checked.stdout).not.toContain('every judged budget holds');
    expect((await cli(['check', unjudged, '--budgets', 'turnover', '--require-judged'])).code).toBe(99);
  }, 180_000);
});
