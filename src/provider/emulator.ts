/**
 * The provider emulator: the model side's twin of the GitHub emulator. One pipeline answers
 * every request, in-process or over HTTP (src/provider/http.ts):
 *
 *   route → key → body → conversation (any of the three APIs) → who (CLI, session, script) →
 *   where it stands (turn, step, attempt) → fault? → reply (script) → tokens → limits? →
 *   timing (profile) → rendered answer → played by the caller → `provider.request` record
 *
 * Everything before playing is synchronous and drawn from seeded streams named by the request's
 * place in its conversation, so the same conversation gets the same answers and timings whatever
 * else is in flight. docs/provider-emulator.md is the user's description.
 */

import { decode as o200kDecode, encode as o200kEncode } from 'gpt-tokenizer/encoding/o200k_base';
import { PROVIDER_LIMITS } from '../base/limits.ts';
import { LruMap } from '../base/lru-map.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import type { TraceSink } from '../trace/writer.ts';
import { type CacheUsage, PromptCache, type PromptPrefixes } from './caching.ts';
import {
  type CacheTtl,
  type Conversation,
  type ConversationItem,
  checkToolOutputs,
  itemNotFound,
  type ProviderApi,
  positionOf,
  previousResponseNotFound,
  RequestShapeError,
  readChatRequestSteps,
  readMessagesRequestSteps,
  readResponsesRequestSteps,
  VendorError,
  visitInputBlocks,
} from './conversation.ts';
import { FaultBook, type FaultRule } from './faults.ts';
import { LATENCY_PROFILES, type LatencyProfile, planTiming } from './latency.ts';
import { type Admission, LimitBook, type LimitStates, type ProviderLimits } from './limits.ts';
import { type LoadModel, LoadQueue } from './load.ts';
import { type ExtraModel, MODEL_CREATED, type ModelInfo, ModelTable } from './models.ts';
import { RecurringValues } from './recurring-values.ts';
import {
  type Ending,
  type ErrorKind,
  errorBody,
  type RenderInput,
  renderStream,
  renderWhole,
  responsesOutputItems,
  type StreamRenderer,
  type Usage,
} from './render.ts';
import {
  type AgentScript,
  padFinal,
  planReply,
  type Reply,
  type ScriptsFile,
  type ScriptTurn,
  scriptLibrary,
  scriptNamedIn,
} from './scripts.ts';
import { ITEMS_PER_STEP, runToEnd, TEXTS_PER_STEP } from './steps.ts';
import { type StoredResponse, StoredResponses } from './stored-responses.ts';
import { requestBudget, TokenCounter } from './tokens.ts';
import type { ParsedBody, PlannedStream, PlayOutcome, ProviderAnswer, ProviderRequest } from './types.ts';

export interface ProviderEmulatorOptions {
  clock: Clock;
  rng: Rng;
  trace?: TraceSink | undefined;
  scripts?: ScriptsFile | undefined;
  latency?: LatencyProfile | undefined;
  limits?: ProviderLimits | undefined;
  /** Latency under load: a cap on sequences generated at once and a queue (docs: "Load"). */
  load?: LoadModel | undefined;
  /** Answer unknown keys 401 instead of serving them as anonymous identities. */
  requireKnownKeys?: boolean | undefined;
  /** Token of the admin API (HTTP face only). */
  adminToken?: string | undefined;
  /**
   * Who a key not minted here belongs to, asked once per new key (then kept): the world's agent
   * launchers make a key per spawn themselves (docs/world.md, "Agents").
   */
  resolveKey?: ((key: string) => KeyBinding | undefined) | undefined;
  /**
   * Models served beside the table (`--model`, a scenario's `provider.models`): any other name
   * is the vendor's 404 (docs/provider-emulator.md, "Models").
   */
  models?: readonly ExtraModel[] | undefined;
}

/** Who a key belongs to: minted with a session (and a script) through the admin API. */
export interface KeyBinding {
  session?: string | undefined;
  script?: string | undefined;
  /** Labels every request made with the key carries (the world's `spawn` and `agent`). */
  labels?: Record<string, string> | undefined;
}

export interface ProviderStats {
  requests: number;
  byStatus: Record<string, number>;
  byCli: Record<string, number>;
  /** The versions each CLI's User-Agent named, with their request counts (bounded: docs/limits.md). */
  cliVersions: Record<string, Record<string, number>>;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  inFlight: number;
}

/** What a Responses request going on from a stored response adds: that response, and its own items. */
interface Chain {
  previous: StoredResponse;
  own: ConversationItem[];
}

type Route =
  | { kind: 'generate'; api: ProviderApi }
  | { kind: 'count'; api: 'messages' | 'responses' }
  | { kind: 'models' }
  | { kind: 'model'; id: string }
  /** A stored response of the Responses API: read (GET) or deleted (DELETE). */
  | { kind: 'stored'; id: string }
  | { kind: 'first-party'; path: string };

const POST_ROUTES: Record<string, Route> = {
  '/v1/responses': { kind: 'generate', api: 'responses' },
  '/responses': { kind: 'generate', api: 'responses' },
  '/v1/chat/completions': { kind: 'generate', api: 'chat' },
  '/chat/completions': { kind: 'generate', api: 'chat' },
  '/v1/messages': { kind: 'generate', api: 'messages' },
  '/messages': { kind: 'generate', api: 'messages' },
  '/v1/messages/count_tokens': { kind: 'count', api: 'messages' },
  '/v1/responses/input_tokens': { kind: 'count', api: 'responses' },
  '/responses/input_tokens': { kind: 'count', api: 'responses' },
};

/**
 * Anthropic's own endpoints (under `/api/`, beside the model API): Claude Code asks two of them at
 * every start when it believes it speaks to api.anthropic.com (the world's host names, not
 * `ANTHROPIC_BASE_URL`), with its key: `GET /api/claude_code/settings` (an organization's managed
 * settings) and `GET /api/claude_code/policy_limits` (its policy). Not model requests: recorded
 * as `api: first-party` (docs/provider-emulator.md, "Anthropic's own endpoints").
 */
const FIRST_PARTY_PREFIX = '/api/';

/**
 * What an organization without managed settings or restrictions gets: a policy with no
 * restriction (the empty policy Claude Code itself starts from). Every other first-party path,
 * the settings among them, is a 404, which Claude Code reads as "no managed settings".
 */
const FIRST_PARTY_ANSWERS: Readonly<Record<string, unknown>> = {
  'GET /api/claude_code/policy_limits': { restrictions: {} },
};

function routeOf(method: string, path: string): Route | undefined {
  if (path.startsWith(FIRST_PARTY_PREFIX)) return { kind: 'first-party', path };
  if (method === 'POST') return POST_ROUTES[path];
  const stored = /^\/(?:v1\/)?responses\/([^/]{1,256})$/.exec(path)?.[1];
  if (stored !== undefined && (method === 'GET' || method === 'DELETE'))
    try {
      return { kind: 'stored', id: decodeURIComponent(stored) };
    } catch {
      // Not an id any response has: the 404 of an id not found.
      return { kind: 'stored', id: stored };
    }
  if (method !== 'GET') return undefined;
  if (path === '/v1/models' || path === '/models') return { kind: 'models' };
  const id = /^\/(?:v1\/)?models\/([^/]{1,256})$/.exec(path)?.[1];
  if (id === undefined) return undefined;
  try {
    return { kind: 'model', id: decodeURIComponent(id) };
  } catch {
    return undefined;
  }
}

const READERS: Record<ProviderApi, (body: Record<string, unknown>) => Generator<void, Conversation>> = {
  responses: readResponsesRequestSteps,
  chat: readChatRequestSteps,
  messages: readMessagesRequestSteps,
};

