/**
 * Replies and errors in each API's own wire shapes: OpenAI Responses and Chat Completions,
 * Anthropic Messages, streamed (server-sent events) or whole. A streamed reply is rendered as
 * three phases, which the emulator spreads over time: `start` (sent at once, as the providers
 * do), the content chunks (the first carries the first token) and `end`. The content is rendered
 * chunk by chunk as it is played, never all at once: a 32,000-token reply to a thousand streams
 * holds one copy of its text, not a thousand rendered streams. The shapes are the fields the
 * vendors' API references and SDK types give (docs/provider-emulator.md, "Wire shapes").
 */
import type { ConversationItem, ProviderApi } from './conversation.ts';
import type { Reply } from './scripts.ts';

export interface Usage {
  /** Input tokens in all. */
  input: number;
  output: number;
  /** Of the input: read from the prompt cache, and written to it (Anthropic, by lifetime). */
  cacheRead: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
}

/** Why the reply ends: as scripted, or cut by the request's output cap or a stop sequence. */
export type Ending = 'natural' | 'max_tokens' | 'stop_sequence' | 'context_window';

export interface RenderInput {
  api: ProviderApi;
  /** Response id (msg_…, resp_…, chatcmpl-…) and the tool call's id. */
  id: string;
  callId: string;
  model: string;
  reply: Reply;
  /** The reply's text (possibly cut short), sent in `pieces` chunks. */
  text: string;
  pieces: number;
  ending: Ending;
  /** The stop sequence that ended it. */
  stopSequence?: string | undefined;
  usage: Usage;
  includeUsage: boolean;
  /** Unix seconds, for `created` fields. */
  createdS: number;
  /** Responses: the `previous_response_id` and `store` the request sent, echoed in the response. */
  previousResponseId?: string | undefined;
  store?: boolean | undefined;
}

/**
 * A stream rendered as it is played: `start` at once, `content(from, to)` for the pieces from …
 * to-1 that go out together (in order, each piece once: one event carries them all, as a
 * provider sends what it has when it sends), then `end()`; `error(retryAfterS)` in place of the
 * rest.
 */
export interface StreamRenderer {
  start: string;
  content(from: number, to: number): string;
  end(): string;
  error(retryAfterS: number | undefined): string;
}

const sse = (event: string | undefined, data: unknown): string =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

/** Pieces `from` … `to`-1 of `n` of `text`, about equal in length, never splitting a surrogate pair. */
export function piecesOf(text: string, from: number, to: number, n: number): string {
  if (n <= 1) return from === 0 && to > 0 ? text : '';
  const size = Math.ceil(text.length / n);
  return text.slice(pieceEdge(text, from * size), pieceEdge(text, to * size));
}

/** `at` in `text`, moved past the low half of a surrogate pair. */
function pieceEdge(text: string, at: number): number {
  if (at <= 0) return 0;
  if (at >= text.length) return text.length;
  const code = text.charCodeAt(at);
  return code >= 0xdc00 && code <= 0xdfff ? at + 1 : at;
}

const hasToolCall = (input: RenderInput) => input.reply.kind === 'tool-call' && input.ending === 'natural';

// --- OpenAI Responses ------------------------------------------------------------------------

/** The ids a Responses answer gives its message and its function call. */
const messageItemId = (input: RenderInput) => `msg_${input.id}`;
const callItemId = (input: RenderInput) => `fc_${input.id}`;

/**
 * A Responses answer's output as conversation items, by the ids its output gives them: what a
 * stored response keeps, and what an `item_reference` names (stored-responses.ts).
 */
export function responsesOutputItems(input: RenderInput): Array<[string, ConversationItem]> {
  const items: Array<[string, ConversationItem]> = [];
  if (input.text !== '') items.push([messageItemId(input), { kind: 'assistant-text', text: input.text }]);
  if (hasToolCall(input) && input.reply.kind === 'tool-call')
    items.push([
      callItemId(input),
      { kind: 'tool-call', name: input.reply.tool, args: input.reply.args, callId: input.callId },
    ]);
  return items;
}

function responsesOutput(input: RenderInput): Array<Record<string, unknown>> {
  const output: Array<Record<string, unknown>> = [];
  const incomplete = input.ending !== 'natural';
  if (input.text !== '')
    output.push({
      type: 'message',
      id: messageItemId(input),
      status: incomplete ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: input.text, annotations: [], logprobs: [] }],
    });
  if (hasToolCall(input) && input.reply.kind === 'tool-call')
    output.push({
      type: 'function_call',
      id: callItemId(input),
      call_id: input.callId,
      name: input.reply.tool,
      arguments: input.reply.args,
      status: 'completed',
    });
  return output;
}

function responsesUsage(usage: Usage) {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output,
  };
}

type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

