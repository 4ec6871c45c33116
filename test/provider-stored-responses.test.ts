/**
 * The Responses API's stored responses (docs/provider-emulator.md, "Stored responses"), through
 * the official openai SDK against a served emulator: `previous_response_id`, `GET` and `DELETE
 * /v1/responses/{id}`, `store: false`, and OpenAI's refusals. The invariant: going on from a stored
 * response is the same request as sending its whole context again, in what it costs (input and
 * cached tokens) and in what comes back.
 */
import fc from 'fast-check';
import type OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { RenderInput } from '../src/provider/render.ts';
import { StoredResponses } from '../src/provider/stored-responses.ts';
import { closeSdkServers, serveWithSdks } from './helpers/provider-sdk.ts';

afterEach(closeSdkServers);

const TOOLS = [
  { type: 'function' as const, name: 'shell', strict: false, parameters: { type: 'object', properties: {} } },
];
type Input = OpenAI.Responses.ResponseInputItem;
type Response = OpenAI.Responses.Response;

/** A response's output as the input items a client resends. */
function asInput(response: Response): Input[] {
  const items: Input[] = [];
  for (const item of response.output)
    if (item.type === 'message')
      items.push({
        role: 'assistant',
        content: item.content.flatMap((part) => (part.type === 'output_text' ? [part.text] : [])).join(''),
      });
    else if (item.type === 'function_call')
      items.push({
        type: 'function_call',
        call_id: item.call_id,
        name: item.name,
        arguments: item.arguments,
      });
  return items;
}

/** A response's output as `item_reference`s to its items, as the Vercel AI SDK resends them. */
const asReferences = (response: Response): Input[] =>
  response.output.flatMap((item) =>
    item.type === 'message' || item.type === 'function_call'
      ? [{ type: 'item_reference' as const, id: item.id! }]
      : [],
  );

/** The tool outputs answering a response's calls. */
const outputsFor = (response: Response): Input[] =>
  response.output.flatMap((item) =>
    item.type === 'function_call'
      ? [{ type: 'function_call_output' as const, call_id: item.call_id, output: 'fleetbench-tool-ok' }]
      : [],
  );

async function create(
  openai: OpenAI,
  body: OpenAI.Responses.ResponseCreateParamsNonStreaming,
  stream: boolean,
): Promise<Response> {
  if (!stream) return openai.responses.create(body);
  return openai.responses.stream({ ...body, stream: true }).finalResponse();
}

