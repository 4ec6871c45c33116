/**
 * Replies and errors in each API's own wire shapes: OpenAI Responses and Chat Completions,
 * Anthropic Messages, streamed (server-sent events) or whole. A streamed reply is rendered as
 * three phases, which the emulator spreads over time: `start` (sent at once, as the providers do),
 * `content` (one list of events per output chunk; the first carries the first token) and `end`.
 * The shapes are the fields the CLIs read, checked against the vendors' API references
 * (docs/provider-emulator.md, "Wire shapes").
 */
import type { ProviderApi } from './conversation.ts';
import type { Reply } from './scripts.ts';

export interface Usage {
  input: number;
  output: number;
}

export interface RenderInput {
  api: ProviderApi;
  /** Response id (msg_…, resp_…, chatcmpl-…) and the tool call's id. */
  id: string;
  callId: string;
  model: string;
  reply: Reply;
  usage: Usage;
  /** The reply's text split into the output chunks (at least one piece, possibly empty). */
  pieces: string[];
  includeUsage: boolean;
  /** Unix seconds, for `created` fields. */
  createdS: number;
}

export interface RenderedStream {
  start: string[];
  content: string[][];
  end: string[];
}

const sse = (event: string | undefined, data: unknown): string =>
  `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

// --- OpenAI Responses ------------------------------------------------------------------------

function responsesOutput(input: RenderInput): Array<Record<string, unknown>> {
  const { reply } = input;
  const output: Array<Record<string, unknown>> = [];
  const text = reply.kind === 'text' ? reply.text : reply.text;
  if (text !== undefined && text !== '')
    output.push({
      type: 'message',
      id: `msg_${input.id}`,
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text, annotations: [] }],
    });
  if (reply.kind === 'tool-call')
    output.push({
      type: 'function_call',
      id: `fc_${input.id}`,
      call_id: input.callId,
      name: reply.tool,
      arguments: reply.args,
      status: 'completed',
    });
  return output;
}

function responsesUsage(usage: Usage) {
  return {
    input_tokens: usage.input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.output,
  };
}

function responsesObject(input: RenderInput, status: 'in_progress' | 'completed') {
  return {
    id: `resp_${input.id}`,
    object: 'response',
    created_at: input.createdS,
    status,
    model: input.model,
    output: status === 'completed' ? responsesOutput(input) : [],
    usage: status === 'completed' ? responsesUsage(input.usage) : null,
  };
}

function responsesStream(input: RenderInput): RenderedStream {
  let sequence = 0;
  const event = (type: string, fields: Record<string, unknown>) =>
    sse(type, { type, sequence_number: sequence++, ...fields });
  const start = [
    event('response.created', { response: responsesObject(input, 'in_progress') }),
    event('response.in_progress', { response: responsesObject(input, 'in_progress') }),
  ];
  const output = responsesOutput(input);
  const message = output.find((item) => item.type === 'message');
  const call = output.find((item) => item.type === 'function_call');
  const content: string[][] = input.pieces.map(() => []);
  let index = 0;
  if (message) {
    const first = content[0] as string[];
    first.push(
      event('response.output_item.added', {
        output_index: index,
        item: { ...message, status: 'in_progress', content: [] },
      }),
      event('response.content_part.added', {
        item_id: message.id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      }),
    );
    input.pieces.forEach((piece, i) => {
      if (piece !== '')
        (content[i] as string[]).push(
          event('response.output_text.delta', {
            item_id: message.id,
            output_index: index,
            content_index: 0,
            delta: piece,
            logprobs: [],
          }),
        );
    });
  }
  const last = content[content.length - 1] as string[];
  if (message) {
    const text = (message.content as Array<{ text: string }>)[0]?.text ?? '';
    last.push(
      event('response.output_text.done', {
        item_id: message.id,
        output_index: index,
        content_index: 0,
        text,
        logprobs: [],
      }),
      event('response.content_part.done', {
        item_id: message.id,
        output_index: index,
        content_index: 0,
        part: { type: 'output_text', text, annotations: [] },
      }),
      event('response.output_item.done', { output_index: index, item: message }),
    );
    index += 1;
  }
  if (call) {
    last.push(
      event('response.output_item.added', {
        output_index: index,
        item: { ...call, arguments: '', status: 'in_progress' },
      }),
      event('response.function_call_arguments.delta', {
        item_id: call.id,
        output_index: index,
        delta: call.arguments,
      }),
      event('response.function_call_arguments.done', {
        item_id: call.id,
        output_index: index,
        arguments: call.arguments,
        name: call.name,
      }),
      event('response.output_item.done', { output_index: index, item: call }),
    );
  }
  return {
    start,
    content,
    end: [event('response.completed', { response: responsesObject(input, 'completed') })],
  };
}

// --- Anthropic Messages ----------------------------------------------------------------------

function messagesContent(input: RenderInput): Array<Record<string, unknown>> {
  const { reply } = input;
  const blocks: Array<Record<string, unknown>> = [];
  const text = reply.text;
  if (text !== undefined && text !== '') blocks.push({ type: 'text', text });
  if (reply.kind === 'tool-call')
    blocks.push({ type: 'tool_use', id: input.callId, name: reply.tool, input: JSON.parse(reply.args) });
  return blocks;
}

const stopReason = (reply: Reply) => (reply.kind === 'tool-call' ? 'tool_use' : 'end_turn');

function messagesStream(input: RenderInput): RenderedStream {
  const start = [
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
        usage: {
          input_tokens: input.usage.input,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: 1,
        },
      },
    }),
  ];
  const content: string[][] = input.pieces.map(() => []);
  let index = 0;
  const text = input.reply.text;
  if (text !== undefined && text !== '') {
    (content[0] as string[]).push(
      sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'text', text: '' },
      }),
    );
    input.pieces.forEach((piece, i) => {
      if (piece !== '')
        (content[i] as string[]).push(
          sse('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'text_delta', text: piece },
          }),
        );
    });
    (content[content.length - 1] as string[]).push(
      sse('content_block_stop', { type: 'content_block_stop', index }),
    );
    index += 1;
  }
  const last = content[content.length - 1] as string[];
  if (input.reply.kind === 'tool-call') {
    last.push(
      sse('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: input.callId, name: input.reply.tool, input: {} },
      }),
      sse('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'input_json_delta', partial_json: input.reply.args },
      }),
      sse('content_block_stop', { type: 'content_block_stop', index }),
    );
  }
  const end = [
    sse('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason(input.reply), stop_sequence: null },
      usage: { output_tokens: input.usage.output },
    }),
    sse('message_stop', { type: 'message_stop' }),
  ];
  return { start, content, end };
}

// --- OpenAI Chat Completions -----------------------------------------------------------------

function chatStream(input: RenderInput): RenderedStream {
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
  const start = [chunk({ role: 'assistant', content: '' }, null)];
  const content: string[][] = input.pieces.map((piece) =>
    piece !== '' ? [chunk({ content: piece }, null)] : [],
  );
  const last = content[content.length - 1] as string[];
  if (input.reply.kind === 'tool-call')
    last.push(
      chunk(
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
      ),
    );
  const end = [chunk({}, input.reply.kind === 'tool-call' ? 'tool_calls' : 'stop')];
  if (input.includeUsage)
    end.push(
      sse(undefined, {
        ...base,
        choices: [],
        usage: {
          prompt_tokens: input.usage.input,
          completion_tokens: input.usage.output,
          total_tokens: input.usage.input + input.usage.output,
        },
      }),
    );
  end.push(sse(undefined, '[DONE]'));
  return { start, content, end };
}

// --- Whole (non-streamed) replies ------------------------------------------------------------

function wholeReply(input: RenderInput): string {
  switch (input.api) {
    case 'responses':
      return JSON.stringify(responsesObject(input, 'completed'));
    case 'messages':
      return JSON.stringify({
        id: `msg_${input.id}`,
        type: 'message',
        role: 'assistant',
        model: input.model,
        content: messagesContent(input),
        stop_reason: stopReason(input.reply),
        stop_sequence: null,
        usage: { input_tokens: input.usage.input, output_tokens: input.usage.output },
      });
    case 'chat': {
      const { reply } = input;
      const message: Record<string, unknown> = { role: 'assistant', content: reply.text ?? null };
      if (reply.kind === 'tool-call')
        message.tool_calls = [
          { id: input.callId, type: 'function', function: { name: reply.tool, arguments: reply.args } },
        ];
      return JSON.stringify({
        id: `chatcmpl-${input.id}`,
        object: 'chat.completion',
        created: input.createdS,
        model: input.model,
        choices: [{ index: 0, message, finish_reason: reply.kind === 'tool-call' ? 'tool_calls' : 'stop' }],
        usage: {
          prompt_tokens: input.usage.input,
          completion_tokens: input.usage.output,
          total_tokens: input.usage.input + input.usage.output,
        },
      });
    }
  }
}

export function renderStream(input: RenderInput): RenderedStream {
  switch (input.api) {
    case 'responses':
      return responsesStream(input);
    case 'messages':
      return messagesStream(input);
    case 'chat':
      return chatStream(input);
  }
}

export function renderWhole(input: RenderInput): string {
  return wholeReply(input);
}

/**
 * An error inside a 200 stream, as each API sends one: Responses' `response.failed` (with
 * OpenAI's rate-limit wording, "Please try again in Ns", when there is a wait: codex reads the
 * wait from that text), Anthropic's `error` event, a Chat Completions chunk with `error`.
 */
export function streamErrorEvent(input: RenderInput, retryAfterS: number | undefined): string {
  const limited = retryAfterS !== undefined;
  switch (input.api) {
    case 'responses':
      return sse('response.failed', {
        type: 'response.failed',
        sequence_number: 1_000_000,
        response: {
          ...responsesObject(input, 'in_progress'),
          status: 'failed',
          error: limited
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
    case 'messages':
      return sse('error', {
        type: 'error',
        error: limited
          ? { type: 'rate_limit_error', message: 'Rate limit reached (fleetbench fault).' }
          : { type: 'overloaded_error', message: 'Overloaded' },
      });
    case 'chat':
      return sse(undefined, {
        error: {
          message: limited
            ? `Rate limit reached. Please try again in ${retryAfterS}s.`
            : 'The server had an error (fleetbench fault).',
          type: limited ? 'rate_limit_exceeded' : 'server_error',
          param: null,
          code: limited ? 'rate_limit_exceeded' : null,
        },
      });
  }
}

// --- Errors ------------------------------------------------------------------------------------

/** What went wrong, in words both families have. */
export type ErrorKind =
  | 'invalid_request'
  | 'authentication'
  | 'not_found'
  | 'rate_limit'
  | 'overloaded'
  | 'api_error'
  | 'unavailable'
  | 'too_large';

const ANTHROPIC_TYPES: Record<ErrorKind, string> = {
  invalid_request: 'invalid_request_error',
  authentication: 'authentication_error',
  not_found: 'not_found_error',
  rate_limit: 'rate_limit_error',
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
): string {
  if (api === 'messages')
    return JSON.stringify({
      type: 'error',
      error: { type: ANTHROPIC_TYPES[kind], message },
      request_id: requestId,
    });
  const { type, code } = OPENAI_TYPES[kind];
  return JSON.stringify({ error: { message, type, param: null, code } });
}
