/**
 * The Messages reader cut into small functions (src/provider/conversation.ts,
 * `readMessagesRequestSteps`, docs/performance.md, issue 51, round six) reads every body as the
 * single function before it did: the same conversation (items, tools, stop sequences, fields), or
 * the same refusal (status and words), whatever the body. The reference below is that function as
 * it was, with the helpers it used.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type CacheTtl,
  type Conversation,
  type ConversationItem,
  readMessagesRequestSteps,
  type ToolDeclaration,
  VendorError,
} from '../src/provider/conversation.ts';
import { ITEMS_PER_STEP } from '../src/provider/steps.ts';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let out = '';
  for (const part of content) {
    if (typeof part === 'string') out += part;
    else if (isObject(part) && typeof part.text === 'string') out += part.text;
    else if (isObject(part) && typeof part.output === 'string') out += part.output;
  }
  return out;
}

function cacheOf(block: Json): CacheTtl | undefined {
  const control = block.cache_control;
  if (!isObject(control)) return undefined;
  return control.ttl === '1h' ? '1h' : '5m';
}

function toolTexts(tool: Json, into: string[] = []): string[] {
  for (const key in tool) {
    if (key === 'cache_control') continue;
    const value = tool[key];
    if (typeof value === 'string') into.push(value);
    else if (key === 'function' && isObject(value)) toolTexts(value, into);
    else if (value !== undefined) into.push(JSON.stringify(value));
  }
  return into;
}

const anthropicInvalid = (message: string) => new VendorError(400, 'invalid_request', message);

function toolDeclarations(tools: unknown): ToolDeclaration[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw anthropicInvalid('tools: expected an array');
  const out: ToolDeclaration[] = [];
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (!isObject(tool)) throw anthropicInvalid(`tools.${i}: expected an object`);
    const name = tool.name;
    const declaration: ToolDeclaration = {
      name: typeof name === 'string' ? name : String(tool.type ?? ''),
      texts: toolTexts(tool),
    };
    const cache = cacheOf(tool);
    if (cache) declaration.cache = cache;
    out.push(declaration);
  }
  return out;
}

/** The reader as it was before round six: one generator with every branch in it. */
function* referenceReader(body: Json): Generator<void, Conversation> {
  if (body.model === undefined) throw anthropicInvalid('model: Field required');
  if (typeof body.model !== 'string' || body.model === '')
    throw anthropicInvalid('model: Input should be a valid string');
  if (body.max_tokens === undefined) throw anthropicInvalid('max_tokens: Field required');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens))
    throw anthropicInvalid('max_tokens: Input should be a valid integer');
  if (body.max_tokens < 1) throw anthropicInvalid('max_tokens: Input should be greater than or equal to 1');
  if (body.messages === undefined) throw anthropicInvalid('messages: Field required');
  if (!Array.isArray(body.messages)) throw anthropicInvalid('messages: Input should be a valid list');
  const items: ConversationItem[] = [];
  const system = body.system;
  if (typeof system === 'string') items.push({ kind: 'system', text: system });
  else if (Array.isArray(system))
    for (const block of system) {
      if (!isObject(block)) continue;
      const item: ConversationItem = { kind: 'system', text: String(block.text ?? '') };
      const cache = cacheOf(block);
      if (cache) item.cache = cache;
      items.push(item);
    }
  let previousUses: Set<string> | undefined;
  let previousIndex = -1;
  for (const [i, message] of body.messages.entries()) {
    if (i > 0 && i % ITEMS_PER_STEP === 0) yield;
    if (!isObject(message)) throw anthropicInvalid(`messages.${i}: Input should be a valid dictionary`);
    const role = message.role;
    if (role !== 'user' && role !== 'assistant' && role !== 'system')
      throw anthropicInvalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const content = message.content;
    if (typeof content === 'string') {
      items.push(
        role === 'user'
          ? { kind: 'prompt', text: content }
          : role === 'system'
            ? { kind: 'system', text: content }
            : { kind: 'assistant-text', text: content },
      );
      if (role !== 'system') previousUses = undefined;
      continue;
    }
    if (!Array.isArray(content))
      throw anthropicInvalid(`messages.${i}.content: Input should be a valid string or a valid list`);
    const uses = new Set<string>();
    const hasToolResult = content.some((block) => isObject(block) && block.type === 'tool_result');
    for (const [j, block] of content.entries()) {
      if (!isObject(block)) continue;
      let item: ConversationItem | undefined;
      switch (block.type) {
        case 'text':
          item =
            role === 'assistant'
              ? { kind: 'assistant-text', text: String(block.text ?? '') }
              : role === 'system'
                ? { kind: 'system', text: String(block.text ?? '') }
                : { kind: hasToolResult ? 'attachment' : 'prompt', text: String(block.text ?? '') };
          break;
        case 'tool_use':
        case 'server_tool_use':
          uses.add(String(block.id ?? ''));
          item = {
            kind: 'tool-call',
            name: String(block.name ?? ''),
            args: JSON.stringify(block.input ?? {}),
            callId: String(block.id ?? ''),
          };
          break;
        case 'tool_result': {
          const id = String(block.tool_use_id ?? '');
          if (!previousUses?.delete(id))
            throw anthropicInvalid(
              `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
            );
          item = { kind: 'tool-result', callId: id, text: textOf(block.content) };
          break;
        }
        case 'thinking':
        case 'redacted_thinking':
          break;
        default:
          item = { kind: 'attachment', text: JSON.stringify(block) };
      }
      if (!item) continue;
      const cache = cacheOf(block);
      if (cache) item.cache = cache;
      items.push(item);
    }
    if (role === 'system') continue;
    if (role === 'user' && previousUses && previousUses.size > 0)
      throw anthropicInvalid(
        `messages.${previousIndex}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...previousUses].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    previousUses = role === 'assistant' ? uses : undefined;
    previousIndex = i;
  }
  const tools = toolDeclarations(body.tools);
  const breakpoints = tools.filter((tool) => tool.cache).length + items.filter((item) => item.cache).length;
  if (breakpoints > 4)
    throw anthropicInvalid(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  const stop = body.stop_sequences;
  if (stop !== undefined && (!Array.isArray(stop) || stop.some((entry) => typeof entry !== 'string')))
    throw anthropicInvalid('stop_sequences: Input should be a valid list of strings');
  return {
    api: 'messages',
    model: body.model,
    stream: body.stream === true,
    tools,
    items,
    maxOutputTokens: body.max_tokens,
    stopSequences: ((stop ?? []) as string[]).filter((entry) => entry !== ''),
    includeUsage: true,
  };
}

/** What a reader makes of a body: the conversation and the steps it took, or its refusal. */
function outcome(reader: (body: Json) => Generator<void, Conversation>, body: Json) {
  const steps = reader(body);
  let yields = 0;
  try {
    for (;;) {
      const next = steps.next();
      if (next.done) return { conversation: next.value, yields };
      yields += 1;
    }
  } catch (error) {
    if (!(error instanceof VendorError)) throw error;
    return { status: error.status, kind: error.kind, message: error.message };
  }
}

const ids = fc.constantFrom('toolu_a', 'toolu_b', 'toolu_a', 'toolu_b', '', 'x y');
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom('fleetbench-script: coding go', 'café "q"'),
);
const cacheControl = fc.option(
  fc.constantFrom<unknown>(
    { type: 'ephemeral' },
    { type: 'ephemeral', ttl: '1h' },
    { ttl: '5m' },
    'ephemeral',
  ),
  { nil: undefined },
);
const junk = fc.constantFrom<unknown>(7, null, 'text', [], true);
const withCache = (block: Json, cache: unknown): Json =>
  cache === undefined ? block : { ...block, cache_control: cache };

const block = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.tuple(text, cacheControl).map(([t, c]) => withCache({ type: 'text', text: t }, c)),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        fc.constantFrom('tool_use', 'server_tool_use'),
        ids,
        text,
        fc.option(fc.jsonValue({ maxDepth: 2 })),
      )
      .map(([type, id, name, input]) => (input === null ? { type, id, name } : { type, id, name, input })),
  },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        ids,
        fc.oneof(text, fc.array(fc.record({ type: fc.constant('text'), text }), { maxLength: 2 })),
        cacheControl,
      )
      .map(([id, content, c]) => withCache({ type: 'tool_result', tool_use_id: id, content }, c)),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>({ type: 'thinking', thinking: 'hm' }, { type: 'redacted_thinking' }),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom<Json>({ type: 'image', source: { data: 'x' } }, { text: 'no type' }),
  },
  { weight: 1, arbitrary: junk },
);

