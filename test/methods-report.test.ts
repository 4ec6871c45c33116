/**
 * Issue 14, items 12-14: what the terminal and the reports say. Inputs are built by hand and the
 * expected figures worked out in comments, never read back from fleetbench's output.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import { baselineMarkdown } from '../src/matrix/markdown.ts';
import { reportData } from '../src/report-html/model.ts';
import type { Baseline } from '../src/results/baseline.ts';
import { budgetFooter, trackBText } from '../src/results/overview.ts';
import type { ApiRecord } from '../src/trace/schema.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const HOUR = 3_600_000;

/**
 * 4 sessions, 1,000 core calls of 1 point over exactly one hour (the last call ends at 1 h):
 * 1,000 points/h against the 5,000 limit.
 */
function fourSessionHour(): ApiRecord[] {
  return Array.from({ length: 1000 }, (_, k) => ({
    kind: 'api',
    t: k * 3_600,
    dur: k === 999 ? 3_600 : 100,
    service: 'github',
    protocol: 'rest',
    method: 'GET',
    route: '/repos/{owner}/{repo}/pulls',
    status: 200,
    conditional: false,
    notModified: false,
    resource: 'core',
    cost: 1,
    secondaryCost: 1,
    session: `s${k % 4}`,
    rl: { limit: 5000, remaining: 4000, used: 1000, reset: 1_767_232_800, resource: 'core' },
  }));
}

/** The whole hour is the steady window (a projection is judged only from one: docs/analysis.md). */
const STEADY_FROM_0 = { kind: 'event', name: 'steady.start', t: 0 } as const;

describe('12. a projection is shown as a projection, with the measured figure beside it', () => {
  // Measured at 4 sessions: 100 × (1 − 1,000 / 5,000) = 80 %. Per session 250 points/h; at 50
  // sessions 12,500/h: 100 × (1 − 12,500 / 5,000) = −150 %, the judged (projected) figure.
  const SHOWN = '-150 % (projected to 50; measured 80 % at 4)';

  it('the analysis keeps both figures on the headroom row', () => {
    const analyzer = createAnalyzer();
    analyzer.add(STEADY_FROM_0);
    for (const r of fourSessionHour()) analyzer.add(r);
    const a = analyzer.finish();
    expect(a.run.durationMs).toBe(HOUR);
    expect(a.scorecard.rows.find((r) => r.id === 'rest-core-headroom')).toMatchObject({
      measured: -150,
      projected: true,
      observed: 80,
      observedAt: 4,
      verdict: 'fail',
    });
  });

  it('terminal, Markdown and HTML show the same figure', async () => {
    const trace = join(dir, 'four.jsonl');
    const writer = new TraceWriter(
      trace,
      {
        runId: 'four',
        tool: { name: 'fleetbench', version: 'test' },
        clock: 'virtual',
        seed: 1,
        scenario: { name: 'four', hash: null },
        epochMs: 0,
        startedAt: new Date(0).toISOString(),
      },
      { flushIntervalMs: 0 },
    );
    writer.write(STEADY_FROM_0);
    for (const r of fourSessionHour()) writer.write(r);
    writer.close('completed');

    const terminal = await cli(['analyze', trace]);
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toContain(SHOWN);
    expect(terminal.stdout).toContain('✗ FAIL (projected)');
    // The burn table's measured headroom for the hour is the same 80 % (5,000 − 1,000 of 5,000).
    expect(terminal.stdout).toMatch(/core\s+resets \S+\s+\S+\s+1,000\s+1,000\s+\S+\s+5,000\s+1,000\s+80\.0%/);
    const markdown = await cli(['analyze', trace, '--markdown']);
    expect(markdown.stdout).toContain(SHOWN);

    const json = await cli(['analyze', trace, '--json']);
    const analysisFile = join(dir, 'four.json');
    writeFileSync(analysisFile, json.stdout);
    const html = join(dir, 'four.html');
    const report = await cli(['report', analysisFile, '-o', html]);
    expect(report.code, report.stderr).toBe(0);
    expect(readFileSync(html, 'utf8')).toContain(SHOWN);
  }, 60_000);
});