function responsesObject(input: RenderInput, status: ResponseStatus) {
  const over = status === 'completed' || status === 'incomplete';
  return {
    id: `resp_${input.id}`,
    object: 'response',
    created_at: input.createdS,
    status,
    error: null,
    incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
    model: input.model,
    output: over ? responsesOutput(input) : [],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: over ? responsesUsage(input.usage) : null,
    previous_response_id: input.previousResponseId ?? null,
    store: input.store ?? true,
  };
}

const finalStatus = (input: RenderInput): ResponseStatus =>
  input.ending === 'natural' ? 'completed' : 'incomplete';

function responsesStream(input: RenderInput): StreamRenderer {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sse(type, { type, sequence_number: sequence++, ...fields });
  const start =
    event('response.created', { response: responsesObject(input, 'in_progress') }) +
    event('response.in_progress', { response: responsesObject(input, 'in_progress') });
  const message = input.text !== '';
  const itemId = `msg_${input.id}`;
  const incomplete = input.ending !== 'natural';
  return {
    start,
    content(from, to) {
      let out = '';
      if (from === 0 && message)
        out +=
          event('response.output_item.added', {
            output_index: 0,
            item: { id: itemId, type: 'message', status: 'in_progress', role: 'assistant', content: [] },
          }) +
          event('response.content_part.added', {
            item_id: itemId,
            output_index: 0,
            content_index: 0,
            part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
          });
      const piece = message ? piecesOf(input.text, from, to, input.pieces) : '';
      if (piece !== '')
        out += event('response.output_text.delta', {
          item_id: itemId,
          output_index: 0,
          content_index: 0,
          delta: piece,
          logprobs: [],
        });
      return out;
    },
    end() {
      let out = '';
      let index = 0;
      if (message) {
        const part = { type: 'output_text', text: input.text, annotations: [], logprobs: [] };
        out +=
          event('response.output_text.done', {
            item_id: itemId,
            output_index: 0,
            content_index: 0,
            text: input.text,
            logprobs: [],
          }) +
          event('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part }) +
          event('response.output_item.done', {
            output_index: 0,
            item: {
              id: itemId,
              type: 'message',
              status: incomplete ? 'incomplete' : 'completed',
              role: 'assistant',
              content: [part],
            },
          });
        index = 1;
      }
      if (hasToolCall(input) && input.reply.kind === 'tool-call') {
        const call = {
          type: 'function_call',
          id: `fc_${input.id}`,
          call_id: input.callId,
          name: input.reply.tool,
          arguments: input.reply.args,
        };
        out +=
          event('response.output_item.added', {
            output_index: index,
            item: { ...call, arguments: '', status: 'in_progress' },
          }) +
          event('response.function_call_arguments.delta', {
            item_id: call.id,
            output_index: index,
            delta: call.arguments,
          }) +
          event('response.function_call_arguments.done', {
            item_id: call.id,
            output_index: index,
            name: call.name,
            arguments: call.arguments,
          }) +
          event('response.output_item.done', { output_index: index, item: { ...call, status: 'completed' } });
      }
      const status = finalStatus(input);
      return out + event(`response.${status}`, { response: responsesObject(input, status) });
    },
    error(retryAfterS) {
      return event('response.failed', {
        response: {
          ...responsesObject(input, 'failed'),
          error:
            retryAfterS !== undefined
              ? {
                  code: 'rate_limit_exceeded',
                  message: `Rate limit reached for ${input.model} on tokens per min (TPM) (fleetbench fault). Please try again in ${retryAfterS}s.`,
                }
              : {
                  code: 'server_error',
                  message: 'The server had an error while processing your request (fleetbench fault).',
                },
        },
      });
    },
  };
}

// --- Anthropic Messages ----------------------------------------------------------------------

function messagesContent(input: RenderInput): Array<Record<string, unknown>> {
  const blocks: Array<Record<string, unknown>> = [];
  if (input.text !== '') blocks.push({ type: 'text', text: input.text });
  if (hasToolCall(input) && input.reply.kind === 'tool-call')
    blocks.push({
      type: 'tool_use',
      id: input.callId,
      name: input.reply.tool,
      input: JSON.parse(input.reply.args),
    });
  return blocks;
}

const ANTHROPIC_STOP: Record<Ending, string> = {
  natural: 'end_turn',
  max_tokens: 'max_tokens',
  stop_sequence: 'stop_sequence',
  context_window: 'model_context_window_exceeded',
};

function stopReason(input: RenderInput): string {
  return hasToolCall(input) ? 'tool_use' : ANTHROPIC_STOP[input.ending];
}

function messagesUsage(usage: Usage, output: number) {
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

/**
 * A Messages stream's events that are the same in every answer, rendered once, and a text delta's
 * text around its piece: a delta is `DELTA_OPEN + JSON.stringify(piece) + DELTA_CLOSE`, the
 * bytes `sse` gives, without an object and a serialisation of it per chunk.
 */
const TEXT_BLOCK_START = sse('content_block_start', {
  type: 'content_block_start',
  index: 0,
  content_block: { type: 'text', text: '' },
});
const [TEXT_DELTA_OPEN, TEXT_DELTA_CLOSE] = sse('content_block_delta', {
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text: '\u0000' },
}).split('"\\u0000"') as [string, string];
const TEXT_BLOCK_STOP = sse('content_block_stop', { type: 'content_block_stop', index: 0 });
const MESSAGE_STOP = sse('message_stop', { type: 'message_stop' });

/** A number as JSON writes it (a count is always finite; anything else is `null`, as in JSON). */
const jsonNumber = (value: number): string => (Number.isFinite(value) ? String(value) : 'null');

const PING = sse('ping', { type: 'ping' });

/**
 * `message_start`, written out: the bytes `sse` gives for the object it stands for
 * (test/provider-render.test.ts holds the two equal), without the objects and their serialisation
 * in every answer.
 */
function messageStart(input: RenderInput): string {
  const usage = input.usage;
  return `event: message_start\ndata: {"type":"message_start","message":{"id":${JSON.stringify(`msg_${input.id}`)},"type":"message","role":"assistant","model":${JSON.stringify(input.model)},"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":${jsonNumber(usage.input - usage.cacheRead - usage.cacheWrite5m - usage.cacheWrite1h)},"cache_creation_input_tokens":${jsonNumber(usage.cacheWrite5m + usage.cacheWrite1h)},"cache_read_input_tokens":${jsonNumber(usage.cacheRead)},"cache_creation":{"ephemeral_5m_input_tokens":${jsonNumber(usage.cacheWrite5m)},"ephemeral_1h_input_tokens":${jsonNumber(usage.cacheWrite1h)}},"output_tokens":1,"service_tier":"standard"}}}\n\n${PING}`;
}

/** `message_delta` then `message_stop`, written out as `messageStart` is (so are a tool call's blocks). */
function messageEnd(input: RenderInput): string {
  const usage = input.usage;
  return `event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":${JSON.stringify(stopReason(input))},"stop_sequence":${JSON.stringify(input.stopSequence ?? null)}},"usage":{"input_tokens":${jsonNumber(usage.input - usage.cacheRead - usage.cacheWrite5m - usage.cacheWrite1h)},"cache_creation_input_tokens":${jsonNumber(usage.cacheWrite5m + usage.cacheWrite1h)},"cache_read_input_tokens":${jsonNumber(usage.cacheRead)},"output_tokens":${jsonNumber(usage.output)}}}\n\n${MESSAGE_STOP}`;
}

function messagesStream(input: RenderInput): StreamRenderer {
  const start = messageStart(input);
  const text = input.text !== '';
  return {
    start,
    content(from, to) {
      if (!text) return '';
      const piece = piecesOf(input.text, from, to, input.pieces);
      const delta = piece !== '' ? TEXT_DELTA_OPEN + JSON.stringify(piece) + TEXT_DELTA_CLOSE : '';
      return from === 0 ? TEXT_BLOCK_START + delta : delta;
    },
    end() {
      let out = text ? TEXT_BLOCK_STOP : '';
      if (hasToolCall(input) && input.reply.kind === 'tool-call') {
        const index = text ? 1 : 0;
        out += `event: content_block_start\ndata: {"type":"content_block_start","index":${index},"content_block":{"type":"tool_use","id":${JSON.stringify(input.callId)},"name":${JSON.stringify(input.reply.tool)},"input":{}}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":${index},"delta":{"type":"input_json_delta","partial_json":${JSON.stringify(input.reply.args)}}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":${index}}\n\n`;
      }
      return out + messageEnd(input);
    },
    error(retryAfterS) {
      return sse('error', {
        type: 'error',
        error:
          retryAfterS !== undefined
            ? { type: 'rate_limit_error', message: 'Rate limit reached (fleetbench fault).' }
            : { type: 'overloaded_error', message: 'Overloaded' },
      });
    },
  };
}

// --- OpenAI Chat Completions -----------------------------------------------------------------

function chatFinish(input: RenderInput): string {
  if (hasToolCall(input)) return 'tool_calls';
  return input.ending === 'max_tokens' || input.ending === 'context_window' ? 'length' : 'stop';
}

function chatUsage(usage: Usage) {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: usage.cacheRead, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

function chatStream(input: RenderInput): StreamRenderer {
  const base = {
    id: `chatcmpl-${input.id}`,
    object: 'chat.completion.chunk',
    created: input.createdS,
    model: input.model,
  };
  // With include_usage every chunk carries `usage: null` until the last one, which has only usage.
  const usageField = input.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    sse(undefined, { ...base, choices: [{ index: 0, delta, finish_reason: finish }], ...usageField });
  return {
    start: chunk({ role: 'assistant', content: '' }, null),
    content(from, to) {
      const piece = piecesOf(input.text, from, to, input.pieces);
      return piece !== '' ? chunk({ content: piece }, null) : '';
    },
    end() {
      let out = '';
      if (hasToolCall(input) && input.reply.kind === 'tool-call')
        out += chunk(
          {
            tool_calls: [
              {
                index: 0,
                id: input.callId,
                type: 'function',
                function: { name: input.reply.tool, arguments: input.reply.args },
              },
            ],
          },
          null,
        );
      out += chunk({}, chatFinish(input));
      if (input.includeUsage) out += sse(undefined, { ...base, choices: [], usage: chatUsage(input.usage) });
      return out + sse(undefined, '[DONE]');
    },
    error(retryAfterS) {
      const limited = retryAfterS !== undefined;
      return sse(undefined, {
        error: {
          message: limited
            ? `Rate limit reached. Please try again in ${retryAfterS}s.`
            : 'The server had an error (fleetbench fault).',
          type: limited ? 'tokens' : 'server_error',
          param: null,
          code: limited ? 'rate_limit_exceeded' : null,
        },
      });
    },
  };
}

export function renderStream(input: RenderInput): StreamRenderer {
  switch (input.api) {
    case 'responses':
      return responsesStream(input);
    case 'messages':
      return messagesStream(input);
    case 'chat':
      return chatStream(input);
  }
}

// --- Whole (non-streamed) replies ------------------------------------------------------------

export function renderWhole(input: RenderInput): string {
  switch (input.api) {
    case 'responses':
      return JSON.stringify(responsesObject(input, finalStatus(input)));
    case 'messages':
      return JSON.stringify({
        id: `msg_${input.id}`,
        type: 'message',
        role: 'assistant',
        model: input.model,
        content: messagesContent(input),
        stop_reason: stopReason(input),
        stop_sequence: input.stopSequence ?? null,
        usage: messagesUsage(input.usage, input.usage.output),
      });
    case 'chat': {
      const message: Record<string, unknown> = {
        role: 'assistant',
        content: input.text === '' && hasToolCall(input) ? null : input.text,
        refusal: null,
        annotations: [],
      };
      if (hasToolCall(input) && input.reply.kind === 'tool-call')
        message.tool_calls = [
          {
            id: input.callId,
            type: 'function',
            function: { name: input.reply.tool, arguments: input.reply.args },
          },
        ];
      return JSON.stringify({
        id: `chatcmpl-${input.id}`,
        object: 'chat.completion',
        created: input.createdS,
        model: input.model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: chatFinish(input) }],
        usage: chatUsage(input.usage),
      });
    }
  }
}

