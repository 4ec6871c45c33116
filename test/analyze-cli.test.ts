import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeSyntheticTrace } from '../bench/synthetic.ts';
import { type Analysis, analyzeFile } from '../src/analyze/index.ts';
import { bundleWorker } from '../src/analyze/worker-source.ts';
import { InputFileError } from '../src/base/errors.ts';
import { cli } from './helpers/cli.ts';
import { CP, writeControlPlaneTrace } from './helpers/control-plane-trace.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const SAMPLE = new URL('../examples/sample-trace.jsonl', import.meta.url).pathname;
const sampleLines = readFileSync(SAMPLE, 'utf8').trim().split('\n');
const STACK = /\n\s+at .+:\d+:\d+/;

function write(name: string, text: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

describe('summarize and analyze: bad input through the real CLI', () => {
  const [head, first, ...rest] = sampleLines;
  const cases: Array<[string, () => string, RegExp]> = [
    [
      'malformed JSON',
      () => write('a.jsonl', [head, '{"kind":"api","t":', first, ...rest].join('\n')),
      /a\.jsonl:2: malformed JSON/,
    ],
    [
      'a wrong field type',
      () => write('b.jsonl', [head, first!.replace('"dur":', '"dur":"fast","x":'), ...rest].join('\n')),
      /b\.jsonl:2: api record: dur: expected number/,
    ],
    [
      'an unknown record kind',
      () => write('c.jsonl', [head, '{"kind":"metric","t":1}', first, ...rest].join('\n')),
      /c\.jsonl:2: unknown record kind "metric"/,
    ],
    ['an empty file', () => write('d.jsonl', ''), /d\.jsonl: empty trace: no run header/],
    [
      'a truncated file',
      () => write('e.jsonl', [head, first].join('\n')),
      /e\.jsonl: truncated: no end footer after line 2/,
    ],
    ['a missing path', () => join(dir, 'nope.jsonl'), /nope\.jsonl: no such file/],
    [
      'binary garbage',
      () => write('g.jsonl', Buffer.from([0, 1, 2, 0xff, 0xfe, 10, 3, 4])),
      /g\.jsonl:1: not JSON \(binary data\?\)/,
    ],
  ];
  // summarize and analyze share the reading path: each case goes through one of them.
  it.concurrent.each(
    cases.map(
      ([name, make, expected], i) => [name, i % 2 ? 'summarize' : 'analyze', make, expected] as const,
    ),
  )('%s (%s): file:line and reason, exit 2, no stack trace', async (_name, command, make, expected) => {
    const result = await cli([command, make()]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(expected);
    expect(result.stderr).toMatch(/^fleetbench: /);
    expect(result.stderr).not.toMatch(STACK);
  });

  it('--lenient skips bad lines, counts them and says so in every format', async () => {
    const path = write(
      'lenient.jsonl',
      [head, 'not json', first, '{"kind":"api"}', ...rest.slice(0, -1)].join('\n'),
    );
    const [json, text, md] = await Promise.all([
      cli(['analyze', '--lenient', '--json', path]),
      cli(['summarize', '--lenient', path]),
      cli(['summarize', '--lenient', '--markdown', path]),
    ]);
    expect(json.code).toBe(0);
    const a = JSON.parse(json.stdout) as Analysis;
    expect(a.input).toMatchObject({ skipped: 2, truncated: true, footer: null });
    expect(a.input.skippedReasons).toEqual([
      'line 2: malformed JSON: not json',
      'line 4: api record: t: expected number',
    ]);
    expect(a.api.totals.calls).toBe(sampleLines.length - 2);
    expect(a.warnings[0]).toMatch(/truncated: no end footer/);
    expect(text.stdout).toMatch(/! 2 bad lines skipped \(--lenient\):\n\s+! +line 2: malformed JSON/);
    expect(text.stdout).toMatch(/no end footer/);
    expect(md.stdout).toMatch(/> ⚠ 2 bad lines skipped/);
  });

  it('reads gzip input', async () => {
    const path = write('sample.jsonl.gz', gzipSync(readFileSync(SAMPLE)));
    const [zipped, plain] = await Promise.all([
      cli(['summarize', '--json', path]),
      cli(['summarize', '--json', SAMPLE]),
    ]);
    expect(zipped.code).toBe(0);
    const a = JSON.parse(zipped.stdout);
    const b = JSON.parse(plain.stdout);
    a.input.file = b.input.file;
    expect(a).toEqual(b);
  });

  it('says how to import a raw agent-orchestrator trace given where a trace was expected', async () => {
    const raw = new URL('../examples/ao-gh-trace.jsonl', import.meta.url).pathname;
    const result = await cli(['summarize', raw]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/ao-gh-trace\.jsonl:1: expected a 'run' header/);
    expect(result.stderr).toMatch(/hint: .*fleetbench import ao-gh FILE/);
  });

  it('rejects bad flags with a usage error', async () => {
    const result = await cli(['analyze', '--threads', 'many', SAMPLE]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--threads: expected a positive integer, got 'many'/);
    // Each thread is an isolate: a thousand is a typo, refused before one starts.
    const many = await cli(['analyze', '--threads', '1000', SAMPLE]);
    expect(many.code).toBe(2);
    expect(many.stderr).toMatch(/--threads: at most 64 \(docs\/limits\.md\), got 1000/);
  });
});

describe('parallel analysis equals the single pass', () => {
  const path = join(dir, 'synthetic.jsonl');
  writeSyntheticTrace(path, { records: 30_000, sessions: 40, repos: 8 });
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');

  it('a worker thread loads no schema library (zod, ajv): each thread pays for what it loads', () => {
    const built = bundleWorker();
    expect(built).not.toBeNull();
    const packages = new Set(
      built!.inputs.flatMap((input) => input.match(/node_modules\/((@[^/]+\/)?[^/]+)/)?.[1] ?? []),
    );
    expect(packages).toContain('hdr-histogram-js');
    expect([...packages].filter((name) => ['zod', 'ajv'].includes(name))).toEqual([]);
  });

  it.each([2, 3, 5])('on a clean trace, with %i threads', async (threads) => {
    const one = await analyzeFile(path, { threads: 1 });
    const many = await analyzeFile(path, { threads });
    expect(many.threads).toBe(threads);
    expect(many.analysis).toEqual(one.analysis);
    expect(one.analysis.api.totals.calls).toBe(30_000);
  });

  it('in lenient mode: the same skipped lines, reasons and counts', async () => {
    const broken = [...lines];
    broken.splice(20_000, 0, '{"kind":"span","name":"x","t":1}'); // schema problem, worded by the main thread
    broken.splice(15_001, 0, 'garbage');
    broken.splice(7, 0, '{"kind":"gauge","name":"g","t":1,"value":2}', '');
    broken.splice(broken.length - 1, 1); // no footer
    const file = write('broken.jsonl', `${broken.join('\n')}\n`);
    const one = await analyzeFile(file, { threads: 1, lenient: true });
    const three = await analyzeFile(file, { threads: 3, lenient: true });
    expect(three.analysis).toEqual(one.analysis);
    expect(one.stats.skipped).toBe(2);
    expect(one.analysis.input.skippedReasons).toEqual([
      'line 15004: malformed JSON: garbage',
      'line 20004: span record: dur: expected number',
    ]);
    expect(one.analysis.input.truncated).toBe(true);
  });

  it('past 2^20 bins of 1 ms, each range starts at the width of the last valid call (not of a refused one)', async () => {
    // 20,000 calls at 5 a second: 67 minutes, 4 ms bins in the end.
    const long = join(dir, 'long.jsonl');
    writeSyntheticTrace(long, { records: 20_000, rate: 5, sessions: 40, repos: 8 });
    const body = readFileSync(long, 'utf8').trimEnd().split('\n');
    // Before the footer, an api line the schema refuses, a day later: a range that started at
    // the width it implies would bin every call at 200 ms.
    const refused = { ...JSON.parse(body.at(-2)!), t: 86_400_000, status: 'x' };
    body.splice(body.length - 1, 0, JSON.stringify(refused));
    const file = write('long-refused-tail.jsonl', `${body.join('\n')}\n`);
    const one = await analyzeFile(file, { threads: 1, lenient: true });
    const two = await analyzeFile(file, { threads: 2, lenient: true });
    expect(two.threads).toBe(2);
    expect(two.analysis).toEqual(one.analysis);
    expect(one.stats.skipped).toBe(1);
  });

  it('an end footer in the middle is reported at its own line, on every path', async () => {
    const moved = [...lines];
    const footer = moved.pop()!;
    moved.splice(12_000, 0, footer);
    const file = write('moved.jsonl', `${moved.join('\n')}\n`);
    for (const threads of [1, 2, 4]) {
      const error = await analyzeFile(file, { threads }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InputFileError);
      expect((error as Error).message).toBe(`${file}:12001: end footer before the end of the file`);
    }
  });

  it('a strict-mode error deep in a worker range names the absolute line', async () => {
    const bad = [...lines];
    bad[25_000] = bad[25_000]!.replace('"status":', '"status":"x","y":');
    const file = write('strict.jsonl', `${bad.join('\n')}\n`);
    for (const threads of [1, 3]) {
      const error = await analyzeFile(file, { threads }).catch((e: unknown) => e);
      expect((error as Error).message).toBe(`${file}:25001: api record: status: expected number`);
    }
  });
});

describe('a control-plane trace (real emulator, sequential poll loop) through analyze', () => {
  const path = join(dir, 'control-plane.jsonl');
  beforeAll(() => writeControlPlaneTrace(path));

  it('reports the steady-state floor, the poll loop and a clean /rate_limit bracket', async () => {
    const { analysis: a } = await analyzeFile(path, { threads: 1 });
    // Whole run: the cold-start cycle (8 calls per session) pulls the mean up.
    expect(a.api.pollingFloor.perSessionCycle.all).toEqual({ cells: 24, calls: 72, p50: 2, mean: 3, max: 8 });
    expect(a.api.pollingFloor.steady).toMatchObject({
      sinceMs: CP.steadyAtMs,
      cycles: 5,
      sessions: 4,
      attributedCalls: 40,
      perSessionCycle: { all: { cells: 20, calls: 40, p50: 2, mean: 2, max: 2 } },
      sharedPerCycle: { all: { cells: 5, calls: 5, p50: 1, mean: 1, max: 1 } },
    });
    const pc = a.controlPlane.pollCycles!;
    expect(pc).toMatchObject({
      count: 6,
      intervalMs: 30_000,
      intervalKnown: 6,
      overruns: 1,
      skipped: 1,
    });
    expect([pc.durationMs!.min, pc.durationMs!.max, pc.lagMs!.max]).toEqual([18_000, 66_000, 6000]);
    // One row: the other resources the snapshots list (search, graphql, ...) were never used.
    expect(a.api.bracket!.byResource).toEqual({
      core: expect.objectContaining({
        deltaBasis: 'same-window',
        deltaUsed: 73,
        tracePoints: 73,
        unseenPoints: 0,
      }),
    });
    expect(a.warnings).toEqual([]);

    // Byte ranges on worker threads give the same document.
    const three = await analyzeFile(path, { threads: 3 });
    expect(three.threads).toBe(3);
    expect(three.analysis).toEqual(a);

    const terminal = await cli(['analyze', path]);
    expect(terminal.code).toBe(0);
    expect(terminal.stdout).toContain(
      'steady state: the 5 cycles from the steady.start marker (1m00s) on, 4 sessions:',
    );
    expect(terminal.stdout).toMatch(
      /▸ Poll cycles \(control plane\)\n\s+cycles\.+: 6\n\s+interval\.+: 30s\n/,
    );
    // Five 18 s steady cycles and one 66 s cold one: exact nearest-rank p50 = rank 3 = 18 s (not
    // an HDR bucket edge), p95 = rank ⌈5.7⌉ = 6 = 66 s.
    expect(terminal.stdout).toMatch(/duration p50 \/ p95 \/ max\.+: 18s \/ 1m06s \/ 1m06s/);
    expect(terminal.stdout).toMatch(/overruns \(duration > interval\)\.+: 1 of 6 \(16\.7%\)/);
    expect(terminal.stdout).toMatch(/start lag p95 \/ max\.+: 6s \/ 6s/);
    expect(terminal.stdout).toMatch(/skipped cycles\.+: 1\n/);
    expect(terminal.stdout).not.toContain('reset between the snapshots');
    const markdown = await cli(['analyze', '--markdown', path]);
    expect(markdown.stdout).toContain('### Poll cycles (control plane)');
    expect(markdown.stdout).toContain('| overruns (duration > interval) | 1 of 6 (16.7%) |');
  });
});
