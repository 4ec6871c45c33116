/**
 * Issue 14, items 1-5: restart recovery and budgets judged the way the source methods say, on
 * inputs computed by hand. Every expected figure is worked out in a comment from the method's
 * rule (docs/analysis.md#speed, docs/budgets.md), never read back from fleetbench's output.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAnalyzer } from '../src/analyze/analyzer.ts';
import { LatencyHistogram, nearestRank } from '../src/analyze/histogram.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import { deriveBudgets, judge, parseBudgetText } from '../src/judge/index.ts';
import { verdictCheckRows } from '../src/results/checks.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

type Labels = Record<string, string>;
const ev = (t: number, name: string, session?: string, labels?: Labels, data?: Record<string, unknown>) =>
  ({
    kind: 'event',
    name,
    t,
    ...(session ? { session } : {}),
    ...(labels ? { labels } : {}),
    ...(data ? { data } : {}),
  }) as BodyRecord;
const provider = (t: number, session: string, type: string) =>
  ev(t, 'provider.event', session, { adapter: 'codex', type });
const created = (t: number, session: string) =>
  ev(t, 'run.created', session, { adapter: 'codex', start: 'warm' }, { run: `r-${session}` });
const restart = (kill: number, ready: number, kind = 'hard') => [
  ev(kill, 'controlplane.restart', undefined, { kind }),
  ev(ready, 'controlplane.ready', undefined, { reason: kind }),
];
const load = (t: number, dur: number, session: string, extra: Record<string, unknown> = {}): BodyRecord => ({
  kind: 'span',
  name: 'provider.session.load',
  t,
  dur,
  session,
  outcome: 'ok',
  labels: { adapter: 'codex', reason: 'recovery' },
  data: { run: `r-${session}` },
  ...extra,
});

function analyse(records: BodyRecord[]): Analysis {
  const analyzer = createAnalyzer();
  for (const r of records) analyzer.add(r);
  return analyzer.finish();
}

/** The method's restart rows for codex: control plane judged (p50 2.5 s, p95 4 s), the rest report. */
const RESTART_BUDGET = `
name: restart
baseline: hand
budgets:
  - { metric: restart_recovery_control_plane, scope: { adapter: codex, kind: hard }, p50: 2.5s, p95: 4s }
  - { metric: restart_recovery, scope: { adapter: codex, kind: hard }, p95: 8s, mode: report }
  - { metric: restart_provider_load, scope: { adapter: codex, kind: hard }, p95: 10s, mode: report }
`;

function writeTrace(name: string, records: BodyRecord[]): string {
  const path = join(dir, `${name}.jsonl`);
  const writer = new TraceWriter(
    path,
    {
      runId: name,
      tool: { name: 'fleetbench', version: 'test' },
      clock: 'virtual',
      seed: 1,
      scenario: { name, hash: null },
      epochMs: 0,
      startedAt: new Date(0).toISOString(),
    },
    { flushIntervalMs: 0 },
  );
  for (const r of records) writer.write(r);
  writer.close('completed');
  return path;
}

