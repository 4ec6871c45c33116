/**
 * `tsx bench/cpuprofile-top.ts FILE.cpuprofile [--from S] [--to S] [--top N]`: the summary of a
 * V8 CPU profile (`node --cpu-prof`) that docs/performance.md quotes: the top frames by self time,
 * and the same time grouped by where the code lives (fleetbench's modules, Node's streams, timers,
 * the garbage collector, ...; a frame of an esbuild bundle by the module it came from), over the
 * samples between S seconds and S' seconds after the profile started (a load window without the
 * process's start-up). Idle time is left out of the shares.
 *
 * The profiler samples on wall time: on a loaded machine a thread waiting for a core is charged
 * to the frame it was in, so take profiles on a quiet machine (the shares, not the milliseconds).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives, by its script URL and name (first match wins). */
const GROUPS: Array<[string, (url: string, name: string) => boolean]> = [
  ['idle', (_u, n) => n === '(idle)'],
  ['garbage collector', (_u, n) => n === '(garbage collector)'],
  ['native, not attributed ((program))', (_u, n) => n === '(program)'],
  ['HTTP client (src/github/http1.ts, transport.ts)', (u) => /github\/(http1|transport)\.ts/.test(u)],
  ['pacing (src/workload/schedule.ts, clock)', (u) => /workload\/schedule\.ts|clock\/real\.ts/.test(u)],
  ['trace writer (src/trace/)', (u) => /\/trace\//.test(u)],
  ['the provider emulator (src/provider/)', (u) => /(^|\/)src\/provider\//.test(u)],
  ['histograms (src/analyze/histogram.ts, hdr-histogram-js)', (u) => /histogram/i.test(u)],
  ['the generator (bench/live-child.ts)', (u) => /live-child/.test(u)],
  [
    'Node streams and sockets',
    (u) => /node:(net|internal\/streams|internal\/stream_base_commons|stream)/.test(u),
  ],
  ['Node timers, ticks, promises', (u) => /node:(timers|internal\/timers|internal\/process)/.test(u)],
  ['Node buffers', (u) => /node:buffer/.test(u)],
  ['native calls from JS (socket writes, buffer encoding)', (u) => u === ''],
];

/**
 * The module a frame of an esbuild bundle comes from (the provider bench's servers run from one):
 * esbuild starts each module's code with a `// path` comment, so a function's line falls under the
 * last such comment before it. Other URLs are returned as they are.
 */
const bundleModules = new Map<string, Array<{ line: number; path: string }>>();
function sourceOf(url: string, line: number): string {
  if (!url.startsWith('file://') || !url.endsWith('.mjs')) return url;
  let starts = bundleModules.get(url);
  if (starts === undefined) {
    starts = [];
    try {
      const lines = readFileSync(fileURLToPath(url), 'utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        const path = /^\/\/ ((?:src|bench|bin)\/\S+\.[cm]?[jt]s)$/.exec(lines[i] ?? '')?.[1];
        if (path !== undefined) starts.push({ line: i, path });
      }
    } catch {
      // The bundle is gone (a profile read later): its frames keep the bundle's name.
    }
    bundleModules.set(url, starts);
  }
  let module: string | undefined;
  for (const start of starts) {
    if (start.line > line) break;
    module = start.path;
  }
  return module === undefined ? url : `${module} (in the bundle)`;
}

function groupOf(url: string, name: string): string {
  for (const [group, test] of GROUPS) if (test(url, name)) return group;
  return 'other JavaScript (module loading, start-up)';
}

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith('--') && !/^\d+(\.\d+)?$/.test(a));
const option = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
if (file === undefined) {
  console.error('usage: tsx bench/cpuprofile-top.ts FILE.cpuprofile [--from S] [--to S] [--top N]');
  process.exit(2);
}
const fromUs = option('--from', 0) * 1e6;
const toUs = option('--to', Number.POSITIVE_INFINITY) * 1e6;
const top = option('--top', 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
let at = 0;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i] ?? 0;
  if (at < fromUs || at > toUs) continue;
  const id = profile.samples[i]!;
  // A sample's delta is the time since the previous one: charged to the frame sampled.
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const frames = new Map<string, number>();
const groups = new Map<string, number>();
let busy = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const { functionName, url: profiledUrl, lineNumber } = byId.get(id)!.callFrame;
  const url = sourceOf(profiledUrl, lineNumber);
  const name = functionName || '(anonymous)';
  const group = groupOf(url, name);
  groups.set(group, (groups.get(group) ?? 0) + us);
  if (group === 'idle') {
    idle += us;
    continue;
  }
  busy += us;
  const where =
    url === '' ? '' : ` ${url.replace(/^.*\/(src|bench|node_modules)\//, '$1/')}:${lineNumber + 1}`;
  const key = `${name}${where}`;
  frames.set(key, (frames.get(key) ?? 0) + us);
}
const pct = (us: number) => `${((100 * us) / busy).toFixed(1)} %`;
console.log(
  `${file}: ${(busy / 1000).toFixed(0)} ms busy, ${(idle / 1000).toFixed(0)} ms idle between ${fromUs / 1e6} s and ${Number.isFinite(toUs) ? `${toUs / 1e6} s` : 'the end'}\n`,
);
console.log('| self time | share of busy | frame |');
console.log('| --: | --: | --- |');
for (const [key, us] of [...frames].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`| ${(us / 1000).toFixed(1)} ms | ${pct(us)} | \`${key}\` |`);
console.log('\n| where the code lives | self time | share of busy |');
console.log('| --- | --: | --: |');
for (const [group, us] of [...groups].sort((a, b) => b[1] - a[1]))
  if (group !== 'idle') console.log(`| ${group} | ${(us / 1000).toFixed(1)} ms | ${pct(us)} |`);
