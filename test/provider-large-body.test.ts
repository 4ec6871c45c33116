/**
 * Large model-request bodies (issue 49: no request holds the event loop): from
 * PROVIDER_LIMITS.jsonWorkers.fromBytes on, `provider serve` parses a body in a worker thread and
 * rebuilds on the main thread, a piece at a time, only the fields the emulator reads
 * (REQUEST_FIELDS). Through the real server, the answers (a good body, a malformed one) are the
 * ones planned from the same body parsed on the main thread; and properties: the readers read no
 * other field, and sessions of generated requests get the same answers and trace either way.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIMITS } from '../src/base/limits.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { VirtualClock } from '../src/clock/virtual.ts';
import {
  REQUEST_FIELDS,
  readChatRequestSteps,
  readMessagesRequestSteps,
  readResponsesRequestSteps,
  VendorError,
} from '../src/provider/conversation.ts';
import { ProviderEmulator, requestInProcess, startProviderServer } from '../src/provider/index.ts';
import { jsonWorkers } from '../src/provider/json-workers.ts';
import { runToEnd } from '../src/provider/steps.ts';
import { MemorySink } from '../src/trace/writer.ts';

const closing: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((thing) => thing.close()));
});

const HEADERS = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };

/**
 * A Messages body of about `mib` MiB exercising what the rebuilding must keep: system blocks,
 * content arrays, a tool_use input with nested objects and a `__proto__` key, one string larger
 * than a piece, text outside Latin-1, and thousands of small messages.
 */
function largeBody(mib: number): string {
  const history: string[] = [];
  const text = 'the quick brown fox jumps over the lazy dog, 狐狸跳过懒狗 🦊 '.repeat(14);
  let size = 0;
  for (let i = 0; size < mib * 1024 * 1024 - 600_000; i++) {
    const message =
      i % 3 === 2
        ? `{"role":"assistant","content":[{"type":"text","text":"${i}"},{"type":"tool_use","id":"t${i}","name":"shell","input":{"command":["ls","-la"],"__proto__":{"polluted":true},"n":${i}.5,"deep":{"a":[1,[2,[3,null,false]]]}}}]}`
        : i % 3 === 0 && i > 0
          ? `{"role":"user","content":[{"type":"tool_result","tool_use_id":"t${i - 1}","content":"${i} ${text}"}]}`
          : `{"role":"user","content":"${i} ${text}"}`;
    history.push(message);
    size += Buffer.byteLength(message);
  }
  const long = 'x'.repeat(400_000);
  return `{"model":"claude-sonnet-4-5","max_tokens":100,"system":[{"type":"text","text":"sys ${long}"}],"messages":[${history.join(',')},{"role":"user","content":"last"}]}`;
}

/**
 * The answers the emulator plans from `body` parsed on the main thread, sent `times` times in a
 * row: in-process, a fresh emulator.
 */
async function inProcess(path: string, body: string, headers: Record<string, string>, times = 1) {
  const emulator = new ProviderEmulator({
    clock: new VirtualClock(),
    rng: new Rng(5),
    trace: new MemorySink(),
  });
  const answers: Array<{ status: number; body: string }> = [];
  for (let i = 0; i < times; i++) {
    const answer = await requestInProcess(emulator, { method: 'POST', path, headers, body });
    answers.push({ status: answer.status, body: answer.body.replace(/req_[0-9a-z]+/g, 'req') });
  }
  return answers;
}

/** A served emulator; `offThreadFromBytes: Infinity` parses every body on the main thread. */
async function served(offThreadFromBytes?: number) {
  const emulator = new ProviderEmulator({ clock: new RealClock(), rng: new Rng(5), trace: new MemorySink() });
  const server = await startProviderServer({ emulator, offThreadFromBytes });
  closing.push(server);
  return server.url;
}

async function post(url: string, path: string, body: string, headers: Record<string, string> = HEADERS) {
  const response = await fetch(`${url}${path}`, { method: 'POST', headers, body });
  return { status: response.status, body: await response.text() };
}

/**
 * A Messages body of about `mib` MiB that is slow to parse and quick to plan: a short prompt, and
 * small objects by the hundred thousand under a field the emulator does not read.
 */
function slowToParse(mib: number): string {
  const item = '{"id":12345,"ok":true,"tags":["a","b"]},';
  const items = item.repeat(Math.floor((mib * 1024 * 1024) / item.length) - 1);
  return `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"Hello"}],"extra":[${items}null]}`;
}

/**
 * `text`'s UTF-8 bytes in chunks of `size` bytes (a character may be cut between two), each with
 * memory of its own (as a socket reads them) or all views of one buffer.
 */