describe('13. an interrupted matrix: partial cells are not judged, and what did not run is counted', () => {
  const base = (() => {
    const analyzer = createAnalyzer();
    analyzer.add(STEADY_FROM_0);
    for (const r of fourSessionHour()) analyzer.add(r);
    return analyzer.finish();
  })();
  const withVerdict = (verdict: 'pass' | 'fail', footer: Analysis['input']['footer']): Analysis => {
    const a = structuredClone(base);
    a.scorecard.verdict = verdict;
    a.input.footer = footer;
    return a;
  };
  const unit = (id: string, runs: Array<{ analysis: Analysis; reason: 'completed' | 'interrupted' }>) => ({
    id,
    ref: id,
    cell: { scenario: id.split('-')[0]!, topology: id.split('-')[1]!, scale: Number(id.split('-')[2]) },
    heading: `${id}: hand-built`,
    whatItTells: null,
    scenarioHash: 'x',
    budgets: ['track-b'],
    runs: runs.map((r, i) => ({
      seed: i + 1,
      dir: `cells/${id}`,
      reason: r.reason,
      sessionsStarted: 4,
      sessionsDropped: 0,
      analysis: r.analysis,
      checks: null,
    })),
  });
  // S2-T1-1 completed and passes; S2-T1-5 completed and fails; S2-T1-10 was cut by Ctrl-C with
  // figures that would "pass"; S2-T1-25 and S2-T1-50 never ran.
  const b: Baseline = {
    kind: 'fleetbench-baseline',
    schemaVersion: 1 as Baseline['schemaVersion'],
    generator: { name: 'fleetbench', version: 'test' },
    selection: 'S2-T1-*',
    overrides: [],
    repeats: 1,
    partial: true,
    units: [
      unit('S2-T1-1', [{ analysis: withVerdict('pass', 'completed'), reason: 'completed' }]),
      unit('S2-T1-5', [{ analysis: withVerdict('fail', 'completed'), reason: 'completed' }]),
      unit('S2-T1-10', [{ analysis: withVerdict('pass', 'interrupted'), reason: 'interrupted' }]),
      unit('S2-T1-25', []),
      unit('S2-T1-50', []),
    ],
    pruning: null,
    timing: { wallMs: 1, jobs: 1, runs: {} },
  } as Baseline;

  it('the partial cell is marked partial, never pass; the footer counts 2 judged, 1 partial, 2 not run', () => {
    expect(trackBText(b.units[2]!, b.units[2]!.runs[0]!.analysis)).toBe('partial: not judged');
    expect(budgetFooter(b)).toBe(
      'budgets: 1 of 2 judged cells fail a judged budget: S2-T1-5; 1 partial (interrupted, not judged): S2-T1-10; 2 did not run: S2-T1-25, S2-T1-50',
    );
    const md = baselineMarkdown(b);
    expect(md).toContain('| S2-T1-10 | partial: not judged |');
    expect(md).toContain('Budgets: 1 of 2 judged cells fail');
    expect(md).toContain('> ⚠ interrupted: partial figures, not judged');
  });

  it('the HTML report does not call the partial cell a pass, and counts what did not run', () => {
    const data = reportData({
      source: 'hand',
      kind: 'baseline',
      baseline: b,
      units: b.units.map((u) => ({
        id: u.id,
        heading: u.heading,
        whatItTells: null,
        scorecardJudged: true,
        runs: u.runs.map((r) => ({ seed: r.seed, dir: r.dir, analysis: r.analysis, checks: r.checks })),
      })),
    });
    expect(data.units.find((u) => u.id === 'S2-T1-10')!.verdict).toBe('unknown');
    expect(data.overall.words).toContain('1 partial (interrupted, not judged): S2-T1-10');
    expect(data.overall.words).toContain('2 did not run: S2-T1-25, S2-T1-50');
  });
});

describe('14. the repository explains itself through its own docs', () => {
  // The product brief's name, spelled so that this file does not contain it either.
  const BRIEF = String.fromCharCode(83, 80, 69, 67);
  it('no source, test, doc, budget, scenario or help text cites the brief outside the repository', async () => {
    const root = new URL('..', import.meta.url).pathname;
    const listed = (dir: string, ext: RegExp) =>
      readdirSync(join(root, dir), { recursive: true })
        .map(String)
        .filter((f) => ext.test(f))
        .map((f) => join(dir, f));
    const files = [
      ...listed('src', /\.(ts|mjs|js)$/),
      ...listed('test', /\.(ts|mjs|js)$/),
      ...listed('docs', /\.(md|json)$/),
      ...listed('budgets', /\.ya?ml$/),
      ...listed('scenarios', /\.ya?ml$/),
      'README.md',
    ];
    expect(files.length).toBeGreaterThan(200);
    const cited = files.filter((f) => readFileSync(join(root, f), 'utf8').includes(BRIEF));
    expect(cited).toEqual([]);
    const help = await cli(['check', '--help']);
    expect(help.stdout).not.toContain(BRIEF);
    expect(help.stdout).toContain('docs/budgets.md');
  }, 60_000);
});
