import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadLine, runEngineChild } from './engine-run.ts';
import type { Bench } from './run.ts';

const CASES: Array<{
  name: string;
  ref: string;
  sets: string[];
  target: string;
  limitS?: number;
  limitRssMb?: number;
}> = [
  { name: 'S2-T1-50 (20 min)', ref: 'S2-T1-50', sets: [], target: '< 2 s', limitS: 2 },
  {
    name: 'S2, 5,000 sessions (20 min)',
    ref: 'S2-T1-50',
    // Quota and secondary limits lifted, calls unpaced and 32 at a time, ETag caches sized for
    // 5,000 PRs: a capacity test of the engine, not of a realistic control plane.
    sets: [
      'sessions.count=5000',
      'polling.concurrency=32',
      'polling.max-rps=0',
      'github.limits.core=100000000',
      'github.limits.graphql=100000000',
      'github.limits.secondary=false',
      'caches.commits=10000',
      'caches.prs=10000',
    ],
    target: '< 20 s, < 1 GB',
    limitS: 20,
    limitRssMb: 1024,
  },
  {
    name: 'same, default 500-entry ETag LRUs',
    ref: 'S2-T1-50',
    sets: [
      'sessions.count=5000',
      'polling.concurrency=32',
      'polling.max-rps=0',
      'github.limits.core=100000000',
      'github.limits.graphql=100000000',
      'github.limits.secondary=false',
    ],
    target: '(for comparison: every guard misses)',
  },
];

const bench: Bench = {
  name: 'engine',
  description: 'virtual-time runs of the reference control plane against the in-process emulator',
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-engine-bench-'));
    const figures: Record<string, number | string> = {};
    console.log(`${loadLine('at start')}\n`);
    console.log(
      '| run | wall s | run time simulated | run-s per wall-s | events/s | API calls | trace MB | peak RSS MB | target | verdict |',
    );
    console.log('| --- | --: | --: | --: | --: | --: | --: | --: | --- | --- |');
    try {
      for (const c of CASES) {
        const out = join(dir, c.name.replace(/[^a-z0-9]+/gi, '-'));
        const r = await runEngineChild(c.ref, out, c.sets);
        const trace = join(out, 'trace.jsonl');
        const footer = JSON.parse(readFileSync(trace, 'utf8').trimEnd().split('\n').pop()!);
        const wallS = r.wallMs / 1000;
        const ok =
          (c.limitS === undefined || wallS < c.limitS) &&
          (c.limitRssMb === undefined || r.maxRssMb < c.limitRssMb);
        console.log(
          `| ${c.name} | ${wallS.toFixed(2)} | ${(r.virtualMs / 60_000).toFixed(0)} min | ${(r.virtualMs / r.wallMs).toFixed(0)}× | ${Math.round(r.events / wallS).toLocaleString('en-US')} | ${footer.counts.api.toLocaleString('en-US')} | ${(statSync(trace).size / 1e6).toFixed(0)} | ${r.maxRssMb.toFixed(0)} | ${c.target} | ${c.limitS === undefined ? '–' : ok ? 'met' : 'not met'} |`,
        );
        figures[`${c.name} wall s`] = Number(wallS.toFixed(2));
        figures[`${c.name} peak RSS MB`] = Math.round(r.maxRssMb);
        rmSync(out, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    return figures;
  },
};

export default bench;
