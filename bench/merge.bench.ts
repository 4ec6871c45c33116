/**
 * What distributing costs (docs/distributed.md):
 *
 * 1. A 12-cell matrix split into 2 segment processes (`--segment 0/2` and `1/2`, `--jobs 1`
 *    each, side by side, as two pods would run) plus `fleetbench merge`, against one process
 *    with `--jobs 2` (the reference): wall times, and the merge's seconds and share of the run.
 * 2. Merging 10 segment traces of 200,000 records each (2,000,000 in all) into one trace and one
 *    analysis: time and peak memory, against `fleetbench analyze` of the merged trace (one
 *    streaming pass over the same records) as the reference.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { envInteger } from './env.ts';
import type { Bench } from './run.ts';
import { writeSyntheticTrace } from './synthetic.ts';
import { timedNode } from './timed.ts';

const BIN = fileURLToPath(new URL('../bin/fleetbench.js', import.meta.url));
const CHILD = fileURLToPath(new URL('./merge-child.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/tsx/dist/cli.mjs', import.meta.url));
const CELLS = 'S*-T1-1,S*-T1-5';
const SEGMENTS = 10;
const RECORDS = envInteger('MERGE_BENCH_RECORDS', 200_000, 1_000, 10_000_000);

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

const timed = timedNode;

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

const bench: Bench = {
  name: 'merge',
  description:
    'a matrix in 2 segments + merge vs one process --jobs 2; merging 10 segment traces of 200,000 records',
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-merge-bench-'));
    const figures: Record<string, number | string> = {};
    try {
      console.log(`load average at start: ${load()}\n`);
      const one = await timed([BIN, 'matrix', '--cells', CELLS, '--jobs', '2', '--out', join(dir, 'one')]);
      const shared = join(dir, 'split');
      const started = performance.now();
      await Promise.all(
        [0, 1].map((i) =>
          timed([BIN, 'matrix', '--cells', CELLS, '--jobs', '1', '--segment', `${i}/2`, '--out', shared]),
        ),
      );
      const segmentsMs = performance.now() - started;
      const merge = await timed([BIN, 'merge', shared]);
      const splitMs = segmentsMs + merge.wallMs;
      console.log('| 12-cell matrix | wall | vs one process |');
      console.log('| --- | ---: | ---: |');
      console.log(`| one process, --jobs 2 (reference) | ${s(one.wallMs)} | 1.00 |`);
      console.log(
        `| 2 segment processes side by side | ${s(segmentsMs)} | ${(segmentsMs / one.wallMs).toFixed(2)} |`,
      );
      console.log(`| fleetbench merge | ${s(merge.wallMs)} | ${(merge.wallMs / one.wallMs).toFixed(2)} |`);
      console.log(`| segments + merge | ${s(splitMs)} | ${(splitMs / one.wallMs).toFixed(2)} |`);
      console.log(
        `\nmerge share of the split run: ${((100 * merge.wallMs) / splitMs).toFixed(1)}% (load ${load()})\n`,
      );
      Object.assign(figures, {
        oneProcessMs: Math.round(one.wallMs),
        segmentsMs: Math.round(segmentsMs),
        matrixMergeMs: Math.round(merge.wallMs),
        mergeShare: Number((merge.wallMs / splitMs).toFixed(3)),
      });

      const traces = Array.from({ length: SEGMENTS }, (_, i) => join(dir, `segment-${i}.jsonl`));
      for (const [i, path] of traces.entries()) writeSyntheticTrace(path, { records: RECORDS, seed: i + 1 });
      const inputMb = traces.reduce((n, p) => n + statSync(p).size, 0) / 1e6;
      const out = join(dir, 'merged.jsonl');
      const loadBefore = load();
      const merged = await timed([TSX, CHILD, out, ...traces]);
      const analyzed = await timed([BIN, 'analyze', out, '--json']);
      const total = SEGMENTS * RECORDS;
      console.log(
        `| ${SEGMENTS} traces × ${RECORDS.toLocaleString('en')} records (${inputMb.toFixed(0)} MB) | wall | records/s | peak RSS |`,
      );
      console.log('| --- | ---: | ---: | ---: |');
      console.log(
        `| fleetbench analyze of the merged trace (reference) | ${s(analyzed.wallMs)} | ${Math.round(total / (analyzed.wallMs / 1000)).toLocaleString('en')} | ${analyzed.rssMb.toFixed(0)} MB |`,
      );
      console.log(
        `| merge: one trace + analyzers merged | ${s(merged.wallMs)} | ${Math.round(total / (merged.wallMs / 1000)).toLocaleString('en')} | ${merged.rssMb.toFixed(0)} MB |`,
      );
      console.log(
        `\nmerge / analyze: ${(merged.wallMs / analyzed.wallMs).toFixed(2)}× the time; load ${loadBefore} before, ${load()} after`,
      );
      Object.assign(figures, {
        traceMergeMs: Math.round(merged.wallMs),
        traceMergeRssMb: Math.round(merged.rssMb),
        analyzeMs: Math.round(analyzed.wallMs),
        analyzeRssMb: Math.round(analyzed.rssMb),
        inputMb: Math.round(inputMb),
      });
      return figures;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
export default bench;
