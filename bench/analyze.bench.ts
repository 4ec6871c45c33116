/**
 * `npm run bench -- analyze`: how fast `fleetbench analyze` reads a trace and how much memory
 * it takes, beside DuckDB computing the same group-by counts and percentiles on the same file.
 *
 * - Synthetic traces of 200,000 and 2,000,000 api records (bench/synthetic.ts, ~465 bytes a
 *   line) are generated once into .bench-data/ (git-ignored) and reused.
 * - fleetbench runs as a subprocess exactly as a user runs it (`node bin/fleetbench.js analyze
 *   --json FILE`), under /usr/bin/time for wall time and peak RSS. Its wall time includes the
 *   process start (Node + tsx + modules), measured separately with `--version`.
 * - DuckDB (@duckdb/node-api, in this process, all cores) loads the api records' group-by
 *   columns from the same file and computes counts by operation, route, status, source and
 *   session, and p50/p90/p95/p99/max of the duration: once with the columns declared (its
 *   fastest way) and once with read_json_auto (what a user would type first).
 * - The limits: read + split lines only, and read + split + JSON.parse only, both one thread,
 *   in this process, on the 200k file; two threads can do at most twice that.
 * - The targets on the 2M file (issue 50: CPU ≤ 0.75× DuckDB's, wall time ≤ 2× the parse limit's;
 *   issue 17: records/s, peak RSS): ANALYZE_BENCH_ROUNDS (3) alternating rounds of fleetbench (the
 *   scanner's fast path, the default), fleetbench with FLEETBENCH_FAST_PATH=0 (JSON.parse + ajv on every line,
 *   for the side-by-side) and DuckDB (columns declared, as a process: bench/duckdb-query.mjs),
 *   each a whole process under /usr/bin/time; medians of CPU seconds (user + system, all threads: what
 *   a shared machine bends least), records/s and peak RSS, each target with met / not met.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { forEachLineInRange, LineSplitter } from '../src/trace/lines.ts';
import { mainScanner } from '../src/trace/validate.ts';
// @ts-expect-error: plain JavaScript shared with the DuckDB process (bench/duckdb-analysis.mjs)
import { analyzeWithDuckDB } from './duckdb-analysis.mjs';
import { envInteger } from './env.ts';
import type { Bench } from './run.ts';
import { writeSyntheticTrace } from './synthetic.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const dataDir = `${root}.bench-data`;
const bin = `${root}bin/fleetbench.js`;
const TIME = '/usr/bin/time';

function traceFile(records: number): string {
  mkdirSync(dataDir, { recursive: true });
  const path = `${dataDir}/analyze-v2-${records}.jsonl`;
  if (!existsSync(path)) {
    const started = performance.now();
    process.stdout.write(`generating ${records.toLocaleString('en-US')} records into ${path} … `);
    writeSyntheticTrace(path, { records });
    process.stdout.write(`${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  }
  return path;
}

interface CliRun {
  wallS: number;
  /** User + system CPU seconds of the process (all its threads); null without /usr/bin/time. */
  cpuS: number | null;
  rssMb: number | null;
  records: number;
}

/** `env`: FLEETBENCH_BUNDLE=0 runs the sources through tsx instead of the cached bundle. */
function runCli(args: string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const hasTime = existsSync(TIME);
  const started = performance.now();
  const options = {
    encoding: 'utf8' as const,
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, ...env },
  };
  const result = hasTime
    ? spawnSync(TIME, ['-f', '%e %M %U %S', process.execPath, bin, ...args], options)
    : spawnSync(process.execPath, [bin, ...args], options);
  const wall = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`fleetbench ${args.join(' ')} failed:\n${result.stderr}`);
  let rssMb: number | null = null;
  let cpuS: number | null = null;
  let wallS = wall;
  if (hasTime) {
    const last = result.stderr.trim().split('\n').pop()!;
    const [elapsed, rssKb, user, system] = last.split(' ').map(Number);
    wallS = elapsed!;
    rssMb = rssKb! / 1024;
    cpuS = user! + system!;
  }
  let records = 0;
  if (args.includes('--json'))
    records = (JSON.parse(result.stdout) as { input: { records: { api: number } } }).input.records.api;
  return { wallS, cpuS, rssMb, records };
}

async function duckdb(path: string, declared: boolean): Promise<{ wallS: number; records: number }> {
  const started = performance.now();
  const records = await analyzeWithDuckDB(path, declared);
  return { wallS: (performance.now() - started) / 1000, records };
}

