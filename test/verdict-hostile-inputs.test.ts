/**
 * Inputs edited to fool a verdict (docs/budgets.md#only-a-completed-run-is-judged,
 * docs/matrix.md#only-completed-runs-are-compared): a run that passes its budgets, whose trace
 * or directory is then made to say what the run did not. None may pass (exit 0): each is refused,
 * naming why. Real runs of the pipeline, the real CLI.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { reportData } from '../src/report-html/model.ts';
import { loadResults } from '../src/results/results.ts';
import { executeRun } from '../src/run/pipeline.ts';
import { planRun } from '../src/run/plan.ts';
import { cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
const RUN_FAILING_EVENTS = ['run.failed', 'fault.failed', 'target.lost'];

interface Trace {
  header: string;
  body: string[];
  footer: Record<string, unknown> & { counts: Record<string, number> };
}

function readTrace(runDir: string): Trace {
  const lines = readFileSync(join(runDir, 'trace.jsonl'), 'utf8').trimEnd().split('\n');
  return {
    header: lines[0]!,
    body: lines.slice(1, -1),
    footer: JSON.parse(lines.at(-1)!) as Trace['footer'],
  };
}

function writeTrace(path: string, lines: string[]): string {
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** The trace with one more event at line `at` (the footer's counts kept true). */
function withEvent(trace: Trace, name: string, at: number): string[] {
  const event = JSON.stringify({ kind: 'event', name, t: 1000, data: { message: 'lost' } });
  const counts = { ...trace.footer.counts, event: (trace.footer.counts.event ?? 0) + 1 };
  return [
    trace.header,
    ...trace.body.slice(0, at),
    event,
    ...trace.body.slice(at),
    JSON.stringify({ ...trace.footer, counts }),
  ];
}