/** The CLI and its version, from the User-Agent each sends (docs/provider-emulator.md). */
export function cliOf(userAgent: string | undefined): { cli: string; version: string | undefined } {
  const ua = userAgent ?? '';
  const version = (match: RegExpExecArray | null) => match?.[1]?.slice(0, PROVIDER_LIMITS.maxVersionChars);
  const codex = /^codex[\w-]*\/(\S+)/.exec(ua);
  if (codex) return { cli: 'codex', version: version(codex) };
  // claude-cli/V on model requests, claude-code/V on its requests to Anthropic's own endpoints.
  const claude = /^claude-(?:cli|code)\/(\S+)/.exec(ua);
  if (claude) return { cli: 'claude', version: version(claude) };
  const opencode = /^opencode\/(\S+)/.exec(ua);
  if (opencode) return { cli: 'opencode', version: version(opencode) };
  return { cli: 'other', version: undefined };
}

const header = (headers: ProviderRequest['headers'], name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
};

/** The CLI's own session id, from the header each sends. */
function cliSessionOf(headers: ProviderRequest['headers']): string | undefined {
  const id =
    header(headers, 'session-id') ??
    header(headers, 'session_id') ??
    header(headers, 'x-claude-code-session-id') ??
    header(headers, 'x-session-id');
  return id === undefined ? undefined : id.slice(0, PROVIDER_LIMITS.maxSessionChars);
}

function keyOf(headers: ProviderRequest['headers']): string | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header(headers, 'authorization') ?? '');
  return (bearer?.[1] ?? header(headers, 'x-api-key'))?.slice(0, PROVIDER_LIMITS.maxKeyChars);
}

/**
 * Which attempt the client says this is: the official SDKs send `x-stainless-retry-count` (0 on
 * the first try, then 1, 2 … on their own retries). Claude Code sends it too, but always 0: it
 * retries in a loop of its own, as codex and opencode do, with no header that says so
 * (docs/provider-emulator.md, "Records"). A request without the header says nothing: 1.
 */
function attemptSaid(headers: ProviderRequest['headers']): number {
  const count = Number(header(headers, 'x-stainless-retry-count'));
  return Number.isInteger(count) && count >= 0 && count < 1000 ? count + 1 : 1;
}

/** What is known of one place of a conversation: the requests seen there, and how the last one ended. */
interface PlaceState {
  visits: number;
  /** The attempt the last finished request here was, and whether it failed (anything but a whole 200). */
  lastAttempt: number;
  lastFailed: boolean;
}

interface Subject {
  api: ProviderApi;
  key: string;
  cli: string;
  cliVersion: string | undefined;
  cliSession: string | undefined;
  session: string | undefined;
  labels: Record<string, string> | undefined;
}

/** A block's end in a prompt being counted, and its cache breakpoint (one object of each). */
interface BlockEnd {
  cache: CacheTtl | undefined;
}
const BLOCK_ENDS: Record<CacheTtl | 'none', BlockEnd> = {
  none: { cache: undefined },
  '5m': { cache: '5m' },
  '1h': { cache: '1h' },
};

/** A prompt counted block by block: its tokens, whether any was estimated, its prefixes. */
interface CountedPrompt {
  tokens: number;
  estimated: boolean;
  prefixes: PromptPrefixes;
}

export class ProviderEmulator {
  readonly clock: Clock;
  private readonly rng: Rng;
  private readonly trace: TraceSink | undefined;
  private readonly scripts: Map<string, AgentScript>;
  private readonly defaultScript: string;
  readonly latency: LatencyProfile;
  readonly faults: FaultBook;
  readonly limits: LimitBook;
  readonly load: LoadQueue | undefined;
  private readonly requireKnownKeys: boolean;
  readonly adminToken: string | undefined;
  private readonly resolveKey: ((key: string) => KeyBinding | undefined) | undefined;
  private readonly tokens = new TokenCounter();
  private readonly modelTable: ModelTable;
  readonly cache = new PromptCache(PROVIDER_LIMITS.maxCacheEntries);
  /** What recurs in request bodies (a CLI's system prompt, tools, history), parsed once. */
  private readonly bodies = new RecurringValues(
    PROVIDER_LIMITS.recurringValues.maxEntries,
    PROVIDER_LIMITS.recurringValues.maxBytes,
  );
  private readonly keys = new Map<string, KeyBinding>();
  /** Responses API answers kept for `previous_response_id` and `GET /v1/responses/{id}`. */
  private readonly storedResponses = new StoredResponses();
  /** What is known of each place of a conversation (bounded: the least recently visited are forgotten). */
  private readonly places = new LruMap<string, PlaceState>(PROVIDER_LIMITS.maxTrackedConversations);
  /** Final messages padded to their token counts, per script turn (one copy for every stream). */
  private readonly finals = new Map<ScriptTurn, { text: string; tokens: number }>();
  private requestCount = 0;
  private inFlight = 0;
  private readonly stats: Omit<ProviderStats, 'inFlight'> = {
    requests: 0,
    byStatus: {},
    byCli: {},
    cliVersions: {},
    inputTokens: 0,
    cachedInputTokens: 0,
    outputTokens: 0,
  };
  private cliVersionCount = 0;
  /** A script turn's padded final message, for `planReply` (one function, not a closure a request). */
  private readonly finalOf = (turn: ScriptTurn) => this.paddedFinal(turn);

  constructor(options: ProviderEmulatorOptions) {
    this.clock = options.clock;
    this.rng = options.rng;
    this.trace = options.trace;
    const library = scriptLibrary(options.scripts);
    this.scripts = library.scripts;
    this.defaultScript = library.fallback;
    this.latency = options.latency ?? LATENCY_PROFILES.none!;
    this.faults = new FaultBook(this.rng.fork('faults'));
    this.limits = new LimitBook(options.limits ?? {}, PROVIDER_LIMITS.maxLimitKeys);
    this.load = options.load ? new LoadQueue(options.load) : undefined;
    this.requireKnownKeys = options.requireKnownKeys ?? false;
    this.adminToken = options.adminToken;
    this.resolveKey = options.resolveKey;
    this.modelTable = new ModelTable(options.models);
  }

  /** The binding of a key: minted here, or told by `resolveKey` (and then kept). */
  private bindingOf(key: string): KeyBinding | undefined {
    const known = this.keys.get(key);
    if (known !== undefined || this.resolveKey === undefined) return known;
    const resolved = this.resolveKey(key);
    if (resolved !== undefined && this.keys.size < PROVIDER_LIMITS.maxKeys) this.keys.set(key, resolved);
    return resolved;
  }

  // --- admin ----------------------------------------------------------------------------------

  /** A key for one session (and script): its requests are attributed to that session. */
  mintKey(binding: KeyBinding = {}): string {
    if (binding.script !== undefined && !this.scripts.has(binding.script))
      throw new RequestShapeError(
        'script',
        `no script named '${binding.script}' (have: ${this.scriptNames().join(', ')})`,
      );
    if (this.keys.size >= PROVIDER_LIMITS.maxKeys)
      throw new RequestShapeError('key', `at most ${PROVIDER_LIMITS.maxKeys} keys (docs/limits.md)`);
    const random = this.rng.fork(`key:${this.keys.size}`);
    const key = `fb-${Array.from({ length: 24 }, () => random.int(0, 35).toString(36)).join('')}`;
    this.keys.set(key, { ...binding });
    return key;
  }

  scriptNames(): string[] {
    return [...this.scripts.keys()];
  }

