/**
 * Request bodies parsed with their recurring values remembered (src/provider/recurring-values.ts):
 * a body parsed so is what JSON.parse gives for it (values, key order, the error of a broken
 * body), whatever was parsed before and whatever had to be forgotten; what is remembered stays
 * within its bounds; and the emulator answers and records a request given as bytes (the HTTP
 * binding's way) exactly as the same request given as text.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock, VirtualClock } from '../src/clock/index.ts';
import { ProviderEmulator, startProviderServer } from '../src/provider/index.ts';
import { RECURRING_FROM_BYTES, RecurringValues } from '../src/provider/recurring-values.ts';
import type { ParsedBody } from '../src/provider/types.ts';

function wholeParse(bytes: Buffer): ParsedBody {
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** The same result: deep equality (-0 apart from 0) and the same key order everywhere. */
function expectSame(got: ParsedBody, want: ParsedBody): void {
  expect(got.ok).toBe(want.ok);
  if (!got.ok || !want.ok) {
    expect(got).toEqual(want);
    return;
  }
  expect(isDeepStrictEqual(got.value, want.value)).toBe(true);
  expect(JSON.stringify(got.value)).toBe(JSON.stringify(want.value));
}

/** Long texts (past the memo's threshold) with the characters JSON escapes, and non-ASCII. */
const longText = fc
  .array(
    fc.constantFrom('agent ', 'the "quoted" ', 'back\\slash ', 'line\n', 'café ', '模型 ', '🙂', '\u0000'),
    {
      minLength: 150,
      maxLength: 400,
    },
  )
  .map((parts) => parts.join(''));