const message = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      role: fc.constantFrom<unknown>('user', 'assistant', 'system', 'user', 'assistant', 'bogus'),
      content: fc.oneof(text, fc.array(block, { maxLength: 4 }), junk),
    }),
  },
  { weight: 1, arbitrary: junk },
);

/**
 * A history whose tool calls are answered in the next message (the shape a CLI sends), or, now
 * and then, not: some left unanswered, or a message of plain text in between.
 */
const wellFormed = fc
  .array(
    fc.tuple(
      fc.subarray(['toolu_a', 'toolu_b', 'toolu_c']),
      text,
      fc.constantFrom('answered', 'answered', 'one left', 'text between', 'system between'),
    ),
    { minLength: 1, maxLength: 5 },
  )
  .map((turns) => {
    const messages: Json[] = [];
    for (const [uses, words, how] of turns) {
      messages.push({ role: 'user', content: [{ type: 'text', text: words }] });
      if (uses.length === 0) continue;
      messages.push({
        role: 'assistant',
        content: [
          { type: 'text', text: 'on it' },
          ...uses.map((id) => ({ type: 'tool_use', id, name: 'Bash', input: {} })),
        ],
      });
      if (how === 'text between') messages.push({ role: 'assistant', content: words });
      if (how === 'system between') messages.push({ role: 'system', content: words });
      const answered = how === 'one left' ? uses.slice(1) : uses;
      messages.push({
        role: 'user',
        content: answered.map((id) => ({ type: 'tool_result', tool_use_id: id, content: 'ok' })),
      });
    }
    return messages;
  });