/** DuckDB as a whole process (bench/duckdb-query.mjs), measured as fleetbench is. */
function duckdbProcess(path: string): { wallS: number; cpuS: number | null; rssMb: number | null } {
  const script = `${root}bench/duckdb-query.mjs`;
  const hasTime = existsSync(TIME);
  const started = performance.now();
  const result = hasTime
    ? spawnSync(TIME, ['-f', '%e %M %U %S', process.execPath, script, path, 'declared'], { encoding: 'utf8' })
    : spawnSync(process.execPath, [script, path, 'declared'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`DuckDB failed:\n${result.stderr}`);
  if (Number(result.stdout.trim()) !== 2_000_000 && path.includes('2000000'))
    throw new Error(`DuckDB saw ${result.stdout.trim()} records`);
  if (!hasTime) return { wallS: (performance.now() - started) / 1000, cpuS: null, rssMb: null };
  const [elapsed, rssKb, user, system] = result.stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return { wallS: elapsed!, cpuS: user! + system!, rssMb: rssKb! / 1024 };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * The targets for `analyze` on the 2M file: issue 50's CPU beside DuckDB and wall time beside the
 * parse limit (a simdjson-class parser reads about PARSE_LIMIT_BYTES_PER_S a core), issue 17's
 * records/s and memory.
 */
const TARGETS = { cpuVsDuckdb: 0.75, wallVsParseLimit: 2, recordsPerS: 700_000, peakRssMb: 300 };
const PARSE_LIMIT_BYTES_PER_S = 1e9;
/** Alternating rounds of fleetbench and DuckDB (ANALYZE_BENCH_ROUNDS: more for a noisier machine). */
const ROUNDS = envInteger('ANALYZE_BENCH_ROUNDS', 3, 1, 50);

/**
 * One thread, this process, lines/s: read + split; read + split + JSON.parse (the full path's
 * floor, before validation and analysis); read + split on bytes + the scanner (the fast path's
 * floor, validation included, before analysis).
 */
function limits(path: string): { splitPerS: number; parsePerS: number; scanPerS: number } {
  const size = statSync(path).size;
  const scanner = mainScanner()!.scanner;
  const measure = (mode: 'split' | 'parse' | 'scan') => {
    let best = 0;
    for (let round = 0; round < 3; round++) {
      let lines = 0;
      // CPU time of this thread's work (the bench process does nothing else meanwhile): what a
      // shared machine bends least.
      const cpuBefore = process.cpuUsage();
      const splitter =
        mode === 'scan'
          ? LineSplitter.spans((bytes, start, end) => {
              scanner.scan(bytes, start, end);
              lines++;
            })
          : new LineSplitter((text) => {
              if (mode === 'parse') JSON.parse(text);
              lines++;
            });
      forEachLineInRange(path, 0, size, splitter);
      const cpu = process.cpuUsage(cpuBefore);
      best = Math.max(best, lines / ((cpu.user + cpu.system) / 1e6));
    }
    return best;
  };
  return { splitPerS: measure('split'), parsePerS: measure('parse'), scanPerS: measure('scan') };
}

const fmt = (n: number, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

const bench: Bench = {
  name: 'analyze',
  description: 'fleetbench analyze on 200k and 2M api records: records/s and peak RSS, against DuckDB',
  async run() {
    const small = traceFile(200_000);
    const large = traceFile(2_000_000);
    const cores = availableParallelism();
    const loadavg = () => execFileSync('cat', ['/proc/loadavg']).toString().trim();
    console.log(`machine: ${cores} cores, Node ${process.version}; load average ${loadavg()}`);

    runCli(['--version']); // builds the CLI bundle if the sources changed (once)
    const startup = runCli(['--version']);
    const TSX = { FLEETBENCH_BUNDLE: '0' };
    const startupTsx = runCli(['--version'], TSX);
    const rows: string[][] = [];
    const figures: Record<string, number | string> = {};
    for (const [label, path, records] of [
      ['200k', small, 200_000],
      ['2M', large, 2_000_000],
    ] as const) {
      const mb = statSync(path).size / 1024 ** 2;
      const ours = runCli(['analyze', '--json', path]);
      if (ours.records !== records)
        throw new Error(`fleetbench saw ${ours.records} records, expected ${records}`);
      const duck = await duckdb(path, true);
      if (duck.records !== records)
        throw new Error(`DuckDB saw ${duck.records} records, expected ${records}`);
      const recordsPerS = records / ours.wallS;
      const analysisPerS = records / Math.max(0.001, ours.wallS - startup.wallS);
      rows.push([
        label,
        fmt(mb),
        fmt(ours.wallS, 2),
        fmt(recordsPerS),
        fmt(analysisPerS),
        ours.rssMb === null ? '–' : fmt(ours.rssMb),
        fmt(duck.wallS, 2),
        fmt(ours.wallS / duck.wallS, 2),
      ]);
      figures[`${label}.wallS`] = Number(ours.wallS.toFixed(2));
      figures[`${label}.recordsPerS`] = Math.round(recordsPerS);
      figures[`${label}.analysisRecordsPerS`] = Math.round(analysisPerS);
      figures[`${label}.peakRssMb`] = ours.rssMb === null ? 'n/a' : Math.round(ours.rssMb);
      figures[`${label}.duckdbS`] = Number(duck.wallS.toFixed(2));
      figures[`${label}.ratioVsDuckdb`] = Number((ours.wallS / duck.wallS).toFixed(2));
    }
    const auto = await duckdb(large, false);
    figures['2M.duckdbAutoS'] = Number(auto.wallS.toFixed(2));
    // The same 2M analysis started through tsx's loader (the way every start went before the bundle).
    const viaTsx = runCli(['analyze', '--json', large], TSX);
    figures['2M.tsxWallS'] = Number(viaTsx.wallS.toFixed(2));
    figures.startS = Number(startup.wallS.toFixed(2));
    figures.startTsxS = Number(startupTsx.wallS.toFixed(2));

    console.log(
      '\n| trace | MB | fleetbench s | records/s | records/s without process start | peak RSS MB | DuckDB s (columns declared) | ratio |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
    console.log(
      `\nfleetbench process start (--version): ${fmt(startup.wallS, 2)} s from the cached bundle, ${fmt(startupTsx.wallS, 2)} s through tsx. 2M through tsx: ${fmt(viaTsx.wallS, 2)} s (${fmt(2_000_000 / viaTsx.wallS)} records/s, ${fmt(viaTsx.rssMb ?? 0)} MB). DuckDB with read_json_auto on 2M: ${fmt(auto.wallS, 2)} s (ratio ${fmt((figures['2M.wallS'] as number) / auto.wallS, 2)}).`,
    );

    // The targets: ROUNDS alternating rounds on the 2M file of the fast path (the default), the
    // full path (FLEETBENCH_FAST_PATH=0: JSON.parse + ajv on every line) and DuckDB, each a whole
    // process under /usr/bin/time (as issue 17 measured them); medians.
    // CPU seconds (user + system, every thread) are the figure that holds on a shared machine.
    // This machine's speed drifts by 20 % within a minute (a neighbour's load), so the CPU
    // target is judged on the median of each round's own ratio, fleetbench and DuckDB run back
    // to back (which of them first alternates from round to round), not on a ratio of medians
    // taken minutes apart; both are printed.
    const fast: CliRun[] = [];
    const full: CliRun[] = [];
    const duck: Array<{ wallS: number; cpuS: number | null }> = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        fast.push(runCli(['analyze', '--json', large]));
        duck.push(duckdbProcess(large));
      } else {
        duck.push(duckdbProcess(large));
        fast.push(runCli(['analyze', '--json', large]));
      }
      full.push(runCli(['analyze', '--json', large], { FLEETBENCH_FAST_PATH: '0' }));
    }
    const pairedRatios = fast.map((r, i) => (r.cpuS ?? Number.NaN) / (duck[i]!.cpuS ?? Number.NaN));
    const pairedRatio = median(pairedRatios);
    const m = (runs: Array<{ wallS: number; cpuS: number | null }>, key: 'wallS' | 'cpuS') =>
      median(runs.map((r) => r[key] ?? Number.NaN));
    const fastCpu = m(fast, 'cpuS');
    const fullCpu = m(full, 'cpuS');
    const duckCpu = m(duck, 'cpuS');
    const fastWall = m(fast, 'wallS');
    const fastRss = Math.max(...fast.map((r) => r.rssMb ?? Number.NaN));
    const perS = 2_000_000 / fastWall;
    const verdict = (met: boolean) => (met ? 'met' : '**not met**');
    figures['2M.fastCpuS'] = Number(fastCpu.toFixed(2));
    figures['2M.fullPathCpuS'] = Number(fullCpu.toFixed(2));
    figures['2M.duckdbCpuS'] = Number(duckCpu.toFixed(2));
    figures['2M.cpuVsDuckdb'] = Number(pairedRatio.toFixed(2));
    figures['2M.cpuVsDuckdbOfMedians'] = Number((fastCpu / duckCpu).toFixed(2));
    figures['2M.medianRecordsPerS'] = Math.round(perS);
    console.log(
      `\n2M file, ${ROUNDS} alternating rounds (medians; load average now ${loadavg()}):\n` +
        `fast path ${fmt(fastCpu, 2)} CPU s, ${fmt(fastWall, 2)} s wall, peak RSS ${fmt(fastRss)} MB; ` +
        `full path ${fmt(fullCpu, 2)} CPU s, ${fmt(m(full, 'wallS'), 2)} s wall (fast/full CPU ${fmt(fastCpu / fullCpu, 2)}); ` +
        `DuckDB (columns declared) ${fmt(duckCpu, 2)} CPU s, ${fmt(m(duck, 'wallS'), 2)} s wall.`,
    );
    console.log(
      `each round, CPU s: fast ${fast.map((r) => fmt(r.cpuS ?? 0, 2)).join(' / ')}; full ${full.map((r) => fmt(r.cpuS ?? 0, 2)).join(' / ')}; DuckDB ${duck.map((r) => fmt(r.cpuS ?? 0, 2)).join(' / ')}; fast ÷ DuckDB ${pairedRatios.map((r) => fmt(r, 2)).join(' / ')}`,
    );
    const parseLimitS = statSync(large).size / (PARSE_LIMIT_BYTES_PER_S * Math.min(cores, 2));
    figures['2M.parseLimitWallS'] = Number(parseLimitS.toFixed(2));
    figures['2M.wallVsParseLimit'] = Number((fastWall / parseLimitS).toFixed(2));
    console.log('\n| target (issues 50 and 17, 2M records) | measured | ratio | verdict |');
    console.log('| --- | ---: | ---: | --- |');
    console.log(
      `| CPU time ≤ ${TARGETS.cpuVsDuckdb}× DuckDB's (median of the rounds' ratios) | medians ${fmt(fastCpu, 2)} s vs ${fmt(duckCpu, 2)} s (${fmt(fastCpu / duckCpu, 2)}×) | ${fmt(pairedRatio, 2)}× | ${verdict(pairedRatio <= TARGETS.cpuVsDuckdb)} |`,
    );
    console.log(
      `| wall time ≤ ${TARGETS.wallVsParseLimit}× the parse limit's (${fmt(PARSE_LIMIT_BYTES_PER_S / 1e9, 1)} GB/s a core on ${Math.min(cores, 2)} cores: ${fmt(parseLimitS, 2)} s) | median ${fmt(fastWall, 2)} s | ${fmt(fastWall / parseLimitS, 2)}× | ${verdict(fastWall <= TARGETS.wallVsParseLimit * parseLimitS)} (judge it at a load average below 1) |`,
    );
    console.log(
      `| ≥ ${fmt(TARGETS.recordsPerS)} records/s end to end | ${fmt(perS)} | ${fmt(perS / TARGETS.recordsPerS, 2)}× the target | ${verdict(perS >= TARGETS.recordsPerS)} (wall time: judge it at a load average below 1) |`,
    );
    console.log(
      `| peak RSS ≤ ${TARGETS.peakRssMb} MB | ${fmt(fastRss)} MB | ${fmt(fastRss / TARGETS.peakRssMb, 2)}× the bound | ${verdict(fastRss <= TARGETS.peakRssMb)} |`,
    );

    const limit = limits(small);
    const ceiling = Math.min(cores, 2) * limit.parsePerS;
    figures['limit.splitLinesPerS'] = Math.round(limit.splitPerS);
    figures['limit.jsonParseLinesPerS'] = Math.round(limit.parsePerS);
    figures['limit.scanLinesPerS'] = Math.round(limit.scanPerS);
    figures['limit.twoThreadParseCeiling'] = Math.round(ceiling);
    console.log('\n| limit (one thread, 200k file) | lines per CPU-second |');
    console.log('| --- | ---: |');
    console.log(`| read + split lines | ${fmt(limit.splitPerS)} |`);
    console.log(`| read + split + JSON.parse | ${fmt(limit.parsePerS)} |`);
    console.log(`| read + split + scan (the fast path, values checked) | ${fmt(limit.scanPerS)} |`);
    console.log(`| JSON.parse ceiling for ${Math.min(cores, 2)} threads | ${fmt(ceiling)} |`);
    console.log(
      `\n2M analysis (process start excluded) runs at ${fmt((100 * (figures['2M.analysisRecordsPerS'] as number)) / ceiling)}% of the JSON.parse ceiling.`,
    );
    console.log(`\nload average at the end: ${loadavg()}`);
    return figures;
  },
};

export default bench;