function chunked(text: string, size: number, own: boolean): Uint8Array[] {
  const bytes = new TextEncoder().encode(text);
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; at += size) {
    const chunk = bytes.subarray(at, at + size);
    chunks.push(own ? chunk.slice() : chunk);
  }
  return chunks;
}

describe('large bodies parsed off the main thread', () => {
  it('two 15 MiB bodies slow to parse, on workers and on the main thread: the same answers as in-process', async () => {
    // How long the loop is held either way is a figure of `npm run bench -- provider-hold`
    // (docs/performance.md): on a busy machine its GC and scheduler pauses swamp it, so a test
    // asserts only that both paths answer as the emulator does in-process.
    const body = slowToParse(15);
    expect(Buffer.byteLength(body)).toBeGreaterThan(PROVIDER_LIMITS.jsonWorkers.fromBytes * 14);
    const path = '/v1/messages/count_tokens';
    const expected = await inProcess(path, body, HEADERS, 2);
    expect(expected[0]?.status).toBe(200);
    for (const offThread of [undefined, Infinity]) {
      const url = await served(offThread);
      const answers = await Promise.all([post(url, path, body), post(url, path, body)]);
      expect(
        answers.map((answer) => ({ ...answer, body: answer.body.replace(/req_[0-9a-z]+/g, 'req') })),
      ).toEqual(expected);
    }
  }, 120_000);

  it('a 15 MiB history of every kind of block, sent twice: the answers are the in-process ones', async () => {
    const body = largeBody(15);
    expect(Buffer.byteLength(body)).toBeGreaterThan(PROVIDER_LIMITS.jsonWorkers.fromBytes * 14);
    const path = '/v1/messages/count_tokens';
    // The second count of the same texts reuses the first's exact counts: a different figure.
    const expected = await inProcess(path, body, HEADERS, 2);
    // Over the model's window: the 400 names the prompt's token count, counted from every text.
    for (const answer of expected)
      expect(answer).toMatchObject({ status: 400, body: /prompt is too long: \d+ tokens/ });
    const url = await served();
    const answers: Array<{ status: number; body: string }> = [];
    for (let i = 0; i < 2; i++) answers.push(await post(url, path, body));
    expect(
      answers.map((answer) => ({ ...answer, body: answer.body.replace(/req_[0-9a-z]+/g, 'req') })),
    ).toEqual(expected);
  }, 60_000);

  it('a malformed 15 MiB body gets the 400 a small malformed body gets, with the parser’s own message', async () => {
    const url = await served();
    const cut = largeBody(15).slice(0, -3);
    const broken = `${largeBody(15).slice(0, -2)}x}`;
    for (const [path, headers] of [
      ['/v1/messages', HEADERS],
      ['/v1/chat/completions', { authorization: 'Bearer k', 'content-type': 'application/json' }],
    ] as const) {
      for (const body of [cut, broken, '{"model": ']) {
        const [expected] = await inProcess(path, body, headers);
        expect(expected?.status).toBe(400);
        const answer = await post(url, path, body, headers);
        expect({ ...answer, body: answer.body.replace(/req_[0-9a-z]+/g, 'req') }).toEqual(expected);
      }
    }
  }, 60_000);

  it('property: any JSON value, sent in chunks of any size, is rebuilt as JSON.parse gives it, cut into pieces of 16 characters', async () => {
    const workers = jsonWorkers({ workers: 2, pieceChars: 16 });
    closing.push(workers);
    const immediately = (step: () => void) => setImmediate(step);
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue(),
        fc.integer({ min: 1, max: 64 }),
        fc.boolean(),
        async (value, size, own) => {
          const text = JSON.stringify(value);
          const parsed = await workers.parse(chunked(text, size, own), immediately);
          expect(parsed.ok).toBe(true);
          // Same values, same key order, `__proto__` kept as a key.
          expect(JSON.stringify(parsed.ok && parsed.value)).toBe(JSON.stringify(JSON.parse(text)));
        },
      ),
      { numRuns: 300 },
    );
    // And a key named __proto__ stays a key, not the object's prototype.
    const parsed = await workers.parse(
      [new TextEncoder().encode(`{"a":{"__proto__":{"p":1},"b":"${'y'.repeat(40)}"}}`)],
      immediately,
    );
    const a = (parsed.ok ? parsed.value : undefined) as { a: Record<string, unknown> };
    expect(Object.keys(a.a)).toEqual(['__proto__', 'b']);
    expect(Object.getPrototypeOf(a.a)).toBe(Object.prototype);
  });
});

// --- What the worker hands over: only the fields the emulator reads ------------------------------

