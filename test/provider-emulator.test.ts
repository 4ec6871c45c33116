/**
 * The provider emulator over real HTTP on 127.0.0.1, driven with fetch the way the CLIs speak to
 * it: each API's stream and whole answers, the script followed through tool calls and a resumed
 * history, token counts, per-key limits and their headers, faults from the admin API, bad input,
 * and the in-process path answering byte for byte as HTTP does.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Analyzer } from '../src/analyze/analyzer.ts';
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
import { MemorySink } from '../src/trace/writer.ts';

type Json = Record<string, unknown>;

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: Partial<ProviderEmulatorOptions> = {}) {
  const trace = new MemorySink();
  const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(7), trace, ...options });
  const server = await startProviderServer({ emulator });
  servers.push(server);
  return { emulator, trace, url: server.url };
}

/** Server-sent events of a body: [event name, parsed data]. */
function events(body: string): Array<[string | undefined, Json | string]> {
  return body
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1] ?? '';
      return [event, data === '[DONE]' ? data : (JSON.parse(data) as Json)];
    });
}

const TOOLS_RESPONSES = [{ type: 'function', name: 'exec_command', parameters: { type: 'object' } }];
const TOOLS_MESSAGES = [{ name: 'Bash', input_schema: { type: 'object' } }];
const TOOLS_CHAT = [{ type: 'function', function: { name: 'bash', parameters: { type: 'object' } } }];

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(headers['x-api-key'] === undefined ? { authorization: 'Bearer k-test' } : {}),
      ...(path.startsWith('/v1/messages') ? { 'anthropic-version': '2023-06-01' } : {}),
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