  addFault(rule: FaultRule): number {
    return this.faults.add(rule);
  }

  snapshot(): ProviderStats {
    const cliVersions: ProviderStats['cliVersions'] = {};
    for (const [cli, versions] of Object.entries(this.stats.cliVersions)) cliVersions[cli] = { ...versions };
    return {
      ...this.stats,
      byStatus: { ...this.stats.byStatus },
      byCli: { ...this.stats.byCli },
      cliVersions,
      inFlight: this.inFlight,
    };
  }

  // --- the pipeline ---------------------------------------------------------------------------

  /** Plans the answer to one request; the caller plays it on the clock and calls `finish`. */
  handle(request: ProviderRequest): ProviderAnswer {
    return runToEnd(this.plan(request));
  }

  /**
   * `handle` in steps: it yields after parsing the body, after reading the conversation, and
   * while counting the prompt, so that a server can let its event loop run between them
   * (src/provider/http.ts). The answer is the same wherever it stops, as long as nothing else is
   * planned on this emulator until it is done.
   */
  *plan(request: ProviderRequest): Generator<void, ProviderAnswer> {
    // Cut into a generator of the steps and functions of their own around it (docs/performance.md,
    // "Round six"): TurboFan compiled the whole pipeline as one function, twice, in 100-400 ms.
    const start = this.start(request);
    if (start.answered !== undefined) return start.answered;
    const base = start.base;
    const route = start.route;
    let conversation: Conversation;
    let model: ModelInfo;
    let prompt: CountedPrompt;
    let chain: Chain | undefined;
    try {
      const parsed =
        request.parsedBody ??
        (request.rawBody ? this.bodies.parse(request.rawBody) : parseBody(request.body));
      yield;
      const fields = bodyFields(parsed, start.api);
      // Counting tokens takes a request without its output settings.
      if (route.kind === 'count') fields.max_tokens ??= 1;
      conversation = yield* READERS[start.api](fields);
      chain = yield* this.resolveStored(conversation);
      model = this.modelFor(conversation);
      yield;
      // A CLI's session on one API resends the same texts in the same order: its scope.
      prompt = yield* this.countPromptSteps(
        conversation,
        `${start.api}|${base.cli}|${start.key}|${base.cliSession ?? ''}`,
      );
      this.checkWindow(conversation, model, prompt.tokens);
    } catch (error) {
      return this.refused(base, error);
    }
    if (route.kind === 'count') return this.tokenCount(base, route.api, prompt);
    return this.generation(request, start, conversation, model, prompt, chain);
  }

  /**
   * What a Responses request takes from stored responses (docs/provider-emulator.md, "Stored
   * responses"): each `item_reference` replaced by the stored item it names (OpenAI's 404 when none
   * is kept), and with `previous_response_id` the stored chain's items put after its
   * `instructions` and before the rest of its own (the vendor counts them as its input; OpenAI's
   * 400 when no such response is kept). Its tool outputs are then checked against the calls they
   * answer, wherever those are. In steps: a chain may hold many items.
   */
  private *resolveStored(conversation: Conversation): Generator<void, Chain | undefined> {
    const references = conversation.references;
    if (references !== undefined) {
      const items: ConversationItem[] = [];
      let from = 0;
      for (const { at, id } of references) {
        const item = this.storedResponses.item(id);
        if (item === undefined) throw itemNotFound(id);
        for (; from < at; from++) items.push(conversation.items[from]!);
        items.push(item);
      }
      for (; from < conversation.items.length; from++) items.push(conversation.items[from]!);
      conversation.items = items;
    }
    const id = conversation.previousResponseId;
    if (id === undefined) {
      if (references !== undefined) checkToolOutputs([], conversation.items);
      return undefined;
    }
    const first = conversation.instructions ? 1 : 0;
    const own = conversation.items.slice(first);
    const previous = this.storedResponses.get(id, true);
    if (previous === undefined) throw previousResponseNotFound(id);
    const chain: StoredResponse[] = [];
    for (let r: StoredResponse | undefined = previous; r !== undefined; r = r.previous) chain.push(r);
    const items: ConversationItem[] = conversation.items.slice(0, first);
    let moved = 0;
    for (let i = chain.length - 1; i >= 0; i--)
      for (const item of chain[i]!.items) {
        items.push(item);
        if (++moved % ITEMS_PER_STEP === 0) yield;
      }
    checkToolOutputs(items, own);
    for (const item of own) items.push(item);
    conversation.items = items;
    return { previous, own };
  }

  /** `GET` and `DELETE /v1/responses/{id}`: a stored response, or OpenAI's 404. */
  private storedAnswer(base: BaseContext, method: string, id: string): ProviderAnswer {
    const stored = this.storedResponses.get(id);
    if (stored === undefined)
      return this.error(base, 404, 'not_found', `Response with id '${id}' not found.`, {}, { code: null });
    if (method === 'DELETE') {
      this.storedResponses.delete(id);
      return this.json(base, { id, object: 'response', deleted: true });
    }
    return this.json(base, JSON.parse(renderWhole(stored.render)));
  }

  /**
   * Who asks for what: the request's id, route, client and key; or, for a request that is not a
   * model request to plan (no route, no key, a model list, one of Anthropic's own endpoints), its
   * answer already.
   */
  private start(request: ProviderRequest): RequestStart {
    const arrival = request.arrivedAt ?? this.clock.now();
    this.requestCount += 1;
    const requestId = `req_${this.requestCount.toString(36).padStart(8, '0')}`;
    const path = request.path.split('?', 1)[0] ?? '';
    const route = routeOf(request.method, path);
    const { cli, version: cliVersion } = cliOf(header(request.headers, 'user-agent'));
    // An Anthropic client says so with its version header (the SDK sends it on every request).
    const anthropicClient = header(request.headers, 'anthropic-version') !== undefined;
    const api: ProviderApi =
      route?.kind === 'generate' || route?.kind === 'count'
        ? route.api
        : route?.kind === 'stored'
          ? 'responses'
          : anthropicClient || header(request.headers, 'x-api-key') !== undefined
            ? 'messages'
            : 'chat';
    const base: BaseContext = {
      arrival,
      requestId,
      cli,
      cliVersion,
      cliSession: cliSessionOf(request.headers),
      api,
      bytesIn: request.bodyBytes ?? Buffer.byteLength(request.body),
      attempt: attemptSaid(request.headers),
    };
    if (!route)
      return answeredStart(
        base,
        this.error(
          base,
          404,
          'not_found',
          `No route for ${request.method} ${path} (docs/provider-emulator.md)`,
          {},
          { code: null },
        ),
      );
    const key = keyOf(request.headers);
    const binding = key === undefined ? undefined : this.bindingOf(key);
    if (route.kind === 'first-party')
      return answeredStart(base, this.firstParty(base, request.method, route.path, key, binding));
    if (key === undefined || (this.requireKnownKeys && binding === undefined))
      return answeredStart(base, this.unauthorized(base, key));
    if (route.kind === 'models' || route.kind === 'model')
      return answeredStart(base, this.models(base, route));
    if (route.kind === 'stored')
      return answeredStart(base, this.storedAnswer(base, request.method, route.id));
    if (api === 'messages' && !anthropicClient)
      return answeredStart(
        base,
        this.error(base, 400, 'invalid_request', 'anthropic-version: header is required'),
      );
    return { base, route, api, key, binding, answered: undefined };
  }

  /** No key, or a key not known where only known keys are served: a 401 in the vendor's words. */
  private unauthorized(base: BaseContext, key: string | undefined): ProviderAnswer {
    const anthropic = base.api === 'messages';
    return this.error(
      base,
      401,
      'authentication',
      key === undefined
        ? anthropic
          ? 'x-api-key header is required'
          : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
        : anthropic
          ? 'invalid x-api-key'
          : 'Incorrect API key provided.',
    );
  }

