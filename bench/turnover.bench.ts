import { createReadStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { loadLine, runEngineChild } from './engine-run.ts';
import type { Bench } from './run.ts';

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
    console.log(`${loadLine('at start')}\n`);
    console.log(
      '| run | wall s | run time simulated | run-s per wall-s | events/s | swaps done / asked | wakes | parks | trace MB | peak RSS MB | target | verdict |',
    );
    console.log('| --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --- | --- |');
    try {
      for (const c of CASES) {
        const out = join(dir, c.name.replace(/[^a-z0-9]+/gi, '-'));
        const r = await runEngineChild(c.ref, out, c.sets);
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
    console.log(`\n${loadLine('at end')}`);
    return figures;
  },
};

export default bench;