describe('provider emulator: the three APIs follow the script', () => {
  it('Responses: a tool call, then the final message once the call output is in the history', async () => {
    const { url, trace } = await serve();
    const first = await post(
      url,
      '/v1/responses',
      {
        model: 'gpt-5.5',
        stream: true,
        tools: TOOLS_RESPONSES,
        input: [
          {
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: 'fleetbench-script: tool-call' }],
          },
        ],
      },
      { 'user-agent': 'codex_exec/0.169.0 (Debian)', 'session-id': 'thread-1' },
    );
    expect(first.status).toBe(200);
    const firstEvents = events(first.text);
    expect(firstEvents.map(([name]) => name)).toContain('response.completed');
    const call = firstEvents.find(
      ([name, data]) =>
        name === 'response.output_item.done' && (data as { item: Json }).item.type === 'function_call',
    )?.[1] as { item: Json };
    expect(call.item.name).toBe('exec_command');
    expect(JSON.parse(call.item.arguments as string)).toEqual({ cmd: 'echo fleetbench-tool-ok' });
    const completed = firstEvents.at(-1)?.[1] as {
      response: { usage: { input_tokens: number; output_tokens: number } };
    };
    expect(completed.response.usage.input_tokens).toBeGreaterThan(5);
    expect(completed.response.usage.output_tokens).toBeGreaterThan(3);
    // Sequence numbers increase by one, as the API's do.
    const sequence = firstEvents.map(([, data]) => (data as { sequence_number: number }).sequence_number);
    expect(sequence).toEqual(sequence.map((_, i) => i));

    const second = await post(
      url,
      '/v1/responses',
      {
        model: 'gpt-5.5',
        stream: true,
        tools: TOOLS_RESPONSES,
        input: [
          {
            type: 'message',
            role: 'user',
            content: [{ type: 'input_text', text: 'fleetbench-script: tool-call' }],
          },
          { ...call.item },
          { type: 'function_call_output', call_id: call.item.call_id, output: 'fleetbench-tool-ok\n' },
        ],
      },
      { 'user-agent': 'codex_exec/0.169.0 (Debian)', 'session-id': 'thread-1' },
    );
    const message = events(second.text).find(
      ([name, data]) =>
        name === 'response.output_item.done' && (data as { item: Json }).item.type === 'message',
    )?.[1] as { item: { content: Array<{ text: string }> } };
    expect(message.item.content[0]?.text).toBe('The command ran: fleetbench-tool-ok.');
    const records = trace.records.filter(
      (record) => record.kind === 'span' && record.name === 'provider.request',
    );
    expect(records).toHaveLength(2);
    expect(records.map((record) => (record as { data: Json }).data.step)).toEqual([0, 1]);
    expect(records.map((record) => (record as { labels: Json }).labels)).toEqual([
      { api: 'responses', cli: 'codex', status: '200' },
      { api: 'responses', cli: 'codex', status: '200' },
    ]);
    expect((records[0] as { session?: string }).session).toBe('thread-1');
    expect((records[1] as { data: Json }).data.tokensIn).toBeGreaterThan(
      (records[0] as { data: Json }).data.tokensIn as number,
    );
  });

  it('Messages: streamed blocks with input_json_delta, and a whole answer when stream is off', async () => {
    const { url } = await serve();
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 1000,
      stream: true,
      tools: TOOLS_MESSAGES,
      system: [{ type: 'text', text: 'You are Claude Code.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'fleetbench-script: tool-call go' }] }],
    };
    const streamed = await post(url, '/v1/messages?beta=true', body, {
      'x-api-key': 'k2',
      'user-agent': 'claude-cli/2.1.328 (external, sdk-cli)',
    });
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('request-id')).toMatch(/^req_/);
    const names = events(streamed.text).map(([name]) => name);
    expect(names[0]).toBe('message_start');
    expect(names.at(-1)).toBe('message_stop');
    const json = events(streamed.text).find(
      ([, data]) => (data as { delta?: { type?: string } }).delta?.type === 'input_json_delta',
    )?.[1] as { delta: { partial_json: string } };
    expect(JSON.parse(json.delta.partial_json)).toEqual({
      command: 'echo fleetbench-tool-ok',
      description: 'Run the scripted command',
    });
    const stop = events(streamed.text).find(([name]) => name === 'message_delta')?.[1] as {
      delta: { stop_reason: string };
    };
    expect(stop.delta.stop_reason).toBe('tool_use');

    const whole = await post(url, '/v1/messages', { ...body, stream: false });
    const answer = JSON.parse(whole.text) as {
      content: Array<{ type: string }>;
      stop_reason: string;
      usage: { input_tokens: number };
    };
    expect(answer.content.map((block) => block.type)).toEqual(['text', 'tool_use']);
    expect(answer.stop_reason).toBe('tool_use');
    expect(answer.usage.input_tokens).toBeGreaterThan(5);
  });

  it('Chat Completions: tool_calls then [DONE], usage in its own last chunk when asked', async () => {
    const { url } = await serve();
    const reply = await post(url, '/v1/chat/completions', {
      model: 'fleetbench-model',
      stream: true,
      stream_options: { include_usage: true },
      tools: TOOLS_CHAT,
      messages: [
        { role: 'system', content: 'You are opencode.' },
        { role: 'user', content: 'fleetbench-script: tool-call' },
      ],
    });
    const frames = events(reply.text);
    expect(frames.at(-1)?.[1]).toBe('[DONE]');
    const usage = frames.at(-2)?.[1] as { choices: unknown[]; usage: { prompt_tokens: number } };
    expect(usage.choices).toEqual([]);
    expect(usage.usage.prompt_tokens).toBeGreaterThan(3);
    const call = frames.find(([, data]) => JSON.stringify(data).includes('tool_calls'))?.[1] as {
      choices: Array<{ delta: { tool_calls: Array<{ function: { name: string; arguments: string } }> } }>;
    };
    expect(call.choices[0]?.delta.tool_calls[0]?.function.name).toBe('bash');
    expect(JSON.parse(call.choices[0]?.delta.tool_calls[0]?.function.arguments ?? '{}')).toEqual({
      command: 'echo fleetbench-tool-ok',
    });
  });

  it('a request without tools (a title request) gets text, never a tool call', async () => {
    const { url } = await serve();
    const reply = await post(url, '/v1/chat/completions', {
      model: 'fleetbench-model',
      messages: [{ role: 'user', content: 'Generate a title' }],
    });
    const answer = JSON.parse(reply.text) as {
      choices: Array<{ message: { content: string; tool_calls?: unknown } }>;
    };
    expect(answer.choices[0]?.message.tool_calls).toBeUndefined();
    expect(answer.choices[0]?.message.content.length).toBeGreaterThan(0);
  });
});