/** A value of any JSON kind, small, for a field whose type the readers check. */
const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined));
const text = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('hello world', 'ls -la', '狐狸 🦊'));
const cacheControl = fc.option(fc.constantFrom({ type: 'ephemeral' }, { type: 'ephemeral', ttl: '1h' }), {
  nil: undefined,
});
const ids = fc.constantFrom('a', 'b', 'c');

const anthropicBlock = fc.oneof(
  fc.record({ type: fc.constant('text'), text, cache_control: cacheControl }, { requiredKeys: ['type'] }),
  fc.record(
    { type: fc.constant('tool_use'), id: ids, name: text, input: anyValue },
    { requiredKeys: ['type'] },
  ),
  fc.record(
    {
      type: fc.constant('tool_result'),
      tool_use_id: ids,
      content: fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }))),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record({ type: fc.constantFrom('thinking', 'image', 'document'), data: text }),
  anyValue,
);
const messagesBody = fc.record(
  {
    model: fc.oneof(fc.constant('claude-sonnet-4-5'), anyValue),
    max_tokens: fc.oneof(fc.constantFrom(100, 1, 32_000), anyValue),
    messages: fc.oneof(
      fc.array(
        fc.record({
          role: fc.oneof(fc.constantFrom('user', 'assistant', 'system'), anyValue),
          content: fc.oneof(text, fc.array(anthropicBlock, { maxLength: 4 }), anyValue),
        }),
        { maxLength: 6 },
      ),
      anyValue,
    ),
    system: fc.oneof(
      text,
      fc.array(fc.record({ type: fc.constant('text'), text, cache_control: cacheControl })),
    ),
    tools: fc.array(
      fc.record({ name: text, description: text, input_schema: anyValue, cache_control: cacheControl }),
    ),
    stop_sequences: fc.oneof(fc.array(text, { maxLength: 3 }), anyValue),
    stream: fc.boolean(),
  },
  { requiredKeys: [] },
);

const chatBody = fc.record(
  {
    model: fc.oneof(fc.constant('gpt-5.5'), anyValue),
    messages: fc.oneof(
      fc.array(
        fc.oneof(
          fc.record({
            role: fc.constantFrom('system', 'developer', 'user', 'assistant', 'function'),
            content: text,
          }),
          fc.record({
            role: fc.constant('assistant'),
            content: fc.option(text, { nil: null }),
            tool_calls: fc.array(
              fc.record({
                id: ids,
                type: fc.constant('function'),
                function: fc.record({ name: text, arguments: text }),
              }),
              { maxLength: 2 },
            ),
          }),
          fc.record({ role: fc.constant('tool'), tool_call_id: ids, content: text }),
          fc.record({ role: anyValue, content: anyValue }),
        ),
        { maxLength: 6 },
      ),
      anyValue,
    ),
    max_tokens: fc.oneof(fc.constantFrom(100, 0), anyValue),
    max_completion_tokens: fc.oneof(fc.constantFrom(50), anyValue),
    stop: fc.oneof(text, fc.array(text, { maxLength: 5 }), anyValue),
    stream: fc.boolean(),
    stream_options: fc.oneof(fc.record({ include_usage: fc.boolean() }), anyValue),
    tools: fc.array(
      fc.record({ type: fc.constant('function'), function: fc.record({ name: text, parameters: anyValue }) }),
    ),
    prompt_cache_key: fc.oneof(text, anyValue),
    prompt_cache_retention: fc.constantFrom('24h', 'in_memory'),
  },
  { requiredKeys: [] },
);

const responsesBody = fc.record(
  {
    model: fc.oneof(fc.constant('gpt-5.5'), anyValue),
    instructions: fc.oneof(text, anyValue),
    input: fc.oneof(
      text,
      fc.array(
        fc.oneof(
          fc.record({
            role: fc.constantFrom('user', 'assistant', 'developer'),
            content: fc.oneof(text, fc.array(fc.record({ type: fc.constant('input_text'), text }))),
          }),
          fc.record({
            type: fc.constantFrom('function_call', 'custom_tool_call', 'local_shell_call'),
            call_id: ids,
            name: text,
            arguments: text,
            input: anyValue,
          }),
          fc.record({
            type: fc.constantFrom('function_call_output', 'custom_tool_call_output'),
            call_id: ids,
            output: fc.oneof(text, anyValue),
          }),
          fc.record({ type: fc.constantFrom('reasoning', 'web_search_call'), id: text }),
          anyValue,
        ),
        { maxLength: 6 },
      ),
      anyValue,
    ),
    previous_response_id: fc.oneof(text, anyValue),
    max_output_tokens: fc.oneof(fc.constantFrom(16, 15, 4096), anyValue),
    tools: fc.oneof(
      fc.array(fc.record({ type: fc.constant('function'), name: text, parameters: anyValue })),
      anyValue,
    ),
    stream: fc.boolean(),
    prompt_cache_key: fc.oneof(text, anyValue),
  },
  { requiredKeys: [] },
);