describe('stored responses', () => {
  it('goes on from a stored response, reads it back, deletes it; store: false keeps nothing', async () => {
    const { openai } = await serve();
    const first = await openai.responses.create({
      model: 'gpt-5',
      input: 'fleetbench-script: tool-call',
      tools: TOOLS,
    });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toBeDefined();
    const next = await openai.responses.create({
      model: 'gpt-5',
      previous_response_id: first.id,
      tools: TOOLS,
      input: outputsFor(first),
    });
    // The first request's input, its output and the tool output are all the second's input.
    expect(next.usage!.input_tokens).toBeGreaterThan(first.usage!.input_tokens + first.usage!.output_tokens);
    const read = await openai.responses.retrieve(first.id);
    expect(read).toEqual(first);
    // A tool output that answers no call in the chain, as OpenAI refuses it.
    await expect(
      openai.responses.create({
        model: 'gpt-5',
        previous_response_id: first.id,
        input: [{ type: 'function_call_output', call_id: 'call_none', output: 'x' }],
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { message: 'No tool call found for function call output with call_id call_none.' },
    });
    const deleted = (await openai.delete(`/responses/${first.id}`)) as { id: string; deleted: boolean };
    expect(deleted).toEqual({ id: first.id, object: 'response', deleted: true });
    await expect(openai.responses.retrieve(first.id)).rejects.toMatchObject({
      status: 404,
      error: { message: `Response with id '${first.id}' not found.`, type: 'invalid_request_error' },
    });
    await expect(
      openai.responses.create({ model: 'gpt-5', previous_response_id: first.id, input: 'again' }),
    ).rejects.toMatchObject({
      status: 400,
      error: {
        message: `Previous response with id '${first.id}' not found.`,
        param: 'previous_response_id',
        code: 'previous_response_not_found',
      },
    });
    // A response whose first went away still goes on: it keeps what it was given.
    const third = await openai.responses.create({
      model: 'gpt-5',
      previous_response_id: next.id,
      tools: TOOLS,
      input: 'on',
    });
    expect(third.usage!.input_tokens).toBeGreaterThan(next.usage!.input_tokens + next.usage!.output_tokens);
    const unstored = await openai.responses.create({ model: 'gpt-5', input: 'x', store: false });
    await expect(openai.responses.retrieve(unstored.id)).rejects.toMatchObject({ status: 404 });
    await expect(
      openai.responses.create({ model: 'gpt-5', previous_response_id: unstored.id, input: 'y' }),
    ).rejects.toMatchObject({ status: 400, error: { code: 'previous_response_not_found' } });
    await expect(
      openai.responses.create({ model: 'gpt-5', input: 'x', previous_response_id: 5 as unknown as string }),
    ).rejects.toMatchObject({ status: 400, error: { param: 'previous_response_id', code: 'invalid_type' } });
    // A streamed response is stored once its stream has ended.
    const streamed = await openai.responses.stream({ model: 'gpt-5', input: 'streamed' }).finalResponse();
    const readStreamed = await openai.responses.retrieve(streamed.id);
    expect([readStreamed.id, readStreamed.status, readStreamed.output_text]).toEqual([
      streamed.id,
      'completed',
      streamed.output_text,
    ]);
    expect(readStreamed.usage).toEqual(streamed.usage);
  });

  it('an id no response could have (malformed, or past the 256 characters a route takes) is a 404', async () => {
    const { url } = await serve();
    for (const id of ['%E0%A4%A', 'resp_%', `resp_${'x'.repeat(300)}`])
      for (const method of ['GET', 'DELETE']) {
        const res = await fetch(`${url}/v1/responses/${id}`, {
          method,
          headers: { authorization: 'Bearer k' },
        });
        expect([method, id.slice(0, 12), res.status]).toEqual([method, id.slice(0, 12), 404]);
        const body = (await res.json()) as { error: { type: string } };
        expect(body.error.type).toBe('invalid_request_error');
      }
  });

  it("an item_reference is the stored item it names; one not kept is OpenAI's 404", async () => {
    const { openai } = await serve();
    const first = await openai.responses.create({
      model: 'gpt-5',
      input: 'fleetbench-script: tool-call',
      tools: TOOLS,
    });
    const call = first.output.find((item) => item.type === 'function_call')!;
    // The call referenced by its item id, its output answering it: accepted, as OpenAI accepts it.
    const next = await openai.responses.create({
      model: 'gpt-5',
      tools: TOOLS,
      input: [
        { role: 'user', content: 'fleetbench-script: tool-call' },
        { type: 'item_reference', id: call.id! },
        { type: 'function_call_output', call_id: call.call_id, output: 'ok' },
      ],
    });
    expect(next.status).toBe('completed');
    const unstored = await openai.responses.create({ model: 'gpt-5', input: 'x', store: false });
    await expect(
      openai.responses.create({
        model: 'gpt-5',
        input: [{ type: 'item_reference', id: unstored.output[0]!.id! }],
      }),
    ).rejects.toMatchObject({
      status: 404,
      error: {
        message: `Item with id '${unstored.output[0]!.id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
        param: 'input',
      },
    });
    // An output with no call in the input nor in what it references: OpenAI's 400.
    await expect(
      openai.responses.create({
        model: 'gpt-5',
        input: [
          { type: 'item_reference', id: next.output[0]!.id! },
          { type: 'function_call_output', call_id: 'call_none', output: 'x' },
        ],
      }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('going on from a stored response costs and answers as resending its whole context', async () => {
    const step = fc.record({
      prompt: fc.constantFrom(
        'fleetbench-script: tool-call',
        'go on',
        'fleetbench-script: coding',
        'and then?',
      ),
      answerCalls: fc.boolean(),
      stream: fc.boolean(),
      cacheKey: fc.boolean(),
      // Instructions are the request's own: OpenAI does not carry earlier ones over.
      instructions: fc.constantFrom(
        undefined,
        'Be brief.',
        `You are careful. ${'Check each change. '.repeat(200)}`,
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        const chained = await serve();
        const resent = await serve();
        const referenced = await serve();
        let history: Input[] = [];
        let referencedHistory: Input[] = [];
        let last: Response | undefined;
        for (const s of steps) {
          const outputs = last && s.answerCalls ? outputsFor(last) : [];
          const own: Input[] = outputs.length > 0 ? outputs : [{ role: 'user', content: s.prompt }];
          const common = {
            model: 'gpt-5',
            tools: TOOLS,
            ...(s.cacheKey ? { prompt_cache_key: 'k' } : {}),
            ...(s.instructions !== undefined ? { instructions: s.instructions } : {}),
          };
          const a = await create(
            chained.openai,
            { ...common, input: own, ...(last ? { previous_response_id: last.id } : {}) },
            s.stream,
          );
          history = [...history, ...own];
          const b = await create(resent.openai, { ...common, input: history }, s.stream);
          expect(a.usage).toEqual(b.usage);
          expect(a.output).toEqual(b.output);
          history = [...history, ...asInput(b)];
          referencedHistory = [...referencedHistory, ...own];
          const c = await create(referenced.openai, { ...common, input: referencedHistory }, s.stream);
          expect(c.usage).toEqual(b.usage);
          expect(c.output).toEqual(b.output);
          referencedHistory = [...referencedHistory, ...asReferences(c)];
          last = a;
        }
        await closeSdkServers();
      }),
      { numRuns: 12 },
    );
  });
});

describe('the store keeps within its bounds', () => {
  const render = {} as RenderInput;
  it('holds each item once, lets go what no kept response reaches, never more than its bounds; least recently used first', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            chars: fc.integer({ min: 0, max: 300 }),
            items: fc.integer({ min: 0, max: 3 }),
            goOn: fc.nat(6),
            use: fc.nat(6),
            drop: fc.boolean(),
          }),
          { maxLength: 80 },
        ),
        (ops) => {
          const max = { maxResponses: 5, maxChars: 1_000 };
          const store = new StoredResponses(max);
          const made: string[] = [];
          ops.forEach((op, i) => {
            const id = `resp_${i}`;
            // Go on from one made before (it may be gone: then from none), or use one (LRU).
            const previous =
              op.goOn < made.length ? store.get(made[made.length - 1 - op.goOn]!, true) : undefined;
            if (op.use < made.length) store.get(made[made.length - 1 - op.use]!, true);
            const items = Array.from({ length: op.items }, (_, k) => ({
              kind: 'prompt' as const,
              text: k === 0 ? 'x'.repeat(op.chars) : '',
            }));
            store.put(id, previous, items, render, [[`msg_${i}`, { kind: 'assistant-text', text: 'y' }]]);
            made.push(id);
            if (op.drop) store.delete(made[0]!);
            const kept = made.filter((k) => store.get(k) !== undefined);
            expect(kept.length).toBeLessThanOrEqual(max.maxResponses);
            // What is held: every response a kept one reaches, each once.
            const reached = new Map<string, number>();
            for (const k of kept)
              for (let r = store.get(k); r !== undefined; r = r.previous) reached.set(r.id, r.ownChars);
            const held = [...reached.values()].reduce((x, y) => x + y, 0);
            expect(store.heldChars()).toBe(held);
            expect(held).toBeLessThanOrEqual(max.maxChars);
            // Only a kept response's items can be referred to.
            for (const m of made)
              expect(store.item(`msg_${m.slice(5)}`) !== undefined).toBe(store.get(m) !== undefined);
          });
        },
      ),
    );
  });
});

const serve = () => serveWithSdks({}, 5);
