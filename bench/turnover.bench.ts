/**
 * Turnover at scale (issue 6): 100,000 registered sessions, 2,000 awake, 200 swaps a second for
 * 20 virtual minutes after the fill (the built-in `turnover-large`), in virtual time. Targets:
 * under 60 s of wall time and under 1.5 GB peak RSS. The reference is the wall clock itself: how
 * many run-seconds the engine simulates per wall-second (the same run in real time would take its
 * whole duration). Each run is its own process (bench/engine-child.ts), so wall time and peak
 * RSS are its own. The trace is then scanned once to check the rate was held (swaps done vs
 * asked) without the analyzer's cost.
 */
import { spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Bench } from './run.ts';

const child = fileURLToPath(new URL('./engine-child.ts', import.meta.url));

interface ChildResult {
  wallMs: number;
  virtualMs: number;
  events: number;
  maxRssMb: number;
}

function runChild(ref: string, outDir: string, sets: string[]): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child, ref, outDir, ...sets], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.on('error', reject);
    p.on('close', (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${code}`)),
    );
  });
}

interface TraceFacts {
  asked: number;
  done: number;
  missed: number;
  fillDoneMs: number;
  doneMs: number;
  wakes: number;
  parks: number;
}

/** One pass over the trace for the turnover facts (string matching, no JSON for most lines). */
async function scan(path: string): Promise<TraceFacts> {
  const facts: TraceFacts = {
    asked: 0,
    done: 0,
    missed: 0,
    fillDoneMs: Number.NaN,
    doneMs: Number.NaN,
    wakes: 0,
    parks: 0,
  };
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    if (line.includes('"name":"actor.wake"')) facts.wakes++;
    else if (line.includes('"name":"actor.park"')) facts.parks++;
    else if (line.includes('"name":"turnover.')) {
      const r = JSON.parse(line);
      if (r.name === 'turnover.tick') {
        facts.asked += r.data.asked;
        facts.done += r.data.done;
      } else if (r.name === 'turnover.swap.missed') facts.missed += r.data.count;
      else if (r.name === 'turnover.fill.done') facts.fillDoneMs = r.t;
      else if (r.name === 'turnover.done') facts.doneMs = r.t;
    }
  }
  return facts;
}

const CASES: Array<{
  name: string;
  ref: string;
  sets: string[];
  target: string;
  limitS?: number;
  limitRssMb?: number;
}> = [
  {
    name: 'turnover-large: 100,000 registered, 2,000 awake, 200 swaps/s, 20 min after fill',
    ref: 'turnover-large',
    sets: [],
    target: '< 60 s, < 1.5 GB',
    limitS: 60,
    limitRssMb: 1536,
  },
  {
    name: 'turnover (laptop default), target-rps 50',
    ref: 'turnover',
    sets: ['turnover.target-rps=50'],
    target: '(for comparison)',
  },
];

const bench: Bench = {
  name: 'turnover',
  description: 'virtual-time turnover runs (park/wake swaps) of the reference control plane',
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'fleetbench-turnover-bench-'));
    const figures: Record<string, number | string> = {};
    console.log(
      `load average at start: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}\n`,
    );
    console.log(
      '| run | wall s | run time simulated | run-s per wall-s | events/s | swaps done / asked | wakes | parks | trace MB | peak RSS MB | target | verdict |',
    );
    console.log('| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- | --- |');
    try {
      for (const c of CASES) {
        const out = join(dir, c.name.replace(/[^a-z0-9]+/gi, '-'));
        const r = await runChild(c.ref, out, c.sets);
        const trace = join(out, 'trace.jsonl');
        const footer = JSON.parse(readFileSync(trace, 'utf8').slice(-400).trimEnd().split('\n').pop()!);
        const facts = await scan(trace);
        const wallS = r.wallMs / 1000;
        const ok =
          footer.reason === 'completed' &&
          (c.limitS === undefined || wallS < c.limitS) &&
          (c.limitRssMb === undefined || r.maxRssMb < c.limitRssMb);
        const steadyMin = (facts.doneMs - facts.fillDoneMs) / 60_000;
        console.log(
          `| ${c.name} | ${wallS.toFixed(1)} | ${(r.virtualMs / 60_000).toFixed(0)} min (${steadyMin.toFixed(0)} after fill) | ${(r.virtualMs / r.wallMs).toFixed(0)}× | ${Math.round(r.events / wallS).toLocaleString('en-US')} | ${facts.done.toLocaleString('en-US')} / ${facts.asked.toLocaleString('en-US')} | ${facts.wakes.toLocaleString('en-US')} | ${facts.parks.toLocaleString('en-US')} | ${(statSync(trace).size / 1e6).toFixed(0)} | ${r.maxRssMb.toFixed(0)} | ${c.target} | ${c.limitS === undefined ? '–' : ok ? 'met' : 'not met'} |`,
        );
        figures[`${c.ref} wall s`] = Number(wallS.toFixed(2));
        figures[`${c.ref} peak RSS MB`] = Math.round(r.maxRssMb);
        figures[`${c.ref} run-s per wall-s`] = Math.round(r.virtualMs / r.wallMs);
        figures[`${c.ref} swaps missed`] = facts.missed;
        rmSync(out, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    console.log(
      `\nload average at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    return figures;
  },
};

export default bench;
