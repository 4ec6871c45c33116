/**
 * Hostile files (issue 19), through the real CLI: times no run can have (in a trace, an ao-gh
 * row, an OTLP export), lines with no end, negative budget limits. Each is refused in seconds
 * with `file:line: field: reason` and a non-zero exit, never a stack trace, a hang or an
 * out-of-memory; and the longest line allowed is still read in linear time.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MAX_CONFIG_FILE_BYTES,
  MAX_LINE_BYTES,
  MAX_OTLP_FILE_BYTES,
  MAX_RUN_MS,
} from '../src/base/limits.ts';
import { LineSplitter } from '../src/trace/lines.ts';
import { BIN, cli, runCli } from './helpers/cli.ts';
import { cpuTimeOf } from './helpers/cpu.ts';
import { scratchDir } from './helpers/tmp.ts';

const SAMPLE = new URL('../examples/sample-trace.jsonl', import.meta.url).pathname;
const AO_SAMPLE = new URL('../examples/ao-gh-trace.jsonl', import.meta.url).pathname;
const HEADER = readFileSync(SAMPLE, 'utf8').split('\n')[0]!;
const FOOTER = '{"kind":"end","t":1,"reason":"completed","counts":{"api":0,"span":1,"event":0,"gauge":0}}';

/** A CLI run that must fail cleanly: the code, the message, no stack, within the CPU time bound. */
async function refused(args: string[], code: number, message: RegExp, boundMs = 15_000) {
  const { result, cpuMs } = await cpuTimeOf(() => cli(args));
  expect(result.stderr).toMatch(message);
  expect(result.code).toBe(code);
  expect(result.stderr).not.toMatch(/\n\s+at |RangeError|heap out of memory/);
  expect(cpuMs).toBeLessThan(boundMs);
}

describe('times outside the range a trace holds', () => {
  const dir = scratchDir('fleetbench-times-');
  const cases: Array<[string, string, RegExp]> = [
    [
      't far in the future',
      '"t":1e13,"dur":1',
      /:2: span record: t: expected at most 2592000000 ms \(30 days/,
    ],
    ['t beyond any array', '"t":1e16,"dur":1', /:2: span record: t: expected at most 2592000000 ms/],
    ['dur 1e308', '"t":1,"dur":1e308', /:2: span record: dur: expected at most 2592000000 ms/],
    ['t negative', '"t":-1e12,"dur":1', /:2: span record: t: expected ms since the run epoch, not negative/],
  ];
  for (const [what, fields, message] of cases) {
    it(`${what}: analyze exits 2 naming the line and field, in seconds`, async () => {
      const file = join(dir, `${what.replace(/\W+/g, '-')}.jsonl`);
      writeFileSync(file, `${HEADER}\n{"kind":"span","name":"x",${fields}}\n${FOOTER}\n`);
      await refused(['analyze', file], 2, message);
    });
  }

  it('a span at the very end of the range is analysed, in bounded time and memory', async () => {
    const file = join(dir, 'edge.jsonl');
    const t = MAX_RUN_MS - 1;
    writeFileSync(
      file,
      `${HEADER}\n{"kind":"span","name":"x","t":0,"dur":1}\n{"kind":"span","name":"x","t":${t},"dur":1}\n${FOOTER.replace('"span":1', '"span":2').replace('"t":1,', `"t":${t + 1},`)}\n`,
    );
    const { result, cpuMs } = await cpuTimeOf(() => cli(['analyze', file, '--json']));
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).run.durationMs).toBe(MAX_RUN_MS);
    expect(cpuMs).toBeLessThan(20_000);
  });

  it('import ao-gh: durationMs 1e308 and a year-9999 timestamp are refused naming the line', async () => {
    const rows = readFileSync(AO_SAMPLE, 'utf8').split('\n').filter(Boolean);
    const huge = join(dir, 'huge.jsonl');
    writeFileSync(huge, `${rows[0]}\n${rows[1]!.replace('"durationMs":380', '"durationMs":1e308')}\n`);
    await refused(
      ['import', 'ao-gh', huge, '-o', join(dir, 'huge.out.jsonl')],
      2,
      /huge\.jsonl:2: durationMs: expected at most/,
    );
    const far = join(dir, 'far.jsonl');
    writeFileSync(
      far,
      `${rows[0]}\n${rows[1]!.replace('2026-04-15T10:57:00.880Z', '9999-12-31T23:59:59.000Z')}\n`,
    );
    await refused(
      ['import', 'ao-gh', far, '-o', join(dir, 'far.out.jsonl')],
      2,
      /far\.jsonl:2: timestamp: 9999-12-31T23:59:59\.000Z is more than 30 days after the earliest call \(line 1/,
    );
  });

  it('import otlp: a span ending before it starts, or at an impossible time, is refused naming the span', async () => {
    const backwards = join(dir, 'backwards.json');
    writeFileSync(
      backwards,
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    name: 'ok',
                    startTimeUnixNano: '1700000000000000000',
                    endTimeUnixNano: '1700000000500000000',
                  },
                  {
                    name: 'back',
                    startTimeUnixNano: '1700000001000000000',
                    endTimeUnixNano: '1700000000900000000',
                  },
                ],
              },
            ],
          },
        ],
      }),
    );
    await refused(
      ['import', 'otlp', backwards, '-o', join(dir, 'b.out.jsonl')],
      2,
      /spans\[1\] 'back': endTimeUnixNano is before startTimeUnixNano/,
    );
    const far = join(dir, 'far.json');
    writeFileSync(
      far,
      JSON.stringify({
        resourceSpans: [
          {
            scopeSpans: [
              {
                spans: [
                  {
                    name: 'ok',
                    startTimeUnixNano: '1700000000000000000',
                    endTimeUnixNano: '1700000000500000000',
                  },
                  { name: 'far', startTimeUnixNano: '9'.repeat(30), endTimeUnixNano: '9'.repeat(30) },
                ],
              },
            ],
          },
        ],
      }),
    );
    await refused(
      ['import', 'otlp', far, '-o', join(dir, 'f.out.jsonl')],
      2,
      /'far': t: .*beyond the 2592000000 ms/,
    );
  });
});