const body = fc.record(
  {
    model: fc.oneof(
      { weight: 8, arbitrary: fc.constant('claude-sonnet-4-5') },
      fc.constantFrom<unknown>('', 5),
    ),
    max_tokens: fc.oneof(
      { weight: 8, arbitrary: fc.constantFrom(1000, 1) },
      fc.constantFrom<unknown>(0, 1.5, '5'),
    ),
    stream: fc.constantFrom<unknown>(true, false, 'yes'),
    system: fc.oneof(
      text,
      fc.array(
        fc.oneof(
          fc.tuple(text, cacheControl).map(([t, c]) => withCache({ type: 'text', text: t }, c)),
          junk,
        ),
        {
          maxLength: 3,
        },
      ),
    ),
    messages: fc.oneof(
      { weight: 6, arbitrary: fc.array(message, { maxLength: 8 }) },
      { weight: 6, arbitrary: wellFormed },
      {
        weight: 1,
        arbitrary: junk,
      },
    ),
    tools: fc.oneof(
      fc.array(
        fc.oneof(
          fc
            .tuple(text, cacheControl)
            .map(([name, c]) =>
              withCache({ name, description: 'runs', input_schema: { type: 'object' } }, c),
            ),
          fc.constantFrom<unknown>({ type: 'bash_20250124' }, 3),
        ),
        { maxLength: 3 },
      ),
      fc.constantFrom<unknown>('no', null),
    ),
    stop_sequences: fc.constantFrom<unknown>(['END', ''], 'END', [1], []),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<Json>;

describe('the Messages reader in small functions', () => {
  it('reads every body as the single function did: the same conversation and steps, or the same refusal', () => {
    fc.assert(
      fc.property(body, (request) => {
        expect(outcome(readMessagesRequestSteps, request)).toEqual(outcome(referenceReader, request));
      }),
      { numRuns: 2000 },
    );
  });

  it('yields where it did in a long history', () => {
    const messages = Array.from({ length: 3 * ITEMS_PER_STEP + 5 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: `message ${i}`,
    }));
    const request = { model: 'claude-sonnet-4-5', max_tokens: 10, messages };
    const read = outcome(readMessagesRequestSteps, request);
    expect(read).toEqual(outcome(referenceReader, request));
    expect(read.yields).toBe(3);
  });
});
