/**
 * What a model request says, whatever API it came in: the provider emulator reads an OpenAI
 * Responses, Chat Completions or Anthropic Messages body into one neutral `Conversation`, and
 * decides the answer from that alone. No state is kept per conversation: the CLIs resend the
 * whole history on every request, so where a request stands in its agent script (which turn,
 * which tool call of the turn) is read off the history itself. That is what makes retries,
 * restarts and resumed sessions come out right without the emulator remembering anything
 * (docs/provider-emulator.md, "Where a request stands").
 */
import { ITEMS_PER_STEP } from './steps.ts';

/** The three wire APIs the emulator speaks. */
export type ProviderApi = 'responses' | 'chat' | 'messages';

/** An Anthropic `cache_control` breakpoint's lifetime. */
export type CacheTtl = '5m' | '1h';

export type ConversationItem =
  /** System or developer instructions (counted as input, never a prompt). */
  (
    | { kind: 'system'; text: string }
    /** The user's words: a prompt, or the context a CLI sends beside it. */
    | { kind: 'prompt'; text: string }
    /** Text the user side sent inside a tool-result message (reminders): input, not a prompt. */
    | { kind: 'attachment'; text: string }
    | { kind: 'assistant-text'; text: string }
    | { kind: 'tool-call'; name: string; args: string; callId: string }
    | { kind: 'tool-result'; callId: string; text: string }
  ) & {
    /** An Anthropic cache breakpoint ends at this item (docs/provider-emulator.md, "Prompt caching"). */
    cache?: CacheTtl;
  };

export interface ToolDeclaration {
  name: string;
  /**
   * The declaration's texts, for counting input tokens: its strings as they are (a description
   * is most of a tool and the same every request, so its count is memoised) and the JSON of
   * everything else (the parameter schema).
   */
  texts: string[];
  cache?: CacheTtl;
}

export interface Conversation {
  api: ProviderApi;
  model: string;
  stream: boolean;
  tools: ToolDeclaration[];
  items: ConversationItem[];
  /** max_tokens / max_output_tokens / max_completion_tokens as sent. */
  maxOutputTokens: number | undefined;
  /** Anthropic stop_sequences, Chat Completions stop. */
  stopSequences: string[];
  /** Chat Completions: stream_options.include_usage. */
  includeUsage: boolean;
  /** OpenAI's prompt_cache_key: requests sharing one share cached prefixes. */
  cacheKey?: string | undefined;
  /** OpenAI's prompt_cache_retention `24h`: cached prefixes kept a day. */
  longCache?: boolean;
  /**
   * Responses: the stored response this request goes on from (its items are put before this
   * request's own), and whether the answer is stored (`store`, true unless sent false).
   */
  previousResponseId?: string | undefined;
  store?: boolean;
  /**
   * Responses: the `item_reference` entries of the input, each an item of a stored response to be
   * put at `at` in `items` (the emulator resolves them: src/provider/stored-responses.ts).
   */
  references?: Array<{ at: number; id: string }>;
  /** Responses: `items[0]` is the request's `instructions` (OpenAI does not carry them over). */
  instructions?: boolean;
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

/**
 * What the provider counts as input, as blocks in the order the prompt is built (tools, then
 * the system prompt, then the messages): `text` is called with each block's texts, then `end`
 * with the cache breakpoint that ends at the block, if any. Prompt caching is decided at these
 * blocks' boundaries. Callbacks, not a list: a request's hundreds of blocks build no objects.
 */
export function visitInputBlocks(
  conversation: Conversation,
  text: (value: string) => void,
  end: (cache: CacheTtl | undefined) => void,
): void {
  for (const tool of conversation.tools) {
    for (const value of tool.texts) text(value);
    end(tool.cache);
  }
  for (const item of conversation.items) {
    if (item.kind === 'tool-call') {
      text(item.name);
      text(item.args);
    } else text(item.text);
    end(item.cache);
  }
}

/**
 * A request the vendor would refuse, with the status, error type and words the vendor answers
 * (docs/provider-emulator.md, "Validation"). `param` and `code` are OpenAI's fields.
 */
export class VendorError extends Error {
  constructor(
    readonly status: number,
    readonly kind: 'invalid_request' | 'not_found',
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'VendorError';
  }
}

/** A bad field, named (the admin API's 400s, and a body that is not an object). */
export class RequestShapeError extends VendorError {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(400, 'invalid_request', `${field}: ${problem}`, field);
    this.name = 'RequestShapeError';
  }
}

