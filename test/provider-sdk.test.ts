/**
 * The provider emulator driven by the vendors' official SDKs (openai, @anthropic-ai/sdk), the
 * clients whose parsing and retries the CLIs share: each documented behaviour of the fidelity
 * table in docs/provider-emulator.md, through the client a user of that API would hold. Raw
 * fetch only where the SDK hides what is checked (ping events, a missing anthropic-version).
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderEmulatorOptions } from '../src/provider/index.ts';
import { closeSdkServers, serveWithSdks } from './helpers/provider-sdk.ts';

afterEach(closeSdkServers);

const serve = (options: Partial<ProviderEmulatorOptions> = {}) => serveWithSdks(options, 3);

const HELLO = 'fleetbench-script: hello';
/** A system prompt of about 3,000 tokens: long enough to be cached by either vendor. */
const LONG_SYSTEM = `You are a careful agent. ${'Read the repository, run the tests and explain each change. '.repeat(280)}`;

describe('output caps and stop sequences', () => {
  it('Anthropic: max_tokens ends the reply with stop_reason max_tokens; a stop sequence with stop_sequence', async () => {
    const { anthropic } = await serve();
    const capped = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 3,
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(capped.stop_reason).toBe('max_tokens');
    expect(capped.usage.output_tokens).toBe(3);
    const text = (capped.content[0] as { text: string }).text;
    expect('Hello from the fleetbench provider emulator.'.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan('Hello from the fleetbench provider emulator.'.length);
    const stopped = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      stop_sequences: ['provider'],
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(stopped.stop_reason).toBe('stop_sequence');
    expect(stopped.stop_sequence).toBe('provider');
    expect((stopped.content[0] as { text: string }).text).toBe('Hello from the fleetbench ');
    // Streamed, the same cap ends in message_delta.
    const stream = anthropic.messages.stream({
      model: 'claude-sonnet-4-5',
      max_tokens: 3,
      messages: [{ role: 'user', content: HELLO }],
    });
    const final = await stream.finalMessage();
    expect(final.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(3);
  });

  it('Chat Completions: finish_reason length at max_completion_tokens, stop at a stop sequence', async () => {
    const { openai } = await serve();
    const capped = await openai.chat.completions.create({
      model: 'gpt-5.5',
      max_completion_tokens: 4,
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(capped.choices[0]?.finish_reason).toBe('length');
    expect(capped.usage?.completion_tokens).toBe(4);
    const stopped = await openai.chat.completions.create({
      model: 'gpt-5.5',
      stop: ['emulator'],
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(stopped.choices[0]?.finish_reason).toBe('stop');
    expect(stopped.choices[0]?.message.content).toBe('Hello from the fleetbench provider ');
    const chunks = await openai.chat.completions.create({
      model: 'gpt-5.5',
      max_tokens: 4,
      stream: true,
      messages: [{ role: 'user', content: HELLO }],
    });
    const finishes: Array<string | null> = [];
    for await (const chunk of chunks) finishes.push(chunk.choices[0]?.finish_reason ?? null);
    expect(finishes.at(-1)).toBe('length');
  });

  it('Responses: status incomplete with incomplete_details at max_output_tokens, whole and streamed', async () => {
    const { openai } = await serve();
    const finalTokens = 'fleetbench-script: coding';
    const capped = await openai.responses.create({
      model: 'gpt-5.5',
      max_output_tokens: 16,
      input: finalTokens,
    });
    expect(capped.status).toBe('incomplete');
    expect(capped.incomplete_details?.reason).toBe('max_output_tokens');
    expect(capped.usage?.output_tokens).toBe(16);
    const stream = await openai.responses.create({
      model: 'gpt-5.5',
      max_output_tokens: 16,
      stream: true,
      input: finalTokens,
    });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect(types.at(-1)).toBe('response.incomplete');
    expect(types).not.toContain('response.completed');
  });
});

describe("requests refused with the vendors' statuses and words", () => {
  it('an unknown model: Anthropic 404 not_found_error, OpenAI 404 model_not_found; a known one is served', async () => {
    const { anthropic, openai } = await serve();
    const claude = await anthropic.messages
      .create({ model: 'claude-nonexistent', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(claude).toBeInstanceOf(Anthropic.NotFoundError);
    expect((claude as InstanceType<typeof Anthropic.NotFoundError>).error).toMatchObject({
      type: 'error',
      error: { type: 'not_found_error', message: 'model: claude-nonexistent' },
    });
    const gpt = await openai.chat.completions
      .create({ model: 'gpt-nonexistent', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect(gpt).toBeInstanceOf(OpenAI.NotFoundError);
    expect((gpt as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
    // Claude Code 2.1.328 with no model set asks for claude-opus-5-5 with max_tokens 128000.
    const stock = await anthropic.messages
      .stream({ model: 'claude-opus-5-5', max_tokens: 128_000, messages: [{ role: 'user', content: HELLO }] })
      .finalMessage();
    expect(stock.stop_reason).toBe('end_turn');
  });

  it('a missing max_tokens or anthropic-version, max_tokens over the cap, a tool result without its call: 400 in each API', async () => {
    const { anthropic, openai, url } = await serve();
    const bad = (promise: Promise<unknown>) =>
      promise.then(
        () => undefined,
        (error: unknown) => error,
      );
    const noMax = await bad(
      anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        messages: [{ role: 'user', content: 'hi' }],
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(noMax).toBeInstanceOf(Anthropic.BadRequestError);
    expect((noMax as Error).message).toContain('max_tokens: Field required');
    const noVersion = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    expect(noVersion.status).toBe(400);
    expect(((await noVersion.json()) as { error: { message: string } }).error.message).toBe(
      'anthropic-version: header is required',
    );
    const overCap = await bad(
      anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 64_001,
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect((overCap as Error).message).toContain(
      'max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929',
    );
    const orphan = await bad(
      anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 10,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_missing', content: 'out' }] },
        ],
      }),
    );
    expect(orphan).toBeInstanceOf(Anthropic.BadRequestError);
    expect((orphan as Error).message).toContain(
      'messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_missing',
    );
    const chatOrphan = await bad(
      openai.chat.completions.create({
        model: 'gpt-5.5',
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'tool', tool_call_id: 'call_missing', content: 'out' },
        ],
      }),
    );
    expect(chatOrphan).toBeInstanceOf(OpenAI.BadRequestError);
    expect((chatOrphan as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages.[1].role');
    const responsesOrphan = await bad(
      openai.responses.create({
        model: 'gpt-5.5',
        input: [
          { role: 'user', content: 'hi' },
          { type: 'function_call_output', call_id: 'call_missing', output: 'out' },
        ],
      }),
    );
    expect((responsesOrphan as Error).message).toContain(
      'No tool call found for function call output with call_id call_missing.',
    );
    const chatOverCap = await bad(
      openai.chat.completions.create({
        model: 'gpt-5.5',
        max_completion_tokens: 200_000,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect((chatOverCap as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('invalid_value');
  });

  it("a prompt over the model's context window: Anthropic's prompt is too long, OpenAI's context_length_exceeded", async () => {
    const { anthropic, openai } = await serve();
    const long = 'word '.repeat(210_000);
    const claude = await anthropic.messages
      .create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: long }] })
      .catch((error: unknown) => error);
    expect(claude).toBeInstanceOf(Anthropic.BadRequestError);
    expect((claude as Error).message).toMatch(/prompt is too long: \d+ tokens > 200000 maximum/);
    const huge = 'word '.repeat(1_000_000);
    const gpt = await openai.chat.completions
      .create({ model: 'gpt-5.5', messages: [{ role: 'user', content: huge }] })
      .catch((error: unknown) => error);
    expect((gpt as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
  });
});

describe('prompt caching from the prefixes requests share', () => {
  it('Anthropic: a cache_control breakpoint is written once, then read; reads do not count against ITPM', async () => {
    const { anthropic } = await serve({ limits: { itpm: 1_000_000 } });
    const ask = () =>
      anthropic.messages
        .create({
          model: 'claude-sonnet-4-5',
          max_tokens: 50,
          system: [{ type: 'text', text: LONG_SYSTEM, cache_control: { type: 'ephemeral' } }],
          messages: [{ role: 'user', content: HELLO }],
        })
        .withResponse();
    const first = await ask();
    expect(first.data.usage.cache_read_input_tokens).toBe(0);
    const written = first.data.usage.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThan(1024);
    const second = await ask();
    expect(second.data.usage.cache_read_input_tokens).toBe(written);
    expect(second.data.usage.cache_creation_input_tokens).toBe(0);
    expect(second.data.usage.input_tokens).toBe(first.data.usage.input_tokens);
    const remaining = (response: typeof first) =>
      Number(response.response.headers.get('anthropic-ratelimit-input-tokens-remaining'));
    // The second request took only its uncached input from the bucket (plus a little refill).
    const firstTook = 1_000_000 - remaining(first);
    const secondTook = remaining(first) - remaining(second);
    expect(firstTook).toBeGreaterThan(written);
    expect(secondTook).toBeLessThanOrEqual(firstTook - written + 1);
    // A one-hour breakpoint is counted apart.
    const hour = await anthropic.messages.create({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      system: [
        { type: 'text', text: `${LONG_SYSTEM} (1h)`, cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(hour.usage.cache_creation?.ephemeral_1h_input_tokens).toBeGreaterThan(1024);
    expect(hour.usage.cache_creation?.ephemeral_5m_input_tokens).toBe(0);
  });

  it('OpenAI: a repeated prefix of 1,024 tokens or more is cached_tokens, in steps of 128, and still counts against TPM', async () => {
    const { openai } = await serve({ limits: { tpm: 100_000 } });
    const ask = (prompt: string) =>
      openai.chat.completions
        .create({
          model: 'gpt-5.5',
          messages: [
            { role: 'system', content: LONG_SYSTEM },
            { role: 'user', content: prompt },
          ],
        })
        .withResponse();
    const first = await ask(`${HELLO} one`);
    expect(first.data.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    const second = await ask(`${HELLO} two`);
    const cached = second.data.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    expect(cached).toBeGreaterThan(1024);
    expect(cached % 128).toBe(0);
    expect(cached).toBeLessThanOrEqual(second.data.usage?.prompt_tokens ?? 0);
    const remaining = (response: typeof first) =>
      Number(response.response.headers.get('x-ratelimit-remaining-tokens'));
    // The whole prompt was charged both times (less what the bucket refilled between: ~1,700 a second).
    expect(remaining(first) - remaining(second)).toBeGreaterThan(
      (second.data.usage?.prompt_tokens ?? 0) - cached / 2,
    );
    const responses = await openai.responses.create({
      model: 'gpt-5.5',
      instructions: `${LONG_SYSTEM} (responses)`,
      input: HELLO,
    });
    const again = await openai.responses.create({
      model: 'gpt-5.5',
      instructions: `${LONG_SYSTEM} (responses)`,
      input: HELLO,
    });
    expect(responses.usage?.input_tokens_details.cached_tokens).toBe(0);
    expect(again.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(1024);
  });
});

describe('headers, counts and model lists', () => {
  it('rate-limit headers on every answer, with no limit set and on an error', async () => {
    const { anthropic, openai } = await serve();
    const claude = await anthropic.messages
      .create({ model: 'claude-sonnet-4-5', max_tokens: 20, messages: [{ role: 'user', content: HELLO }] })
      .withResponse();
    for (const name of ['requests', 'input-tokens', 'output-tokens'])
      expect(Number(claude.response.headers.get(`anthropic-ratelimit-${name}-limit`))).toBeGreaterThan(0);
    const gpt = await openai.chat.completions
      .create({ model: 'gpt-5.5', messages: [{ role: 'user', content: HELLO }] })
      .withResponse();
    expect(Number(gpt.response.headers.get('x-ratelimit-limit-requests'))).toBeGreaterThan(0);
    expect(gpt.response.headers.get('x-ratelimit-reset-tokens')).toMatch(/^\d+(ms|s)$|^\d+m\d+s$/);
    const refused = await openai.chat.completions
      .create({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] })
      .then(
        () => undefined,
        (error: InstanceType<typeof OpenAI.APIError>) => error,
      );
    expect(refused?.status).toBe(404);
    expect(refused?.headers?.get('x-ratelimit-limit-requests')).not.toBeNull();
  });

  it('count_tokens and responses/input_tokens give the input tokens the answer then reports', async () => {
    const { anthropic, openai } = await serve();
    const params = {
      model: 'claude-sonnet-4-5',
      system: 'You are terse.',
      messages: [{ role: 'user' as const, content: `${HELLO} please` }],
    };
    const counted = await anthropic.messages.countTokens(params);
    const answered = await anthropic.messages.create({ ...params, max_tokens: 50 });
    expect(counted.input_tokens).toBe(answered.usage.input_tokens);
    const openaiCounted = await openai.responses.inputTokens.count({
      model: 'gpt-5.5',
      input: `${HELLO} please`,
    });
    const openaiAnswered = await openai.responses.create({ model: 'gpt-5.5', input: `${HELLO} please` });
    expect(openaiCounted.object).toBe('response.input_tokens');
    expect(openaiCounted.input_tokens).toBe(openaiAnswered.usage?.input_tokens);
  });

  it("each vendor's model list and models/{id} in its own shape", async () => {
    const { anthropic, openai } = await serve();
    const claudes = [];
    for await (const model of anthropic.models.list()) claudes.push(model);
    expect(claudes.map((model) => model.id)).toContain('claude-opus-5-5');
    expect(claudes.every((model) => model.type === 'model' && model.display_name.length > 0)).toBe(true);
    const opus = await anthropic.models.retrieve('claude-opus-5-5');
    expect(opus).toMatchObject({ id: 'claude-opus-5-5', max_input_tokens: 1_000_000, max_tokens: 128_000 });
    expect(await anthropic.models.retrieve('claude-nope').catch((error: unknown) => error)).toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    const gpts = [];
    for await (const model of openai.models.list()) gpts.push(model);
    expect(gpts.map((model) => model.id)).toEqual(expect.arrayContaining(['gpt-6.1-sol', 'gpt-5.5']));
    expect(gpts.every((model) => model.object === 'model')).toBe(true);
    expect((await openai.models.retrieve('gpt-6.1-sol')).id).toBe('gpt-6.1-sol');
  });
});

describe('streams, faults and retries', () => {
  it('a Messages stream sends ping after message_start; response.failed continues the sequence numbers', async () => {
    const { url, emulator } = await serve();
    const stream = await fetch(`${url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: HELLO }],
      }),
    }).then((response) => response.text());
    const names = [...stream.matchAll(/^event: (.*)$/gm)].map((match) => match[1]);
    expect(names.slice(0, 2)).toEqual(['message_start', 'ping']);
    emulator.addFault({ kind: 'stream-error', afterChunks: 0, count: 1 });
    const failed = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k' },
      body: JSON.stringify({ model: 'gpt-5.5', stream: true, input: HELLO }),
    }).then((response) => response.text());
    const numbers = [...failed.matchAll(/"sequence_number":(\d+)/g)].map((match) => Number(match[1]));
    expect(failed).toContain('event: response.failed');
    expect(numbers).toEqual(numbers.map((_, i) => i));
  });

  it('a token limit is a 429 of type tokens on OpenAI, a request limit of type requests', async () => {
    const { openai } = await serve({ limits: { tpm: 40, rpm: 1000 } });
    const refused = await openai.chat.completions
      .create({ model: 'gpt-5.5', messages: [{ role: 'user', content: LONG_SYSTEM }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.RateLimitError);
    expect((refused as InstanceType<typeof OpenAI.RateLimitError>).type).toBe('tokens');
    const { openai: limited } = await serve({ limits: { rpm: 1 } });
    await limited.chat.completions.create({ model: 'gpt-5.5', messages: [{ role: 'user', content: 'hi' }] });
    const second = await limited.chat.completions
      .create({ model: 'gpt-5.5', messages: [{ role: 'user', content: 'hi' }] })
      .catch((error: unknown) => error);
    expect((second as InstanceType<typeof OpenAI.RateLimitError>).type).toBe('requests');
  });

  it('at zero latency a cut stream still sends its first event before the connection ends', async () => {
    const { anthropic, emulator } = await serve();
    emulator.addFault({ kind: 'cut', count: 1 });
    const seen: string[] = [];
    const error = await (async () => {
      const stream = await anthropic.messages.create({
        model: 'claude-sonnet-4-5',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: HELLO }],
      });
      for await (const event of stream) seen.push(event.type);
    })().catch((problem: unknown) => problem);
    expect(seen[0]).toBe('message_start');
    expect(seen).not.toContain('message_stop');
    expect(error).toBeInstanceOf(Error);
  });

  it("an SDK's retry is recorded as its next attempt; separate identical calls are each a first attempt", async () => {
    const { url, emulator, spans } = await serve();
    emulator.addFault({ kind: 'server-error', count: 1 });
    const retrying = new Anthropic({ apiKey: 'k', baseURL: url, maxRetries: 2 });
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 20,
      messages: [{ role: 'user' as const, content: HELLO }],
    };
    await retrying.messages.create(body);
    for (let i = 0; i < 7; i++) await retrying.messages.create(body);
    const attempts = spans().map((span) => [span.labels?.status, span.data?.attempt]);
    expect(attempts.slice(0, 2)).toEqual([
      ['500', 1],
      ['200', 2],
    ]);
    expect(attempts.slice(2)).toEqual(Array.from({ length: 7 }, () => ['200', 1]));
  });
});