  /** A request the vendor refuses (its body, its model, its window): the vendor's error answer. */
  private refused(base: BaseContext, error: unknown): ProviderAnswer {
    if (!(error instanceof VendorError)) throw error;
    return this.error(
      base,
      error.status,
      error.kind,
      error.message,
      {},
      { param: error.param, code: error.code },
    );
  }

  /** A generation request read and counted: where it stands, its reply, its timing, its answer. */
  private generation(
    request: ProviderRequest,
    start: RequestStart,
    conversation: Conversation,
    model: ModelInfo,
    prompt: CountedPrompt,
    chain: Chain | undefined,
  ): ProviderAnswer {
    const base = start.base;
    const api = start.api;
    const key = start.key;
    const arrival = base.arrival;
    const subject: Subject = {
      api,
      key,
      cli: base.cli,
      cliVersion: base.cliVersion,
      cliSession: base.cliSession,
      session: start.binding?.session,
      labels: start.binding?.labels,
    };
    const position = positionOf(conversation.items);
    const scriptName = scriptNamedIn(position.prompt) ?? start.binding?.script ?? this.defaultScript;
    const script = this.scripts.get(scriptName) ?? (this.scripts.get(this.defaultScript) as AgentScript);
    // One conversation: the session, the CLI's own thread, and where its history starts. A CLI
    // that compacts a long history (codex near its context window) goes on in the same thread
    // from a summary: its turns count from 1 again, and must not pass for the same place.
    const conversationId = [
      subject.session ?? key,
      subject.cliSession ?? '',
      (header(request.headers, 'x-codex-window-id') ?? '').slice(0, PROVIDER_LIMITS.maxSessionChars),
      historyStart(conversation),
    ].join('|');
    const place = `${conversationId}|${position.turn}|${position.step}|${conversation.tools.length > 0 ? 't' : 'n'}`;
    const placeState = this.visit(place);
    const samePlace = placeState.visits;
    const random = this.rng.fork(`${place}|${samePlace}`);
    // A retry: the client says so, or the request before it at this place failed (a CLI's own retry
    // of a 429, a 5xx, a cut stream is the same request again, and says nothing).
    const attempt = Math.max(base.attempt, placeState.lastFailed ? placeState.lastAttempt + 1 : 1);
    // Objects built field by field, not spread: a spread of `base` (then of `context` for the
    // record) with fields added after it allocated about 5 KB a request (docs/performance.md,
    // "Round five"). One object is the request's context and, its answer's fields filled in
    // below, its record (not a second copy of the same eighteen fields: "Round six").
    const context: RequestContext & RecordFields = {
      arrival,
      requestId: base.requestId,
      cli: base.cli,
      cliVersion: base.cliVersion,
      cliSession: base.cliSession,
      api,
      bytesIn: base.bytesIn,
      attempt,
      place: placeState,
      subject,
      tools: conversation.tools.length,
      turn: position.turn,
      step: position.step,
      samePlace,
      script: script.name,
      model: conversation.model,
      tokensIn: prompt.tokens,
      estimated: prompt.estimated,
      // Known once the reply is planned; a fault or a limit answers before (undefined: not written).
      tokensOut: undefined,
      cached: undefined,
      reply: undefined,
      ending: undefined,
      fault: undefined,
      queuedMs: undefined,
    };

    const fault = this.faults.match({
      cli: base.cli,
      session: subject.session ?? subject.cliSession,
      key,
      now: arrival,
    });
    if (fault !== undefined) {
      const faulted = this.faultBeforeStream(context, fault, conversation.stream);
      if (faulted !== undefined) return faulted;
    }

    const reply = planReply(script, position, conversation.tools, this.finalOf);
    const output = this.capOutput(reply, conversation, model, prompt.tokens);
    const cached = this.cacheUsage(key, conversation, model, prompt, arrival);
    // Anthropic counts cache reads against no input limit; OpenAI counts every input token.
    const charged = api === 'messages' ? prompt.tokens - cached.read : prompt.tokens;
    const admission = this.limits.admit(key, charged, output.tokens, arrival);
    if (!admission.ok) return this.overLimit(context, admission);
    const queued = this.load?.admit(arrival);
    this.inFlight += 1;
    const timing = planTiming(
      this.latency,
      prompt.tokens - cached.read,
      output.tokens,
      random,
      fault?.kind === 'slow-first-token' ? (fault.delayMs ?? 5000) : 0,
    );
    const waitMs = queued ? queued.startAt - arrival : 0;
    const slowdown = queued?.slowdown ?? 1;
    const ttftMs = waitMs + timing.ttftMs * slowdown;
    const outputMs = timing.outputMs * slowdown;
    const endAt = ttftMs + outputMs;
    queued?.hold(arrival + endAt);
    // A Responses answer is stored (unless `store: false`) once it has been sent whole.
    const stored = api === 'responses' && conversation.store !== false && fault?.kind !== 'stream-error';
    const release = (outcome: PlayOutcome) => {
      this.inFlight -= 1;
      admission.release();
      if (outcome !== 'complete') queued?.release(this.clock.now());
      else if (stored) this.store(render, chain, conversation);
    };
    const usage: Usage = {
      input: prompt.tokens,
      output: output.tokens,
      cacheRead: cached.read,
      cacheWrite5m: cached.written5m,
      cacheWrite1h: cached.written1h,
    };
    const render: RenderInput = {
      api,
      id: idFrom(random, 24),
      callId: api === 'messages' ? `toolu_${idFrom(random, 24)}` : `call_${idFrom(random, 24)}`,
      model: conversation.model,
      reply,
      text: output.text,
      pieces: output.text === '' ? 1 : timing.chunks,
      ending: output.ending,
      stopSequence: output.stopSequence,
      usage,
      includeUsage: conversation.includeUsage,
      createdS: Math.floor(this.clock.toWallMs(arrival) / 1000),
      previousResponseId: conversation.previousResponseId,
      store: conversation.store,
    };
    // One headers object, filled in order (no copies: spreading a dozen computed names made a
    // dictionary object each time).
    const headers = this.limitHeaders(api, admission.states);
    headers[api === 'messages' ? 'request-id' : 'x-request-id'] = base.requestId;
    const record = context;
    record.tokensOut = output.tokens;
    record.cached = cached;
    record.reply = reply;
    record.ending = output.ending;
    record.fault = fault?.kind;
    record.queuedMs = queued ? waitMs : undefined;
    if (!conversation.stream) {
      headers['content-type'] = 'application/json';
      return this.answer(
        record,
        release,
        {
          status: 200,
          headers,
          body: renderWhole(render),
          bodyAtMs: endAt,
        },
        endAt,
      );
    }
    return this.streamAnswer(record, release, render, headers, ttftMs, outputMs, fault);
  }

  /**
   * A fault that answers instead of the reply (all but those in a stream), or, for a whole
   * (non-streamed) answer, which has no middle, what a stream's fault becomes: a cut resets it, a
   * stream error is a 500. Undefined: the reply is planned, the fault (if any) in its stream.
   */
  private faultBeforeStream(
    context: RequestContext,
    fault: FaultRule,
    stream: boolean,
  ): ProviderAnswer | undefined {
    const inStream =
      fault.kind === 'cut' || fault.kind === 'stream-error' || fault.kind === 'slow-first-token';
    if (!inStream) return this.faultAnswer(context, fault);
    if (!stream && fault.kind !== 'slow-first-token')
      return this.faultAnswer(context, { ...fault, kind: fault.kind === 'cut' ? 'outage' : 'server-error' });
    return undefined;
  }