describe('1. a judged row with no samples is "no samples", not a misconfiguration', () => {
  // A wave whose restart produced no load span: ready at 10 s, the run resumes at 15 s.
  const noLoad = [created(0, 's1'), ...restart(5_000, 10_000), provider(15_000, 's1', 'session.resumed')];

  it('the conservative rule still breaches: no load span, the whole 5 s counts as the control plane’s', async () => {
    const a = analyse(noLoad);
    const verdict = judge(parseBudgetText(RESTART_BUDGET, 'restart.yaml'), [{ name: 'wave', analysis: a }]);
    // control plane = full = 15 − 10 = 5 s > p95 4 s (one sample: judged on p95 only) → judged breach.
    const cp = verdict.rows.find((r) => r.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({ status: 'fail', p95: 5_000, n: 1 });
    // restart_provider_load: no load, no sample: shown as such, not an error.
    const pl = verdict.rows.find((r) => r.metric === 'restart_provider_load')!;
    expect(pl).toMatchObject({ status: 'no-samples', n: 0 });
    expect(verdict).toMatchObject({ verdict: 'fail', errors: [], noSamples: 1, judgedBreaches: 1 });

    const trace = writeTrace('no-load', noLoad);
    const budgets = join(dir, 'restart.yaml');
    writeFileSync(budgets, RESTART_BUDGET);
    const check = await cli(['check', trace, '--budgets', budgets]);
    expect(check.code).toBe(99);
    expect(check.stdout).toMatch(/restart_provider_load .*no samples/);
  }, 60_000);

  it('a hot restart (nothing reloads, no hard-restart sample) exits 0 and says "no samples" in terminal, JSON and Markdown', async () => {
    // Hot restart: ready at 5.4 s, session.resumed at 6.2 s: a kind=hot sample of 0.8 s; the
    // budget rows ask for kind=hard: none of them has a sample.
    const hot = [
      created(0, 's1'),
      provider(1_000, 's1', 'turn.started'),
      ...restart(5_000, 5_400, 'hot'),
      provider(6_200, 's1', 'session.resumed'),
    ];
    const trace = writeTrace('hot', hot);
    const budgets = join(dir, 'restart-hot.yaml');
    writeFileSync(budgets, RESTART_BUDGET);
    const terminal = await cli(['check', trace, '--budgets', budgets]);
    expect(terminal.stderr).toBe('');
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toContain('– no samples: nothing judged');
    expect(terminal.stdout.match(/– no samples$/gm)?.length).toBe(3);

    const json = await cli(['check', trace, '--budgets', budgets, '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as {
      verdicts: Array<{ verdict: string; rows: Array<{ status: string }> }>;
    };
    expect(doc.verdicts[0]!.verdict).toBe('no-samples');
    expect(doc.verdicts[0]!.rows.map((r) => r.status)).toEqual(['no-samples', 'no-samples', 'no-samples']);

    const md = await cli(['check', trace, '--budgets', budgets, '--markdown']);
    expect(md.code).toBe(0);
    expect(md.stdout).toMatch(/\| restart_recovery_control_plane .*\| no samples .*\| – no samples \|/);

    // Required: the same input fails (99), by flag or by the row's `require: true`.
    const required = await cli(['check', trace, '--budgets', budgets, '--require-samples']);
    expect(required.code).toBe(99);
    const rowRequired = join(dir, 'restart-required.yaml');
    writeFileSync(rowRequired, RESTART_BUDGET.replace('p95: 4s }', 'p95: 4s, require: true }'));
    expect((await cli(['check', trace, '--budgets', rowRequired])).code).toBe(99);
  }, 60_000);

  it('the HTML report shows a row without samples as not measured, with "no samples" as its figure', () => {
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 5_400, 'hot'),
      provider(6_200, 's1', 'session.resumed'),
    ]);
    const rows = verdictCheckRows(
      judge(parseBudgetText(RESTART_BUDGET, 'r.yaml'), [{ name: 'x', analysis: a }]),
    );
    expect(rows.map((r) => [r.measured, r.verdict])).toEqual([
      ['no samples', 'unknown'],
      ['no samples', 'unknown'],
      ['no samples', 'unknown'],
    ]);
  });

  it('a run whose adapter has no budget entry has no budget: exit 0, said so', async () => {
    const gemini = [
      ev(0, 'run.created', 's1', { adapter: 'gemini', start: 'warm' }, { run: 'r1' }),
      ...restart(5_000, 10_000),
      ev(15_000, 'provider.event', 's1', { adapter: 'gemini', type: 'session.resumed' }),
    ];
    const check = await cli(['check', writeTrace('gemini', gemini), '--budgets', 'native-speed']);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain(
      'no budget: native-speed has no entry for this input (its adapter: gemini)',
    );
  }, 60_000);
});

describe('2. only the listed agent-activity types end a recovery', () => {
  it('an unlisted event type between ready and the load does not end it', () => {
    // ready 10 s; `rate_limits.updated` at 11 s (not listed); load 15 s → 18 s; session.resumed 18 s.
    // Next listed event: 18 s → full 8 s; control plane 15 − 10 = 5 s (a breach of p95 4 s);
    // had 11 s counted, it would be a 1 s pass.
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000),
      provider(11_000, 's1', 'rate_limits.updated'),
      load(15_000, 3_000, 's1'),
      provider(18_000, 's1', 'session.resumed'),
    ]);
    expect(a.speed!.recoveries[0]).toMatchObject({
      eventType: 'session.resumed',
      fullMs: 8_000,
      controlPlaneMs: 5_000,
      providerLoadMs: 3_000,
    });
    const verdict = judge(parseBudgetText(RESTART_BUDGET, 'r.yaml'), [{ name: 'x', analysis: a }]);
    expect(verdict.verdict).toBe('fail');
  });
});

describe('3. a second restart during the provider load', () => {
  it('removes the outage from the load as from the full recovery', () => {
    // ready 10 s; load starts 11 s and is written ending at 18 s (7 s); a second restart kills at
    // 13 s, ready at 15 s (2 s outage, inside the load); session.resumed at 18 s.
    // full = 18 − 10 − 2 = 6 s; control plane = 11 − 10 = 1 s (no outage before the load);
    // load = 7 − 2 = 5 s.
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000),
      ...restart(13_000, 15_000),
      load(11_000, 7_000, 's1'),
      provider(18_000, 's1', 'session.resumed'),
    ]);
    expect(a.speed!.recoveries).toEqual([
      expect.objectContaining({
        fullMs: 6_000,
        controlPlaneMs: 1_000,
        providerLoadMs: 5_000,
        outageRemovedMs: 2_000,
      }),
    ]);
    expect(a.speed!.metrics.restart_provider_load.groups[0]!.values).toEqual([5_000]);
  });
});

