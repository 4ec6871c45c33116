import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import type { Analysis } from '../src/analyze/schema.ts';
import { mergeSegmentTraces } from '../src/distributed/merge-traces.ts';
import { readTrace } from '../src/trace/reader.ts';
import type { BodyRecord } from '../src/trace/schema.ts';
import { TraceWriter } from '../src/trace/writer.ts';
import { runRef } from './helpers/run.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-trace-merge-');

const sessionOf = (r: BodyRecord): string | undefined => ('session' in r ? r.session : undefined);

const withoutInput = (a: Analysis) => {
  const { input: _input, ...rest } = a;
  return rest;
};

/** Splits a trace as segments would have written it: by session, the rest dealt out by position. */
async function splitTrace(path: string, count: number, epochShift: (i: number) => number): Promise<string[]> {
  const { records, stats } = await readTrace(path);
  const header = stats.header!;
  const { kind: _k, format: _f, ...input } = header;
  const writers = Array.from(
    { length: count },
    (_, i) =>
      new TraceWriter(
        join(dir, `seg-${i}.jsonl`),
        { ...input, epochMs: header.epochMs + epochShift(i) },
        { flushIntervalMs: 0 },
      ),
  );
  records.forEach((r: BodyRecord, k) => {
    const session = sessionOf(r);
    const i = session ? Number(session.replace(/\D/g, '')) % count : k % count;
    writers[i]!.write({ ...r, t: r.t - epochShift(i) });
  });
  for (const w of writers) w.close('completed', stats.footer!.t - 0);
  return writers.map((w) => w.path);
}

describe('merging segment traces (streaming, analyzers merged)', { timeout: 120_000 }, () => {
  it('three segment traces merge into one trace and one analysis equal to the unsplit run', async () => {
    const run = await runRef('S4-T1-5', [], join(dir, 'whole'));
    const original = run.analysis;
    const paths = await splitTrace(run.outcome.tracePath, 3, () => 0);
    const out = join(dir, 'merged.jsonl');
    const merged = await mergeSegmentTraces(
      paths.map((path, index) => ({ path, index })),
      out,
    );
    expect(merged.records).toBe(run.records.length);
    expect(merged.reason).toBe('completed');
    expect(merged.segments.map((s) => s.records).reduce((a, b) => a + b)).toBe(run.records.length);
    const { records, stats } = await readTrace(out);
    expect(stats.footer?.counts).toEqual((await readTrace(run.outcome.tracePath)).stats.footer?.counts);
    expect(records.map((r) => JSON.stringify(r)).sort()).toEqual(
      run.records.map((r) => JSON.stringify(r)).sort(),
    );
    // The analyzers' merge gives the unsplit figures: counts, HDR percentiles, per session.
    expect(JSON.stringify(withoutInput(merged.analysis))).toBe(JSON.stringify(withoutInput(original)));
    // ...and so does one pass over the merged file.
    const again = (await analyzeFile(out, { threads: 1 })).analysis;
    expect(JSON.stringify(withoutInput(again))).toBe(JSON.stringify(withoutInput(original)));
    expect(readFileSync(out, 'utf8').split('\n')[0]).toContain('"segments":3');

    // A segment that started 1.5 s earlier (its own epoch): the merged trace starts at the
    // earliest epoch, so every record moves 1.5 s later on it, with no negative time (a record
    // before its run's start is refused: docs/limits.md).
    const late = await splitTrace(run.outcome.tracePath, 3, (i) => (i === 1 ? -1500 : 0));
    const shifted = await mergeSegmentTraces(
      late.map((path, index) => ({ path, index })),
      join(dir, 'shifted.jsonl'),
    );
    expect(shifted.analysis.api.totals).toEqual(original.api.totals);
    const s1 = (await readTrace(join(dir, 'shifted.jsonl'))).records.find(
      (r) => sessionOf(r) === 's-0001' && r.kind === 'span',
    );
    const o1 = run.records.find((r) => sessionOf(r) === 's-0001' && r.kind === 'span');
    expect(s1!.t).toBeCloseTo(o1!.t + 1500, 6);
  });

  it('a segment without a footer (a lost pod) makes the merged trace failed; another run is refused', async () => {
    const run = await runRef('S2-T1-1', [], join(dir, 'other'));
    const lost = join(dir, 'lost.jsonl');
    const text = readFileSync(run.outcome.tracePath, 'utf8').trimEnd().split('\n');
    (await import('node:fs')).writeFileSync(lost, `${text.slice(0, -1).join('\n')}\n`);
    const merged = await mergeSegmentTraces([{ path: lost, index: 0 }], join(dir, 'm2.jsonl'), {
      lenient: true,
    });
    expect(merged.reason).toBe('failed');
    const paths = [join(dir, 'seg-0.jsonl'), run.outcome.tracePath];
    await expect(
      mergeSegmentTraces(
        paths.map((path, index) => ({ path, index })),
        join(dir, 'm3.jsonl'),
      ),
    ).rejects.toThrow(/not a segment of the same run/);
  });
});

describe('fleetbench run --segment refuses what cannot be split, saying why', () => {
  it('a virtual run (one quota, one clock); a live run with a target or a GitHub of its own', async () => {
    const { runCli } = await import('./helpers/cli.ts');
    const virtual = await runCli(['run', 'S2-T1-1', '--segment', '1/3', '--out', join(dir, 'refused')]);
    expect(virtual.code).toBe(2);
    expect(virtual.stderr).toContain('a virtual-time run is not split: its sessions share one GitHub quota');
    expect(virtual.stderr).toContain('fleetbench matrix --segment i/n');
    // In an Indexed Job (its environment), against the embedded target: one control plane per pod.
    const embedded = await runCli(['run', 'S2-T1-1', '--clock', 'real', '--out', join(dir, 'refused')], {
      env: { JOB_COMPLETION_INDEX: '0', FLEETBENCH_SEGMENTS: '2' },
    });
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toContain(
      "run: segment 0/2: a live-run segment drives a shared target, 'reference' would be one control plane per segment",
    );
    // A shared target but a GitHub of its own: each segment would spend a quota of its own.
    const ownGitHub = await runCli([
      'run',
      'S2-T1-1',
      '--clock',
      'real',
      '--target',
      'http://127.0.0.1:9',
      '--segment',
      '1/2',
    ]);
    expect(ownGitHub.code).toBe(2);
    expect(ownGitHub.stderr).toContain(
      'run: segment 1/2: a live-run segment needs the shared GitHub emulator (--github URL)',
    );
  });
});