  /** A request over one of its key's limits: the vendor's 429 with the limits' headers. */
  private overLimit(context: RequestContext, admission: Extract<Admission, { ok: false }>): ProviderAnswer {
    const headers = {
      ...this.limitHeaders(context.api as ProviderApi, admission.states),
      'retry-after': String(Math.ceil(admission.retryAfterMs / 1000)),
    };
    return this.error(
      { ...context, limit: admission.limit },
      429,
      admission.limit === 'rpm' || admission.limit === 'concurrent' ? 'rate_limit' : 'rate_limit_tokens',
      admission.message,
      headers,
    );
  }

  /** A streamed reply's answer: its chunks' times and bytes, rendered as they are played. */
  private streamAnswer(
    record: RecordFields,
    release: (outcome: PlayOutcome) => void,
    render: RenderInput,
    headers: Record<string, string>,
    ttftMs: number,
    outputMs: number,
    fault: FaultRule | undefined,
  ): ProviderAnswer {
    const renderer = renderStream(render);
    const endAt = ttftMs + outputMs;
    // Chunks: 0 the start (at once), 1 … pieces the content (the first token at ttft), then the end.
    const pieces = render.pieces;
    const stream: PlannedStream = {
      length: pieces + 2,
      atMs: (i) =>
        i === 0 ? 0 : i > pieces ? endAt : ttftMs + (pieces > 1 ? (outputMs * (i - 1)) / (pieces - 1) : 0),
      data: (from, to) => {
        // Chunk 0 the start, 1 … pieces the content (pieces 0 … pieces-1), pieces+1 the end.
        let out = from === 0 ? renderer.start : '';
        const first = Math.max(from, 1);
        const last = Math.min(to, pieces + 1);
        if (first < last) out += renderer.content(first - 1, last - 1);
        return to > pieces + 1 ? out + renderer.end() : out;
      },
      firstToken: 1,
      writeGapMs: () => this.writeGapMs(),
    };
    headers['content-type'] = 'text/event-stream; charset=utf-8';
    headers['cache-control'] = 'no-cache';
    const streamed: Omit<ProviderAnswer, 'finish'> = {
      status: 200,
      headers,
      chunks: stream,
    };
    if (fault?.kind === 'cut' || fault?.kind === 'stream-error')
      return this.faultInStream(record, release, streamed, stream, renderer, ttftMs, fault);
    return this.answer(record, release, streamed, ttftMs);
  }

  /** A stream cut, or ended by an error event, after its start and N chunks (a fault's `afterChunks`). */
  private faultInStream(
    record: RecordFields,
    release: (outcome: PlayOutcome) => void,
    streamed: Omit<ProviderAnswer, 'finish'>,
    stream: PlannedStream,
    renderer: StreamRenderer,
    ttftMs: number,
    fault: FaultRule,
  ): ProviderAnswer {
    const pieces = stream.length - 2;
    // After the start (so even at zero latency the client has its first event), then N chunks.
    const after = Math.min(fault.afterChunks ?? Math.floor(pieces / 2), pieces);
    const at = 1 + after;
    if (fault.kind === 'cut') {
      streamed.cutAt = at;
      return this.answer(record, release, streamed, ttftMs);
    }
    // The error event replaces the rest of the reply; the stream then ends normally.
    const errorAt = stream.atMs(at);
    streamed.chunks = {
      length: at + 1,
      atMs: (i) => (i < at ? stream.atMs(i) : errorAt),
      data: (from, to) =>
        (from < at ? stream.data(from, Math.min(to, at)) : '') +
        (to > at ? renderer.error(fault.retryAfterS) : ''),
      firstToken: 1,
      writeGapMs: stream.writeGapMs,
    };
    return this.answer(
      { ...record, error: 'stream-error', retryAfterS: fault.retryAfterS?.toString() },
      release,
      streamed,
      ttftMs,
    );
  }

  /**
   * The least time between a stream's writes after its first token: none while the streams in
   * flight write less than `maxStreamWritesPerSec` together at their own pace, then that rate
   * shared among them (docs/provider-emulator.md, "Latency").
   */
  private writeGapMs(): number {
    return (this.inFlight * 1000) / PROVIDER_LIMITS.maxStreamWritesPerSec;
  }

  /** The table's model for a request, or the vendor's 404 and 400s for its name and output cap. */
  private modelFor(conversation: Conversation): ModelInfo {
    const model = this.modelTable.named(conversation.model);
    const anthropic = conversation.api === 'messages';
    if (!model || (model.vendor === 'anthropic') !== anthropic)
      throw anthropic
        ? new VendorError(404, 'not_found', `model: ${conversation.model}`)
        : new VendorError(
            404,
            'not_found',
            `The model \`${conversation.model}\` does not exist or you do not have access to it.`,
            null,
            'model_not_found',
          );
    const asked = conversation.maxOutputTokens;
    if (asked !== undefined && asked > model.maxOutputTokens) {
      if (anthropic)
        throw new VendorError(
          400,
          'invalid_request',
          `max_tokens: ${asked} > ${model.maxOutputTokens}, which is the maximum allowed number of output tokens for ${model.id}`,
        );
      const field = conversation.api === 'responses' ? 'max_output_tokens' : 'max_tokens';
      throw new VendorError(
        400,
        'invalid_request',
        `${field} is too large: ${asked}. This model supports at most ${model.maxOutputTokens} completion tokens, whereas you provided ${asked}.`,
        field,
        'invalid_value',
      );
    }
    return model;
  }

  /** A prompt over the model's window is refused in the vendor's words. */
  private checkWindow(conversation: Conversation, model: ModelInfo, tokens: number): void {
    if (tokens <= model.maxInputTokens) return;
    if (conversation.api === 'messages')
      throw new VendorError(
        400,
        'invalid_request',
        `prompt is too long: ${tokens} tokens > ${model.maxInputTokens} maximum`,
      );
    if (conversation.api === 'responses')
      throw new VendorError(
        400,
        'invalid_request',
        'Your input exceeds the context window of this model. Please adjust your input and try again.',
        'input',
        'context_length_exceeded',
      );
    // OpenAI's words as its developer forum quotes the API (docs/provider-emulator.md, "Models"):
    // a model that counts the prompt alone against its window (GPT-4o, GPT-4.1, the o-series)
    // names the window; one that states its input limit apart (GPT-5 and later) names that limit.
    const count = (n: number) => n.toLocaleString('en-US');
    if (model.maxInputTokens === model.contextWindow)
      throw new VendorError(
        400,
        'invalid_request',
        `This model's maximum context length is ${count(model.contextWindow)} tokens. However, your messages resulted in ${count(tokens)} tokens. Please reduce the length of the messages.`,
        'messages',
        'context_length_exceeded',
      );
    throw new VendorError(
      400,
      'invalid_request',
      `Input tokens exceed the configured limit of ${count(model.maxInputTokens)} tokens. Your messages resulted in ${count(tokens)} tokens.`,
      'messages',
      'context_length_exceeded',
    );
  }

