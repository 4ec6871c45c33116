/**
 * `fleetbench provider serve`, `targets install|check agents` and `agents try` as users run them:
 * the serve command as a subprocess (a real client, a fault from the flag, SIGINT writing the
 * trace's footer), and the refusals of bad input, each naming what is wrong. None needs the
 * agent CLIs installed (test/agents-real.test.ts runs them).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTrace } from '../src/trace/index.ts';
import { cli } from './helpers/cli.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';

const dir = scratchDir();
afterAll(stopAll);

describe('fleetbench provider serve', () => {
  it('serves the APIs with the scripts file, the fault and the limit given, and SIGINT closes the trace', async () => {
    const scripts = join(dir, 'scripts.yaml');
    writeFileSync(
      scripts,
      'default: greet\nscripts:\n  greet:\n    turns:\n      - final: Good morning from a scripts file.\n',
    );
    const trace = join(dir, 'provider.jsonl');
    const server = await startCliServer<{ url: string; adminToken: string; scripts: string[] }>([
      'provider',
      'serve',
      '--scripts',
      scripts,
      '--trace',
      trace,
      '--limit',
      'rpm=100',
      '--fault',
      'overloaded@count=1',
    ]);
    const { info } = server;
    try {
      expect(info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(info.scripts).toContain('greet');
      const ask = () =>
        fetch(`${info.url}/v1/messages`, {
          method: 'POST',
          headers: {
            'x-api-key': 'k',
            'anthropic-version': '2023-06-01',
            'user-agent': 'claude-cli/2.1.328 (external, sdk-cli)',
          },
          body: JSON.stringify({
            model: 'claude-sonnet-4-5',
            max_tokens: 50,
            messages: [{ role: 'user', content: 'hi' }],
          }),
        });
      const overloaded = await ask();
      expect(overloaded.status).toBe(529);
      const answer = await ask();
      expect(answer.status).toBe(200);
      expect(answer.headers.get('anthropic-ratelimit-requests-limit')).toBe('100');
      expect(((await answer.json()) as { content: Array<{ text: string }> }).content[0]?.text).toBe(
        'Good morning from a scripts file.',
      );
      const stats = await fetch(`${info.url}/_fleetbench/stats`, {
        headers: { authorization: `Bearer ${info.adminToken}` },
      });
      expect(await stats.json()).toMatchObject({
        requests: 2,
        byStatus: { '200': 1, '529': 1 },
        byCli: { claude: 2 },
      });
      server.process.kill('SIGINT');
      expect(await server.exited).toBe(0);
    } finally {
      await server.stop();
    }
    const { records, stats } = await readTrace(trace);
    expect(stats.header).toMatchObject({ clock: 'real', target: 'provider-emulator' });
    expect(stats.footer).toMatchObject({ reason: 'completed', counts: { span: 2 } });
    expect(
      records.map((record) =>
        record.kind === 'span' ? [record.name, record.labels?.status, record.data?.attempt] : record.kind,
      ),
    ).toEqual([
      // The same request again after an overload: its retry, though the client says nothing.
      ['provider.request', '529', 1],
      ['provider.request', '200', 2],
    ]);
  });

  it('--model serves a model the table lacks with the limits given; a bad one is refused naming the flag', async () => {
    const server = await startCliServer<{ url: string; models: string[] }>([
      'provider',
      'serve',
      '--model',
      'gpt-7-preview=2000000/200000',
      '--model',
      'ft:gpt-4o-mini-2024-07-18:acme-corp::9xKq2bLm',
    ]);
    try {
      expect(server.info.models).toEqual(['gpt-7-preview', 'ft:gpt-4o-mini-2024-07-18:acme-corp::9xKq2bLm']);
      const ask = (model: string, maxTokens: number) =>
        fetch(`${server.info.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: 'Bearer k' },
          body: JSON.stringify({ model, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] }),
        });
      expect((await ask('gpt-7-preview', 200_000)).status).toBe(200);
      expect((await ask('gpt-7-preview', 200_001)).status).toBe(400);
      expect((await ask('ft:gpt-4o-mini-2024-07-18:acme-corp::9xKq2bLm', 16_385)).status).toBe(400);
      expect((await ask('gpt-8', 10)).status).toBe(404);
    } finally {
      await server.stop();
    }
    for (const [spec, words] of [
      ['gpt-7=0', '--model gpt-7=0: WINDOW: expected a whole number of tokens from 1 to 10000000'],
      [
        'gpt-7=1000/2000',
        '--model gpt-7=1000/2000: CAP: expected a whole number of tokens from 1 to the window, 1000',
      ],
      ['gpt-4o', '--model gpt-4o: gpt-4o is already a model of the table'],
      ['my model', '--model my model: expected NAME[=WINDOW[/CAP]]'],
    ] as const) {
      const refused = await cli(['provider', 'serve', '--model', spec]);
      expect(refused.code, spec).toBe(2);
      expect(refused.stderr).toContain(words);
    }
    // fleetbench world takes the same flag, refused before any world is made.
    const world = await cli([
      'world',
      '--no-agents',
      '--out',
      join(dir, 'world-model'),
      '--model',
      'gpt-7=0',
      '--',
      'true',
    ]);
    expect(world.code).toBe(2);
    expect(world.stderr).toContain('--model gpt-7=0: WINDOW: expected a whole number of tokens');
    expect(existsSync(join(dir, 'world-model', 'trace.jsonl'))).toBe(false);
  });

  it('refuses a bad scripts file, flag or fault naming what is wrong', async () => {
    const bad = join(dir, 'bad-scripts.yaml');
    writeFileSync(bad, 'scripts:\n  one:\n    turns:\n      - commands: [ls]\n        fianl: typo\n');
    const file = await cli(['provider', 'serve', '--scripts', bad]);
    expect(file.code).toBe(2);
    expect(file.stderr).toMatch(
      new RegExp(`${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:4: scripts\\.one\\.turns\\[0\\]`),
    );
    const unknownDefault = join(dir, 'default.yaml');
    writeFileSync(unknownDefault, 'default: nope\nscripts: {}\n');
    expect((await cli(['provider', 'serve', '--scripts', unknownDefault])).stderr).toContain(
      "no script named 'nope'",
    );
    expect((await cli(['provider', 'serve', '--latency', 'glacial'])).stderr).toContain(
      '--latency glacial: expected none, realistic, fast',
    );
    expect((await cli(['provider', 'serve', '--limit', 'rpm=many'])).stderr).toContain(
      '--limit rpm=many: expected KEY=N',
    );
    expect((await cli(['provider', 'serve', '--fault', 'meltdown'])).stderr).toContain(
      '--fault meltdown: kind:',
    );
    expect((await cli(['provider', 'serve', '--ttft', '500:100'])).stderr).toContain('P95 >= MEDIAN');
  });
});

describe('fleetbench targets install|check agents, agents try: refusals', () => {
  it('never installs over a directory that holds something else, and leaves it as it was', async () => {
    const target = join(dir, 'home-like');
    mkdirSync(target);
    writeFileSync(join(target, 'notes.txt'), 'mine');
    const res = await cli(['targets', 'install', 'agents', '--dir', target]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("is not empty and holds no install of fleetbench's");
    expect(readFileSync(join(target, 'notes.txt'), 'utf8')).toBe('mine');
    expect(existsSync(join(target, 'package.json'))).toBe(false);
  });

  it('says what is missing from an install and how to get it', async () => {
    const empty = join(dir, 'no-agents');
    mkdirSync(empty);
    const res = await cli(['targets', 'check', `agents:${empty}`]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/Codex CLI \(@openai\/codex\) is missing from .*no-agents/);
    expect(res.stderr).toContain('fleetbench targets install agents');
  });

  it('refuses an unknown CLI, script or deadline before starting anything', async () => {
    expect((await cli(['agents', 'try', 'cursor'])).stderr).toContain(
      "unknown CLI 'cursor' (have: codex, claude, opencode)",
    );
    expect((await cli(['agents', 'try', '--script', 'nope'])).stderr).toContain(
      '--script nope: expected hello, tool-call, coding',
    );
    expect((await cli(['agents', 'try', '--deadline', '0'])).code).toBe(2);
  });
});