describe('provider emulator: limits, faults and bad input', () => {
  it('a per-key request limit answers 429 with retry-after and each API family its own headers', async () => {
    const { url } = await serve({ limits: { rpm: 2, itpm: 100_000 } });
    const body = { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    const a = await post(url, '/v1/messages', body, { 'x-api-key': 'a' });
    expect(a.status).toBe(200);
    expect(a.headers.get('anthropic-ratelimit-requests-limit')).toBe('2');
    expect(a.headers.get('anthropic-ratelimit-requests-remaining')).toBe('1');
    expect(a.headers.get('anthropic-ratelimit-requests-reset')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(Number(a.headers.get('anthropic-ratelimit-input-tokens-remaining'))).toBeLessThan(100_000);
    await post(url, '/v1/messages', body, { 'x-api-key': 'a' });
    const refused = await post(url, '/v1/messages', body, { 'x-api-key': 'a' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(refused.text)).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    // Another key has its own bucket.
    expect((await post(url, '/v1/messages', body, { 'x-api-key': 'b' })).status).toBe(200);
    const openai = await post(
      url,
      '/v1/chat/completions',
      { model: 'gpt-5.5', messages: [{ role: 'user', content: 'hi' }] },
      { authorization: 'Bearer c' },
    );
    expect(openai.headers.get('x-ratelimit-limit-requests')).toBe('2');
    expect(openai.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+ms|\d+s|\d+m\d+s)$/);
  });

  it('faults from the admin API: 429 with and without retry-after, 529, a cut stream, a stream error, an outage', async () => {
    const { url, trace } = await serve({ adminToken: 'adm' });
    const admin = (fault: Json) =>
      fetch(`${url}/_fleetbench/faults`, {
        method: 'POST',
        headers: { authorization: 'Bearer adm', 'content-type': 'application/json' },
        body: JSON.stringify(fault),
      });
    expect((await admin({ kind: 'rate-limit', retryAfterS: 3, count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'rate-limit-bare', count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'overloaded', count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'cut', afterChunks: 0, count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'stream-error', retryAfterS: 2, count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'outage', count: 1 })).status).toBe(201);
    expect((await admin({ kind: 'nonsense' })).status).toBe(400);
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    };
    const limited = await post(url, '/v1/messages', body);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('3');
    const bare = await post(url, '/v1/messages', body);
    expect(bare.status).toBe(429);
    expect(bare.headers.get('retry-after')).toBeNull();
    const overloaded = await post(url, '/v1/messages', body);
    expect(overloaded.status).toBe(529);
    expect(JSON.parse(overloaded.text).error.type).toBe('overloaded_error');
    const cut = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    })
      .then((response) => response.text())
      .then(
        () => 'whole',
        () => 'cut',
      );
    expect(cut).toBe('cut');
    const failed = await post(url, '/v1/responses', { model: 'gpt-5.5', stream: true, input: 'hi' });
    const last = events(failed.text).at(-1) as [
      string,
      { response: { error: { code: string; message: string } } },
    ];
    expect(last[0]).toBe('response.failed');
    expect(last[1].response.error.code).toBe('rate_limit_exceeded');
    expect(last[1].response.error.message).toMatch(/try again in 2s/);
    await expect(post(url, '/v1/messages', body)).rejects.toThrow();
    expect((await post(url, '/v1/messages', body)).status).toBe(200);
    const faults = trace.records
      .filter((record) => record.kind === 'span')
      .map((record) => [(record as { labels: Json }).labels.status, (record as { data: Json }).data.fault]);
    expect(faults).toEqual([
      ['429', 'rate-limit'],
      ['429', 'rate-limit-bare'],
      ['529', 'overloaded'],
      ['200', 'cut'],
      ['200', 'stream-error'],
      ['reset', 'outage'],
      ['200', undefined],
    ]);
  });

  it('refuses what no provider would take, naming the field, and keeps serving', async () => {
    const { url } = await serve({ requireKnownKeys: false });
    expect((await post(url, '/v1/messages', '{not json')).status).toBe(400);
    const noModel = await post(url, '/v1/messages', { max_tokens: 5, messages: [] });
    expect(noModel.status).toBe(400);
    expect(JSON.parse(noModel.text).error.message).toMatch(/^model:/);
    const badRole = await post(url, '/v1/chat/completions', {
      model: 'gpt-5.5',
      messages: [{ role: 'robot', content: 'x' }],
    });
    expect(JSON.parse(badRole.text).error).toMatchObject({
      param: 'messages[0].role',
      code: 'invalid_value',
    });
    const noKey = await fetch(`${url}/v1/messages`, { method: 'POST', body: '{}' });
    expect(noKey.status).toBe(401);
    expect((await post(url, '/v1/nothing', {})).status).toBe(404);
    const huge = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'content-length': String(17 * 1024 * 1024) },
      body: 'x'.repeat(17 * 1024 * 1024),
    }).catch(() => undefined);
    expect(huge === undefined || huge.status === 413).toBe(true);
    expect(
      (
        await post(url, '/v1/messages', {
          model: 'claude-sonnet-4-5',
          max_tokens: 5,
          messages: [{ role: 'user', content: 'hi' }],
        })
      ).status,
    ).toBe(200);
  });

  it('keys minted for a session attribute its requests; unknown keys are refused when asked', async () => {
    const { url, emulator, trace } = await serve({ requireKnownKeys: true, adminToken: 'adm' });
    const minted = await fetch(`${url}/_fleetbench/keys`, {
      method: 'POST',
      headers: { authorization: 'Bearer adm' },
      body: JSON.stringify({ session: 's-42', script: 'hello' }),
    }).then((response) => response.json() as Promise<{ key: string }>);
    const body = { model: 'claude-sonnet-4-5', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] };
    expect((await post(url, '/v1/messages', body, { 'x-api-key': 'unknown' })).status).toBe(401);
    const answer = await post(url, '/v1/messages', body, { 'x-api-key': minted.key });
    expect(JSON.parse(answer.text).content[0].text).toBe('Hello from the fleetbench provider emulator.');
    const span = trace.records.find((record) => record.kind === 'span' && record.session === 's-42');
    expect(span).toBeDefined();
    expect(emulator.snapshot().byStatus).toMatchObject({ '200': 1, '401': 1 });
    expect((await fetch(`${url}/_fleetbench/stats`)).status).toBe(401);
  });
});