  /**
   * The reply as the request lets it out: cut before a stop sequence, or at the output cap (the
   * request's, else the model's; Anthropic's also at what is left of the window), a tool call that
   * no longer fits dropped (docs/provider-emulator.md, "Output caps").
   */
  private capOutput(
    reply: Reply,
    conversation: Conversation,
    model: ModelInfo,
    inputTokens: number,
  ): { text: string; tokens: number; ending: Ending; stopSequence?: string } {
    let text = reply.text ?? '';
    for (const stop of conversation.stopSequences) {
      const at = text.indexOf(stop);
      if (at >= 0) {
        text = text.slice(0, at);
        return { text, tokens: this.tokens.countOnce(text), ending: 'stop_sequence', stopSequence: stop };
      }
    }
    const window = model.contextWindow - inputTokens;
    const asked = conversation.maxOutputTokens ?? model.maxOutputTokens;
    const cap = Math.max(0, Math.min(asked, window));
    const ending: Ending = asked <= window ? 'max_tokens' : 'context_window';
    // A script's texts and tool arguments are the same few for every request: memoised.
    const textTokens = reply.kind === 'text' ? reply.tokens : this.tokens.count(text);
    if (textTokens > cap) {
      const cut = o200kDecode(o200kEncode(text).slice(0, cap));
      return { text: cut, tokens: cap, ending };
    }
    if (reply.kind === 'tool-call') {
      const total = textTokens + this.tokens.count(reply.args);
      if (total > cap) return { text, tokens: cap, ending };
      return { text, tokens: total, ending: 'natural' };
    }
    return { text, tokens: textTokens, ending: 'natural' };
  }

  /** A script turn's final message padded to its tokens: once per turn, with its own seeded filler. */
  private paddedFinal(turn: ScriptTurn): { text: string; tokens: number } {
    let final = this.finals.get(turn);
    if (!final) {
      final = padFinal(turn, (text) => this.tokens.countOnce(text), this.rng.fork(`final:${turn.final}`));
      if (this.finals.size >= PROVIDER_LIMITS.maxTurns) this.finals.clear();
      this.finals.set(turn, final);
    }
    return final;
  }

  /** Keeps a Responses answer sent whole: the request's own items, then its output. */
  private store(render: RenderInput, chain: Chain | undefined, conversation: Conversation): void {
    // Its own items, without its instructions: OpenAI does not carry them over.
    const kept = chain ? chain.own.slice() : conversation.items.slice(conversation.instructions ? 1 : 0);
    const outputs = responsesOutputItems(render);
    for (const [, item] of outputs) kept.push(item);
    this.storedResponses.put(`resp_${render.id}`, chain?.previous, kept, render, outputs);
  }

  /** Prompt caching for this request (docs/provider-emulator.md, "Prompt caching"). */
  private cacheUsage(
    key: string,
    conversation: Conversation,
    model: ModelInfo,
    prompt: CountedPrompt,
    now: number,
  ): CacheUsage {
    if (conversation.api === 'messages')
      return this.cache.anthropic(`${key}|${model.id}`, prompt.prefixes, model.minCacheTokens, now);
    const scope = `${key}|${conversation.cacheKey ?? ''}`;
    const read = this.cache.openai(scope, prompt.prefixes, conversation.longCache === true, now);
    return { read, written5m: 0, written1h: 0 };
  }

  /** Input tokens block by block: exact up to a bound of new text per request, estimated past it. */
  private *countPromptSteps(conversation: Conversation, scope: string): Generator<void, CountedPrompt> {
    // The prompt's texts and blocks' ends in order, collected first so that counting can stop
    // between any two.
    const blocks: Array<string | BlockEnd> = [];
    visitInputBlocks(
      conversation,
      (text) => blocks.push(text),
      (cache) => blocks.push(BLOCK_ENDS[cache ?? 'none']),
    );
    const budget = requestBudget();
    const cursor = this.tokens.beginPrompt(scope);
    const prefixes: PromptPrefixes = { tokens: [], hashes: [], breakpoints: [] };
    let total = 0;
    let hash = 0x9e3779b1;
    for (let i = 0; i < blocks.length; i++) {
      const block = blocks[i] as string | BlockEnd;
      if (typeof block === 'string') {
        total +=
          this.tokens.countKnown(block, cursor) ?? (yield* this.tokens.countSteps(block, budget, cursor));
        hash = (Math.imul(hash ^ this.tokens.lastHash, 0x01000193) + 0x7f4a7c15) >>> 0;
      } else {
        prefixes.tokens.push(total);
        prefixes.hashes.push(hash);
        prefixes.breakpoints.push(block.cache);
      }
      if (i % TEXTS_PER_STEP === TEXTS_PER_STEP - 1) yield;
    }
    this.tokens.endPrompt(cursor);
    return { tokens: total, estimated: budget.estimated, prefixes };
  }

  /**
   * A request to one of Anthropic's own endpoints: answered whatever its key (Claude Code reads a
   * 404 as "nothing configured"), attributed through its key like a model request, never counted
   * as one (no tokens, no limits, no faults).
   */
  private firstParty(
    base: BaseContext,
    method: string,
    path: string,
    key: string | undefined,
    binding: KeyBinding | undefined,
  ): ProviderAnswer {
    const shown = path.slice(0, PROVIDER_LIMITS.maxFirstPartyPathChars);
    const context: RecordFields = {
      ...base,
      // Anthropic's: its error shape and request-id header.
      api: 'messages',
      firstPartyPath: shown,
      subject: {
        api: 'messages',
        key: key ?? '',
        cli: base.cli,
        cliVersion: base.cliVersion,
        cliSession: base.cliSession,
        session: binding?.session,
        labels: binding?.labels,
      },
    };
    const body = FIRST_PARTY_ANSWERS[`${method} ${path}`];
    return body === undefined
      ? this.error(context, 404, 'not_found', `No route for ${method} ${shown} (docs/provider-emulator.md)`)
      : this.json(context, body);
  }

  /** `GET /v1/models` and `/v1/models/{id}`, in the shape of the API the client speaks. */
  private models(base: BaseContext, route: Route): ProviderAnswer {
    const anthropic = base.api === 'messages';
    // OpenAI lists and answers every snapshot by its own name (a user pins `gpt-4o-2024-08-06`
    // and may look for it); Anthropic lists a model once and answers an alias with its id.
    const shape = (model: ModelInfo, name = model.id) =>
      anthropic
        ? {
            type: 'model',
            id: model.id,
            display_name: model.displayName,
            created_at: MODEL_CREATED,
            lifecycle: 'active',
            deprecated_at: null,
            retires_at: null,
            line: null,
            capabilities: null,
            max_input_tokens: model.maxInputTokens,
            max_tokens: model.maxOutputTokens,
          }
        : {
            id: name,
            object: 'model',
            created: Math.floor(Date.parse(MODEL_CREATED) / 1000),
            owned_by: model.ownedBy ?? 'openai',
          };
    const served = this.modelTable.listed.filter((model) => (model.vendor === 'anthropic') === anthropic);
    if (route.kind === 'model') {
      const model = this.modelTable.named(route.id);
      if (!model || (model.vendor === 'anthropic') !== anthropic)
        return anthropic
          ? this.error(base, 404, 'not_found', `model: ${route.id}`)
          : this.error(
              base,
              404,
              'not_found',
              `The model '${route.id}' does not exist`,
              {},
              { param: 'model', code: 'model_not_found' },
            );
      return this.json(base, shape(model, route.id));
    }
    const data = served.flatMap((model) =>
      anthropic ? [shape(model)] : [model.id, ...(model.aliases ?? [])].map((name) => shape(model, name)),
    );
    return this.json(
      base,
      anthropic
        ? { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null }
        : { object: 'list', data },
    );
  }

  /** Anthropic's `count_tokens` and OpenAI's `responses/input_tokens`. */
  private tokenCount(
    base: BaseContext,
    api: 'messages' | 'responses',
    prompt: CountedPrompt,
  ): ProviderAnswer {
    return this.json(
      base,
      api === 'messages'
        ? { input_tokens: prompt.tokens }
        : { object: 'response.input_tokens', input_tokens: prompt.tokens },
    );
  }