/**
 * Every top-level field of a request body that the emulator reads, whatever the API: the three
 * readers below, and `max_tokens` (a count_tokens request). A large body is read off the main
 * thread and handed over with these fields only (src/provider/json-workers.ts): a field a reader
 * starts reading must be added here (test/provider-large-body.test.ts holds the readers to it).
 */
export const REQUEST_FIELDS: readonly string[] = [
  'model',
  'stream',
  'tools',
  // Responses
  'instructions',
  'input',
  'previous_response_id',
  'store',
  'max_output_tokens',
  'prompt_cache_key',
  'prompt_cache_retention',
  // Chat Completions and Messages
  'messages',
  'max_tokens',
  // Chat Completions
  'stream_options',
  'max_completion_tokens',
  'stop',
  // Messages
  'system',
  'stop_sequences',
];

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

/** An Anthropic block's `cache_control` breakpoint, if it has one. */
function cacheOf(block: Json): CacheTtl | undefined {
  const control = block.cache_control;
  if (!isObject(control)) return undefined;
  return control.ttl === '1h' ? '1h' : '5m';
}

// --- OpenAI's words -----------------------------------------------------------------------------

const openaiInvalid = (message: string, param: string | null, code: string | null = null) =>
  new VendorError(400, 'invalid_request', message, param, code);

function openaiModel(body: Json): string {
  if (body.model === undefined || body.model === null)
    throw openaiInvalid("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  if (typeof body.model !== 'string' || body.model === '')
    throw openaiInvalid(
      `Invalid type for 'model': expected a string, but got ${JSON.stringify(body.model)} instead.`,
      'model',
      'invalid_type',
    );
  return body.model;
}

function openaiMaxTokens(body: Json, field: string, minimum: number): number | undefined {
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw openaiInvalid(
      `Invalid type for '${field}': expected an integer, but got ${JSON.stringify(value)} instead.`,
      field,
      'invalid_type',
    );
  if (value < minimum)
    throw openaiInvalid(
      `Invalid '${field}': integer below minimum value. Expected a value >= ${minimum}, but got ${value} instead.`,
      field,
      'integer_below_min_value',
    );
  return value;
}

/**
 * Each tool object's texts, kept while the object lives: a body's recurring values are the same
 * objects request after request (src/provider/recurring-values.ts), so a resent tool's texts, and the
 * JSON of its schema, are made once (the arrays are only read).
 */
const TOOL_TEXTS = new WeakMap<Json, string[]>();

function toolTexts(tool: Json, into: string[] = []): string[] {
  // for…in, not Object.entries: no array of pairs for every tool of every request. A parsed
  // body's objects have no inherited enumerable keys, and the order is the same.
  for (const key in tool) {
    if (key === 'cache_control') continue;
    const value = tool[key];
    if (typeof value === 'string') into.push(value);
    else if (key === 'function' && isObject(value)) toolTexts(value, into);
    else if (value !== undefined) into.push(JSON.stringify(value));
  }
  return into;
}

function textsKept(tool: Json): string[] {
  const texts = toolTexts(tool);
  TOOL_TEXTS.set(tool, texts);
  return texts;
}

/**
 * The declarations read from a `tools` array, kept while the array lives, one map for each way of
 * naming a tool: a resent array is the same object (src/provider/recurring-values.ts), so its
 * declarations are read once (the lists are only read).
 */
const NAMED_TOOLS = new WeakMap<unknown[], ToolDeclaration[]>();
const CHAT_TOOLS = new WeakMap<unknown[], ToolDeclaration[]>();

function toolDeclarations(
  tools: unknown,
  nameOf: (tool: Json) => unknown,
  invalid: (message: string) => VendorError,
  kept: WeakMap<unknown[], ToolDeclaration[]>,
): ToolDeclaration[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw invalid('tools: expected an array');
  const known = kept.get(tools);
  if (known !== undefined) return known;
  const out: ToolDeclaration[] = [];
  for (let i = 0; i < tools.length; i++) {
    const tool: unknown = tools[i];
    if (!isObject(tool)) throw invalid(`tools.${i}: expected an object`);
    const name = nameOf(tool);
    const declaration: ToolDeclaration = {
      name: typeof name === 'string' ? name : String(tool.type ?? ''),
      texts: TOOL_TEXTS.get(tool) ?? textsKept(tool),
    };
    const cache = cacheOf(tool);
    if (cache) declaration.cache = cache;
    out.push(declaration);
  }
  kept.set(tools, out);
  return out;
}

const CALL_TYPES = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);
const OUTPUT_TYPES = new Set(['function_call_output', 'custom_tool_call_output', 'local_shell_call_output']);