describe('a passing run edited to hide that it failed is never judged', () => {
  const passing = join(dir, 'passing');
  const other = join(dir, 'other-seed');
  let trace: Trace;
  beforeAll(async () => {
    // chaos-codex-c4 holds native-speed (exit 0): an edit that fooled check would exit 0 too.
    await executeRun(planRun('chaos-codex-c4', [], passing));
    await executeRun(planRun('chaos-codex-c4', ['seed=2'], other));
    trace = readTrace(passing);
  }, 120_000);

  it('the run itself passes (exit 0), so the refusals below are the edits', async () => {
    const result = await cli(['check', passing, '--budgets', 'native-speed']);
    expect(result.code, result.stdout + result.stderr).toBe(0);
  });

  it('an event that fails the run, under a footer that says completed: exit 3 by trace, directory or analyze --json', async () => {
    for (const name of RUN_FAILING_EVENTS) {
      const edited = writeTrace(join(dir, `${name}.jsonl`), withEvent(trace, name, 100));
      const byTrace = await cli(['check', edited, '--budgets', 'native-speed']);
      expect(byTrace.code, `${name}: ${byTrace.stdout}${byTrace.stderr}`).toBe(3);
      expect(byTrace.stderr).toContain(`a ${name} event (the run failed)`);
      // Its Analysis JSON (analyze does not judge: it reads the trace as it is).
      const analysis = await cli(['analyze', edited, '--json']);
      const json = join(dir, `${name}.analysis.json`);
      writeFileSync(json, analysis.stdout);
      const byJson = await cli(['check', json, '--budgets', 'native-speed']);
      expect(byJson.code, byJson.stderr).toBe(3);
      // Put in the run's directory beside its summary.json, which was made from the trace before.
      const runDir = join(dir, `dir-${name}`);
      cpSync(passing, runDir, { recursive: true });
      cpSync(edited, join(runDir, 'trace.jsonl'));
      const byDir = await cli(['check', runDir, '--budgets', 'native-speed']);
      expect(byDir.code, byDir.stderr).toBe(2);
      expect(byDir.stderr).toContain('the trace changed after the results were written');
      // compare reads the run the same way.
      const compared = await cli(['compare', runDir, other]);
      expect(compared.code, compared.stdout).toBe(2);
      expect(compared.stderr).toContain('the trace changed after the results were written');
    }
  });

  it('the HTML report of a run whose analysis counts a run.failed event marks it partial, never "holds all judged budgets"', async () => {
    const edited = writeTrace(join(dir, 'report-failed.jsonl'), withEvent(trace, 'run.failed', 100));
    const analysis = await cli(['analyze', edited, '--json']);
    const runDir = join(dir, 'report-failed');
    cpSync(passing, runDir, { recursive: true });
    const summary = JSON.parse(readFileSync(join(passing, 'summary.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    writeFileSync(
      join(runDir, 'summary.json'),
      JSON.stringify({ ...summary, analysis: JSON.parse(analysis.stdout) }),
    );
    const unit = reportData(loadResults(runDir)).units[0]!;
    expect(unit.verdict).toBe('unknown');
    expect(unit.verdictWords).toMatch(/^is partial \(its trace has a run\.failed event/);
  });

  it('a summary.json beside the trace of another run: exit 2, naming both runs', async () => {
    const mixed = join(dir, 'mixed');
    cpSync(passing, mixed, { recursive: true });
    cpSync(join(other, 'trace.jsonl'), join(mixed, 'trace.jsonl'));
    const result = await cli(['check', mixed, '--budgets', 'native-speed']);
    expect(result.code, result.stdout).toBe(2);
    expect(result.stderr).toMatch(
      /of run "chaos-codex-c4-seed1-[^"]+", the trace beside it .* of run "chaos-codex-c4-seed2-/,
    );
  });

  it('a run directory with its trace gzip-compressed is judged from its summary (exit 0); cut, or of another run, refused', async () => {
    const zipped = join(dir, 'gzip');
    cpSync(passing, zipped, { recursive: true });
    const gz = gzipSync(readFileSync(join(passing, 'trace.jsonl')));
    writeFileSync(join(zipped, 'trace.jsonl'), gz);
    const whole = await cli(['check', zipped, '--budgets', 'native-speed']);
    expect(whole.code, whole.stderr).toBe(0);
    writeFileSync(join(zipped, 'trace.jsonl'), gz.subarray(0, gz.length >> 1));
    const cut = await cli(['check', zipped, '--budgets', 'native-speed']);
    expect(cut.code, cut.stderr).toBe(3);
    expect(cut.stderr).toContain('cannot be read to its end');
    writeFileSync(join(zipped, 'trace.jsonl'), gzipSync(readFileSync(join(other, 'trace.jsonl'))));
    const another = await cli(['check', zipped, '--budgets', 'native-speed']);
    expect(another.code, another.stderr).toBe(2);
    expect(another.stderr).toContain("a run's results are judged only beside its own trace");
  });

  it('a trace.jsonl beside the summary that is a directory or a FIFO: exit 2 in seconds, never an internal error or a hang', async () => {
    for (const [name, make] of [
      ['directory', (path: string) => mkdirSync(path)],
      ['fifo', (path: string) => execFileSync('mkfifo', [path])],
    ] as const) {
      const runDir = join(dir, `trace-${name}`);
      mkdirSync(runDir);
      cpSync(join(passing, 'summary.json'), join(runDir, 'summary.json'));
      make(join(runDir, 'trace.jsonl'));
      const result = await cli(['check', runDir, '--budgets', 'native-speed']);
      expect(result.code, `${name}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain("trace.jsonl: not a regular file: a run's trace is a file");
    }
    // A summary.json (or baseline.json) found in a directory that is a FIFO: check and compare.
    const fifoDir = join(dir, 'summary-fifo');
    mkdirSync(fifoDir);
    execFileSync('mkfifo', [join(fifoDir, 'summary.json')]);
    for (const args of [
      ['check', fifoDir, '--budgets', 'native-speed'],
      ['compare', fifoDir, passing],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain("summary.json: not a regular file: a run's results are a file");
    }
  }, 20_000);

  it('one run given twice (the same path, a copy, its trace) is refused: its samples would pool twice (exit 2)', async () => {
    const copy = join(dir, 'copy-of-passing');
    cpSync(passing, copy, { recursive: true });
    for (const again of [passing, copy, join(passing, 'trace.jsonl'), join(passing, 'summary.json')]) {
      const result = await cli(['check', passing, other, again, '--budgets', 'native-speed']);
      expect(result.code, `${again}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain(`${again}: the same run as ${passing}`);
    }
    // Two different runs of one scenario pool as before.
    const two = await cli(['check', passing, other, '--budgets', 'native-speed']);
    expect(two.stderr).not.toContain('the same run');
    expect([0, 99]).toContain(two.code);
  });

  it('without --budgets, an input that names no budget set beside one that does is refused, never left unjudged (exit 2)', async () => {
    // A trace does not carry its scenario's budgets: judged by nothing, its verdict was the other's.
    const result = await cli(['check', passing, join(other, 'trace.jsonl')]);
    expect(result.code, result.stdout).toBe(2);
    expect(result.stderr).toContain(`${join(other, 'trace.jsonl')}: names no budget set`);
    const given = await cli(['check', passing, join(other, 'trace.jsonl'), '--budgets', 'native-speed']);
    expect(given.stderr).not.toContain('names no budget set');
  });

  it('--budgets given empty ("$UNSET" in CI) is a usage error (exit 2), never the scenario\'s own sets in its place', async () => {
    for (const value of ['', ',', ' , ']) {
      const result = await cli(['check', passing, '--budgets', value]);
      expect(result.code, `'${value}': ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain('--budgets: names no budget set');
    }
  });

  it("--junit over an input (the run's trace, its summary, a trace given) is refused (exit 2), the input left as it was", async () => {
    const runDir = join(dir, 'junit-over');
    cpSync(passing, runDir, { recursive: true });
    const before = readFileSync(join(runDir, 'trace.jsonl'), 'utf8');
    for (const [input, junit] of [
      [runDir, join(runDir, 'trace.jsonl')],
      [runDir, join(runDir, 'summary.json')],
      [join(runDir, 'trace.jsonl'), join(runDir, '.', 'trace.jsonl')],
    ] as const) {
      const result = await cli(['check', input, '--budgets', 'native-speed', '--junit', junit]);
      expect(result.code, `${junit}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain('which this command reads: writing there would replace it');
    }
    // budgets derive -o and report -o likewise.
    for (const args of [
      ['budgets', 'derive', runDir, '-o', join(runDir, 'trace.jsonl')],
      ['report', runDir, '-o', join(runDir, 'summary.json')],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain('which this command reads');
    }
    expect(readFileSync(join(runDir, 'trace.jsonl'), 'utf8')).toBe(before);
    const beside = await cli([
      'check',
      runDir,
      '--budgets',
      'native-speed',
      '--junit',
      join(runDir, 'budgets.xml'),
    ]);
    expect(beside.code, beside.stderr).toBe(0);
  });

  it('--lenient never judges a trace it skipped lines of: two runs concatenated, a failed footer before the end (exit 3)', async () => {
    const failedFooter = JSON.stringify({ ...trace.footer, reason: 'failed' });
    const concatenated = writeTrace(join(dir, 'two-runs.jsonl'), [
      trace.header,
      ...trace.body,
      failedFooter,
      trace.header.replace('"runId":"', '"runId":"second-'),
      ...trace.body,
      JSON.stringify(trace.footer),
    ]);
    const result = await cli(['check', concatenated, '--budgets', 'native-speed', '--lenient']);
    expect(result.code, result.stdout).toBe(3);
    expect(result.stderr).toMatch(
      /lines of its trace were skipped as unreadable \(--lenient; line \d+: end footer before the end/,
    );
    expect(result.stdout).not.toContain('hold');
  });

  it('property: two runs joined in the trace.jsonl beside a summary that matches its first and last lines are never judged: check, compare and report exit 2', async () => {
    const second = readTrace(other);
    const reorderedHeader = (() => {
      const { kind, ...rest } = JSON.parse(second.header) as Record<string, unknown>;
      return JSON.stringify({ ...rest, kind });
    })();
    // What a second run brings into the file, at any line of the first run's body.
    const joined = fc.constantFrom<[string, string[]]>(
      ['its whole trace again', [trace.header, ...trace.body, JSON.stringify(trace.footer)]],
      ['another run whole', [second.header, ...second.body, JSON.stringify(second.footer)]],
      ['another run without its footer', [second.header, ...second.body]],
      ["another run's records", second.body.slice(0, 40)],
      ["another run's header, its keys reordered", [reorderedHeader, ...second.body.slice(0, 3)]],
      ['a footer', [JSON.stringify(trace.footer)]],
      ['one record', [second.body[0]!]],
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: trace.body.length }),
        joined,
        fc.boolean(),
        async (at, [what, lines], gzip) => {
          const runDir = join(dir, `joined-${n++}`);
          cpSync(passing, runDir, { recursive: true });
          const text = `${[trace.header, ...trace.body.slice(0, at), ...lines, ...trace.body.slice(at), JSON.stringify(trace.footer)].join('\n')}\n`;
          writeFileSync(join(runDir, 'trace.jsonl'), gzip ? gzipSync(text) : text);
          for (const args of [
            ['check', runDir, '--budgets', 'native-speed'],
            ['compare', runDir, other],
            ['report', runDir, '-o', join(runDir, 'report.html')],
          ]) {
            const result = await cli(args);
            expect(
              result.code,
              `${what} at ${at}${gzip ? ' (gzip)' : ''}: ${args[0]}: ${result.stdout}${result.stderr}`,
            ).toBe(2);
            expect(result.stderr).toContain("a run's results are judged only beside its own trace");
          }
        },
      ),
      { numRuns: 14 },
    );
  }, 120_000);

  it('two runs joined in a trace judged by itself: exit 2 naming the footer and the second header', async () => {
    const file = join(dir, 'joined-itself.jsonl');
    const whole = readFileSync(join(passing, 'trace.jsonl'));
    writeFileSync(file, Buffer.concat([whole, readFileSync(join(other, 'trace.jsonl'))]));
    const footerLine = trace.body.length + 2;
    const result = await cli(['check', file, '--budgets', 'native-speed']);
    expect(result.code, result.stdout).toBe(2);
    expect(result.stderr).toContain(
      `${file}:${footerLine}: end footer before the end of the file: a second run header follows it (two runs joined in one file`,
    );
  });

  it('a trace that starts with a UTF-8 byte-order mark: exit 2 saying so, by trace, by directory and in analyze', async () => {
    const runDir = join(dir, 'bom');
    cpSync(passing, runDir, { recursive: true });
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    writeFileSync(
      join(runDir, 'trace.jsonl'),
      Buffer.concat([bom, readFileSync(join(passing, 'trace.jsonl'))]),
    );
    for (const args of [
      ['check', join(runDir, 'trace.jsonl'), '--budgets', 'native-speed'],
      ['check', join(runDir, 'trace.jsonl'), '--budgets', 'native-speed', '--lenient'],
      ['check', runDir, '--budgets', 'native-speed'],
      ['analyze', join(runDir, 'trace.jsonl')],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain(
        `${join(runDir, 'trace.jsonl')}:1: the file starts with a UTF-8 byte-order mark (bytes EF BB BF)`,
      );
    }
  });

  it('property: whatever line a --lenient read skips, and wherever a run-failing event sits, check exits 3', async () => {
    const badLine = fc.constantFrom(
      '{"kind":"span"',
      'not json',
      '{"kind":"metric","t":0}',
      JSON.stringify({ ...trace.footer, reason: 'failed' }),
      trace.header,
      '{"kind":"event","name":"x","t":-1}',
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: trace.body.length }),
        fc.oneof(
          badLine.map((line) => ({ line })),
          fc.constantFrom(...RUN_FAILING_EVENTS).map((event) => ({ event })),
        ),
        async (at, edit) => {
          const lines =
            'event' in edit
              ? withEvent(trace, edit.event, at)
              : [
                  trace.header,
                  ...trace.body.slice(0, at),
                  edit.line,
                  ...trace.body.slice(at),
                  JSON.stringify(trace.footer),
                ];
          const path = writeTrace(join(dir, `property-${n++}.jsonl`), lines);
          const result = await cli(['check', path, '--budgets', 'native-speed', '--lenient']);
          expect(result.code, `${JSON.stringify(edit)} at ${at}: ${result.stderr}`).toBe(3);
        },
      ),
      { numRuns: 12 },
    );
  }, 120_000);
});

describe('compare refuses to compare nothing', () => {
  const a = join(dir, 'cmp-a');
  const b = join(dir, 'cmp-b');
  beforeAll(async () => {
    await executeRun(planRun('S2-T1-1', [], join(a, 'r1')));
    await executeRun(planRun('S1-T1-1', [], join(a, 'r2')));
    await executeRun(planRun('S2-T1-5', [], join(b, 'r1')));
    await executeRun(planRun('S1-T1-5', [], join(b, 'r2')));
  }, 120_000);

  it('sides with no cell in common, or a side with no run: exit 2, never "no change" with exit 0', async () => {
    const disjoint = await cli(['compare', a, b]);
    expect(disjoint.code, disjoint.stdout).toBe(2);
    expect(disjoint.stderr).toContain('A and B have no cell or scenario in common');
    const empty = join(dir, 'no-runs', 'x');
    mkdirSync(empty, { recursive: true });
    writeFileSync(join(empty, 'summary.json'), '{"kind":"something-else"}');
    const noRuns = await cli(['compare', a, join(dir, 'no-runs')]);
    expect(noRuns.code, noRuns.stdout).toBe(2);
    expect(noRuns.stderr).toContain(`${join(empty, 'summary.json')}: not a fleetbench run summary`);
  });

  it('runs nested at any depth to 16 directories are found by compare and report, never left out; deeper, refused (exit 2)', async () => {
    const deep = join(dir, 'deep-side');
    const nested = join(deep, 'a', 'b', 'c', 'd', 'e', 'f', 'r2');
    cpSync(join(a, 'r1'), join(deep, 'r1'), { recursive: true });
    cpSync(join(a, 'r2'), nested, { recursive: true });
    const compared = await cli(['compare', a, deep, '--json']);
    expect(compared.code, compared.stderr).toBe(0);
    const units = (JSON.parse(compared.stdout) as { units: Array<{ id: string }> }).units.map((u) => u.id);
    expect(units.sort()).toEqual(['S1-T1-1', 'S2-T1-1']);
    const report = await cli(['report', deep, '-o', join(dir, 'deep-side.html')]);
    expect(report.stdout).toContain('2 units, 2 runs');
    const tooDeep = join(dir, 'too-deep-side');
    const path = join(tooDeep, ...Array.from({ length: 17 }, (_, i) => `d${i + 1}`));
    cpSync(join(a, 'r1'), join(tooDeep, 'r1'), { recursive: true });
    cpSync(join(a, 'r2'), join(path, 'r2'), { recursive: true });
    for (const args of [
      ['compare', a, tooDeep],
      ['report', tooDeep, '-o', join(dir, 'too-deep.html')],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args[0]}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain(
        `${join(tooDeep, ...Array.from({ length: 17 }, (_, i) => `d${i + 1}`))}: nested more than 16 directories below ${tooDeep}`,
      );
    }
  });

  it('--min-change Infinity (or 1e400), which would call every regression negligible, is bad input (exit 2)', async () => {
    for (const value of ['Infinity', '1e400', '-1', 'NaN']) {
      const result = await cli(['compare', a, a, '--min-change', value]);
      expect(result.code, `${value}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toContain(`--min-change: expected a percentage, got '${value}'`);
    }
  });

  it('a run hidden from a side by editing its summary.json kind is refused, never left out of the side (exit 2)', async () => {
    const side = join(dir, 'hidden');
    cpSync(b, side, { recursive: true });
    const file = join(side, 'r2', 'summary.json');
    const summary = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...summary, kind: 'fleetbench-runs' }));
    const result = await cli(['compare', b, side]);
    expect(result.code, result.stdout).toBe(2);
    expect(result.stderr).toContain(`${file}: not a fleetbench run summary (kind is "fleetbench-runs")`);
  });

  it('a side that is neither a file nor a directory (/dev/null) is bad input (exit 2), never an internal error', async () => {
    for (const args of [
      ['compare', '/dev/null', a],
      ['report', '/dev/null'],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain('/dev/null: not readable as JSON');
    }
  });

  it('a run’s trace.jsonl given as a side or to report says it is a trace and what to give instead (it said only "not readable as JSON")', async () => {
    const trace = join(a, 'r1', 'trace.jsonl');
    for (const args of [
      ['compare', trace, a],
      ['report', trace],
    ]) {
      const result = await cli(args);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
      expect(result.stderr).toContain(
        `${trace}: a trace (JSON Lines), not a result: give its run directory (${join(a, 'r1')})`,
      );
      expect(result.stderr).toContain(`fleetbench analyze ${trace} --json`);
    }
  });

  it('a side holding one run twice (a copy of its directory) is refused: exit 2, never a verdict from copies', async () => {
    const copies = join(dir, 'copies');
    cpSync(join(a, 'r1'), join(copies, 'x1'), { recursive: true });
    cpSync(join(a, 'r1'), join(copies, 'x2'), { recursive: true });
    const result = await cli(['compare', copies, join(b, 'r1')]);
    expect(result.code, result.stdout).toBe(2);
    expect(result.stderr).toMatch(/side A holds one run twice \(run "S2-T1-1-seed1-[^"]+": .*x1 and .*x2\)/);
  });
});

describe("a matrix is judged beside its runs' traces", () => {
  const matrix = join(dir, 'matrix-traces');
  beforeAll(async () => {
    const made = await cli(['matrix', '--cells', 'S2-T1-1', '--repeat', '2', '--out', matrix]);
    expect(made.code, made.stderr).toBe(0);
  }, 120_000);

  it("a run's trace edited to end failed, or swapped for another run's, after the matrix: refused (exit 3, exit 2)", async () => {
    const whole = await cli(['check', matrix, '--budgets', 'track-b']);
    expect(whole.code, whole.stdout).toBe(0);
    const baseline = JSON.parse(readFileSync(join(matrix, 'baseline.json'), 'utf8')) as {
      units: Array<{ runs: Array<{ dir: string }> }>;
    };
    const [first, second] = baseline.units[0]!.runs.map((r) => join(matrix, r.dir, 'trace.jsonl'));
    const original = readFileSync(first!, 'utf8');
    const lines = original.trimEnd().split('\n');
    const footer = JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    writeFileSync(
      first!,
      `${[...lines.slice(0, -1), JSON.stringify({ ...footer, reason: 'failed' })].join('\n')}\n`,
    );
    const failed = await cli(['check', matrix, '--budgets', 'track-b']);
    expect(failed.code, failed.stdout).toBe(3);
    expect(failed.stderr).toContain('the trace ends with reason: failed');
    cpSync(second!, first!);
    const swapped = await cli(['check', matrix, '--budgets', 'track-b']);
    expect(swapped.code, swapped.stdout).toBe(2);
    expect(swapped.stderr).toContain("a run's results are judged only beside its own trace");
    writeFileSync(first!, original);
  });
});

describe('matrix --check never passes a run that failed', () => {
  it('a cell whose run failed (its target lost at a restart): exit 3 with --check, named; exit 0 without (the matrix measures)', async () => {
    const lost = fileURLToPath(new URL('./fixtures/lost-target.ts', import.meta.url));
    const file = join(dir, 'lost.yaml');
    writeFileSync(
      file,
      `name: lost\ntarget: module:${lost}\nduration: 5m\nsessions:\n  count: 2\nfaults:\n  - type: restart\n    at: 1m\nbudgets: [track-b]\n`,
    );
    const gate = await cli(['matrix', '--cells', file, '--check', '--out', join(dir, 'matrix-lost')]);
    expect(gate.code, gate.stdout).toBe(3);
    expect(gate.stderr).toContain('lost: a run did not complete: not judged, so --check does not pass');
    const measure = await cli(['matrix', '--cells', file, '--out', join(dir, 'matrix-lost-2')]);
    expect(measure.code, measure.stderr).toBe(0);
  }, 60_000);
});

describe('compare never calls a judged metric unchanged that one side cannot measure', () => {
  const before = join(dir, 'before');
  const after = join(dir, 'after');
  beforeAll(async () => {
    // B's runs end before a steady window: their headroom rows are not judged (no value).
    for (let seed = 1; seed <= 5; seed++) {
      await executeRun(planRun('S2-T1-1', [`seed=${seed}`], join(before, `r${seed}`)));
      await executeRun(planRun('S2-T1-1', [`seed=${seed + 10}`, 'duration=20s'], join(after, `r${seed}`)));
    }
  }, 180_000);

  it('a headroom measured in A only: inconclusive (exit 4), naming it, never "no judged metric got worse" (exit 0)', async () => {
    const result = await cli(['compare', before, after]);
    expect(result.code, result.stdout).toBe(4);
    expect(result.stdout).toMatch(
      /judged metrics with a value on one side only, not compared: S2-T1-1: REST core headroom at 50 sessions \(only in A\)/,
    );
    expect(result.stdout).toContain('verdict: inconclusive: 2 judged metrics have a value on one side only');
    expect(result.stdout).not.toContain('no judged metric got worse');
  });
});

describe('a matrix that says it is whole holds every run once', () => {
  const matrix = join(dir, 'matrix');
  let baseline: { units: Array<{ runs: unknown[] }> } & Record<string, unknown>;
  beforeAll(async () => {
    const made = await cli(['matrix', '--cells', 'S2-T1-1', '--repeat', '2', '--out', matrix]);
    expect(made.code, made.stderr).toBe(0);
    baseline = JSON.parse(readFileSync(join(matrix, 'baseline.json'), 'utf8')) as typeof baseline;
  }, 120_000);

  it('a run removed, a run copied over another, or no unit: refused by check and compare (exit 2), never judged from what is left', async () => {
    const whole = await cli(['check', matrix, '--budgets', 'track-b']);
    expect(whole.code, whole.stdout).toBe(0);
    const edits: Record<string, (runs: unknown[]) => unknown[] | null> = {
      'a run removed': (runs) => runs.slice(0, 1),
      'a run copied over another': (runs) => [runs[0], runs[0]],
      'no unit': () => null,
    };
    for (const [what, edit] of Object.entries(edits)) {
      const edited = join(dir, `matrix-${what.replaceAll(' ', '-')}`);
      cpSync(matrix, edited, { recursive: true });
      const runs = edit(baseline.units[0]!.runs);
      const units = runs === null ? [] : [{ ...baseline.units[0], runs }];
      writeFileSync(join(edited, 'baseline.json'), JSON.stringify({ ...baseline, units }));
      for (const args of [
        ['check', edited, '--budgets', 'track-b'],
        ['compare', edited, matrix],
      ]) {
        const result = await cli(args);
        expect(result.code, `${what}: ${args.join(' ')}: ${result.stdout}`).toBe(2);
        expect(result.stderr).toMatch(
          /yet the matrix says it is whole \(partial: false\): the file was edited/,
        );
      }
    }
  });
});
