/**
 * Large model-request bodies (issue 49: no request holds the event loop): from
 * PROVIDER_LIMITS.jsonWorkers.fromBytes on, `provider serve` parses a body in a worker thread and
 * rebuilds it on the main thread a piece at a time. Through the real server: the event loop is
 * held far less long than when the main thread parses the same bodies, and the answers (a good
 * body, a malformed one) are the ones planned from the same body parsed on the main thread.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIMITS } from '../src/base/limits.ts';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/real.ts';
import { VirtualClock } from '../src/clock/virtual.ts';
import { ProviderEmulator, requestInProcess, startProviderServer } from '../src/provider/index.ts';
import { jsonWorkers } from '../src/provider/json-workers.ts';
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

  it('property: any JSON value is rebuilt as JSON.parse gives it, cut into pieces of 16 characters', async () => {
    const workers = jsonWorkers(2, 16);
    closing.push(workers);
    const immediately = (step: () => void) => setImmediate(step);
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        const text = JSON.stringify(value);
        const parsed = await workers.parse(new TextEncoder().encode(text), immediately);
        expect(parsed.ok).toBe(true);
        // Same values, same key order, `__proto__` kept as a key.
        expect(JSON.stringify(parsed.ok && parsed.value)).toBe(JSON.stringify(JSON.parse(text)));
      }),
      { numRuns: 300 },
    );
    // And a key named __proto__ stays a key, not the object's prototype.
    const parsed = await workers.parse(
      new TextEncoder().encode(`{"a":{"__proto__":{"p":1},"b":"${'y'.repeat(40)}"}}`),
      immediately,
    );
    const a = (parsed.ok ? parsed.value : undefined) as { a: Record<string, unknown> };
    expect(Object.keys(a.a)).toEqual(['__proto__', 'b']);
    expect(Object.getPrototypeOf(a.a)).toBe(Object.prototype);
  });
});