// --- Errors ------------------------------------------------------------------------------------

/** What went wrong, in words both families have. */
export type ErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'not_found'
  | 'rate_limit'
  /** A token limit (OpenAI's 429 says `tokens`, not `requests`). */
  | 'rate_limit_tokens'
  | 'overloaded'
  | 'api_error'
  | 'unavailable'
  | 'too_large';

const ANTHROPIC_TYPES: Record<ErrorKind, string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  not_found: 'not_found_error',
  rate_limit: 'rate_limit_error',
  rate_limit_tokens: 'rate_limit_error',
  overloaded: 'overloaded_error',
  api_error: 'api_error',
  unavailable: 'api_error',
  too_large: 'request_too_large',
};

const OPENAI_TYPES: Record<ErrorKind, { type: string; code: string | null }> = {
  invalid_request: { type: 'invalid_request_error', code: null },
  authentication: { type: 'invalid_request_error', code: 'invalid_api_key' },
  not_found: { type: 'invalid_request_error', code: 'model_not_found' },
  rate_limit: { type: 'requests', code: 'rate_limit_exceeded' },
  rate_limit_tokens: { type: 'tokens', code: 'rate_limit_exceeded' },
  overloaded: { type: 'server_error', code: 'server_is_overloaded' },
  api_error: { type: 'server_error', code: null },
  unavailable: { type: 'server_error', code: null },
  too_large: { type: 'invalid_request_error', code: null },
};

export function errorBody(
  api: ProviderApi | undefined,
  kind: ErrorKind,
  message: string,
  requestId: string,
  openai: { param?: string | null; code?: string | null } = {},
): string {
  if (api === 'messages')
    return JSON.stringify({
      type: 'error',
      error: { type: ANTHROPIC_TYPES[kind], message },
      request_id: requestId,
    });
  const { type, code } = OPENAI_TYPES[kind];
  return JSON.stringify({
    error: {
      message,
      type,
      param: openai.param ?? null,
      code: openai.code !== undefined ? openai.code : code,
    },
  });
}