describe('provider emulator: retries', () => {
  it('counts a resent request at the same place, but not a compacted history that starts again from a summary', async () => {
    const { url, trace } = await serve();
    const ask = (prompt: string) =>
      post(
        url,
        '/v1/responses',
        { model: 'gpt-5.5', input: prompt },
        { 'session-id': 'thread-9', 'user-agent': 'codex_exec/0.169.0' },
      );
    await ask('fix the bug');
    await ask('fix the bug');
    // codex near its context window: the same thread goes on from a summary of the history.
    await ask('Summary of the work so far: the bug is fixed.');
    const places = trace.records.map((record) =>
      record.kind === 'span' ? [record.data?.attempt, record.data?.samePlace] : undefined,
    );
    // codex sends no retry count: each request is a first attempt, the second at the same place.
    expect(places).toEqual([
      [1, 1],
      [1, 2],
      [1, 1],
    ]);
  });
});

describe('provider emulator: attempts', () => {
  /** How a request is answered: a fault that fails it, one that does not, or nothing at all. */
  const ANSWERS = [
    'ok',
    'rate-limit',
    'overloaded',
    'server-error',
    'cut',
    'stream-error',
    'outage',
    'slow-first-token',
  ] as const;
  const FAILS = new Set(['rate-limit', 'overloaded', 'server-error', 'cut', 'stream-error', 'outage']);

  it('a request is a retry when the client says so or the one before it at its place failed; identical requests answered in full are each a first attempt', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            answer: fc.constantFrom(...ANSWERS),
            // What the client says: nothing (codex, opencode), 0 as Claude Code always does, or an SDK's count.
            retryCount: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (requests) => {
          const clock = new VirtualClock();
          const trace = new MemorySink();
          const emulator = new ProviderEmulator({ clock, rng: new Rng(3), trace });
          for (const { answer, retryCount } of requests) {
            if (answer !== 'ok') emulator.addFault({ kind: answer, count: 1, delayMs: 10 });
            const done = requestInProcess(emulator, {
              method: 'POST',
              path: '/v1/chat/completions',
              headers: {
                authorization: 'Bearer k',
                'user-agent': 'opencode/1.18.33',
                ...(retryCount === undefined ? {} : { 'x-stainless-retry-count': String(retryCount) }),
              },
              body: JSON.stringify({
                model: 'gpt-5.5',
                stream: true,
                messages: [{ role: 'user', content: 'the same question' }],
              }),
            });
            await clock.run({ until: clock.now() + 60_000 });
            await done;
          }
          const attempts = trace.records.map((record) => record.kind === 'span' && record.data?.attempt);
          let expected = 0;
          let failedBefore = false;
          requests.forEach(({ answer, retryCount }, i) => {
            expected = Math.max(failedBefore ? expected + 1 : 1, (retryCount ?? 0) + 1);
            expect(attempts[i], `request ${i + 1} of ${JSON.stringify(requests)}`).toBe(expected);
            failedBefore = FAILS.has(answer);
          });
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('provider emulator: attempts in the analysis', () => {
  it('the analysis counts as retries the requests the emulator recorded as retries, and no separate identical one', async () => {
    const clock = new VirtualClock();
    const analyzer = new Analyzer();
    const emulator = new ProviderEmulator({ clock, rng: new Rng(3), trace: analyzer });
    const ask = async () => {
      const done = requestInProcess(emulator, {
        method: 'POST',
        path: '/v1/responses',
        headers: { authorization: 'Bearer k', 'user-agent': 'codex_exec/0.169.0', 'session-id': 's-1' },
        body: JSON.stringify({ model: 'gpt-5.5', stream: true, input: 'the same question' }),
      });
      await clock.run({ until: clock.now() + 60_000 });
      return (await done).outcome;
    };
    emulator.addFault({ kind: 'rate-limit', count: 1 });
    await ask();
    await ask();
    await ask();
    await ask();
    emulator.addFault({ kind: 'cut', count: 1 });
    expect(await ask()).toBe('cut');
    await ask();
    const provider = analyzer.finish().provider;
    expect(provider?.requests).toBe(6);
    // The request after the 429 and the one after the cut; the two asked after a success are new.
    expect(provider?.retries).toBe(2);
    expect(provider?.byCli.codex?.retries).toBe(2);
  });
});

describe('provider emulator: in-process and timing', () => {
  it('answers in-process exactly as over HTTP, for the same seed and request', async () => {
    const request = {
      model: 'gpt-5.5',
      stream: true,
      tools: TOOLS_RESPONSES,
      input: [
        {
          type: 'message',
          role: 'user',
          content: [{ type: 'input_text', text: 'fleetbench-script: coding' }],
        },
      ],
    };
    const { url } = await serve();
    const overHttp = await post(url, '/v1/responses', request, { 'session-id': 'same' });
    const inProcess = await requestInProcess(
      new ProviderEmulator({ clock: new RealClock(), rng: new Rng(7) }),
      {
        method: 'POST',
        path: '/v1/responses',
        headers: { authorization: 'Bearer k-test', 'session-id': 'same' },
        body: JSON.stringify(request),
      },
    );
    // Only the wall-clock `created_at` may differ between two real-clock answers.
    const strip = (text: string) => text.replace(/"created_at":\d+/g, '"created_at":0');
    expect(strip(inProcess.body)).toBe(strip(overHttp.text));
  });

  it('in virtual time the first token comes after the profile time plus the prefill of the input, then tokens at a rate', async () => {
    const clock = new VirtualClock();
    const trace = new MemorySink();
    const profile = { ...LATENCY_PROFILES.fast!, ttft: { kind: 'fixed' as const, ms: 300 }, spread: 0 };
    const emulator = new ProviderEmulator({ clock, rng: new Rng(1), trace, latency: profile });
    const ask = (history: string) =>
      requestInProcess(emulator, {
        method: 'POST',
        path: '/v1/messages',
        headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'claude-sonnet-4-5',
          max_tokens: 100,
          stream: true,
          messages: [{ role: 'user', content: `fleetbench-script: coding ${history}` }],
        }),
      });
    const done = Promise.all([ask(''), ask('word '.repeat(100_000))]);
    await clock.run({ until: 60_000 });
    const [short, long] = await done;
    const firstTokenAt = (answer: Awaited<ReturnType<typeof ask>>) =>
      answer.writes.find((write) => write.data.includes('content_block_delta'))?.t ?? Number.NaN;
    expect(firstTokenAt(short)).toBeGreaterThanOrEqual(300);
    expect(firstTokenAt(short)).toBeLessThan(310);
    // 100,000 more tokens (" word" is one o200k token) at 500,000 tokens/s of prefill: 200 ms later.
    expect(firstTokenAt(long) - firstTokenAt(short)).toBeGreaterThan(190);
    expect(firstTokenAt(long) - firstTokenAt(short)).toBeLessThan(210);
    const spans = trace.records.filter((record) => record.kind === 'span');
    const ttft = spans.map((span) => (span as { data: Json }).data.ttftMs as number);
    expect(ttft[0]).toBeCloseTo(firstTokenAt(short), 0);
  });
});
