import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inSegment, parseSegment, resolveSegment } from '../src/base/segment.ts';
import type { Baseline } from '../src/results/baseline.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir('fleetbench-distributed-');
/** 6 cells: every A2 scenario at scale 1 (the small, fast end of the matrix), 2 a segment. */
const CELLS = 'S*-T1-1';

function withoutTiming(b: Baseline): Omit<Baseline, 'timing'> {
  const { timing: _timing, ...rest } = b;
  return rest;
}
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('segments: i/n and the Indexed Job environment', () => {
  it('parses i/n (0-based) and refuses what is out of range, naming the source', () => {
    expect(parseSegment('2/3')).toEqual({ index: 2, count: 3 });
    expect(() => parseSegment('3/3')).toThrow(/segment index 3 is out of range for 3 segments .*0 to 2/);
    expect(() => parseSegment('0/0')).toThrow(/--segment: the segment count must be 1 to 1000, got 0/);
    expect(() => parseSegment('1-3')).toThrow(/--segment: expected i\/n/);
  });

  it('reads JOB_COMPLETION_INDEX with FLEETBENCH_SEGMENTS; the flag wins; one without the other is refused', () => {
    expect(resolveSegment(undefined, {})).toBeUndefined();
    expect(resolveSegment(undefined, { JOB_COMPLETION_INDEX: '1', FLEETBENCH_SEGMENTS: '4' })).toEqual({
      index: 1,
      count: 4,
    });
    expect(resolveSegment('0/2', { JOB_COMPLETION_INDEX: '1', FLEETBENCH_SEGMENTS: '4' })).toEqual({
      index: 0,
      count: 2,
    });
    expect(() => resolveSegment(undefined, { JOB_COMPLETION_INDEX: '1' })).toThrow(
      /JOB_COMPLETION_INDEX is set but FLEETBENCH_SEGMENTS is not/,
    );
    expect(() => resolveSegment(undefined, { JOB_COMPLETION_INDEX: '5', FLEETBENCH_SEGMENTS: '5' })).toThrow(
      /JOB_COMPLETION_INDEX\/FLEETBENCH_SEGMENTS: segment index 5 is out of range/,
    );
  });

  it('deals items out disjointly and completely, in balanced shares', () => {
    for (const count of [1, 2, 3, 7]) {
      const owners = Array.from({ length: 54 }, (_, k) =>
        Array.from({ length: count }, (_, index) => index).filter((index) => inSegment(k, { index, count })),
      );
      expect(owners.every((o) => o.length === 1)).toBe(true);
      const sizes = Array.from({ length: count }, (_, index) => owners.filter((o) => o[0] === index).length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });
});

// Whole runs through the real CLI, as a Kubernetes Indexed Job runs them: slow on a busy machine.
describe('a 6-cell matrix in 3 segments, merged (real CLI, virtual time)', { timeout: 300_000 }, () => {
  const single = join(dir, 'single');
  const shared = join(dir, 'shared');
  const segmentRun = (index: number, extra: string[] = [], env: NodeJS.ProcessEnv = {}) =>
    cli(['matrix', '--cells', CELLS, '--jobs', '1', '--out', shared, ...extra], {
      env: { JOB_COMPLETION_INDEX: String(index), FLEETBENCH_SEGMENTS: '3', ...env },
    });

  it('the merge of 3 segment processes equals the single-process matrix, byte for byte', async () => {
    const [one, ...segments] = await Promise.all([
      cli(['matrix', '--cells', CELLS, '--jobs', '1', '--out', single]),
      segmentRun(0),
      segmentRun(1),
      segmentRun(2),
    ]);
    expect(one.code, one.stderr).toBe(0);
    for (const [i, s] of segments.entries()) {
      expect(s.code, s.stderr).toBe(0);
      expect(s.stdout).toContain(`fleetbench matrix segment ${i}/3: 2 of 2 runs (of 6 in the matrix) done`);
    }
    // A segment writes no baseline: alone it is not the matrix.
    expect(() => readFileSync(join(shared, 'baseline.json'))).toThrow();
    const merged = await cli(['merge', shared]);
    expect(merged.code, merged.stderr).toBe(0);
    expect(merged.stdout).toContain('fleetbench merge: 3 segments, 6 of 6 runs, 6 units,');
    expect(merged.stdout).not.toContain('PARTIAL');
    const a: Baseline = readJson(join(single, 'baseline.json'));
    const b: Baseline = readJson(join(shared, 'baseline.json'));
    expect(b.units.map((u) => u.id)).toEqual(a.units.map((u) => u.id));
    expect(b.partial).toBe(false);
    expect(JSON.stringify(withoutTiming(b))).toBe(JSON.stringify(withoutTiming(a)));
    expect(Object.keys(b.timing.runs).sort()).toEqual(Object.keys(a.timing.runs).sort());
    expect(b.timing.jobs).toBe(3);
    expect(readFileSync(join(shared, 'baseline.md'), 'utf8')).toBe(
      readFileSync(join(single, 'baseline.md'), 'utf8'),
    );
    expect(readFileSync(join(shared, 'cells/S4-T1-1/trace.jsonl'))).toEqual(
      readFileSync(join(single, 'cells/S4-T1-1/trace.jsonl')),
    );
  });

  it('a missing and a lost segment are named, the result is partial (exit 2); re-running the index completes it', async () => {
    const records = join(shared, 'segments');
    const lost = join(records, 'matrix-2-of-3.json');
    copyFileSync(lost, join(dir, 'segment-2.json'));
    writeFileSync(
      lost,
      JSON.stringify({
        ...readJson(lost),
        status: 'running',
        units: readJson(lost).units.map((u: object) => ({ ...u, runs: [] })),
      }),
    );
    rmSync(join(records, 'matrix-1-of-3.json'));
    const partial = await cli(['merge', shared]);
    expect(partial.code).toBe(2);
    expect(partial.stdout).toContain('2 of 6 runs');
    expect(partial.stdout).toContain('segment 1: MISSING');
    expect(partial.stdout).toContain('segment 2: LOST (started, never finished');
    expect(partial.stdout).toMatch(/PARTIAL: 4 runs missing \(segments 1, 2: re-run those indexes/);
    const b: Baseline = readJson(join(shared, 'baseline.json'));
    expect(b.partial).toBe(true);
    expect(b.units.filter((u) => u.runs.length === 1)).toHaveLength(2);

    copyFileSync(join(dir, 'segment-2.json'), lost);
    const again = await cli(['matrix', '--cells', CELLS, '--jobs', '1', '--out', shared, '--segment', '1/3']);
    expect(again.code, again.stderr).toBe(0);
    const complete = await cli(['merge', shared]);
    expect(complete.code, complete.stderr).toBe(0);
    expect(JSON.stringify(withoutTiming(readJson(join(shared, 'baseline.json'))))).toBe(
      JSON.stringify(withoutTiming(readJson(join(single, 'baseline.json')))),
    );
  });

  it('segments copied back one directory each merge into --out, with paths relative to it', async () => {
    const out = join(dir, 'joined');
    const perSegment = [0, 1, 2].map((i) => join(dir, `pod-${i}`));
    // Segment records reference their own directory; copying a whole shared directory stands in
    // for three object-store prefixes.
    for (const [i, d] of perSegment.entries()) {
      cpSync(shared, d, { recursive: true });
      for (const j of [0, 1, 2]) if (j !== i) rmSync(join(d, 'segments', `matrix-${j}-of-3.json`));
    }
    const r = await cli(['merge', ...perSegment, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const b: Baseline = readJson(join(out, 'baseline.json'));
    expect(b.units[0]!.runs[0]!.dir).toBe('../pod-0/cells/S1-T1-1');
    // Only the run paths differ: they point into each segment's directory.
    expect(readFileSync(join(out, 'baseline.md'), 'utf8').replace(/\.\.\/pod-\d\//g, '')).toBe(
      readFileSync(join(single, 'baseline.md'), 'utf8'),
    );
  });

  it('refuses bad input with a clear message: no segments, two matrices, a count without an index', async () => {
    const none = await cli(['merge', single]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(
      'no segments found (looked for segments/matrix-*.json and segments/run-*.json)',
    );
    const other = join(dir, 'other');
    const seg = await cli([
      'matrix',
      '--cells',
      'S2-T1-1',
      '--jobs',
      '1',
      '--out',
      other,
      '--segment',
      '0/1',
    ]);
    expect(seg.code, seg.stderr).toBe(0);
    const mixed = await cli(['merge', shared, other, '--out', join(dir, 'mixed')]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain('belongs to another matrix');
    // A tampered record pointing a run (or its trace) outside the matrix directory.
    const tampered = join(dir, 'tampered');
    cpSync(shared, tampered, { recursive: true });
    rmSync(join(tampered, 'baseline.json'));
    const record = join(tampered, 'segments', 'matrix-0-of-3.json');
    const doc = readJson(record);
    doc.units[0].runs[0].dir = '../../../../../etc';
    writeFileSync(record, JSON.stringify(doc));
    const escaped = await cli(['merge', tampered]);
    expect(escaped.code).toBe(2);
    expect(escaped.stderr).toContain(
      `${record}: units[0].runs[0].dir: '../../../../../etc' is outside the matrix directory`,
    );
    expect(() => readFileSync(join(tampered, 'baseline.json'))).toThrow();
    // The same through a link inside the directory: the path's text is inside, where it leads is not.
    mkdirSync(join(tampered, 'runs'), { recursive: true });
    symlinkSync('/etc', join(tampered, 'runs', 'escape'));
    doc.units[0].runs[0].dir = 'runs/escape';
    writeFileSync(record, JSON.stringify(doc));
    const linked = await cli(['merge', tampered]);
    expect(linked.code).toBe(2);
    expect(linked.stderr).toMatch(
      /units\[0\]\.runs\[0\]\.dir: 'runs\/escape' resolves outside \(to \/etc, through a link\) the matrix directory/,
    );
    expect(() => readFileSync(join(tampered, 'baseline.json'))).toThrow();
    const env = await cli(['matrix', '--cells', 'S2-T1-1', '--out', other], {
      env: { FLEETBENCH_SEGMENTS: '3' },
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('FLEETBENCH_SEGMENTS is set but JOB_COMPLETION_INDEX is not');
  });
});
