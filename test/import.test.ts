import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Analysis } from '../src/analyze/index.ts';
import type { Summary } from '../src/report/index.ts';
import { type ApiRecord, readTrace, type SpanRecord } from '../src/trace/index.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const AO_SAMPLE = new URL('../examples/ao-gh-trace.jsonl', import.meta.url).pathname;
const OTLP_SAMPLE = new URL('../examples/otlp-trace.json', import.meta.url).pathname;
const SAMPLE_TRACE = new URL('../examples/sample-trace.jsonl', import.meta.url).pathname;

type AoRow = Record<string, unknown> & { timestamp: string; durationMs: number; operation: string };
const rows: AoRow[] = readFileSync(AO_SAMPLE, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as AoRow);

// The hand count of examples/ao-gh-trace.jsonl (10 poll cycles, 30 s apart, sessions ao-1..3).
const HAND = {
  rows: 44,
  opaque: 14, // gh pr list ×5, gh pr view ×6 (one failed, one killed), gh issue view ×3
  status304: 20, // guard-pr-list ×7, guard-check-runs ×13
  status200: 10, // guard-pr-list ×3, guard-check-runs ×3, graphql-batch ×4
  conditional: 23, // the 304s, plus 3 guards sent If-None-Match and got a 200
  byOperation: {
    'gh.api.guard-check-runs': 16,
    'gh.api.guard-pr-list': 10,
    'gh.pr.view': 6,
    'gh.pr.list': 5,
    'gh.api.graphql-batch': 4,
    'gh.issue.view': 3,
  },
  bySession: { '(none)': 14, 'ao-1': 14, 'ao-2': 12, 'ao-3': 4 },
  pointsCore: 6, // the REST 200s
  pointsGraphql: 4, // graphqlCost 1 × 4
  // core resets at 11:00 during the run (cycles 0-5 before, 6-9 after); GraphQL at 11:30.
  burn: [
    ['core', 1776250800, 14, 4],
    ['core', 1776254400, 12, 2],
    ['graphql', 1776252600, 4, 4],
  ],
};

