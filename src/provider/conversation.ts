/**
 * What a model request says, whatever API it came in: the provider emulator reads an OpenAI
 * Responses, Chat Completions or Anthropic Messages body into one neutral `Conversation`, and
 * decides the answer from that alone. No state is kept per conversation: the CLIs resend the
 * whole history on every request, so where a request stands in its agent script (which turn,
 * which tool call of the turn) is read off the history itself. That is what makes retries,
 * restarts and resumed sessions come out right without the emulator remembering anything
 * (docs/provider-emulator.md, "Where a request stands").
 */

/** The three wire APIs the emulator speaks. */
export type ProviderApi = 'responses' | 'chat' | 'messages';

export type ConversationItem =
  /** System or developer instructions (counted as input, never a prompt). */
  | { kind: 'system'; text: string }
  /** The user's words: a prompt, or the context a CLI sends beside it. */
  | { kind: 'prompt'; text: string }
  /** Text the user side sent inside a tool-result message (reminders): input, not a prompt. */
  | { kind: 'attachment'; text: string }
  | { kind: 'assistant-text'; text: string }
  | { kind: 'tool-call'; name: string; args: string; callId: string }
  | { kind: 'tool-result'; callId: string; text: string };

export interface ToolDeclaration {
  name: string;
  /**
   * The declaration's texts, for counting input tokens: its strings as they are (a description
   * is most of a tool and the same every request, so its count is memoised) and the JSON of
   * everything else (the parameter schema).
   */
  texts: string[];
}

export interface Conversation {
  api: ProviderApi;
  model: string;
  stream: boolean;
  tools: ToolDeclaration[];
  items: ConversationItem[];
  /** max_tokens / max_output_tokens as sent. */
  maxOutputTokens: number | undefined;
  /** Chat Completions: stream_options.include_usage. */
  includeUsage: boolean;
}

/** Where a request stands in its conversation: 1-based turn, 0-based step within the turn. */
export interface Position {
  /** Groups of prompts so far (a CLI's context message and its prompt make one group). */
  turn: number;
  /** Model responses since the turn's prompt: 0 asks for the first, 1 follows one tool call... */
  step: number;
  /** The text of the turn's prompts (a script may be named in it). */
  prompt: string;
}

export function positionOf(items: readonly ConversationItem[]): Position {
  let turn = 0;
  let step = 0;
  let prompt = '';
  let previous: ConversationItem['kind'] | undefined;
  for (const item of items) {
    if (item.kind === 'prompt') {
      if (previous !== 'prompt') {
        turn += 1;
        step = 0;
        prompt = '';
      }
      prompt += prompt === '' ? item.text : `\n${item.text}`;
    } else if (item.kind === 'assistant-text' || item.kind === 'tool-call') {
      // A response is a run of assistant items (text and the tool calls it made at once).
      if (previous !== 'assistant-text' && previous !== 'tool-call') step += 1;
    }
    if (item.kind !== 'system' && item.kind !== 'attachment') previous = item.kind;
  }
  return { turn: Math.max(turn, 1), step, prompt };
}

/** Every text of a conversation that the provider counts as input, in order. */
export function* inputTexts(conversation: Conversation): Generator<string> {
  for (const tool of conversation.tools) yield* tool.texts;
  for (const item of conversation.items) {
    switch (item.kind) {
      case 'tool-call':
        yield item.name;
        yield item.args;
        break;
      default:
        yield item.text;
    }
  }
}

/** The bad request a reader found, named by its field (the API's own 400 answers it). */
export class RequestShapeError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'RequestShapeError';
  }
}

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

function requireModel(body: Json): string {
  if (typeof body.model !== 'string' || body.model === '')
    throw new RequestShapeError('model', 'expected a model name');
  return body.model;
}

function maxTokens(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1)
    throw new RequestShapeError(field, 'expected a positive integer');
  return value;
}

function toolTexts(tool: Json, into: string[] = []): string[] {
  for (const [key, value] of Object.entries(tool)) {
    if (typeof value === 'string') into.push(value);
    else if (key === 'function' && isObject(value)) toolTexts(value, into);
    else if (value !== undefined) into.push(JSON.stringify(value));
  }
  return into;
}

function toolDeclarations(tools: unknown, nameOf: (tool: Json) => unknown): ToolDeclaration[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw new RequestShapeError('tools', 'expected an array');
  const out: ToolDeclaration[] = [];
  for (const tool of tools) {
    if (!isObject(tool)) throw new RequestShapeError('tools', 'expected objects');
    const name = nameOf(tool);
    out.push({ name: typeof name === 'string' ? name : String(tool.type ?? ''), texts: toolTexts(tool) });
  }
  return out;
}