describe('line length', () => {
  const dir = scratchDir('fleetbench-lines-');

  it(`a line over ${MAX_LINE_BYTES} bytes is refused at its line number, without reading the file whole`, async () => {
    const file = join(dir, 'no-newline.jsonl');
    writeFileSync(file, `${HEADER}\n${'x'.repeat(MAX_LINE_BYTES + 1024)}`);
    await refused(['analyze', file], 2, /no-newline\.jsonl:2: line longer than 16777216 bytes/);
    const bare = join(dir, 'bare.jsonl');
    writeFileSync(bare, 'x'.repeat(MAX_LINE_BYTES + 1024));
    await refused(
      ['import', 'ao-gh', bare, '-o', join(dir, 'x.jsonl')],
      2,
      /bare\.jsonl:1: line longer than/,
    );
  });

  it('a long line is split in linear time: 48 MB in 64 KB chunks in well under 10 s (the old splitter: over a minute)', () => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const chunks = 768; // 48 MiB
    const lines: number[] = [];
    const splitter = new LineSplitter((text) => lines.push(text.length), 1, 64 * 1024 * 1024);
    const before = process.cpuUsage();
    for (let i = 0; i < chunks; i++) splitter.push(chunk);
    splitter.push(Buffer.from('\n'));
    splitter.end();
    expect(lines).toEqual([chunks * 64 * 1024]);
    // Re-joining the buffer per chunk (the old way) copies ~18 GB for this line: 16 MB took ~10 s.
    const used = process.cpuUsage(before);
    expect((used.user + used.system) / 1000).toBeLessThan(10_000);
  });
});

describe('budgets', () => {
  const dir = scratchDir('fleetbench-neg-budgets-');
  it('a negative limit is a misconfigured budget (exit 104), naming the row', async () => {
    const file = join(dir, 'negative.yaml');
    writeFileSync(file, 'name: negative\nbudgets:\n  - { metric: time_to_first_activity, p95: -4 }\n');
    await refused(
      ['check', SAMPLE, '--budgets', file],
      104,
      /negative\.yaml:3: budgets\[0\]: p95: expected a limit of 0 or more, got '-4'/,
    );
  });
});

