/**
 * The end-of-run summary (`runSummarySections`), rendered from a trace the real emulator and a
 * sequential poll loop wrote (test/helpers/control-plane-trace.ts), through the real analyzer
 * and reporters.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeSyntheticTrace } from '../bench/synthetic.ts';
import { type Analysis, analyzeFile } from '../src/analyze/index.ts';
import { type RunOutcome, reporters, runSummarySections } from '../src/report/index.ts';
import { writeControlPlaneTrace } from './helpers/control-plane-trace.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const path = join(dir, 'run.jsonl');
let analysis: Analysis;
beforeAll(async () => {
  await writeControlPlaneTrace(path);
  analysis = (await analyzeFile(path, { threads: 1 })).analysis;
});

const outcome: RunOutcome = {
  reason: 'completed',
  sessionsStarted: 4,
  sessionsDropped: 0,
  tracePath: 'runs/S2-T1-4/trace.jsonl',
  summaryPath: 'runs/S2-T1-4/analysis.json',
  wallMs: 412,
};

function render(format: 'terminal' | 'markdown', o: RunOutcome = outcome): string {
  return reporters[format]().render({
    title: 'run S2-T1-4',
    document: analysis,
    sections: () => runSummarySections(analysis, { outcome: o }),
  });
}

describe('the run summary', () => {
  it('is a compact, k6-like terminal summary with the figures a load tester reads first', () => {
    const text = render('terminal');
    expect(text.split('\n').map((l) => l.trimEnd())).toEqual([
      '',
      '  fleetbench run S2-T1-4',
      '',
      '  ▸ Run',
      '    scenario..: S2-T1-4 quiet-steady-state · virtual clock · seed 7',
      '    duration..: 3m18s run time in 412ms wall · completed',
      '    sessions..: 4 started, 0 dropped · final: 3 pr_open, 1 working (at 3m18s)',
      '    files.....: trace runs/S2-T1-4/trace.jsonl · summary runs/S2-T1-4/analysis.json',
      '',
      '  ▸ GitHub API',
      '    calls....................: 78 · 304 100.0% of 5 conditional',
      // 73 points over 3m18s = 1,327 an hour; headroom at that rate against 5,000.
      '    core.....................: 78 calls · 73 points · 1,091/h of 5,000 (steady, from 1m06s) · headroom 78.18 % measured',
      '    polling floor (steady)...: p50 2 · mean 2 · max 2 calls/session/cycle (5 cycles from 1m00s)',
      '    max req/s 1 s · 10 s.....: 1 · 0.5',
      '    peak concurrency.........: 2 in flight',
      '    writes/min (max).........: 0 (of 0 writes)',
      '    403 / 429 / retry-after..: 0 / 0 / 0',
      '    poll cycles..............: 6 · p95 1m06s vs 30s interval · 1 overran it · 1 skipped · lag max 6s',
      '',
      '  ▸ Track B scorecard: ✗ FAIL',
      // A projection is shown as one, the run's measured figure (the core line above) beside it.
      '    row                                                                          measured  limit  verdict',
      '    ─────────────────────────────────  ──────────────────────────────────────────────────  ─────  ──────────────────',
      '    REST core headroom at 50 sessions  -172.73 % (projected to 50; measured 78.18 % at 4)  >= 40  ✗ FAIL (projected)',
      '    GraphQL headroom at 50 sessions          100 % (projected to 50; measured 100 % at 4)  >= 40  ✓ pass (projected)',
      '    peak concurrency                                                          2 in flight  < 50   ✓ pass',
      '    max req/s over any 1 s                                                        1 req/s  <= 30  ✓ pass',
      '    max req/s over any 10 s                                                     0.5 req/s  <= 20  ✓ pass',
      '    writes per minute                                                        0 writes/min  < 200  ✓ pass',
      '    403 / 429 / retry-after answers                                             0 answers  == 0   ✓ pass',
      '    headroom rows projected from 4 to 50 sessions',
      '',
      '',
    ]);
    // The projection behind the failing row, from the steady window: it starts at the first poll
    // cycle at or after the marker (60 s), the one at 66 s (the cold cycle overran until then, so
    // its last 3 calls at 60-64 s are not steady), → 198 s: 5 steady cycles of 8 paid calls (the
    // guard answers 304, free): 40 points in 132 s by 4 sessions, times 50.
    const perSessionHour = 40 / (132_000 / 3_600_000) / 4;
    // (points per hour are kept to 0.1: the figure is within a hundredth of a percent)
    expect(analysis.scorecard.rows[0]!.measured).toBeCloseTo(100 * (1 - (perSessionHour * 50) / 5000), 1);
  });

  it('says when a run was interrupted and sessions were dropped, in every format', () => {
    const cut: RunOutcome = { ...outcome, reason: 'interrupted', sessionsDropped: 2, summaryPath: null };
    const text = render('terminal', cut);
    expect(text).toContain('duration..: 3m18s run time in 412ms wall · INTERRUPTED');
    expect(text).toContain('sessions..: 4 started, 2 dropped');
    expect(text).toContain('files.....: trace runs/S2-T1-4/trace.jsonl\n');
    expect(text).toContain('! the run was interrupted: every figure covers only what ran');
    expect(text).toContain('! 2 sessions could not start on schedule (dropped)');
    const markdown = render('markdown', cut);
    expect(markdown).toContain('### Track B scorecard: ✗ FAIL');
    expect(markdown).toContain(
      '| poll cycles | 6 · p95 1m06s vs 30s interval · 1 overran it · 1 skipped · lag max 6s |',
    );
    expect(markdown).toContain('> ⚠ the run was interrupted: every figure covers only what ran');
  });

  it('falls back to the whole-run floor, and leaves out the poll loop, when the trace has neither', async () => {
    // The bench's synthetic trace: api records with cycles, no marker, no poll.cycle spans.
    const file = join(dir, 'synthetic.jsonl');
    writeSyntheticTrace(file, { records: 3000, sessions: 10, repos: 2 });
    const { analysis: plain } = await analyzeFile(file, { threads: 1 });
    expect(plain.api.pollingFloor.steady).toBeNull();
    expect(plain.controlPlane.pollCycles).toBeNull();
    const floor = plain.api.pollingFloor.perSessionCycle.all!;
    const text = reporters.terminal().render({
      title: 'run',
      document: plain,
      sections: () => runSummarySections(plain, { outcome }),
    });
    expect(text).toContain(
      `polling floor (whole run)..: p50 ${floor.p50} · mean ${floor.mean?.toLocaleString('en-US', { maximumFractionDigits: 2 })} · max ${floor.max} calls/session/cycle (no steady.start marker)`,
    );
    expect(text).not.toContain('poll cycles');
    expect(text).toContain('final: –');
  });
});