describe('import ao-gh', () => {
  const out = join(dir, 'ao.jsonl');
  let records: ApiRecord[];

  beforeAll(async () => {
    const result = await cli(['import', 'ao-gh', AO_SAMPLE, '-o', out, '--cycle-ms', '30000']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('imported 44 calls (14 opaque)');
    records = (await readTrace(out)).records as ApiRecord[];
  });

  it('the hand count agrees with a recount of the raw rows', () => {
    expect(rows).toHaveLength(HAND.rows);
    expect(rows.filter((r) => r.httpStatus === undefined)).toHaveLength(HAND.opaque);
    expect(rows.filter((r) => r.httpStatus === 304)).toHaveLength(HAND.status304);
    expect(rows.filter((r) => r.httpStatus === 200)).toHaveLength(HAND.status200);
    // Every 304 in the AO format is a failed gh call: ok false, exit code 1.
    expect(rows.filter((r) => r.httpStatus === 304).every((r) => r.ok === false && r.exitCode === 1)).toBe(
      true,
    );
  });

  it('maps every row to one api record, field by field', () => {
    expect(records).toHaveLength(HAND.rows);
    const epoch = Math.min(...rows.map((r) => Date.parse(r.timestamp) - r.durationMs));
    for (const [i, record] of records.entries()) {
      const row = rows[i]!;
      // start = end timestamp − duration, in ms since the earliest start
      expect(record.t).toBeCloseTo(Date.parse(row.timestamp) - row.durationMs - epoch, 6);
      expect(record.dur).toBe(row.durationMs);
      expect(record.op).toBe(row.operation);
      expect(record.session).toBe(row.sessionId);
      expect(record.project).toBe('todo-app');
      expect(record.source).toBe('lifecycle');
      expect(record.status).toBe(row.httpStatus ?? null);
      expect(record.notModified).toBe(row.httpStatus === 304);
      expect(record.cycle).toBe(Math.floor(record.t / 30_000));
      if (row.httpStatus === undefined) expect(record.cost).toBe(0);
    }
    expect(Math.min(...records.map((r) => r.t))).toBe(0);
    const graphql = records.filter((r) => r.route === '/graphql');
    expect(graphql).toHaveLength(4);
    for (const r of graphql) {
      expect(r).toMatchObject({
        method: 'POST',
        protocol: 'graphql',
        resource: 'graphql',
        cost: 1,
        status: 200,
      });
      expect(r.rl).toMatchObject({ limit: 5000, resource: 'graphql', reset: 1776252600 });
    }
    const guard = records.find((r) => r.op === 'gh.api.guard-pr-list' && r.status === 304)!;
    expect(guard).toMatchObject({
      route: '/repos/{owner}/{repo}/pulls',
      repo: 'acme/todo-app',
      conditional: true,
      cost: 0,
      method: 'GET',
    });
    expect(records.find((r) => r.op === 'gh.api.guard-check-runs')!.route).toBe(
      '/repos/{owner}/{repo}/commits/{ref}/check-runs',
    );
    const view = records.find((r) => r.op === 'gh.pr.view')!;
    expect(view).toMatchObject({ route: 'gh pr view', status: null, repo: 'acme/todo-app' });
    expect(records.filter((r) => r.error === 'signal SIGTERM')).toHaveLength(1);
    expect(records.filter((r) => r.error === 'exit 1')).toHaveLength(1);
    expect(records.filter((r) => r.conditional)).toHaveLength(HAND.conditional);
  });

  it('the bundled sample trace is exactly this import', () => {
    expect(readFileSync(SAMPLE_TRACE, 'utf8').replace(/"runId":"[^"]*"/, '')).toBe(
      readFileSync(out, 'utf8').replace(/"runId":"[^"]*"/, ''),
    );
  });

  it('summarize --json matches the hand count', async () => {
    const result = await cli(['summarize', '--json', out]);
    expect(result.code).toBe(0);
    const summary = JSON.parse(result.stdout) as Summary;
    expect(summary.api.totals).toMatchObject({
      calls: HAND.rows,
      opaque: HAND.opaque,
      notModified: HAND.status304,
      conditional: HAND.conditional,
      points: HAND.pointsCore + HAND.pointsGraphql,
    });
    const calls = (counts: Record<string, { calls: number }>) =>
      Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v.calls]));
    expect(calls(summary.api.counts.byOperation)).toEqual(HAND.byOperation);
    expect(calls(summary.api.counts.bySession)).toEqual(HAND.bySession);
    expect(calls(summary.api.counts.byStatus)).toEqual({ '304': 20, opaque: 14, '200': 10 });
    expect(calls(summary.api.counts.bySource)).toEqual({ lifecycle: 44 });
    expect(summary.api.opaque.sharePct).toBeCloseTo((100 * 14) / 44, 2);
    expect(summary.api.burn.windows.map((w) => [w.resource, w.reset, w.calls, w.points])).toEqual(HAND.burn);
    expect(summary.api.burn.straddles).toEqual(['core']);
    expect(summary.warnings.join('\n')).toMatch(/core: the run straddles a rate-limit reset/);
  });

  it('analyze --json and the terminal table agree with the hand count', async () => {
    const [json, text] = await Promise.all([cli(['analyze', '--json', out]), cli(['analyze', out])]);
    expect(json.code).toBe(0);
    const a = JSON.parse(json.stdout) as Analysis;
    expect(a.schemaVersion).toBe(1);
    expect(a.run.sessions).toBe(3);
    expect(a.api.conditional).toEqual({ requests: 23, notModified: 20, notModifiedPct: 86.957 });
    expect(a.api.counts.byResource).toEqual({
      core: { calls: 26, points: HAND.pointsCore },
      graphql: { calls: 18, points: HAND.pointsGraphql },
    });
    expect(a.api.writes.total).toBe(0);
    expect(a.api.limited.answers).toBe(0);
    expect(a.api.latency.all?.max).toBe(30_000); // the gh call killed by its timeout
    expect(a.api.latency.rest?.count).toBe(26);
    // 30 calls carry a session and a cycle, 14 only a cycle (the repo-level guards and batches).
    expect(a.api.pollingFloor.attributedCalls).toBe(30);
    expect(a.api.pollingFloor.sharedPerCycle.all).toMatchObject({ cells: 10, calls: 14 });
    expect(a.scorecard.projected).toBe(true);
    expect(a.scorecard.rows).toHaveLength(7);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/gh\.api\.guard-check-runs\s+16\s+36\.4%/);
    expect(text.stdout).toMatch(/opaque \(status unknown\)\.*: 14 \(31\.8%\)/);
    expect(text.stdout).toMatch(/! core: the run straddles a rate-limit reset/);
    expect(text.stdout).toMatch(/Track B scorecard/);
  });

  const badRows: Array<[string, string, RegExp]> = [
    ['malformed JSON', '{"timestamp":', /bad-ao-0\.jsonl:2: malformed JSON/],
    [
      'a wrong field type',
      JSON.stringify({ ...rows[0], durationMs: 'slow' }),
      /bad-ao-1\.jsonl:2: durationMs: expected number/,
    ],
    [
      'a bad timestamp',
      JSON.stringify({ ...rows[0], timestamp: 'yesterday' }),
      /bad-ao-2\.jsonl:2: timestamp: expected an ISO time/,
    ],
  ];
  it.concurrent.each(badRows.map(([name, line, expected], i) => [name, i, line, expected] as const))(
    'a row with %s is a file:line error',
    async (_name, i, line, expected) => {
      const path = join(dir, `bad-ao-${i}.jsonl`);
      writeFileSync(path, `${JSON.stringify(rows[0])}\n${line}\n${JSON.stringify(rows[1])}\n`);
      const result = await cli(['import', 'ao-gh', path, '-o', join(dir, `bad-out-${i}.jsonl`)]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(expected);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      const lenient = await cli([
        'import',
        'ao-gh',
        path,
        '-o',
        join(dir, `bad-out-${i}.jsonl`),
        '--lenient',
      ]);
      expect(lenient.code).toBe(0);
      expect(lenient.stdout).toMatch(/imported 2 calls .*\nskipped 1 bad rows:\n {2}line 2: /);
    },
  );
});