/**
 * OpenAI Responses API (`POST /v1/responses`): what codex speaks. Read in steps: it yields
 * every ITEMS_PER_STEP items of a long history.
 */
export function* readResponsesRequestSteps(body: Json): Generator<void, Conversation> {
  const model = openaiModel(body);
  const items: ConversationItem[] = [];
  if (typeof body.instructions === 'string') items.push({ kind: 'system', text: body.instructions });
  const input = body.input;
  // With previous_response_id or an item_reference, the calls an output answers may be in a
  // stored response, not here: checked once those are put in (emulator.ts `resolveStored`).
  const references: Array<{ at: number; id: string }> = [];
  const stored =
    body.previous_response_id != null ||
    (Array.isArray(input) && input.some((entry) => isObject(entry) && entry.type === 'item_reference'));
  const calls = stored ? undefined : new Set<string>();
  if (typeof input === 'string') items.push({ kind: 'prompt', text: input });
  else if (Array.isArray(input)) {
    for (const [i, entry] of input.entries()) {
      if (i > 0 && i % ITEMS_PER_STEP === 0) yield;
      if (!isObject(entry))
        throw openaiInvalid(
          `Invalid type for 'input[${i}]': expected an object.`,
          `input[${i}]`,
          'invalid_type',
        );
      const type = entry.type ?? (entry.role !== undefined ? 'message' : undefined);
      if (type === 'message') {
        const role = entry.role;
        const text = textOf(entry.content);
        if (role === 'user') items.push({ kind: 'prompt', text });
        else if (role === 'assistant') items.push({ kind: 'assistant-text', text });
        else items.push({ kind: 'system', text });
      } else if (typeof type === 'string' && CALL_TYPES.has(type)) {
        const callId = String(entry.call_id ?? '');
        calls?.add(callId);
        items.push({
          kind: 'tool-call',
          name: String(entry.name ?? type),
          args:
            typeof entry.arguments === 'string'
              ? entry.arguments
              : JSON.stringify(entry.input ?? entry.action ?? {}),
          callId,
        });
      } else if (typeof type === 'string' && OUTPUT_TYPES.has(type)) {
        const callId = String(entry.call_id ?? '');
        if (calls && !calls.has(callId))
          throw openaiInvalid(`No tool call found for function call output with call_id ${callId}.`, 'input');
        items.push({
          kind: 'tool-result',
          callId,
          text: typeof entry.output === 'string' ? entry.output : textOf(entry.output),
        });
      } else if (type === 'item_reference') {
        if (typeof entry.id !== 'string')
          throw openaiInvalid(
            `Invalid type for 'input[${i}].id': expected a string.`,
            `input[${i}].id`,
            'invalid_type',
          );
        references.push({ at: items.length, id: entry.id });
      } else if (type === 'reasoning') {
        // Reasoning items carry encrypted content the emulator never produced: not input text.
      } else {
        items.push({ kind: 'system', text: JSON.stringify(entry) });
      }
    }
  } else if (input !== undefined)
    throw openaiInvalid("Invalid type for 'input': expected a string or an array.", 'input', 'invalid_type');
  return {
    api: 'responses',
    model,
    stream: body.stream === true,
    tools: toolDeclarations(
      body.tools,
      (tool) => tool.name,
      (message) => openaiInvalid(message, 'tools'),
      NAMED_TOOLS,
    ),
    items,
    // The Responses API refuses fewer than 16 output tokens.
    maxOutputTokens: openaiMaxTokens(body, 'max_output_tokens', 16),
    stopSequences: [],
    includeUsage: true,
    cacheKey: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key.slice(0, 256) : undefined,
    longCache: body.prompt_cache_retention === '24h',
    previousResponseId: previousResponseIdOf(body.previous_response_id),
    store: storeOf(body.store),
    ...(references.length > 0 ? { references } : {}),
    ...(typeof body.instructions === 'string' ? { instructions: true } : {}),
  };
}