/** A value that may be long: a text, a message, a tool, or any small JSON. */
const piece = fc.oneof(
  longText,
  longText.map((text) => ({ role: 'user', content: [{ type: 'text', text }] })),
  longText.map((description) => ({ name: 'Bash', description, input_schema: { type: 'object' } })),
  fc.jsonValue({ maxDepth: 3 }),
);
const key = fc.oneof(
  fc.constantFrom(
    'model',
    'system',
    'tools',
    'messages',
    'stream',
    'max_tokens',
    '1',
    'a"b',
    '__proto__',
    'é',
  ),
  fc.string({ maxLength: 6 }),
);
/** A body's members, drawn from a pool shared by every body of a run (so values recur). */
const bodies = fc
  .array(piece, { minLength: 1, maxLength: 8 })
  .chain((pool) =>
    fc.array(
      fc.tuple(
        fc.array(
          fc.tuple(
            key,
            fc.oneof(
              fc.nat(pool.length - 1).map((i) => pool[i]),
              fc.array(
                fc.nat(pool.length - 1).map((i) => pool[i]),
                { maxLength: 5 },
              ),
            ),
          ),
          { maxLength: 6 },
        ),
        fc.constantFrom(undefined, 0, 2, '\t'),
      ),
      { minLength: 1, maxLength: 12 },
    ),
  )
  .map((list) =>
    list.map(([members, indent]) => {
      // Members in order, duplicates kept (JSON.parse keeps a key's first place and last value).
      const text = `{${members.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v, null, indent)}`).join(indent === undefined ? ',' : ' ,\n ')}}`;
      return Buffer.from(indent === undefined ? text : ` \n${text}\r\n`);
    }),
  );

describe('RecurringValues', () => {
  it('parses every body as JSON.parse does, whatever came before and whatever it forgot', () => {
    fc.assert(
      fc.property(bodies, fc.constantFrom(1, 3, 1_000), (list, maxEntries) => {
        const memo = new RecurringValues(maxEntries, 64 * 1024);
        // Each body twice: once to remember, once from what was remembered.
        for (const bytes of [...list, ...list]) expectSame(memo.parse(bytes), wholeParse(bytes));
        expect(memo.size.entries).toBeLessThanOrEqual(maxEntries);
        expect(memo.size.bytes).toBeLessThanOrEqual(64 * 1024);
      }),
      { numRuns: 150 },
    );
  });

  it("gives a broken body JSON.parse's own message, and never a value JSON.parse would refuse", () => {
    fc.assert(
      fc.property(
        bodies,
        fc.array(
          fc.tuple(fc.nat(), fc.constantFrom('"', '\\', ',', '}', ']', '{', ':', ' ', '', 'x', '\u00ff')),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
        (list, edits) => {
          const memo = new RecurringValues(1_000, 1024 * 1024);
          for (const bytes of list) memo.parse(bytes);
          for (const bytes of list) {
            // Each edit replaces one byte (or drops it) somewhere in a body the memo has seen.
            let text = bytes.toString('latin1');
            for (const [at, by] of edits) {
              const i = at % Math.max(1, text.length);
              text = text.slice(0, i) + by + text.slice(i + 1);
            }
            const broken = Buffer.from(text, 'latin1');
            expectSame(memo.parse(broken), wholeParse(broken));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('refuses what is not a plain object the same way: empty, arrays, a lone value, a BOM, 0x00', () => {
    const memo = new RecurringValues(10, 1024 * 1024);
    const big = JSON.stringify('x'.repeat(RECURRING_FROM_BYTES));
    for (const text of [
      '',
      ' ',
      '{}',
      '[]',
      `[${big}]`,
      big,
      '1',
      'null',
      '\ufeff{"a":1}',
      `{"a":${big}} x`,
      '{"a":1}\u0000',
    ])
      expectSame(memo.parse(Buffer.from(text)), wholeParse(Buffer.from(text)));
  });

  it('parses many members, and long runs of small elements around large ones, as JSON.parse does', () => {
    const memo = new RecurringValues(100, 1024 * 1024);
    const big = 'x'.repeat(2 * RECURRING_FROM_BYTES);
    const members = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`k${i}`, i % 10 === 0 ? big : i]),
    );
    const messages = Array.from({ length: 10_000 }, (_, i) => ({
      role: 'user',
      content: i === 5_000 ? big : `m${i}`,
    }));
    for (const value of [members, { model: 'm', messages }, { messages: [1, big, 2, 3, big, [big], 'e'] }]) {
      const bytes = Buffer.from(JSON.stringify(value, null, 1));
      for (let twice = 0; twice < 2; twice++) expectSame(memo.parse(bytes), wholeParse(bytes));
    }
  });

  it("compares a member's last value where the next body's value starts, and parses whatever differs", () => {
    const memo = new RecurringValues(100, 1024 * 1024);
    const digits = '7'.repeat(2 * RECURRING_FROM_BYTES);
    const text = 'y'.repeat(2 * RECURRING_FROM_BYTES);
    // A long number is the one value that can begin with another whole value: 777… then 7775.
    const bodies = [
      `{"n":${digits},"t":"${text}"}`,
      `{"n":${digits}5,"t":"${text}z"}`,
      `{"n":${digits},"t":"${text}"}`,
      `{"n": ${digits} ,"t":"${text}" , "u":"${text}"}`,
      `{"t":${digits},"n":"${text}"}`,
      `{"n":[${digits}],"t":{"a":"${text}"}}`,
      `{"n":[${digits}],"t":{"a":"${text}"},"x":1}`,
      `{"n":${digits}`,
    ];
    for (const body of [...bodies, ...bodies]) {
      const bytes = Buffer.from(body);
      expectSame(memo.parse(bytes), wholeParse(bytes));
    }
  });

  it('stays within its bounds: a value over the byte bound is never kept, the oldest go first', () => {
    const memo = new RecurringValues(4, 16 * 1024);
    for (let i = 0; i < 50; i++) {
      const body = Buffer.from(JSON.stringify({ a: `${i}`.padEnd(2_000 + i, 'x'), b: 'y'.repeat(40_000) }));
      expectSame(memo.parse(body), wholeParse(body));
      expect(memo.size.entries).toBeLessThanOrEqual(4);
      expect(memo.size.bytes).toBeLessThanOrEqual(16 * 1024);
    }
    // A 100 MB body: parsed, nothing of it kept.
    const huge = Buffer.from(JSON.stringify({ text: 'z'.repeat(100 * 1024 * 1024) }));
    const parsed = memo.parse(huge);
    expect(parsed.ok && (parsed.value as { text: string }).text.length).toBe(100 * 1024 * 1024);
    expect(memo.size.bytes).toBeLessThanOrEqual(16 * 1024);
  });
});

describe('the emulator given a body as bytes', () => {
  /** Claude-Code-like requests of one session: the same system prompt and tools, a growing history. */
  const session = fc.tuple(
    longText,
    fc.array(longText, { minLength: 1, maxLength: 3 }),
    fc.array(longText, { minLength: 1, maxLength: 5 }),
  );

  it('answers and records every request exactly as from its text', () => {
    fc.assert(
      fc.property(session, ([system, descriptions, prompts]) => {
        const run = (asBytes: boolean) => {
          const records: unknown[] = [];
          const emulator = new ProviderEmulator({
            clock: new VirtualClock(),
            rng: new Rng(7),
            trace: { write: (record) => records.push(record) },
          });
          const tools = descriptions.map((description, i) => ({
            name: `Tool${i}`,
            description,
            input_schema: { type: 'object' },
          }));
          const messages: unknown[] = [];
          const answers: unknown[] = [];
          for (const [i, prompt] of prompts.entries()) {
            messages.push({
              role: 'user',
              content: [{ type: 'text', text: `fleetbench-script: coding ${prompt}` }],
            });
            const text = JSON.stringify({
              model: 'claude-sonnet-4-5',
              max_tokens: 4096,
              stream: i % 2 === 0,
              system: [{ type: 'text', text: system, cache_control: { type: 'ephemeral' } }],
              tools,
              messages,
            });
            const bytes = Buffer.from(text);
            const answer = emulator.handle({
              method: 'POST',
              path: '/v1/messages',
              headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
              ...(asBytes ? { body: '', rawBody: bytes } : { body: text }),
              bodyBytes: bytes.length,
            });
            const chunks = answer.chunks;
            answers.push([answer.status, answer.headers, answer.body, chunks?.data(0, chunks.length)]);
            answer.finish('complete', 0);
            messages.push({ role: 'assistant', content: [{ type: 'text', text: `reply ${i}` }] });
          }
          return { answers, records };
        };
        expect(run(true)).toEqual(run(false));
      }),
      { numRuns: 25 },
    );
  });
});

describe('provider serve: bodies of several chunks', () => {
  it('counts 60 concurrent bodies of 130-220 KB each as in-process (joined in reused slabs, none overwritten while it waits)', async () => {
    const system = 'the system prompt, the same in every request. '.repeat(2_000);
    const bodies = Array.from({ length: 60 }, (_, i) =>
      JSON.stringify({
        model: 'claude-sonnet-4-5',
        system,
        messages: [{ role: 'user', content: `${i} `.repeat(10_000 + i * 500) }],
      }),
    );
    const headers = { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' };
    const reference = new ProviderEmulator({ clock: new VirtualClock(), rng: new Rng(1) });
    const expected = bodies.map((body) => {
      const answer = reference.handle({ method: 'POST', path: '/v1/messages/count_tokens', headers, body });
      answer.finish('complete');
      return JSON.parse(answer.body as string).input_tokens as number;
    });
    const server = await startProviderServer({
      emulator: new ProviderEmulator({ clock: new RealClock(), rng: new Rng(1) }),
    });
    try {
      // Three waves, so that slabs emptied by one are written again by the next.
      for (let wave = 0; wave < 3; wave++) {
        const counts = await Promise.all(
          bodies.map(async (body) => {
            const res = await fetch(`${server.url}/v1/messages/count_tokens`, {
              method: 'POST',
              headers: { ...headers, 'content-type': 'application/json' },
              body,
            });
            if (res.status !== 200) throw new Error(await res.text());
            return ((await res.json()) as { input_tokens: number }).input_tokens;
          }),
        );
        expect(counts).toEqual(expected);
      }
    } finally {
      await server.close();
    }
  }, 60_000);
});