  /** A place's state, its visits counted with this request. */
  private visit(place: string): PlaceState {
    let state = this.places.get(place);
    if (!state) {
      state = { visits: 0, lastAttempt: 0, lastFailed: false };
      this.places.set(place, state);
    }
    state.visits += 1;
    return state;
  }

  private limitHeaders(api: ProviderApi, states: LimitStates): Record<string, string> {
    const out: Record<string, string> = {};
    if (api === 'messages') {
      const now = this.clock.now();
      this.anthropicLimit(out, ANTHROPIC_LIMIT_NAMES.requests, now, states.requests);
      this.anthropicLimit(out, ANTHROPIC_LIMIT_NAMES.inputTokens, now, states.inputTokens);
      this.anthropicLimit(out, ANTHROPIC_LIMIT_NAMES.outputTokens, now, states.outputTokens);
      this.anthropicLimit(out, ANTHROPIC_LIMIT_NAMES.tokens, now, states.tokens);
      return out;
    }
    openaiLimit(out, OPENAI_LIMIT_NAMES.requests, states.requests);
    openaiLimit(out, OPENAI_LIMIT_NAMES.tokens, states.tokens ?? states.inputTokens);
    return out;
  }

  private anthropicLimit(
    out: Record<string, string>,
    names: LimitHeaderNames,
    now: number,
    state: LimitStates[keyof LimitStates],
  ): void {
    if (!state) return;
    out[names.limit] = String(state.limit);
    out[names.remaining] = String(state.remaining);
    out[names.reset] = rfc3339Second(this.clock.toWallMs(now + state.resetMs));
  }

  private faultAnswer(context: RequestContext, fault: FaultRule): ProviderAnswer {
    const api = context.api;
    switch (fault.kind) {
      case 'rate-limit':
        return this.error(
          { ...context, fault: fault.kind },
          429,
          'rate_limit',
          'Rate limit reached (fleetbench fault).',
          {
            'retry-after': String(fault.retryAfterS ?? 1),
          },
        );
      case 'rate-limit-bare':
        return this.error(
          { ...context, fault: fault.kind },
          429,
          'rate_limit',
          'Rate limit reached (fleetbench fault).',
        );
      case 'overloaded':
        return this.error(
          { ...context, fault: fault.kind },
          api === 'messages' ? 529 : 503,
          'overloaded',
          'Overloaded (fleetbench fault).',
        );
      case 'server-error':
        return this.error(
          { ...context, fault: fault.kind },
          500,
          'api_error',
          'Internal server error (fleetbench fault).',
        );
      case 'unavailable':
        return this.error(
          { ...context, fault: fault.kind },
          503,
          'unavailable',
          'Service unavailable (fleetbench fault).',
        );
      default: {
        // outage: no answer at all.
        return this.answer(
          { ...context, fault: fault.kind },
          () => {},
          { status: 0, headers: {}, reset: true },
          undefined,
        );
      }
    }
  }

  /** A 200 JSON answer that is not a generation (model lists, token counts): recorded, not counted as tokens. */
  private json(base: RecordFields, body: unknown): ProviderAnswer {
    const text = JSON.stringify(body);
    return this.answer(
      base,
      () => {},
      {
        status: 200,
        headers: {
          'content-type': 'application/json',
          [base.api === 'messages' ? 'request-id' : 'x-request-id']: base.requestId,
          ...this.limitHeaders(base.api ?? 'chat', this.limits.statesOf(undefined, this.clock.now())),
        },
        body: text,
        bodyAtMs: 0,
      },
      undefined,
    );
  }

  private error(
    context: RecordFields,
    status: number,
    kind: ErrorKind,
    message: string,
    headers: Record<string, string> = {},
    openai: { param?: string | null; code?: string | null } = {},
  ): ProviderAnswer {
    const answer = {
      status,
      headers: {
        'content-type': 'application/json',
        [context.api === 'messages' ? 'request-id' : 'x-request-id']: context.requestId,
        ...this.limitHeaders(context.api ?? 'chat', this.limits.statesOf(undefined, this.clock.now())),
        ...headers,
      },
      body: errorBody(context.api, kind, message, context.requestId, openai),
      bodyAtMs: 0,
    };
    return this.answer(
      { ...context, error: kind, retryAfterS: headers['retry-after'] },
      () => {},
      answer,
      undefined,
    );
  }

  /** Wraps a planned answer with its `finish`: the record, the counts, the freed place. */
  private answer(
    record: RecordFields,
    release: (outcome: PlayOutcome) => void,
    planned: Omit<ProviderAnswer, 'finish'>,
    plannedTtft: number | undefined,
  ): ProviderAnswer {
    let finished = false;
    // The planned answer itself, given its `finish` (a spread copy of it cost more than the rest of it).
    const answer = planned as ProviderAnswer;
    answer.finish = (outcome: PlayOutcome, firstTokenAt?: number) => {
      if (finished) return;
      finished = true;
      release(outcome);
      this.writeRecord(record, planned.status, outcome, firstTokenAt, plannedTtft);
    };
    return answer;
  }

  /** Counts a CLI version, keeping at most `maxCliVersions` distinct ones (the rest as `other`). */
  private countVersion(cli: string, version: string): void {
    this.stats.cliVersions[cli] ??= {};
    const versions = this.stats.cliVersions[cli] as Record<string, number>;
    let name = version;
    if (versions[name] === undefined) {
      if (this.cliVersionCount >= PROVIDER_LIMITS.maxCliVersions) name = 'other';
      else this.cliVersionCount += 1;
    }
    versions[name] = (versions[name] ?? 0) + 1;
  }

  private writeRecord(
    fields: RecordFields,
    status: number,
    outcome: PlayOutcome,
    firstTokenAt: number | undefined,
    plannedTtft: number | undefined,
  ): void {
    const end = this.clock.now();
    const stats = this.stats;
    stats.requests += 1;
    const statusText = outcome === 'reset' ? 'reset' : String(status);
    stats.byStatus[statusText] = (stats.byStatus[statusText] ?? 0) + 1;
    stats.byCli[fields.cli] = (stats.byCli[fields.cli] ?? 0) + 1;
    if (fields.cliVersion !== undefined) this.countVersion(fields.cli, fields.cliVersion);
    const complete = outcome === 'complete' && status === 200 && fields.error === undefined;
    if (fields.place) {
      // What the next request at this place is judged by: a request after a failure is its retry.
      fields.place.lastAttempt = fields.attempt;
      fields.place.lastFailed = !complete;
    }
    if (fields.reply) {
      stats.inputTokens += fields.tokensIn ?? 0;
      stats.cachedInputTokens += fields.cached?.read ?? 0;
    }
    if (complete) stats.outputTokens += fields.tokensOut ?? 0;
    if (!this.trace) return;
    const written = (fields.cached?.written5m ?? 0) + (fields.cached?.written1h ?? 0);
    // One literal in the record's order; a field left undefined is not written (JSON.stringify
    // leaves it out), as before when each was added only when set (a dozen keyed additions made
    // a dictionary object of every record).
    const data = {
      requestId: fields.requestId,
      bytesIn: fields.bytesIn,
      cliVersion: fields.cliVersion,
      cliSession: fields.cliSession,
      model: fields.model,
      script: fields.script,
      turn: fields.turn,
      step: fields.step,
      attempt: fields.attempt,
      samePlace: fields.samePlace,
      tools: fields.tools,
      reply: fields.reply?.kind,
      command:
        fields.reply?.kind === 'tool-call' && fields.ending === 'natural' ? fields.reply.command : undefined,
      tokensIn: fields.tokensIn,
      tokensEstimated: fields.estimated ? true : undefined,
      cacheReadTokens: fields.cached && fields.cached.read > 0 ? fields.cached.read : undefined,
      cacheWriteTokens: written > 0 ? written : undefined,
      tokensOut: complete ? fields.tokensOut : undefined,
      ending: fields.ending !== undefined && fields.ending !== 'natural' ? fields.ending : undefined,
      ttftMs: firstTokenAt !== undefined ? firstTokenAt - fields.arrival : undefined,
      plannedTtftMs: plannedTtft,
      queuedMs: fields.queuedMs,
      fault: fields.fault,
      error: fields.error,
      limit: fields.limit,
      retryAfterS: fields.retryAfterS !== undefined ? Number(fields.retryAfterS) : undefined,
      outcome,
      path: fields.firstPartyPath,
    };
    const apiLabel = fields.firstPartyPath !== undefined ? 'first-party' : (fields.api ?? 'none');
    const labels: Record<string, string | number> =
      fields.subject?.labels === undefined
        ? { api: apiLabel, cli: fields.cli, status: statusText }
        : { ...fields.subject.labels, api: apiLabel, cli: fields.cli, status: statusText };
    // No session (or an empty one): the key is left undefined, so not written.
    const session = fields.subject?.session ?? fields.cliSession;
    this.trace.write({
      kind: 'span',
      name: 'provider.request',
      t: fields.arrival,
      dur: Math.max(0, end - fields.arrival),
      session: session ? session : undefined,
      outcome: complete ? 'ok' : outcome === 'cancelled' ? 'cancelled' : 'error',
      labels,
      data,
    });
  }
}