describe('import otlp', () => {
  it('turns spans into span records and attributes into labels', async () => {
    const out = join(dir, 'otlp.jsonl');
    const result = await cli(['import', 'otlp', OTLP_SAMPLE, '-o', out, '--labels', 'adapter,start']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('imported 10 spans and 2 events');
    const { records, stats } = await readTrace(out);
    expect(stats.header).toMatchObject({ source: 'otlp', epochMs: Date.UTC(2026, 3, 15, 10, 57, 0) });
    const spans = records.filter((r): r is SpanRecord => r.kind === 'span');
    expect(spans).toHaveLength(10);
    expect(spans[0]).toEqual({
      kind: 'span',
      name: 'agent.boot',
      t: 0,
      dur: 2410.5,
      outcome: 'ok',
      session: 'ao-1',
      labels: { adapter: 'codex', start: 'cold', service: 'agent-orchestrator' },
    });
    expect(spans.filter((s) => s.outcome === 'error').map((s) => s.name)).toEqual(['provider.session.load']);
    expect(records.filter((r) => r.kind === 'event').map((r) => [r.name, r.t])).toEqual([
      ['provider.retry', 5000],
      ['first.tool_call', 5210],
    ]);
    const analysis = JSON.parse((await cli(['analyze', '--json', out])).stdout) as Analysis;
    const boot = analysis.spans.byName.find((s) => s.name === 'agent.boot')!;
    expect(boot.count).toBe(5);
    expect(boot.latency).toMatchObject({ min: 1380, max: 9120 });
    const cold = analysis.spans.byLabels.filter((s) => s.name === 'agent.boot' && s.labels.start === 'cold');
    expect(cold.map((s) => [s.labels.adapter, s.count])).toEqual([
      ['claude', 1],
      ['codex', 2],
    ]);
  });

  it('reads JSON Lines of export requests (the collector file exporter), with file:line errors', async () => {
    const { importOtlp } = await import('../src/trace/importers/otlp.ts');
    const doc = JSON.parse(readFileSync(OTLP_SAMPLE, 'utf8'));
    const part = (from: number, to: number) => {
      const copy = structuredClone(doc);
      copy.resourceSpans[0].scopeSpans[0].spans = copy.resourceSpans[0].scopeSpans[0].spans.slice(from, to);
      return JSON.stringify(copy);
    };
    const lines = [part(0, 4), part(4, 10)];
    const good = join(dir, 'otlp-lines.jsonl');
    writeFileSync(good, `${lines.join('\n')}\n`);
    expect(await importOtlp(good, join(dir, 'otlp-lines.out.jsonl'))).toMatchObject({ spans: 10, events: 2 });
    const bad = join(dir, 'otlp-bad.jsonl');
    writeFileSync(bad, `${lines[0]}\n{"resourceSpans": 3}\n`);
    await expect(importOtlp(bad, join(dir, 'otlp-bad.out.jsonl'))).rejects.toThrow(
      /otlp-bad\.jsonl:2: resourceSpans: expected array/,
    );
  });

  it('a malformed export is an error naming the field', async () => {
    const path = join(dir, 'bad-otlp.json');
    writeFileSync(
      path,
      JSON.stringify({
        resourceSpans: [{ scopeSpans: [{ spans: [{ name: 'x', startTimeUnixNano: 'soon' }] }] }],
      }),
    );
    const result = await cli(['import', 'otlp', path, '-o', join(dir, 'x.jsonl')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /bad-otlp\.json: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.startTimeUnixNano: /,
    );
  });
});
