/**
 * `tsx bench/perf-phases.ts PERF.DATA [REQUESTS]`: where a live generator's CPU went, from a
 * `perf record -g` of its process (Debian's linux-perf), by phase: each sample goes to the first
 * phase below whose frames are on its stack, so a sample is counted once. With REQUESTS (the
 * requests in the recorded window) each phase is also given in µs per request, from the
 * sampling frequency. Run the generator with `node --perf-basic-prof` so JavaScript frames have
 * names:
 *
 *   node --perf-basic-prof CHILD.mjs 1000 9 URL TOKEN PATH /tmp/t.jsonl &
 *   sleep 2.5; perf record -F 5000 -g -p $! -o perf.data -- sleep 5
 *   npx tsx bench/perf-phases.ts perf.data 5000
 *
 * docs/performance.md quotes it (issue 40). Unlike `--cpu-prof`, perf counts only time on a CPU,
 * so a loaded machine does not charge waiting for a core to the code that waited.
 */
import { execFileSync } from 'node:child_process';

/** Phases in the order a sample is tested against them: frames (substrings) that mark each. */
const PHASES: Array<[string, string[]]> = [
  ['the write system call (loopback send, the server side of it)', ['WriteString', 'writeLatin1String']],
  ['framing answers, completing requests', ['onRead', 'JS:*frame', 'JS:^frame', 'onData', 'JS:*parse file']],
  ["the batch write's JavaScript (the stream's write path)", ['writeBatch']],
  ['the span and the histograms (the answer callback)', ['client.request.then', 'RunMicrotasks']],
  [
    "the pacer's timer callback (starts, request building, timers)",
    ['JS:*step', 'JS:^step', 'processTimers'],
  ],
  ['ticks', ['processTicksAndRejections']],
  ["Node's read path (stream push, 'data' events)", ['onStreamRead', 'OnUvRead']],
  ['waiting in epoll, being switched back in', ['epoll_pwait', 'do_epoll_wait']],
  ['garbage collection', ['Scaveng', 'Heap::', 'MarkCompact', 'Sweeper']],
  ['V8 compiling', ['compiler::', 'Compile']],
  ['the rest of the event loop (libuv, Node between callbacks)', ['uv_run', 'uv__']],
];

const [file, requestsText] = process.argv.slice(2);
if (file === undefined) {
  console.error('usage: tsx bench/perf-phases.ts PERF.DATA [REQUESTS]');
  process.exit(2);
}
const header = execFileSync('perf', ['report', '-i', file, '--header-only'], { encoding: 'utf8' });
const frequency = Number(
  /sample_freq \} = (\d+)/.exec(header)?.[1] ?? /freq = (\d+)/.exec(header)?.[1] ?? Number.NaN,
);
const script = execFileSync('perf', ['script', '-i', file, '-F', 'tid,ip,sym'], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
});
const counts = new Map<string, number>();
let total = 0;
let mainTid: string | undefined;
for (const sample of script.split('\n\n')) {
  const lines = sample
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (lines.length === 0) continue;
  const tid = lines[0]!.split(/\s+/)[0]!;
  // The first sample's thread is the main thread: it is the one running when perf attaches.
  mainTid ??= tid;
  const stack = lines.join(' ');
  const phase = PHASES.find(([, frames]) => frames.some((frame) => stack.includes(frame)))?.[0] ?? 'other';
  const key = `${tid === mainTid ? 'main thread' : 'other threads'}: ${phase}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  total++;
}
const requests = Number(requestsText);
const usPer = (n: number) => (n * 1e6) / frequency / requests;
console.log(`${total} samples at ${frequency} Hz${requests > 0 ? `, ${requests} requests` : ''}\n`);
console.log(`| phase | share of samples |${requests > 0 ? ' µs per request |' : ''}`);
console.log(`| --- | --: |${requests > 0 ? ' --: |' : ''}`);
for (const [key, n] of [...counts].sort((a, b) => b[1] - a[1]))
  console.log(
    `| ${key} | ${((100 * n) / total).toFixed(1)} % |${requests > 0 ? ` ${usPer(n).toFixed(1)} |` : ''}`,
  );
if (requests > 0) console.log(`| all | 100 % | ${usPer(total).toFixed(1)} |`);