describe('flags as the user typed them (issue 49)', () => {
  it.each([
    [
      '--time-scale abc',
      ['run', 'S2-T1-5', '--clock', 'real', '--time-scale', 'abc'],
      /^fleetbench: --time-scale abc: expected number/,
    ],
    [
      '--time-scale 0',
      ['run', 'S2-T1-5', '--clock', 'real', '--time-scale', '0'],
      /^fleetbench: --time-scale 0: Too small/,
    ],
    [
      '--time-scale -1e13',
      ['run', 'S2-T1-5', '--clock', 'real', '--time-scale', '-1e13'],
      /^fleetbench: --time-scale -1e13: Too small/,
    ],
    ['--clock bogus', ['run', 'S2-T1-5', '--clock', 'bogus'], /^fleetbench: --clock bogus: expected one of/],
    [
      'k8s manifest run --time-scale abc',
      ['k8s', 'manifest', 'run', 'S2-T1-5', '--segments', '2', '--time-scale', 'abc'],
      /^fleetbench: --time-scale abc: expected number/,
    ],
  ])(
    '%s names the flag typed, never a --set the user did not type (exit 2)',
    async (_name, args, message) => {
      const out = args[0] === 'run' ? ['--out', join(scratchDir('fleetbench-flags-'), 'never')] : [];
      const result = await cli([...args, ...out]);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain('--set');
      expect(result.code).toBe(2);
    },
  );

  const servers = [
    ['github', 'serve'],
    ['provider', 'serve'],
    ['reference', 'serve'],
  ];
  it.each(
    servers.flatMap((server) =>
      ['99999', '65536', '-1', '1e13', '1.5', 'http'].map((port) => [server.join(' '), port]),
    ),
  )(
    '%s --port %s is a usage error naming the range (exit 2), not an internal error',
    async (server, port) => {
      await refused(
        [...server.split(' '), '--port', port],
        2,
        /'--port <n>' argument '.*' is invalid\. expected an integer from 0 to 65535/,
        10_000,
      );
    },
  );

  it.each([
    ["github serve --admin-token ''", ['github', 'serve', '--admin-token', '']],
    ["provider serve --admin-token ''", ['provider', 'serve', '--admin-token', '']],
    ["provider serve --admin-token 'two words'", ['provider', 'serve', '--admin-token', 'two words']],
    ['github serve --admin-token with a newline', ['github', 'serve', '--admin-token', 'line\nbreak']],
    [
      'github serve --admin-token of 100,000 characters',
      ['github', 'serve', '--admin-token', 'x'.repeat(100_000)],
    ],
    ["reference serve --token ''", ['reference', 'serve', '--github', 'http://127.0.0.1:9', '--token', '']],
    [
      "run --github-admin-token ''",
      ['run', 'S2-T1-5', '--clock', 'real', '--github', 'http://127.0.0.1:9', '--github-admin-token', ''],
    ],
  ])('%s: an empty or unusable token is refused before anything starts (exit 2)', async (_name, args) => {
    await refused(args, 2, /argument [\s\S]* is invalid\. expected a token/, 10_000);
  });
});