describe('4. a load span written late still counts', () => {
  it('is matched to its run and restart however late it was written', () => {
    // ready 10 s; load 11 s → 14 s (3 s); session.resumed at 14.5 s (recovery ends); the span is
    // written at 23 s, 8.5 s after. Control plane = 11 − 10 = 1 s (a pass), not the full 4.5 s.
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000),
      provider(14_500, 's1', 'session.resumed'),
      load(11_000, 3_000, 's1', { writtenAt: 23_000 }),
    ]);
    expect(a.speed!.recoveries[0]).toMatchObject({
      fullMs: 4_500,
      controlPlaneMs: 1_000,
      providerLoadMs: 3_000,
    });
    const verdict = judge(parseBudgetText(RESTART_BUDGET, 'r.yaml'), [{ name: 'x', analysis: a }]);
    expect(verdict.rows.find((r) => r.metric === 'restart_recovery_control_plane')).toMatchObject({
      status: 'pass',
      p95: 1_000,
    });
  });

  it('a load of another run of the same session is not this recovery’s', () => {
    // The span names run r-other: it is not r-s1's load, so the recovery has none: control plane
    // = full = 14.5 − 10 = 4.5 s (conservative).
    const a = analyse([
      created(0, 's1'),
      ...restart(5_000, 10_000),
      load(11_000, 3_000, 's1', { data: { run: 'r-other' } }),
      provider(14_500, 's1', 'session.resumed'),
    ]);
    expect(a.speed!.recoveries[0]).toMatchObject({ controlPlaneMs: 4_500, providerLoadMs: null });
  });
});

describe('5. small samples: exact nearest-rank percentiles', () => {
  it('nearest-rank: rank ⌈p/100 × n⌉ of the sorted values', () => {
    // n = 2: p50 → rank ⌈1⌉ = 1 → 5 s; p95 → rank ⌈1.9⌉ = 2 → 6 s.
    expect(nearestRank([5_000, 6_000], 50)).toBe(5_000);
    expect(nearestRank([5_000, 6_000], 95)).toBe(6_000);
    // n = 10 (1..10 s): p90 → rank 9 → 9 s; p95 → rank ⌈9.5⌉ = 10 → 10 s; p10 → rank 1.
    const ten = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((s) => s * 1000);
    expect([nearestRank(ten, 90), nearestRank(ten, 95), nearestRank(ten, 10)]).toEqual([
      9_000, 10_000, 1_000,
    ]);
  });

  it('budgets derive turns a p50 of [5 s, 6 s] into 6 s and a p95 into 7.5 s', () => {
    // p50 = 5 s (rank 1 of 2) × 1.2 = 6 s, on a 0.5 s step: 6 s. p95 = 6 s × 1.2 = 7.2 s → 7.5 s.
    const a = analyse([
      created(0, 's1'),
      created(0, 's2'),
      ...restart(5_000, 10_000),
      provider(15_000, 's1', 'session.resumed'),
      provider(16_000, 's2', 'session.resumed'),
    ]);
    const derived = deriveBudgets([{ name: 'x', analysis: a }], {
      factor: 1.2,
      roundMs: 500,
      by: ['adapter', 'kind'],
      name: 'd',
      baseline: 'x',
    });
    const cp = derived.file.budgets.find((b) => b.metric === 'restart_recovery_control_plane')!;
    expect(cp).toMatchObject({ p50: '6s', p95: '7.5s' });
    expect(cp.description).toContain('exact nearest-rank');
  });

  it('check judges the exact p50 and says how the percentiles were taken', () => {
    // Pooled [5 s, 6 s]: p50 = 5 s (exact), under a 5 s limit (≤); HDR gave 5.0012 s, over it.
    const a = analyse([
      created(0, 's1'),
      created(0, 's2'),
      ...restart(5_000, 10_000),
      provider(15_000, 's1', 'session.resumed'),
      provider(16_000, 's2', 'session.resumed'),
    ]);
    const set = parseBudgetText(
      'name: x\nbudgets:\n  - { metric: restart_recovery_control_plane, p50: 5s, p95: 6s }\n',
      'x.yaml',
    );
    const verdict = judge(set, [{ name: 'x', analysis: a }]);
    expect(verdict.rows[0]).toMatchObject({
      p50: 5_000,
      p95: 6_000,
      status: 'pass',
      percentileMethod: 'exact',
    });
    expect(a.speed!.metrics.restart_recovery_control_plane.groups[0]!.latency).toMatchObject({
      p50: 5_000,
      method: 'exact',
    });
  });

  it('beyond 10,000 samples the histogram takes over, and says so', () => {
    const h = new LatencyHistogram();
    for (let i = 1; i <= 10_000; i++) h.record(i);
    // 1..10,000 ms exact: p50 = rank 5,000 = 5,000 ms.
    expect(h.percentiles()).toMatchObject({ method: 'exact', p50: 5_000 });
    h.record(10_001);
    const hdr = h.percentiles()!;
    expect(hdr.method).toBe('hdr');
    // HDR at 3 significant digits: within 0.1% of the exact rank ⌈0.5 × 10,001⌉ = 5,001 ms.
    expect(Math.abs(hdr.p50 - 5_001)).toBeLessThanOrEqual(5_001 * 0.001);
    // A merged pair stays exact while the total is within the bound.
    const x = new LatencyHistogram();
    const y = new LatencyHistogram();
    x.record(5_000);
    y.record(6_000);
    x.merge(LatencyHistogram.fromState(y.toState()));
    expect([x.valueAt(50), x.method]).toEqual([5_000, 'exact']);
  });
});
