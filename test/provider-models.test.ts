/**
 * The provider emulator's model table as a user's own control plane meets it: the models the
 * vendors document as served (docs/provider-emulator.md, "Models"), asked by id and by every
 * alias through the official SDKs; OpenAI fine-tunes served with their base model's limits; an
 * unknown model still the vendor's 404; and the models a user adds (`--model`, a scenario's
 * `provider.models`), each bad one refused naming the field.
 */
import Anthropic from '@anthropic-ai/sdk';
import fc from 'fast-check';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIMITS } from '../src/base/limits.ts';
import type { ProviderEmulatorOptions } from '../src/provider/index.ts';
import { LISTED_MODELS, modelNamed, parseModelSpec } from '../src/provider/models.ts';
import { closeSdkServers, serveWithSdks } from './helpers/provider-sdk.ts';

afterEach(closeSdkServers);

const serve = (options: Partial<ProviderEmulatorOptions> = {}) => serveWithSdks(options, 5);

const HELLO = 'fleetbench-script: hello';

/** A rejected promise's error, or undefined when it was answered. */
const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as InstanceType<typeof OpenAI.APIError>,
  );

describe("the models a user's control plane names", () => {
  it('gpt-4o-mini on Chat Completions: 200 with usage; max_tokens over its 16,384 refused in OpenAI words, at the cap served', async () => {
    const { openai } = await serve();
    const answer = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(answer.choices[0]?.message.content).toContain('Hello from the fleetbench provider emulator');
    expect(answer.usage?.prompt_tokens).toBeGreaterThan(0);
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
    const pinned = await openai.chat.completions.create({
      model: 'gpt-4o-mini-2024-07-18',
      max_tokens: 16_384,
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(pinned.choices[0]?.finish_reason).toBe('stop');
    const over = await refusal(
      openai.chat.completions.create({
        model: 'gpt-4o-mini',
        max_tokens: 16_385,
        messages: [{ role: 'user', content: HELLO }],
      }),
    );
    expect(over).toBeInstanceOf(OpenAI.BadRequestError);
    expect(over?.code).toBe('invalid_value');
    expect(over?.param).toBe('max_tokens');
    expect(over?.message).toContain(
      'max_tokens is too large: 16385. This model supports at most 16384 completion tokens, whereas you provided 16385.',
    );
  });

  it("gpt-4o-mini counts a prompt against its whole 128,000 window (OpenAI states no split for it); GPT-5's input stops at 272,000", async () => {
    const { openai } = await serve();
    // About 119,000 tokens: over the window less the cap (111,616), under the window.
    const prompt = `${HELLO} ${'alpha beta gamma delta '.repeat(27_000)}`;
    const counted = await openai.responses.inputTokens.count({ model: 'gpt-4o-mini', input: prompt });
    expect(counted.input_tokens).toBeGreaterThan(111_616);
    expect(counted.input_tokens).toBeLessThanOrEqual(128_000);
    const served = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: prompt }],
    });
    expect(served.usage?.prompt_tokens).toBe(counted.input_tokens);
    const over = await refusal(
      openai.chat.completions.create({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: `${prompt} ${'epsilon zeta '.repeat(12_000)}` }],
      }),
    );
    expect(over?.code).toBe('context_length_exceeded');
    expect(over?.message).toMatch(
      /^400 This model's maximum context length is 128,000 tokens\. However, your messages resulted in \d{3},\d{3} tokens\. Please reduce the length of the messages\.$/,
    );
    // Between GPT-5's 272,000 input tokens and its 400,000 window: refused.
    const long = `${HELLO} ${'alpha beta gamma delta '.repeat(65_000)}`;
    const longCount = await openai.responses.inputTokens.count({ model: 'gpt-6-luna', input: long });
    expect(longCount.input_tokens).toBeGreaterThan(272_000);
    expect(longCount.input_tokens).toBeLessThan(400_000);
    const gpt5 = await refusal(
      openai.chat.completions.create({ model: 'gpt-5', messages: [{ role: 'user', content: long }] }),
    );
    expect(gpt5?.code).toBe('context_length_exceeded');
    // OpenAI's words for it, as its developer forum quotes the API.
    expect(gpt5?.message).toMatch(
      /^400 Input tokens exceed the configured limit of 272,000 tokens\. Your messages resulted in \d{3},\d{3} tokens\.$/,
    );
  });

  it('Anthropic: claude-opus-4-5 and its dated id are served, its 64,000 cap refused at 64,001', async () => {
    const { anthropic } = await serve();
    for (const model of ['claude-opus-4-5', 'claude-opus-4-5-20251101']) {
      // Streamed: the SDK will not wait on a whole answer this long.
      const answer = await anthropic.messages
        .stream({ model, max_tokens: 64_000, messages: [{ role: 'user', content: HELLO }] })
        .finalMessage();
      expect(answer.stop_reason).toBe('end_turn');
      expect(answer.model).toBe(model);
    }
    const over = await refusal(
      anthropic.messages
        .stream({
          model: 'claude-opus-4-5',
          max_tokens: 64_001,
          messages: [{ role: 'user', content: HELLO }],
        })
        .finalMessage(),
    );
    expect(over).toBeInstanceOf(Anthropic.BadRequestError);
    expect(over?.message).toContain(
      'max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-opus-4-5-20251101',
    );
  });

  it("an OpenAI fine-tune of a model of the table is served with its base's limits; one of a model it lacks, or an unknown model, is the vendor's 404", async () => {
    const { openai, anthropic } = await serve();
    const fineTune = 'ft:gpt-4o-mini-2024-07-18:acme-corp:triage:9xKq2bLm';
    const answer = await openai.chat.completions.create({
      model: fineTune,
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(answer.model).toBe(fineTune);
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
    const over = await refusal(
      openai.responses.create({ model: fineTune, max_output_tokens: 16_385, input: HELLO }),
    );
    expect(over?.code).toBe('invalid_value');
    expect(over?.message).toContain('at most 16384 completion tokens');
    expect((await openai.models.retrieve(fineTune)).id).toBe(fineTune);
    for (const model of ['ft:davinci-002:acme-corp::9xKq2bLm', 'gpt-4o-nonexistent', 'ft:gpt-4o-mini']) {
      const unknown = await refusal(
        openai.chat.completions.create({ model, messages: [{ role: 'user', content: HELLO }] }),
      );
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
      expect(unknown?.code).toBe('model_not_found');
    }
    const claude = await refusal(
      anthropic.messages.create({
        model: 'claude-sonnet-4-0',
        max_tokens: 10,
        messages: [{ role: 'user', content: HELLO }],
      }),
    );
    expect(claude).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('a model the user adds is served and listed with the limits given; a fine-tune added without limits takes its base', async () => {
    const { openai, anthropic } = await serve({
      models: [
        { name: 'gpt-7-preview', contextWindow: 2_000_000, maxOutputTokens: 200_000 },
        { name: 'claude-next', contextWindow: 500_000, maxOutputTokens: 50_000 },
        { name: 'ft:gpt-4.1-2025-04-14:acme-corp::abc123' },
      ],
    });
    const answer = await openai.chat.completions.create({
      model: 'gpt-7-preview',
      max_completion_tokens: 200_000,
      messages: [{ role: 'user', content: HELLO }],
    });
    expect(answer.model).toBe('gpt-7-preview');
    const over = await refusal(
      openai.chat.completions.create({
        model: 'gpt-7-preview',
        max_completion_tokens: 200_001,
        messages: [{ role: 'user', content: HELLO }],
      }),
    );
    expect(over?.code).toBe('invalid_value');
    const claude = await anthropic.messages
      .stream({ model: 'claude-next', max_tokens: 50_000, messages: [{ role: 'user', content: HELLO }] })
      .finalMessage();
    expect(claude.stop_reason).toBe('end_turn');
    expect(await anthropic.models.retrieve('claude-next')).toMatchObject({
      max_input_tokens: 500_000,
      max_tokens: 50_000,
    });
    const gpts = [];
    for await (const model of openai.models.list()) gpts.push(model.id);
    expect(gpts).toEqual(
      expect.arrayContaining(['gpt-7-preview', 'ft:gpt-4.1-2025-04-14:acme-corp::abc123', 'gpt-4o-mini']),
    );
    expect(gpts).not.toContain('claude-next');
    const fineTuneOver = await refusal(
      openai.chat.completions.create({
        model: 'ft:gpt-4.1-2025-04-14:acme-corp::abc123',
        max_tokens: 32_769,
        messages: [{ role: 'user', content: HELLO }],
      }),
    );
    expect(fineTuneOver?.message).toContain('at most 32768 completion tokens');
  });
});

/**
 * Names the vendors document as served (docs/provider-emulator.md, "Models"), as users pin them:
 * each must be in the table, by id or alias.
 */
const DOCUMENTED = [
  'gpt-4o',
  'gpt-4o-2024-08-06',
  'gpt-4o-2024-11-20',
  'gpt-4o-mini',
  'gpt-4o-mini-2024-07-18',
  'gpt-4.1',
  'gpt-4.1-2025-04-14',
  'gpt-4.1-mini',
  'gpt-4.1-mini-2025-04-14',
  'o3',
  'gpt-5',
  'gpt-5-mini',
  'gpt-5-nano',
  'gpt-5-2025-08-07',
  'gpt-5.1',
  'gpt-5.2',
  'gpt-5.4',
  'gpt-5.4-mini',
  'gpt-5.4-nano-2026-03-17',
  'gpt-5.3-codex',
  'gpt-6-astra',
  'gpt-6.1-terra',
  'gpt-5.6',
  'gpt-5.6-sol',
  'gpt-5.6-luna',
  'gpt-5.5-2026-04-23',
  'gpt-6-sol',
  'gpt-6-luna',
  'claude-opus-4-5',
  'claude-opus-4-5-20251101',
  'claude-opus-4-6',
  'claude-opus-4-8',
  'claude-sonnet-5',
];

describe('every model of the table', () => {
  const names = LISTED_MODELS.flatMap((model) =>
    [model.id, ...(model.aliases ?? [])].map((name) => ({ name, model })),
  );

  it('holds every model the vendors document as served', () => {
    const served = new Set(names.map(({ name }) => name));
    expect(DOCUMENTED.filter((name) => !served.has(name))).toEqual([]);
  });

  it('is served by its id and each alias on its own API, listed (OpenAI: every snapshot), and its output cap refused above it and taken up to it', async () => {
    const { openai, anthropic } = await serve();
    const claudes: string[] = [];
    for await (const model of anthropic.models.list()) claudes.push(model.id);
    const gpts: string[] = [];
    for await (const model of openai.models.list()) gpts.push(model.id);
    // Anthropic lists each model once, by its id; OpenAI lists every snapshot a user may pin.
    for (const model of LISTED_MODELS)
      if (model.vendor === 'anthropic') expect(claudes).toContain(model.id);
      else expect(gpts).toEqual(expect.arrayContaining([model.id, ...(model.aliases ?? [])]));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...names),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.boolean(),
        async ({ name, model }, offset, over) => {
          const cap = model.maxOutputTokens;
          // Over: cap+1 upwards; else cap downwards (never below 16, the Responses API's least).
          const asked = over ? cap + 1 + offset : Math.max(16, cap - offset);
          if (model.vendor === 'anthropic') {
            const retrieved = await anthropic.models.retrieve(name);
            expect(retrieved).toMatchObject({ id: model.id, max_tokens: cap });
            const answer = await refusal(
              anthropic.messages
                .stream({ model: name, max_tokens: asked, messages: [{ role: 'user', content: HELLO }] })
                .finalMessage(),
            );
            if (over) expect(answer?.message).toContain(`max_tokens: ${asked} > ${cap}`);
            else expect(answer).toBeUndefined();
          } else {
            // OpenAI answers a snapshot by its own name; Anthropic an alias by the model's id.
            expect((await openai.models.retrieve(name)).id).toBe(name);
            const answer = await refusal(
              openai.responses.create({ model: name, max_output_tokens: asked, input: HELLO }),
            );
            if (over) expect(answer?.message).toContain(`at most ${cap} completion tokens`);
            else expect(answer).toBeUndefined();
          }
        },
      ),
      { numRuns: Math.max(60, names.length * 2) },
    );
  });
});