function previousResponseIdOf(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string')
    throw openaiInvalid(
      "Invalid type for 'previous_response_id': expected a string.",
      'previous_response_id',
      'invalid_type',
    );
  return value;
}

function storeOf(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value !== 'boolean')
    throw openaiInvalid("Invalid type for 'store': expected a boolean.", 'store', 'invalid_type');
  return value;
}

const CHAT_ROLES = "'system', 'assistant', 'user', 'function', 'tool', and 'developer'";

function chatStop(stop: unknown): string[] {
  if (stop === undefined || stop === null) return [];
  const list = typeof stop === 'string' ? [stop] : stop;
  if (!Array.isArray(list) || list.some((entry) => typeof entry !== 'string'))
    throw openaiInvalid(
      "Invalid type for 'stop': expected a string or an array of strings.",
      'stop',
      'invalid_type',
    );
  if (list.length > 4)
    throw openaiInvalid(
      `Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length ${list.length} instead.`,
      'stop',
      'array_above_max_length',
    );
  return (list as string[]).filter((entry) => entry !== '');
}

/**
 * OpenAI Chat Completions (`POST /v1/chat/completions`): what opencode speaks. Read in steps:
 * it yields every ITEMS_PER_STEP items of a long history.
 */
export function* readChatRequestSteps(body: Json): Generator<void, Conversation> {
  const model = openaiModel(body);
  if (body.messages === undefined)
    throw openaiInvalid("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter');
  if (!Array.isArray(body.messages) || body.messages.length === 0)
    throw openaiInvalid(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'messages',
      'empty_array',
    );
  const items: ConversationItem[] = [];
  /** The tool calls of the last assistant message not yet all answered, and where it was. */
  let open: { index: number; ids: Set<string> } | undefined;
  const unanswered = (index: number) => {
    if (open && open.ids.size > 0)
      throw openaiInvalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
        `messages.[${index}].role`,
      );
    open = undefined;
  };
  for (const [i, message] of body.messages.entries()) {
    if (i > 0 && i % ITEMS_PER_STEP === 0) yield;
    if (!isObject(message))
      throw openaiInvalid(
        `Invalid type for 'messages[${i}]': expected an object.`,
        `messages[${i}]`,
        'invalid_type',
      );
    const text = textOf(message.content);
    if (message.role !== 'tool') unanswered(open?.index ?? i);
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
        if (calls.length > 0)
          open = {
            index: i,
            ids: new Set(calls.map((call) => (isObject(call) ? String(call.id ?? '') : ''))),
          };
        if (text === '' && calls.length === 0) items.push({ kind: 'assistant-text', text: '' });
        break;
      }
      case 'tool': {
        const callId = String(message.tool_call_id ?? '');
        if (!open?.ids.delete(callId))
          throw openaiInvalid(
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
            `messages.[${i}].role`,
          );
        items.push({ kind: 'tool-result', callId, text });
        break;
      }
      case 'function':
        items.push({ kind: 'tool-result', callId: String(message.name ?? ''), text });
        break;
      default:
        throw openaiInvalid(
          `Invalid value: ${JSON.stringify(message.role)}. Supported values are: ${CHAT_ROLES}.`,
          `messages[${i}].role`,
          'invalid_value',
        );
    }
  }
  const options = isObject(body.stream_options) ? body.stream_options : {};
  const maxCompletion = openaiMaxTokens(body, 'max_completion_tokens', 1);
  return {
    api: 'chat',
    model,
    stream: body.stream === true,
    tools: toolDeclarations(
      body.tools,
      (tool) => (isObject(tool.function) ? tool.function.name : undefined),
      (message) => openaiInvalid(message, 'tools'),
      CHAT_TOOLS,
    ),
    items,
    maxOutputTokens: maxCompletion ?? openaiMaxTokens(body, 'max_tokens', 1),
    stopSequences: chatStop(body.stop),
    includeUsage: options.include_usage === true,
    cacheKey: typeof body.prompt_cache_key === 'string' ? body.prompt_cache_key.slice(0, 256) : undefined,
    longCache: body.prompt_cache_retention === '24h',
  };
}

// --- Anthropic's words ----------------------------------------------------------------------------

const anthropicInvalid = (message: string) => new VendorError(400, 'invalid_request', message);

/** Anthropic allows this many cache_control breakpoints in one request. */
const MAX_BREAKPOINTS = 4;

