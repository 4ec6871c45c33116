/**
 * The Messages stream's events written out as text (src/provider/render.ts: `message_start`,
 * `message_delta`, the text deltas) give the bytes the objects they stand for give through
 * `JSON.stringify`, whatever the model name, ids, counts, stop sequence and text (escapes,
 * quotes, non-ASCII, lone surrogates). The reference below is the rendering as it was before
 * (docs/performance.md, issue 51, round five).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Ending, type RenderInput, renderStream, type Usage } from '../src/provider/render.ts';

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

const STOP: Record<Ending, string> = {
  natural: 'end_turn',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  context_window: 'model_context_window_exceeded',
};

function usageOf(usage: Usage, output: number) {
  return {
    input_tokens: usage.input - usage.cacheRead - usage.cacheWrite5m - usage.cacheWrite1h,
    cache_creation_input_tokens: usage.cacheWrite5m + usage.cacheWrite1h,
    cache_read_input_tokens: usage.cacheRead,
    cache_creation: {
      ephemeral_5m_input_tokens: usage.cacheWrite5m,
      ephemeral_1h_input_tokens: usage.cacheWrite1h,
    },
    output_tokens: output,
    service_tier: 'standard',
  };
}

const referenceStart = (input: RenderInput) =>
  sse('message_start', {
    type: 'message_start',
    message: {
      id: `msg_${input.id}`,
      type: 'message',
      role: 'assistant',
      model: input.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: usageOf(input.usage, 1),
    },
  }) + sse('ping', { type: 'ping' });

function referenceEnd(input: RenderInput): string {
  const toolCall = input.reply.kind === 'tool-call' && input.ending === 'natural';
  const usage = usageOf(input.usage, input.usage.output);
  let out = input.text !== '' ? sse('content_block_stop', { type: 'content_block_stop', index: 0 }) : '';
  if (toolCall && input.reply.kind === 'tool-call') {
    const index = input.text !== '' ? 1 : 0;
    out +=
      sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: input.callId, name: input.reply.tool, input: {} },
      }) +
      sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: input.reply.args },
      }) +
      sse('content_block_stop', { type: 'content_block_stop', index });
  }
  return (
    out +
    sse('message_delta', {
      type: 'message_delta',
      delta: {
        stop_reason: toolCall ? 'tool_use' : STOP[input.ending],
        stop_sequence: input.stopSequence ?? null,
      },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      },
    }) +
    sse('message_stop', { type: 'message_stop' })
  );
}

const referenceDelta = (piece: string) =>
  sse('content_block_delta', {
    type: 'content_block_delta',
    index: 0,
    delta: { type: 'text_delta', text: piece },
  });

const count = fc.nat({ max: 2_000_000 });
const anyText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('"quoted"', 'back\\slash', 'line\nbreak\ttab', '\u2028\u2029', '\ud800 lone', 'é中🙂'),
);
const input = fc.record({
  id: fc.string({ maxLength: 24 }),
  model: anyText,
  text: fc.string({ unit: 'binary', maxLength: 60 }),
  pieces: fc.integer({ min: 1, max: 8 }),
  ending: fc.constantFrom<Ending>('natural', 'max_tokens', 'stop_sequence', 'context_window'),
  stopSequence: fc.option(anyText, { nil: undefined }),
  toolCall: fc.boolean(),
  callId: fc.string({ maxLength: 30 }),
  tool: anyText,
  args: fc.oneof(anyText, fc.json()),
  cacheRead: count,
  cacheWrite5m: count,
  cacheWrite1h: count,
  uncached: count,
  output: count,
});

type Drawn = typeof input extends fc.Arbitrary<infer T> ? T : never;

function renderInput(drawn: Drawn): RenderInput {
  return {
    api: 'messages',
    id: drawn.id,
    callId: drawn.callId,
    model: drawn.model,
    reply: drawn.toolCall
      ? { kind: 'tool-call', text: drawn.text, tool: drawn.tool, args: drawn.args, command: 'ls' }
      : { kind: 'text', text: drawn.text, tokens: 1 },
    text: drawn.text,
    pieces: drawn.pieces,
    ending: drawn.ending,
    stopSequence: drawn.stopSequence,
    usage: {
      input: drawn.uncached + drawn.cacheRead + drawn.cacheWrite5m + drawn.cacheWrite1h,
      output: drawn.output,
      cacheRead: drawn.cacheRead,
      cacheWrite5m: drawn.cacheWrite5m,
      cacheWrite1h: drawn.cacheWrite1h,
    },
    includeUsage: true,
    createdS: 0,
  };
}

describe('Messages stream events written out', () => {
  it('give the bytes of the objects they stand for', () => {
    fc.assert(
      fc.property(input, (drawn) => {
        const rendered = renderInput(drawn);
        const stream = renderStream(rendered);
        expect(stream.start).toBe(referenceStart(rendered));
        expect(stream.end()).toBe(referenceEnd(rendered));
        // Every piece's delta, the first after the text block's start.
        let all = '';
        for (let piece = 0; piece < rendered.pieces; piece++) all += stream.content(piece, piece + 1);
        // No text, no text block.
        let expected =
          rendered.text === ''
            ? ''
            : sse('content_block_start', {
                type: 'content_block_start',
                index: 0,
                content_block: { type: 'text', text: '' },
              });
        const size = Math.ceil(rendered.text.length / rendered.pieces);
        for (let piece = 0; piece < rendered.pieces; piece++) {
          let from = piece * size;
          let to = Math.min((piece + 1) * size, rendered.text.length);
          // Never between the halves of a surrogate pair (render.ts's piecesOf).
          const low = (at: number) =>
            at > 0 && at < rendered.text.length && /[\udc00-\udfff]/.test(rendered.text[at]!);
          if (low(from)) from += 1;
          if (low(to)) to += 1;
          const text = rendered.pieces === 1 ? rendered.text : rendered.text.slice(from, to);
          if (text !== '') expected += referenceDelta(text);
        }
        expect(all).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