/** OpenAI Responses API (`POST /v1/responses`): what codex speaks. */
export function readResponsesRequest(body: Json): Conversation {
  const items: ConversationItem[] = [];
  if (typeof body.instructions === 'string') items.push({ kind: 'system', text: body.instructions });
  const input = body.input;
  if (typeof input === 'string') items.push({ kind: 'prompt', text: input });
  else if (Array.isArray(input)) {
    for (const entry of input) {
      if (!isObject(entry)) throw new RequestShapeError('input', 'expected items');
      const type = entry.type ?? (entry.role !== undefined ? 'message' : undefined);
      if (type === 'message') {
        const role = entry.role;
        const text = textOf(entry.content);
        if (role === 'user') items.push({ kind: 'prompt', text });
        else if (role === 'assistant') items.push({ kind: 'assistant-text', text });
        else items.push({ kind: 'system', text });
      } else if (type === 'function_call' || type === 'custom_tool_call' || type === 'local_shell_call') {
        items.push({
          kind: 'tool-call',
          name: String(entry.name ?? type),
          args:
            typeof entry.arguments === 'string'
              ? entry.arguments
              : JSON.stringify(entry.input ?? entry.action ?? {}),
          callId: String(entry.call_id ?? ''),
        });
      } else if (
        type === 'function_call_output' ||
        type === 'custom_tool_call_output' ||
        type === 'local_shell_call_output'
      ) {
        items.push({
          kind: 'tool-result',
          callId: String(entry.call_id ?? ''),
          text: typeof entry.output === 'string' ? entry.output : textOf(entry.output),
        });
      } else if (type === 'reasoning') {
        // Reasoning items carry encrypted content the emulator never produced: not input text.
      } else {
        items.push({ kind: 'system', text: JSON.stringify(entry) });
      }
    }
  } else if (input !== undefined)
    throw new RequestShapeError('input', 'expected a string or an array of items');
  return {
    api: 'responses',
    model: requireModel(body),
    stream: body.stream === true,
    tools: toolDeclarations(body.tools, (tool) => tool.name),
    items,
    maxOutputTokens: maxTokens(body.max_output_tokens, 'max_output_tokens'),
    includeUsage: true,
  };
}

/** OpenAI Chat Completions (`POST /v1/chat/completions`): what opencode speaks. */
export function readChatRequest(body: Json): Conversation {
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw new RequestShapeError('messages', 'expected a non-empty array');
  const items: ConversationItem[] = [];
  for (const message of body.messages) {
    if (!isObject(message)) throw new RequestShapeError('messages', 'expected objects');
    const text = textOf(message.content);
    switch (message.role) {
      case 'system':
      case 'developer':
        items.push({ kind: 'system', text });
        break;
      case 'user':
        items.push({ kind: 'prompt', text });
        break;
      case 'assistant': {
        if (text !== '') items.push({ kind: 'assistant-text', text });
        const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
        for (const call of calls) {
          const fn = isObject(call) && isObject(call.function) ? call.function : {};
          items.push({
            kind: 'tool-call',
            name: String(fn.name ?? ''),
            args: typeof fn.arguments === 'string' ? fn.arguments : '',
            callId: isObject(call) ? String(call.id ?? '') : '',
          });
        }
        if (text === '' && calls.length === 0) items.push({ kind: 'assistant-text', text: '' });
        break;
      }
      case 'tool':
        items.push({ kind: 'tool-result', callId: String(message.tool_call_id ?? ''), text });
        break;
      default:
        throw new RequestShapeError('messages[].role', `unknown role ${JSON.stringify(message.role)}`);
    }
  }
  const options = isObject(body.stream_options) ? body.stream_options : {};
  return {
    api: 'chat',
    model: requireModel(body),
    stream: body.stream === true,
    tools: toolDeclarations(body.tools, (tool) => (isObject(tool.function) ? tool.function.name : undefined)),
    items,
    maxOutputTokens: maxTokens(body.max_completion_tokens ?? body.max_tokens, 'max_tokens'),
    includeUsage: options.include_usage === true,
  };
}

/** Anthropic Messages (`POST /v1/messages`): what Claude Code speaks. */
export function readMessagesRequest(body: Json): Conversation {
  if (!Array.isArray(body.messages)) throw new RequestShapeError('messages', 'expected an array');
  const items: ConversationItem[] = [];
  const system = body.system;
  if (typeof system === 'string') items.push({ kind: 'system', text: system });
  else if (Array.isArray(system)) items.push({ kind: 'system', text: textOf(system) });
  for (const message of body.messages) {
    if (!isObject(message)) throw new RequestShapeError('messages', 'expected objects');
    const role = message.role;
    if (role !== 'user' && role !== 'assistant')
      throw new RequestShapeError(
        'messages[].role',
        `expected user or assistant, not ${JSON.stringify(role)}`,
      );
    const content = message.content;
    if (typeof content === 'string') {
      items.push(
        role === 'user' ? { kind: 'prompt', text: content } : { kind: 'assistant-text', text: content },
      );
      continue;
    }
    if (!Array.isArray(content))
      throw new RequestShapeError('messages[].content', 'expected a string or blocks');
    const hasToolResult = content.some((block) => isObject(block) && block.type === 'tool_result');
    for (const block of content) {
      if (!isObject(block)) continue;
      switch (block.type) {
        case 'text':
          if (role === 'assistant') items.push({ kind: 'assistant-text', text: String(block.text ?? '') });
          else items.push({ kind: hasToolResult ? 'attachment' : 'prompt', text: String(block.text ?? '') });
          break;
        case 'tool_use':
          items.push({
            kind: 'tool-call',
            name: String(block.name ?? ''),
            args: JSON.stringify(block.input ?? {}),
            callId: String(block.id ?? ''),
          });
          break;
        case 'tool_result':
          items.push({
            kind: 'tool-result',
            callId: String(block.tool_use_id ?? ''),
            text: textOf(block.content),
          });
          break;
        case 'thinking':
        case 'redacted_thinking':
          break;
        default:
          items.push({ kind: 'attachment', text: JSON.stringify(block) });
      }
    }
  }
  return {
    api: 'messages',
    model: requireModel(body),
    stream: body.stream === true,
    tools: toolDeclarations(body.tools, (tool) => tool.name),
    items,
    maxOutputTokens: maxTokens(body.max_tokens, 'max_tokens'),
    includeUsage: true,
  };
}