/**
 * Anthropic Messages (`POST /v1/messages`): what Claude Code speaks. Read in steps: it yields
 * every ITEMS_PER_STEP items of a long history. The generator only loops; each message is read
 * by a function of its own, and what is rare (a refusal's words, an unusual block) by others
 * again, so that TurboFan compiles small pieces, each once (docs/performance.md, "Round six").
 */
export function* readMessagesRequestSteps(body: Json): Generator<void, Conversation> {
  const messages = checkedMessages(body);
  const reading: MessagesReading = {
    items: systemItems(body.system),
    previousUses: undefined,
    previousIndex: -1,
  };
  for (let i = 0; i < messages.length; i++) {
    if (i > 0 && i % ITEMS_PER_STEP === 0) yield;
    readMessage(messages[i], i, reading);
  }
  return messagesConversation(body, reading.items);
}

/** What reading a Messages history carries from one message to the next. */
interface MessagesReading {
  items: ConversationItem[];
  /** The tool_use ids of the last assistant message, for the next user message's tool_result blocks. */
  previousUses: Set<string> | undefined;
  previousIndex: number;
}

/** The request's required fields as Anthropic checks them (in its order), and its messages. */
function checkedMessages(body: Json): unknown[] {
  if (body.model === undefined) throw anthropicInvalid('model: Field required');
  if (typeof body.model !== 'string' || body.model === '')
    throw anthropicInvalid('model: Input should be a valid string');
  if (body.max_tokens === undefined) throw anthropicInvalid('max_tokens: Field required');
  if (typeof body.max_tokens !== 'number' || !Number.isInteger(body.max_tokens))
    throw anthropicInvalid('max_tokens: Input should be a valid integer');
  if (body.max_tokens < 1) throw anthropicInvalid('max_tokens: Input should be greater than or equal to 1');
  if (body.messages === undefined) throw anthropicInvalid('messages: Field required');
  if (!Array.isArray(body.messages)) throw anthropicInvalid('messages: Input should be a valid list');
  return body.messages;
}

/** The system prompt's items: a string, or blocks (each with its cache breakpoint). */
function systemItems(system: unknown): ConversationItem[] {
  const items: ConversationItem[] = [];
  if (typeof system === 'string') items.push({ kind: 'system', text: system });
  else if (Array.isArray(system))
    for (let i = 0; i < system.length; i++) {
      const block: unknown = system[i];
      if (!isObject(block)) continue;
      const item: ConversationItem = { kind: 'system', text: String(block.text ?? '') };
      const cache = cacheOf(block);
      if (cache) item.cache = cache;
      items.push(item);
    }
  return items;
}

/** One message of the history, its items added to `reading`. */
function readMessage(message: unknown, i: number, reading: MessagesReading): void {
  if (!isObject(message)) throw anthropicInvalid(`messages.${i}: Input should be a valid dictionary`);
  const role = message.role;
  // A `system` message among the others is what Claude Code 2.1.328 sends (its context, after the prompt).
  if (role !== 'user' && role !== 'assistant' && role !== 'system')
    throw anthropicInvalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
  const content = message.content;
  if (typeof content === 'string') {
    reading.items.push(
      role === 'user'
        ? { kind: 'prompt', text: content }
        : role === 'system'
          ? { kind: 'system', text: content }
          : { kind: 'assistant-text', text: content },
    );
    if (role !== 'system') reading.previousUses = undefined;
    return;
  }
  if (!Array.isArray(content))
    throw anthropicInvalid(`messages.${i}.content: Input should be a valid string or a valid list`);
  const uses = readBlocks(content, role, i, reading);
  if (role === 'system') return;
  if (role === 'user' && reading.previousUses && reading.previousUses.size > 0) throw usesUnanswered(reading);
  // No tool_use in an assistant message: no ids for the next one to answer (as an empty set).
  reading.previousUses = role === 'assistant' ? uses : undefined;
  reading.previousIndex = i;
}