/** Fields none of the readers reads, with values that would be costly to rebuild. */
const unread = fc.dictionary(
  fc.constantFrom('metadata', 'extra', 'user', 'temperature', 'reasoning', '__proto__', 'constructor'),
  fc.jsonValue({ maxDepth: 3 }),
  { maxKeys: 3 },
);

const OPENAI = { authorization: 'Bearer k' };
const ANTHROPIC = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
/** A request of one of the APIs: its route, headers and body's text (now and then not an object, or not JSON). */
const apiRequest = fc
  .tuple(
    fc.oneof(
      fc.record({
        path: fc.constantFrom('/v1/messages', '/v1/messages/count_tokens'),
        headers: fc.constant(ANTHROPIC),
        body: messagesBody,
      }),
      fc.record({ path: fc.constant('/v1/chat/completions'), headers: fc.constant(OPENAI), body: chatBody }),
      fc.record({ path: fc.constant('/v1/responses'), headers: fc.constant(OPENAI), body: responsesBody }),
    ),
    unread,
    fc.constantFrom('object', 'object', 'object', 'object', 'array', 'string', 'number', 'broken'),
  )
  .map(([request, extra, shape]) => {
    const body = { ...extra, ...request.body };
    const text =
      shape === 'object'
        ? JSON.stringify(body)
        : shape === 'array'
          ? JSON.stringify([body])
          : shape === 'string'
            ? JSON.stringify(JSON.stringify(body))
            : shape === 'number'
              ? '12'
              : JSON.stringify(body).slice(0, -1);
    return { path: request.path, headers: request.headers, text };
  });

describe('a large body is handed over as the fields the emulator reads', () => {
  it('property: each reader reads no top-level field outside REQUEST_FIELDS', () => {
    const readers = {
      '/v1/messages': readMessagesRequestSteps,
      '/v1/messages/count_tokens': readMessagesRequestSteps,
      '/v1/chat/completions': readChatRequestSteps,
      '/v1/responses': readResponsesRequestSteps,
    };
    fc.assert(
      fc.property(apiRequest, ({ path, text }) => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          return;
        }
        if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
        const read = new Set<string | symbol>();
        const watched = new Proxy(body as Record<string, unknown>, {
          get: (target, key, receiver) => {
            read.add(key);
            return Reflect.get(target, key, receiver);
          },
          has: (target, key) => {
            read.add(key);
            return Reflect.has(target, key);
          },
          ownKeys: (target) => {
            read.add('(every key)');
            return Reflect.ownKeys(target);
          },
        });
        try {
          runToEnd(readers[path as keyof typeof readers](watched));
        } catch (error) {
          if (!(error instanceof VendorError)) throw error;
        }
        expect([...read].filter((key) => !REQUEST_FIELDS.includes(key as string))).toEqual([]);
      }),
      { numRuns: 2_000 },
    );
  });

  it('property: a session of requests planned from what the worker hands over gets the answers, writes and trace of the same requests parsed whole, byte for byte', async () => {
    // Pieces of 64 characters: the rebuilding cuts even these small bodies.
    const workers = jsonWorkers({ pieceChars: 64, keep: REQUEST_FIELDS });
    closing.push(workers);
    const statuses = new Set<number>();
    const immediately = (step: () => void) => setImmediate(step);
    await fc.assert(
      fc.asyncProperty(
        fc.array(apiRequest, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 1_000 }),
        async (requests, seed) => {
          const session = () => {
            const trace = new MemorySink();
            return {
              trace,
              emulator: new ProviderEmulator({ clock: new VirtualClock(), rng: new Rng(seed), trace }),
            };
          };
          const whole = session();
          const handedOver = session();
          for (const { path, headers, text } of requests) {
            const bodyBytes = Buffer.byteLength(text);
            const parsedBody = await workers.parse(chunked(text, 100, true), immediately);
            const expected = await requestInProcess(whole.emulator, {
              method: 'POST',
              path,
              headers,
              body: text,
              bodyBytes,
            });
            const answer = await requestInProcess(handedOver.emulator, {
              method: 'POST',
              path,
              headers,
              body: '',
              parsedBody,
              bodyBytes,
            });
            expect(answer).toEqual(expected);
            statuses.add(expected.status);
          }
          expect(JSON.stringify(handedOver.trace.records)).toBe(JSON.stringify(whole.trace.records));
        },
      ),
      { numRuns: 150 },
    );
    // The generated requests reach answers as well as refusals.
    expect([...statuses].sort()).toEqual(expect.arrayContaining([200, 400]));
  }, 120_000);
});