describe('NAME[=WINDOW[/CAP]], as --model and provider.models take it', () => {
  const nameChar = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-.:_/@'.split(''));
  const name = fc
    .string({ unit: nameChar, minLength: 1, maxLength: PROVIDER_LIMITS.maxModelNameChars })
    .filter((text) => modelNamed(text) === undefined);

  it('any name with a window and a cap within their bounds is read back as given', () => {
    fc.assert(
      fc.property(
        name,
        fc.integer({ min: 1, max: PROVIDER_LIMITS.maxModelContextWindow }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (model, window, share) => {
          const cap = Math.max(1, Math.floor(window * share));
          expect(parseModelSpec(`${model}=${window}/${cap}`)).toEqual({
            name: model,
            contextWindow: window,
            maxOutputTokens: cap,
          });
          expect(parseModelSpec(model)).toEqual({ name: model });
        },
      ),
    );
  });

  it('a window or cap out of bounds or not a whole number, or a name with a space, is refused with its reason', () => {
    const badNumber = fc.oneof(
      fc.constant('0'),
      fc.integer({ min: PROVIDER_LIMITS.maxModelContextWindow + 1 }).map(String),
      fc.constantFrom('-5', '1.5', '1e6', '', ' 100', 'many', '0x10'),
    );
    fc.assert(
      fc.property(name, badNumber, fc.boolean(), (model, bad, asWindow) => {
        const spec = asWindow
          ? `${model}=${bad}/1`
          : `${model}=1000/${bad === '0' ? '0' : `${bad}9999999999`}`;
        const reason = parseModelSpec(spec);
        expect(typeof reason).toBe('string');
        expect(reason).toContain(asWindow ? 'WINDOW:' : 'CAP:');
        expect(reason).toContain('docs/limits.md');
      }),
    );
    fc.assert(
      fc.property(name, name, (left, right) => {
        expect(parseModelSpec(`${left} ${right}=100/10`)).toMatch(/^expected NAME\[=WINDOW\[\/CAP\]\]/);
      }),
    );
  });
});
