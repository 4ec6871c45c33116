import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { InputFileError } from '../src/base/errors.ts';
import { type ApiRecord, readTrace, TraceWriter, traceJsonSchema } from '../src/trace/index.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();

const header = {
  runId: 'run-1',
  tool: { name: 'fleetbench', version: '0.0.0' },
  clock: 'virtual' as const,
  seed: 1,
  scenario: { name: 'unit', hash: null },
  epochMs: Date.UTC(2026, 0, 1),
  startedAt: '2026-01-01T00:00:00.000Z',
};

function api(t: number, extra: Partial<ApiRecord> = {}): ApiRecord {
  return {
    kind: 'api',
    t,
    dur: 50,
    service: 'github',
    protocol: 'rest',
    method: 'GET',
    route: '/repos/{owner}/{repo}/pulls',
    status: 200,
    conditional: false,
    notModified: false,
    resource: 'core',
    cost: 1,
    secondaryCost: 1,
    session: 's1',
    source: 'lifecycle',
    ...extra,
  };
}

describe('trace writer and reader', () => {
  it('round-trips every record kind with header and footer counts', async () => {
    const path = join(dir, 'round.jsonl');
    const writer = new TraceWriter(path, header, { flushIntervalMs: 0 });
    writer.write(api(0));
    writer.write(api(10, { status: 304, notModified: true, conditional: true, cost: 0 }));
    writer.write({
      kind: 'span',
      name: 'agent.boot',
      t: 5,
      dur: 1_200,
      session: 's1',
      labels: { adapter: 'codex' },
    });
    writer.write({ kind: 'event', name: 'steady.start', t: 60_000 });
    writer.write({ kind: 'gauge', name: 'sessions', t: 1_000, value: 3, labels: { state: 'awake' } });
    writer.close();
    const { records, stats } = await readTrace(path);
    expect(records.map((r) => r.kind)).toEqual(['api', 'api', 'span', 'event', 'gauge']);
    expect(stats.header?.runId).toBe('run-1');
    expect(stats.footer).toMatchObject({
      reason: 'completed',
      counts: { api: 2, span: 1, event: 1, gauge: 1 },
      t: 60_000,
    });
    // Defaults are applied on read: a span written without an outcome reads as ok.
    expect(records[2]).toMatchObject({ kind: 'span', outcome: 'ok' });
  });

  it('reads gzip input', async () => {
    const plain = join(dir, 'plain.jsonl');
    const writer = new TraceWriter(plain, header, { flushIntervalMs: 0 });
    for (let i = 0; i < 100; i++) writer.write(api(i));
    writer.close();
    const gz = join(dir, 'plain.jsonl.gz');
    writeFileSync(gz, gzipSync(readFileSync(plain)));
    const { records } = await readTrace(gz);
    expect(records).toHaveLength(100);
  });

  const bad: Array<[string, (lines: string[]) => string, RegExp]> = [
    ['malformed JSON', (l) => [l[0], '{"kind":"api",', l[2]].join('\n'), /bad\.jsonl:2: malformed JSON/],
    [
      'a wrong field type',
      (l) => [l[0], l[1]!.replace('"status":200', '"status":"ok"'), l[2]].join('\n'),
      /:2: api record: status: expected/,
    ],
    [
      'an unknown record kind',
      (l) => [l[0], '{"kind":"metric","t":1}', l[2]].join('\n'),
      /:2: unknown record kind "metric"/,
    ],
    ['a missing header', (l) => [l[1], l[2]].join('\n'), /:1: expected a 'run' header/],
    ['binary garbage', () => '\u0000\u0001\u0002\u00ff\u0003', /:1: not JSON \(binary data\?\)/],
    ['an empty file', () => '', /bad\.jsonl: empty trace/],
    ['a truncated file', (l) => [l[0], l[1]].join('\n'), /bad\.jsonl: truncated: no end footer/],
    [
      'an end footer before the last record',
      (l) => [l[0], l[2], l[1], l[2]].join('\n'),
      /bad\.jsonl:2: end footer before the end of the file/,
    ],
    [
      'footer counts that disagree',
      (l) => [l[0], l[2]].join('\n'),
      /footer counts 1 api records, the file has 0/,
    ],
  ];

  it.each(bad)('rejects %s with file:line and reason', async (_name, build, expected) => {
    const good = join(dir, 'good.jsonl');
    const writer = new TraceWriter(good, header, { flushIntervalMs: 0 });
    writer.write(api(0));
    writer.close();
    const lines = readFileSync(good, 'utf8').trim().split('\n');
    const path = join(dir, 'bad.jsonl');
    writeFileSync(path, build(lines));
    const error = await readTrace(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputFileError);
    expect((error as Error).message).toMatch(expected);
  });

  it('in lenient mode skips bad lines, counts them and accepts a missing footer', async () => {
    const path = join(dir, 'lenient.jsonl');
    const writer = new TraceWriter(path, header, { flushIntervalMs: 0 });
    writer.write(api(0));
    writer.flush();
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, `${text}not json\n${JSON.stringify(api(5))}\n`);
    const { records, stats } = await readTrace(path, { lenient: true });
    expect(records).toHaveLength(2);
    expect(stats.skipped).toBe(1);
    expect(stats.skippedReasons[0]).toMatch(/line 3: malformed JSON/);
    expect(stats.truncated).toBe(true);
    writer.close();
  });

  it('a killed writer leaves every flushed line readable; the exit hook writes the footer', async () => {
    const path = join(dir, 'killed.jsonl');
    const script = `
      import { TraceWriter } from ${JSON.stringify(new URL('../src/trace/writer.ts', import.meta.url).href)};
      const w = new TraceWriter(${JSON.stringify(path)}, ${JSON.stringify(header)}, { flushIntervalMs: 20 });
      for (let i = 0; i < 1000; i++) w.write({ kind: 'event', name: 'tick', t: i });
      process.on('SIGTERM', () => process.exit(143));
      setInterval(() => {}, 1000);
      process.stdout.write('ready\\n');
    `;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.kill('SIGTERM');
    const exitCode = await new Promise((resolve) => child.on('close', resolve));
    expect(exitCode).toBe(143);
    const { records, stats } = await readTrace(path);
    expect(records).toHaveLength(1000);
    expect(stats.footer?.reason).toBe('interrupted');
  });

  it('publishes a JSON Schema generated from the validating schema', () => {
    const schema = traceJsonSchema();
    expect(schema.$schema).toContain('2020-12');
    const text = JSON.stringify(schema);
    for (const kind of ['run', 'api', 'span', 'event', 'gauge', 'end'])
      expect(text).toContain(`"const":"${kind}"`);
    const committed = JSON.parse(readFileSync(new URL('../docs/trace.schema.json', import.meta.url), 'utf8'));
    expect(committed).toEqual(schema);
  });
});