describe('live-run segments: --start-at and --github', () => {
  const dir = scratchDir('fleetbench-segment-input-');
  const SEGMENTS = new URL('./fixtures/live-segments.yaml', import.meta.url).pathname;
  // Nothing listens on these ports: every case must be refused before anything is contacted.
  const run = (extra: string[]) => [
    'run',
    SEGMENTS,
    '--segment',
    '0/2',
    '--target',
    'http://127.0.0.1:9',
    '--github-admin-token',
    'x',
    '--out',
    join(dir, 'out'),
    ...extra,
  ];
  it.each([
    [['--github', 'http://127.0.0.1:9', '--start-at', '10000000000000'], /is more than 24 hours ahead/],
    [
      ['--github', 'http://127.0.0.1:9', '--start-at', '-5'],
      /--start-at: expected Unix milliseconds or an ISO time/,
    ],
    [['--github', 'http://127.0.0.1:9', '--start-at', '0'], /--start-at: expected Unix milliseconds/],
    [['--github', 'http://127.0.0.1:9', '--start-at', '2026-13-45T00:00:00Z'], /--start-at: expected/],
    [['--github', 'notaurl'], /--github: expected the emulator's base URL .* got 'notaurl'/],
    [['--github', 'ftp://127.0.0.1:9'], /--github: expected the emulator's base URL/],
    [['--github', 'http://127.0.0.1:9/some/path'], /--github: expected the emulator's base URL/],
  ])('%j is refused in seconds (exit 2)', async (extra, message) => {
    await refused(run(extra), 2, message, 10_000);
  });
});

/**
 * A subprocess of the CLI with its peak memory and CPU time read from /proc while it runs: a
 * file that never ends must be refused with both bounded, and the subprocess (killed after
 * `timeoutMs`) keeps a regression from taking the test's own process down.
 */
function measuredCli(args: string[], timeoutMs = 120_000) {
  return new Promise<{ code: number | null; stderr: string; peakRssMb: number; cpuMs: number }>(
    (resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], {
        env: { ...process.env, NO_COLOR: '1' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      let peakRssMb = 0;
      let cpuMs = 0;
      const sample = () => {
        try {
          const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
          peakRssMb = Math.max(peakRssMb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
          // utime and stime, in clock ticks of 10 ms (fields 14 and 15, after the command's parentheses).
          const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
          cpuMs = (Number(fields[11]) + Number(fields[12])) * 10;
        } catch {
          // gone between two samples
        }
      };
      const sampler = setInterval(sample, 20);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('error', reject);
      child.on('exit', (code) => {
        clearInterval(sampler);
        clearTimeout(timer);
        resolve({ code, stderr, peakRssMb, cpuMs });
      });
    },
  );
}

describe('files that never end or expand (issue 30)', () => {
  const dir = scratchDir('fleetbench-endless-');

  it('import otlp /dev/zero: refused once the bytes read pass the limit, memory and CPU bounded (stat says 0 for a device)', async () => {
    const result = await measuredCli(['import', 'otlp', '/dev/zero', '-o', join(dir, 'zero.jsonl')]);
    expect(result.stderr).toMatch(
      new RegExp(
        `/dev/zero: more than ${MAX_OTLP_FILE_BYTES} bytes: an OTLP export is read whole.*docs/limits\\.md`,
      ),
    );
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    // The limit's worth of bytes and Node itself: not the 4.9 GB it grew to in 30 s.
    expect(result.peakRssMb).toBeLessThan(1024);
    expect(result.cpuMs).toBeLessThan(20_000);
    expect(existsSync(join(dir, 'zero.jsonl'))).toBe(false);
  }, 180_000);

  it('a FIFO as a trace: refused naming it, not an internal error (a trace is read by position)', async () => {
    const fifo = join(dir, 'trace.fifo');
    execFileSync('mkfifo', [fifo]);
    const result = await runCli(['analyze', fifo], { timeoutMs: 60_000 });
    expect(result.stderr).toContain(`${fifo}: is a pipe (FIFO), not a file: a trace is read from a file`);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/internal error|ESPIPE/);
  }, 90_000);

  it('billion-laughs YAML: a bad-input error naming the file and the line of the first alias', async () => {
    const file = join(dir, 'laughs.yaml');
    const levels = 'abcdefghi'.split('');
    const lines = ['name: laughs', 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < levels.length; i++)
      lines.push(
        `${levels[i]}: &${levels[i]} [${Array(9)
          .fill(`*${levels[i - 1]}`)
          .join(',')}]`,
      );
    writeFileSync(file, `${lines.join('\n')}\n`);
    await refused(['run', file], 2, /laughs\.yaml:3: YAML: Excessive alias count .*docs\/limits\.md/);
    const budgets = join(dir, 'laughs-budgets.yaml');
    writeFileSync(budgets, `${lines.join('\n')}\nbudgets: []\n`);
    await refused(
      ['check', SAMPLE, '--budgets', budgets],
      104,
      /laughs-budgets\.yaml:3: YAML: Excessive alias count/,
    );
  });

  it('a scenario file that never ends (/dev/zero) is refused at the limit, not read whole', async () => {
    await refused(
      ['run', '/dev/zero'],
      2,
      new RegExp(`/dev/zero: more than ${MAX_CONFIG_FILE_BYTES} bytes: a scenario`),
    );
  });
});