interface BaseContext {
  arrival: number;
  requestId: string;
  cli: string;
  cliVersion: string | undefined;
  cliSession: string | undefined;
  api: ProviderApi | undefined;
  bytesIn: number;
  /**
   * The attempt: at first what the client says (x-stainless-retry-count + 1; 1 without it), then,
   * once the request's place is known, one more than the failed request before it there.
   */
  attempt: number;
}

/** What a request's record keeps: values, never the parsed request (it is not held while a stream plays). */
interface RequestContext extends BaseContext {
  subject: Subject;
  /** The place's state, told at the end how this request went. */
  place: PlaceState;
  /** Tools declared. */
  tools: number;
  turn: number;
  step: number;
  /** Requests at this place of the conversation so far, this one included. */
  samePlace: number;
  script: string;
  model: string;
  tokensIn: number;
  estimated: boolean;
}

type RecordFields = BaseContext &
  Partial<RequestContext> & {
    tokensOut?: number;
    cached?: CacheUsage;
    reply?: Reply;
    ending?: Ending;
    fault?: string | undefined;
    error?: string;
    limit?: string;
    retryAfterS?: string | undefined;
    queuedMs?: number | undefined;
    /** The path of a request to one of Anthropic's own endpoints (not a model request). */
    firstPartyPath?: string;
  };

/**
 * A model request's start (`ProviderEmulator.start`): its context, route and key, or the answer it
 * already has (then the rest is not read).
 */
interface RequestStart {
  base: BaseContext;
  route: Extract<Route, { kind: 'generate' | 'count' }>;
  api: ProviderApi;
  key: string;
  binding: KeyBinding | undefined;
  answered: ProviderAnswer | undefined;
}

/** The route every start with an answer carries (never read: the answer is). */
const ANSWERED_ROUTE: RequestStart['route'] = { kind: 'generate', api: 'chat' };

/** A start that is its answer already, in the same shape as the others. */
function answeredStart(base: BaseContext, answered: ProviderAnswer): RequestStart {
  return { base, route: ANSWERED_ROUTE, api: 'chat', key: '', binding: undefined, answered };
}

/** A parsed body's top-level fields, or the vendor's 400 for a body that is not JSON or not an object. */
function bodyFields(parsed: ParsedBody, api: ProviderApi): Record<string, unknown> {
  if (!parsed.ok) throw unparsableBody(parsed.message, api);
  const body = parsed.value;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new RequestShapeError('body', 'expected a JSON object');
  return body as Record<string, unknown>;
}

function unparsableBody(message: string, api: ProviderApi): VendorError {
  return api === 'messages'
    ? new VendorError(400, 'invalid_request', `There was an error parsing the body: ${message}`)
    : new VendorError(
        400,
        'invalid_request',
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)",
      );
}

function parseBody(text: string): ParsedBody {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/** A short fingerprint of where a history starts (its first prompt), for telling conversations apart. */
function historyStart(conversation: Conversation): string {
  const first = conversation.items.find((item) => item.kind === 'prompt');
  const text = first?.kind === 'prompt' ? first.text.slice(0, 512) : '';
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(36);
}

/** The three header names of one limit, made once (not a template string per header per request). */
interface LimitHeaderNames {
  limit: string;
  remaining: string;
  reset: string;
}

const anthropicLimitNames = (name: string): LimitHeaderNames => ({
  limit: `anthropic-ratelimit-${name}-limit`,
  remaining: `anthropic-ratelimit-${name}-remaining`,
  reset: `anthropic-ratelimit-${name}-reset`,
});
const ANTHROPIC_LIMIT_NAMES = {
  requests: anthropicLimitNames('requests'),
  inputTokens: anthropicLimitNames('input-tokens'),
  outputTokens: anthropicLimitNames('output-tokens'),
  tokens: anthropicLimitNames('tokens'),
};
const openaiLimitNames = (name: string): LimitHeaderNames => ({
  limit: `x-ratelimit-limit-${name}`,
  remaining: `x-ratelimit-remaining-${name}`,
  reset: `x-ratelimit-reset-${name}`,
});
const OPENAI_LIMIT_NAMES = { requests: openaiLimitNames('requests'), tokens: openaiLimitNames('tokens') };

function openaiLimit(
  out: Record<string, string>,
  names: LimitHeaderNames,
  state: LimitStates[keyof LimitStates],
): void {
  if (!state) return;
  out[names.limit] = String(state.limit);
  out[names.remaining] = String(state.remaining);
  out[names.reset] = goDuration(state.resetMs);
}

/** Base-36 digits by value, for `idFrom`. */
const DIGITS36 = '0123456789abcdefghijklmnopqrstuvwxyz';

/** An id's character codes, reused: the id is made as one string, not one string per digit added. */
const idCodes: number[] = [];

function idFrom(rng: Rng, length: number): string {
  idCodes.length = length;
  for (let i = 0; i < length; i++) idCodes[i] = DIGITS36.charCodeAt(rng.int(0, 35));
  return String.fromCharCode.apply(null, idCodes);
}

/**
 * RFC 3339 to the second (`2026-12-06T00:41:07Z`) of a wall-clock time. Every answer carries
 * four of them, most often of the same few seconds: the last few are kept.
 */
const recentSeconds = new Map<number, string>();
function rfc3339Second(wallMs: number): string {
  // A Date keeps whole milliseconds (truncated): the second is that of the truncated time.
  const second = Math.floor(Math.trunc(wallMs) / 1000);
  let text = recentSeconds.get(second);
  if (text === undefined) {
    text = `${new Date(second * 1000).toISOString().slice(0, 19)}Z`;
    if (recentSeconds.size >= 16) recentSeconds.clear();
    recentSeconds.set(second, text);
  }
  return text;
}

/** OpenAI's reset format: `1s`, `6m0s`, `17ms`. */
function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const totalSeconds = Math.ceil(ms / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}