/** A message's blocks, their items added to `reading`; the ids of its tool_use blocks, if any. */
function readBlocks(
  content: unknown[],
  role: 'user' | 'assistant' | 'system',
  i: number,
  reading: MessagesReading,
): Set<string> | undefined {
  const hasToolResult = hasToolResultBlock(content);
  let uses: Set<string> | undefined;
  for (let j = 0; j < content.length; j++) {
    const block: unknown = content[j];
    if (!isObject(block)) continue;
    let item: ConversationItem;
    const type = block.type;
    if (type === 'text') {
      const text = String(block.text ?? '');
      item =
        role === 'assistant'
          ? { kind: 'assistant-text', text }
          : role === 'system'
            ? { kind: 'system', text }
            : { kind: hasToolResult ? 'attachment' : 'prompt', text };
    } else if (type === 'tool_use' || type === 'server_tool_use') {
      const id = String(block.id ?? '');
      uses ??= new Set();
      uses.add(id);
      item = {
        kind: 'tool-call',
        name: String(block.name ?? ''),
        args: JSON.stringify(block.input ?? {}),
        callId: id,
      };
    } else if (type === 'tool_result') item = toolResultItem(block, i, j, reading);
    else if (type === 'thinking' || type === 'redacted_thinking') continue;
    else item = { kind: 'attachment', text: JSON.stringify(block) };
    const cache = cacheOf(block);
    if (cache) item.cache = cache;
    reading.items.push(item);
  }
  return uses;
}

function hasToolResultBlock(content: unknown[]): boolean {
  for (let j = 0; j < content.length; j++) {
    const block: unknown = content[j];
    if (isObject(block) && block.type === 'tool_result') return true;
  }
  return false;
}

/** A tool_result block: it must answer a tool_use of the message before. */
function toolResultItem(block: Json, i: number, j: number, reading: MessagesReading): ConversationItem {
  const id = String(block.tool_use_id ?? '');
  if (!reading.previousUses?.delete(id))
    throw anthropicInvalid(
      `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
    );
  return { kind: 'tool-result', callId: id, text: textOf(block.content) };
}

function usesUnanswered(reading: MessagesReading): VendorError {
  return anthropicInvalid(
    `messages.${reading.previousIndex}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${[...(reading.previousUses ?? [])].join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
  );
}

const toolName = (tool: Json): unknown => tool.name;

/** The conversation of a read history: its tools, breakpoints checked, stop sequences. */
function messagesConversation(body: Json, items: ConversationItem[]): Conversation {
  const tools = toolDeclarations(body.tools, toolName, anthropicInvalid, NAMED_TOOLS);
  let breakpoints = 0;
  for (let i = 0; i < tools.length; i++) if ((tools[i] as ToolDeclaration).cache) breakpoints += 1;
  for (let i = 0; i < items.length; i++) if ((items[i] as ConversationItem).cache) breakpoints += 1;
  if (breakpoints > MAX_BREAKPOINTS)
    throw anthropicInvalid(
      `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`,
    );
  const stop = body.stop_sequences;
  if (stop !== undefined && (!Array.isArray(stop) || stop.some((entry) => typeof entry !== 'string')))
    throw anthropicInvalid('stop_sequences: Input should be a valid list of strings');
  return {
    api: 'messages',
    model: body.model as string,
    stream: body.stream === true,
    tools,
    items,
    maxOutputTokens: body.max_tokens as number,
    stopSequences: stop === undefined ? [] : (stop as string[]).filter((entry) => entry !== ''),
    includeUsage: true,
  };
}

/** An `item_reference` naming no stored item: OpenAI's 404, in its words. */
export const itemNotFound = (id: string) =>
  new VendorError(
    404,
    'invalid_request',
    `Item with id '${id}' not found. Items are not persisted when \`store\` is set to false. Try again with \`store\` set to true, or remove this item from your input.`,
    'input',
  );

/** `previous_response_id` naming no stored response: OpenAI's 400. */
export const previousResponseNotFound = (id: string) =>
  openaiInvalid(
    `Previous response with id '${id}' not found.`,
    'previous_response_id',
    'previous_response_not_found',
  );

/**
 * A request going on from a stored response: each tool output it sends must answer a call in
 * that response's chain or in the request itself, as OpenAI checks it.
 */
export function checkToolOutputs(
  previous: readonly ConversationItem[],
  own: readonly ConversationItem[],
): void {
  const calls = new Set<string>();
  for (const item of previous) if (item.kind === 'tool-call') calls.add(item.callId);
  for (const item of own)
    if (item.kind === 'tool-call') calls.add(item.callId);
    else if (item.kind === 'tool-result' && !calls.has(item.callId))
      throw openaiInvalid(
        `No tool call found for function call output with call_id ${item.callId}.`,
        'input',
      );
}
