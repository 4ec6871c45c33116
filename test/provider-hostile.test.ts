/**
 * `provider serve` under hostile input (issue 49's provider cases), each through the real server:
 * a pre-token that made tokenisation quadratic, a thousand streams of a 32,000-token reply, a
 * flood from `hey -c 1000`, Ctrl-C while streams are in flight, made-up keys, versions and window
 * ids by the thousand, and flags whose numbers cannot play within a run. Plus the load model:
 * first tokens later as streams queue past the configured cap, the queue on /metrics.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { prose } from '../bench/prose.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { VirtualClock } from '../src/clock/virtual.ts';
import {
  LATENCY_PROFILES,
  ProviderEmulator,
  type ProviderEmulatorOptions,
  requestInProcess,
  startProviderServer,
} from '../src/provider/index.ts';
import { readTrace } from '../src/trace/index.ts';
import { MemorySink } from '../src/trace/writer.ts';
import { cli } from './helpers/cli.ts';
import { newConnectionWaitsDuring, probesOver, slowestAnswerDuring } from './helpers/probe.ts';
import { startCliServer, stopAll } from './helpers/serve.ts';
import { scratchDir } from './helpers/tmp.ts';
import { promtoolCheck, systemTool } from './helpers/tools.ts';
import { waitUntil } from './helpers/wait.ts';

const dir = scratchDir();
const FLOOD = fileURLToPath(new URL('./helpers/stream-flood.mjs', import.meta.url));
const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});
afterAll(stopAll);

async function serve(options: Partial<ProviderEmulatorOptions> = {}) {
  const trace = new MemorySink();
  const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(5), trace, ...options });
  const server = await startProviderServer({ emulator });
  servers.push(server);
  return { emulator, trace, url: server.url };
}

const messages = (
  url: string,
  content: string,
  extra: Record<string, unknown> = {},
  key = 'k',
  signal?: AbortSignal,
) =>
  fetch(`${url}/v1/messages`, {
    method: 'POST',
    ...(signal ? { signal } : {}),
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', ...((extra.headers as object) ?? {}) },
    body: JSON.stringify({
      model: 'claude-sonnet-4-5',
      max_tokens: 32_000,
      messages: [{ role: 'user', content }],
      ...extra,
      headers: undefined,
    }),
  });

describe('tokenisation bounded per request', () => {
  it('128 KiB of letters without a space, or 32,768 Chinese characters, is estimated at once and said so, while a probe is answered', async () => {
    const { url, trace } = await serve();
    const letters = 'a'.repeat(131_072);
    const chinese = Array.from({ length: 32_768 }, (_, i) =>
      String.fromCharCode(0x4e00 + ((i * 7919) % 20_000)),
    ).join('');
    const slowest = await slowestAnswerDuring(
      `${url}/v1/models`,
      async () => {
        for (const text of [letters, chinese]) expect((await messages(url, text)).status).toBe(200);
      },
      { headers: { authorization: 'Bearer probe' } },
    );
    expect(slowest).toBeLessThan(2_000);
    const spans = trace.records.filter(
      (record) => record.kind === 'span' && record.data?.tokensIn !== undefined,
    );
    expect(spans.map((span) => span.kind === 'span' && span.data?.tokensEstimated)).toEqual([true, true]);
    // Each request's own time (arrival to answer, no latency profile): far from the 21.7 s and 5.9 s.
    for (const span of spans) expect(span.kind === 'span' && span.dur).toBeLessThan(1_000);
  });
});

describe('a large first prompt to a fresh provider serve', () => {
  it('533 KiB of new English on a cold tokenizer is counted in steps: a probe on a held connection never waits half the request, and the count is the in-process one', async () => {
    const server = await startCliServer<{ url: string }>(['provider', 'serve']);
    try {
      const content = prose(533 * 1024);
      let requestMs = 0;
      let answer: { usage: { input_tokens: number } } | undefined;
      // A GET every 5 ms on the connection the probe keeps (opened before the request): before
      // plans ran in steps, the count held the loop for most of the request (95-300 ms cold).
      const slowest = await slowestAnswerDuring(
        `${server.info.url}/v1/models`,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 100));
          const started = performance.now();
          const response = await messages(server.info.url, content, { max_tokens: 100 });
          answer = (await response.json()) as typeof answer;
          requestMs = performance.now() - started;
          expect(response.status).toBe(200);
        },
        { headers: { authorization: 'Bearer probe' } },
        { intervalMs: 5, serverPid: server.process.pid },
      );
      expect(slowest).toBeLessThan(requestMs / 2);
      const inProcess = await requestInProcess(
        new ProviderEmulator({ clock: new VirtualClock(), rng: new Rng(5) }),
        {
          method: 'POST',
          path: '/v1/messages',
          headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({
            model: 'claude-sonnet-4-5',
            max_tokens: 100,
            messages: [{ role: 'user', content }],
          }),
        },
      );
      expect(answer?.usage.input_tokens).toBe(JSON.parse(inProcess.body).usage.input_tokens);
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('property: counts planned in steps by the server are the in-process ones, request after request of one session (the memo and the work bound across the steps)', async () => {
    const { url } = await serve();
    const inProcess = new ProviderEmulator({ clock: new VirtualClock(), rng: new Rng(5) });
    let session = 0;
    await fc.assert(
      fc.asyncProperty(
        // Each request: earlier prompts resent (memo hits) and a new one of 20-400 KiB, some over
        // the exact-tokenisation bound, some with pieces longer than 128 characters.
        fc.array(fc.record({ kib: fc.integer({ min: 20, max: 400 }), seed: fc.nat(), long: fc.boolean() }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (turns) => {
          session += 1;
          const history: Array<{ role: string; content: string }> = [];
          for (const turn of turns) {
            const text = prose(turn.kib * 1024, turn.seed);
            history.push({ role: 'user', content: turn.long ? `${text} ${'x'.repeat(300)}` : text });
            const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: history });
            const headers = { 'x-api-key': `session-${session}`, 'anthropic-version': '2023-06-01' };
            const served = await fetch(`${url}/v1/messages`, { method: 'POST', headers, body });
            const local = await requestInProcess(inProcess, {
              method: 'POST',
              path: '/v1/messages',
              headers,
              body,
            });
            // A 200's usage, or a 400's message naming the count (a history over the window).
            const said = (status: number, text: string) =>
              status === 200 ? JSON.parse(text).usage : JSON.parse(text).error.message;
            expect(said(served.status, await served.text())).toEqual(said(local.status, local.body));
            history.push({ role: 'assistant', content: 'ok' });
          }
        },
      ),
      { numRuns: 5 },
    );
  }, 120_000);
});

describe('a 15 MiB body to a fresh provider serve', () => {
  it('15 MiB of small objects in a field the emulator does not read: a probe on a held connection is answered throughout, and the main thread does not build them (its CPU time, not the wall clock)', async (context) => {
    const server = await startCliServer<{ url: string }>(['provider', 'serve']);
    try {
      const pid = server.process.pid as number;
      // The main thread's CPU time (its task's utime + stime, in ticks of 10 ms): what a busy
      // machine does not inflate, unlike the wall clock.
      const stat = `/proc/${pid}/task/${pid}/stat`;
      let ticks: () => number;
      try {
        readFileSync(stat);
        ticks = () => {
          const fields = readFileSync(stat, 'utf8').split(') ')[1]?.split(' ') ?? [];
          return Number(fields[11]) + Number(fields[12]);
        };
      } catch {
        context.skip('no /proc/PID/task (Linux only)');
        return;
      }
      const item = '{"id":12345,"ok":true,"tags":["a","b"]},';
      const items = item.repeat(Math.floor((15 * 1024 * 1024) / item.length) - 1);
      const body = `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"Hello"}],"extra":[${items}null]}`;
      let mainThreadMs = 0;
      const slowest = await slowestAnswerDuring(
        `${server.info.url}/v1/models`,
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 100));
          const before = ticks();
          const response = await fetch(`${server.info.url}/v1/messages/count_tokens`, {
            method: 'POST',
            headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
            body,
          });
          expect(response.status).toBe(200);
          expect(await response.json()).toEqual({ input_tokens: expect.any(Number) });
          mainThreadMs = (ticks() - before) * 10;
        },
        { headers: { authorization: 'Bearer probe' } },
        // Every 20 ms: each probe costs the main thread too, and the request is longer on a busy machine.
        { intervalMs: 20, serverPid: pid },
      );
      // The bound for every probe, whatever the load.
      expect(slowest).toBeLessThan(2_000);
      // Reading the body off the socket, starting the worker, planning a one-word prompt and
      // answering the probes: 120-160 ms at load 5-10. When the worker handed the parsed body
      // back whole, rebuilding its 380,000 objects made it 560-680 ms.
      expect(mainThreadMs).toBeLessThan(300);
    } finally {
      await server.stop();
    }
  }, 60_000);
});

describe('replies and state bounded', () => {
  it('a scripts file with finalTokens 32000 and 1,000 concurrent streams: far from GBs, and another client answered within 2 s', async () => {
    const file = join(dir, 'long.yaml');
    writeFileSync(
      file,
      'default: long\nscripts:\n  long:\n    turns:\n      - final: Done.\n        finalTokens: 32000\n',
    );
    const server = await startCliServer<{ url: string }>([
      'provider',
      'serve',
      '--scripts',
      file,
      '--latency',
      'fast',
    ]);
    const pid = server.process.pid as number;
    /** The server's peak resident memory so far (VmHWM), bytes. */
    const peakRss = () =>
      Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) * 1024;
    // The thousand streams come from a process of their own: the probe here waits only for the server.
    const flood = spawn(process.execPath, [FLOOD, server.info.url, '1000'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let report = '';
    flood.stdout.on('data', (chunk: Buffer) => {
      report += chunk.toString('utf8');
    });
    const ended = new Promise((resolve) => flood.once('exit', resolve));
    const slowest = await slowestAnswerDuring(
      `${server.info.url}/v1/models`,
      async () => {
        await ended;
      },
      { headers: { authorization: 'Bearer probe' } },
      { serverPid: pid },
    );
    expect(JSON.parse(report)).toEqual({ streams: 1000, failed: 0 });
    // Planned whole, the replies took the server to 2.1 GB; played as they go, a few hundred MB at most.
    expect(peakRss()).toBeLessThan(600 * 1024 * 1024);
    // Planned whole, another client waited 22-23 s; each stream's chunks past its first token are
    // paced and rendered together, so the server goes on answering.
    expect(slowest).toBeLessThan(2_000);
    await server.stop();
  }, 120_000);

  it('20,000 made-up keys, CLI versions and codex window ids: limit state, stats and places stay bounded', async () => {
    const { url, emulator } = await serve({ adminToken: 'adm-token-1' });
    for (let i = 0; i < 20_000; i += 1) {
      const response = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${'k'.repeat(900)}${i}`,
          'user-agent': `codex_exec/0.${i}.${'9'.repeat(200)}`,
          'x-codex-window-id': `${'w'.repeat(2_000)}${i}`,
        },
        body: JSON.stringify({ model: 'gpt-5.5', messages: [{ role: 'user', content: 'hi' }] }),
      });
      await response.arrayBuffer();
    }
    expect(emulator.limits.size).toBeLessThanOrEqual(10_000);
    const stats = await fetch(`${url}/_fleetbench/stats`, {
      headers: { authorization: 'Bearer adm-token-1' },
    });
    const text = await stats.text();
    expect(text.length).toBeLessThan(20_000);
    const versions = Object.keys((JSON.parse(text) as { cliVersions: { codex: object } }).cliVersions.codex);
    expect(versions.length).toBeLessThanOrEqual(101);
    expect(versions.every((version) => version.length <= 64)).toBe(true);
  }, 400_000);
});

describe('provider serve as a process', () => {
  it('Ctrl-C while streams are in flight: each recorded as cancelled, then the footer, exit 0 within 5 s', async () => {
    const trace = join(dir, 'ctrl-c.jsonl');
    const server = await startCliServer<{ url: string }>([
      'provider',
      'serve',
      '--trace',
      trace,
      '--latency',
      'realistic',
      '--ttft',
      '60000',
    ]);
    const inFlight = Array.from({ length: 3 }, (_, i) =>
      messages(server.info.url, `stream ${i}`, { stream: true })
        .then((response) => response.text())
        .catch(() => 'cut'),
    );
    await waitUntil('the requests in flight', async () => {
      const stats = await fetch(`${server.info.url}/metrics`).then((response) => response.text());
      return /vllm:num_requests_running 3/.test(stats);
    });
    const stoppedAt = performance.now();
    server.process.kill('SIGINT');
    expect(await server.exited).toBe(0);
    expect(performance.now() - stoppedAt).toBeLessThan(5_000);
    await Promise.all(inFlight);
    expect(server.stderr()).not.toMatch(/is closed|Error/);
    const { records, stats } = await readTrace(trace);
    expect(stats.footer).toMatchObject({ reason: 'completed', counts: { span: 3 } });
    expect(records.map((record) => record.kind === 'span' && record.outcome)).toEqual([
      'cancelled',
      'cancelled',
      'cancelled',
    ]);
  }, 60_000);

  // hey has no version flag: one request to a closed port exits 0 when it is there.
  const hey = systemTool('hey', ['-n', '1', '-c', '1', 'http://127.0.0.1:1/'], 'hey');
  it.skipIf(hey.skip)(
    'a flood of hey -c 1000 for 15 s: a probe is answered within 2 s throughout on a connection it holds, and on a new one every 250 ms within 9 s (after the first 4 s, three in four within 2 s)',
    async () => {
      hey.require();
      const server = await startCliServer<{ url: string }>(['provider', 'serve']);
      const body = join(dir, 'flood.json');
      writeFileSync(
        body,
        JSON.stringify({ model: 'gpt-5.5', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      );
      const probe = { headers: { authorization: 'Bearer probe' } };
      // The held probe's connection is opened before the flood (fetch keeps it), so that it is
      // one the server already holds, not one racing hey's thousand to be accepted.
      await (await fetch(`${server.info.url}/v1/models`, probe)).text();
      const flood = spawn(
        'hey',
        [
          '-z',
          '15s',
          '-c',
          '1000',
          '-m',
          'POST',
          '-H',
          'Authorization: Bearer flood',
          '-D',
          body,
          `${server.info.url}/v1/chat/completions`,
        ],
        { stdio: 'ignore' },
      );
      const ended = new Promise((resolve) => flood.once('exit', resolve));
      // A new client waits in the kernel's accept queue behind every connection not yet taken:
      // libuv takes one a turn of the loop, so a server whose turns are long under the flood
      // left a new client 4-12 s waiting while the held connection's probe was answered at once.
      let slowestHeld = 0;
      const waits = await newConnectionWaitsDuring(
        `${server.info.url}/v1/models`,
        async () => {
          slowestHeld = await slowestAnswerDuring(
            `${server.info.url}/v1/models`,
            () => ended as Promise<void>,
            {
              ...probe,
              signal: AbortSignal.timeout(60_000),
            },
            { serverPid: server.process.pid },
          );
        },
        { ...probe, serverPid: server.process.pid },
      );
      expect(slowestHeld).toBeLessThan(2_000);
      expect(waits.length).toBeGreaterThan(40);
      // The 2 s bound holds for every probe on a quiet machine (docs/performance.md). A probe
      // that starts while hey's thousand clients are still connecting is answered only once the
      // last of them is accepted: with the whole suite beside it on two cores that took 2.2-3.3 s,
      // and 5.1-5.9 s in one CI run (the probes of 0.75-1.75 s in, all answered at one instant).
      // So, as for github serve: none over 9 s, and of those after the first 4 s three in four
      // within 2 s. The code before the fix failed the second (49-52 of ~60 probes over 2 s,
      // the slowest 5.8-13.4 s).
      expect(probesOver(waits, 9_000)).toEqual([]);
      const afterTheStorm = waits.slice(4_000 / 250);
      expect(
        probesOver(afterTheStorm, 2_000).length,
        probesOver(waits, 2_000).join('\n'),
      ).toBeLessThanOrEqual(afterTheStorm.length / 4);
    },
    90_000,
  );

  it('refuses numbers no run can play and flags that cannot work, naming the flag, in seconds', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--output-tps', '0.000001'], /--output-tps.*from 1 to 1000000/],
      [['--ttft', '1e12'], /--ttft 1e12: .*at most 600000/],
      [['--time-scale', '1e-300'], /--time-scale.*from 0.001 to 10000/],
      [['--port', '99999'], /--port.*from 0 to 65535/],
      [['--admin-token', ''], /--admin-token.*empty/],
      [['--fault', 'outage@from=20s,until=10s'], /untilMs must be after fromMs/],
      [['--fault', `outage@from=${1e15}ms`], /fromMs/],
      [['--max-running', '0'], /--max-running/],
    ];
    for (const [flags, message] of cases) {
      const result = await cli(['provider', 'serve', ...flags]);
      expect(result.code, flags.join(' ')).toBe(2);
      expect(result.stderr, flags.join(' ')).toMatch(message);
    }
  });

  it('--help lists every fault kind, and the docs link it prints points at a heading that exists', async () => {
    const help = await cli(['provider', 'serve', '--help']);
    const { FAULT_KINDS } = await import('../src/provider/faults.ts');
    for (const kind of FAULT_KINDS) expect(help.stdout).toContain(kind);
    const server = await startCliServer<{ url: string }>(['provider', 'serve']);
    await server.stop();
    const source = readFileSync(new URL('../src/cli/provider.ts', import.meta.url), 'utf8');
    const doc = readFileSync(new URL('../docs/provider-emulator.md', import.meta.url), 'utf8');
    const anchors = new Set(
      [...doc.matchAll(/^#+ (.*)$/gm)].map((match) =>
        (match[1] as string)
          .toLowerCase()
          .replace(/[^\w\s-]/g, '')
          .replace(/\s+/g, '-'),
      ),
    );
    const linked = [...source.matchAll(/docs\/provider-emulator\.md#([\w-]+)/g)].map((match) => match[1]);
    expect(linked.length).toBeGreaterThan(2);
    for (const anchor of linked) expect(anchors, anchor).toContain(anchor);
  });
});

describe('latency under load', () => {
  /** Median time to first token of `streams` concurrent streams, in virtual time. */
  async function medianTtft(streams: number, maxRunning: number): Promise<number> {
    const clock = new VirtualClock();
    const profile = { ...LATENCY_PROFILES.fast!, ttft: { kind: 'fixed' as const, ms: 100 }, spread: 0 };
    const emulator = new ProviderEmulator({
      clock,
      rng: new Rng(1),
      latency: profile,
      load: { maxRunning, factor: 2 },
    });
    const answers = Promise.all(
      Array.from({ length: streams }, (_, i) =>
        requestInProcess(emulator, {
          method: 'POST',
          path: '/v1/messages',
          headers: { 'x-api-key': `k${i}`, 'anthropic-version': '2023-06-01' },
          body: JSON.stringify({
            model: 'claude-sonnet-4-5',
            max_tokens: 200,
            stream: true,
            messages: [{ role: 'user', content: `fleetbench-script: hello ${i}` }],
          }),
        }),
      ),
    );
    await clock.run({ until: 3_600_000 });
    const firsts = (await answers)
      .map(
        (answer) =>
          answer.writes.find((write) => write.data.includes('content_block_delta'))?.t ?? Number.NaN,
      )
      .sort((a, b) => a - b);
    return firsts[Math.floor(firsts.length / 2)] as number;
  }

  it('time to first token at 200 streams is above its value at 2, and follows the cap', async () => {
    const two = await medianTtft(2, 16);
    const queued = await medianTtft(200, 16);
    const roomy = await medianTtft(200, 256);
    expect(two).toBeGreaterThanOrEqual(100);
    // 200 streams on 16 places: most wait for several others to finish first.
    expect(queued).toBeGreaterThan(5 * two);
    // With room for all of them none waits: only the slowdown of 200 running together (at most 2x).
    expect(roomy).toBeLessThanOrEqual(2 * two + 1);
    expect(roomy).toBeGreaterThan(two);
  });

  it("the queue is on /metrics under vLLM's names, in Prometheus' format", async () => {
    // The first two streams hold their places for 60 s: on a loaded machine the five requests
    // may take seconds to arrive, and with a first token in 2 s the first two had finished before
    // the last came (CI), so the queue never held three at once. They are cut when the test ends.
    const { url } = await serve({
      latency: { ...LATENCY_PROFILES.fast!, ttft: { kind: 'fixed', ms: 60_000 }, spread: 0 },
      load: { maxRunning: 2, factor: 1.5 },
    });
    const cut = new AbortController();
    const pending = Array.from({ length: 5 }, (_, i) =>
      messages(url, `fleetbench-script: hello ${i}`, { stream: true }, `q${i}`, cut.signal)
        .then((response) => response.text())
        .catch(() => undefined),
    );
    let text = '';
    await waitUntil('the requests in flight', async () => {
      text = await fetch(`${url}/metrics`).then((response) => response.text());
      return /vllm:num_requests_waiting 3/.test(text);
    });
    expect(text).toMatch(/^vllm:num_requests_running 2$/m);
    // promtool's linter flags the colons of vLLM's own names, and nothing else.
    const check = promtoolCheck(text);
    if (check.code !== null)
      expect(check.problems.split('\n').filter((line) => !line.includes("should not contain ':'"))).toEqual(
        [],
      );
    cut.abort();
    await Promise.all(pending);
  }, 60_000);
});
