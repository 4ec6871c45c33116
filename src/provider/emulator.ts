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

import { PROVIDER_LIMITS } from '../base/limits.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import type { TraceSink } from '../trace/writer.ts';
import {
  type Conversation,
  inputTexts,
  type ProviderApi,
  positionOf,
  RequestShapeError,
  readChatRequest,
  readMessagesRequest,
  readResponsesRequest,
} from './conversation.ts';
import { FaultBook, type FaultRule } from './faults.ts';
import { LATENCY_PROFILES, type LatencyProfile, planTiming } from './latency.ts';
import { LimitBook, type LimitStates, type ProviderLimits } from './limits.ts';
import {
  type ErrorKind,
  errorBody,
  type RenderInput,
  renderStream,
  renderWhole,
  streamErrorEvent,
} from './render.ts';
import {
  type AgentScript,
  planReply,
  type Reply,
  type ScriptsFile,
  scriptLibrary,
  scriptNamedIn,
} from './scripts.ts';
import { TokenCounter } from './tokens.ts';
import type { PlannedChunk, PlayOutcome, ProviderAnswer, ProviderRequest } from './types.ts';

export interface ProviderEmulatorOptions {
  clock: Clock;
  rng: Rng;
  trace?: TraceSink | undefined;
  scripts?: ScriptsFile | undefined;
  latency?: LatencyProfile | undefined;
  limits?: ProviderLimits | undefined;
  /** Answer unknown keys 401 instead of serving them as anonymous identities. */
  requireKnownKeys?: boolean | undefined;
  /** Token of the admin API (HTTP face only). */
  adminToken?: string | undefined;
  /** Model names `GET /v1/models` lists (any name is served). */
  models?: string[] | undefined;
  /**
   * Who a key not minted here belongs to, asked once per new key (then kept): the world's agent
   * launchers make a key per spawn themselves (docs/world.md, "Agents").
   */
  resolveKey?: ((key: string) => KeyBinding | undefined) | undefined;
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
  /** The versions each CLI's User-Agent named, with their request counts. */
  cliVersions: Record<string, Record<string, number>>;
  inputTokens: number;
  outputTokens: number;
  inFlight: number;
}

const ROUTES: Array<{ api: ProviderApi; paths: string[] }> = [
  { api: 'responses', paths: ['/v1/responses', '/responses'] },
  { api: 'chat', paths: ['/v1/chat/completions', '/chat/completions'] },
  { api: 'messages', paths: ['/v1/messages', '/messages'] },
];

const READERS: Record<ProviderApi, (body: Record<string, unknown>) => Conversation> = {
  responses: readResponsesRequest,
  chat: readChatRequest,
  messages: readMessagesRequest,
};

/** The CLI and its version, from the User-Agent each sends (docs/provider-emulator.md). */
export function cliOf(userAgent: string | undefined): { cli: string; version: string | undefined } {
  const ua = userAgent ?? '';
  const codex = /^codex[\w-]*\/(\S+)/.exec(ua);
  if (codex) return { cli: 'codex', version: codex[1] };
  const claude = /^claude-cli\/(\S+)/.exec(ua);
  if (claude) return { cli: 'claude', version: claude[1] };
  const opencode = /^opencode\/(\S+)/.exec(ua);
  if (opencode) return { cli: 'opencode', version: opencode[1] };
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
  return id === undefined ? undefined : id.slice(0, 256);
}

function keyOf(headers: ProviderRequest['headers']): string | undefined {
  const bearer = /^Bearer\s+(\S+)$/i.exec(header(headers, 'authorization') ?? '');
  return (bearer?.[1] ?? header(headers, 'x-api-key'))?.slice(0, 1024);
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

export class ProviderEmulator {
  readonly clock: Clock;
  private readonly rng: Rng;
  private readonly trace: TraceSink | undefined;
  private readonly scripts: Map<string, AgentScript>;
  private readonly defaultScript: string;
  readonly latency: LatencyProfile;
  readonly faults: FaultBook;
  readonly limits: LimitBook;
  private readonly requireKnownKeys: boolean;
  readonly adminToken: string | undefined;
  readonly models: string[];
  private readonly resolveKey: ((key: string) => KeyBinding | undefined) | undefined;
  private readonly tokens = new TokenCounter();
  private readonly keys = new Map<string, KeyBinding>();
  private readonly attempts = new Map<string, number>();
  private requestCount = 0;
  private inFlight = 0;
  private readonly stats: Omit<ProviderStats, 'inFlight'> = {
    requests: 0,
    byStatus: {},
    byCli: {},
    cliVersions: {},
    inputTokens: 0,
    outputTokens: 0,
  };

  constructor(options: ProviderEmulatorOptions) {
    this.clock = options.clock;
    this.rng = options.rng;
    this.trace = options.trace;
    const library = scriptLibrary(options.scripts);
    this.scripts = library.scripts;
    this.defaultScript = library.fallback;
    this.latency = options.latency ?? LATENCY_PROFILES.none!;
    this.faults = new FaultBook(this.rng.fork('faults'));
    this.limits = new LimitBook(options.limits ?? {});
    this.requireKnownKeys = options.requireKnownKeys ?? false;
    this.adminToken = options.adminToken;
    this.models = options.models ?? ['gpt-5-codex', 'claude-sonnet-4-5', 'fleetbench-model'];
    this.resolveKey = options.resolveKey;
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
    return {
      ...this.stats,
      byStatus: { ...this.stats.byStatus },
      byCli: { ...this.stats.byCli },
      inFlight: this.inFlight,
    };
  }

  // --- the pipeline ---------------------------------------------------------------------------

  /** Plans the answer to one request; the caller plays it on the clock and calls `finish`. */
  handle(request: ProviderRequest): ProviderAnswer {
    const arrival = this.clock.now();
    this.requestCount += 1;
    const requestId = `req_${this.requestCount.toString(36).padStart(8, '0')}`;
    const path = request.path.split('?', 1)[0] ?? '';
    const route = ROUTES.find((candidate) => candidate.paths.includes(path));
    const { cli, version: cliVersion } = cliOf(header(request.headers, 'user-agent'));
    const base = {
      arrival,
      requestId,
      cli,
      cliVersion,
      cliSession: cliSessionOf(request.headers),
      api: route?.api,
      bytesIn: Buffer.byteLength(request.body),
    };
    if (request.method === 'GET' && (path === '/v1/models' || path === '/models'))
      return this.json(200, {
        object: 'list',
        data: this.models.map((id) => ({ id, object: 'model', owned_by: 'fleetbench' })),
      });
    if (!route || request.method !== 'POST')
      return this.error(
        base,
        404,
        'not_found',
        `No route for ${request.method} ${path} (docs/provider-emulator.md)`,
      );

    const key = keyOf(request.headers);
    const binding = key === undefined ? undefined : this.bindingOf(key);
    if (key === undefined || (this.requireKnownKeys && binding === undefined))
      return this.error(
        base,
        401,
        'authentication',
        key === undefined ? 'Missing API key.' : 'Invalid API key.',
      );

    let conversation: Conversation;
    try {
      const body = JSON.parse(request.body) as unknown;
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new RequestShapeError('body', 'expected a JSON object');
      conversation = READERS[route.api](body as Record<string, unknown>);
    } catch (error) {
      const message =
        error instanceof RequestShapeError ? error.message : `body: not JSON (${(error as Error).message})`;
      return this.error(base, 400, 'invalid_request', message);
    }

    const subject: Subject = {
      api: route.api,
      key,
      cli,
      cliVersion,
      cliSession: base.cliSession,
      session: binding?.session,
      labels: binding?.labels,
    };
    const position = positionOf(conversation.items);
    const scriptName = scriptNamedIn(position.prompt) ?? binding?.script ?? this.defaultScript;
    const script = this.scripts.get(scriptName) ?? (this.scripts.get(this.defaultScript) as AgentScript);
    // One conversation: the session, the CLI's own thread, and where its history starts. A CLI
    // that compacts a long history (codex near its context window) goes on in the same thread
    // from a summary: its turns count from 1 again, and must not pass for retries of the first.
    const conversationId = [
      subject.session ?? key,
      subject.cliSession ?? '',
      header(request.headers, 'x-codex-window-id') ?? '',
      historyStart(conversation),
    ].join('|');
    const place = `${conversationId}|${position.turn}|${position.step}|${conversation.tools.length > 0 ? 't' : 'n'}`;
    const attempt = this.nextAttempt(place);
    const random = this.rng.fork(`${place}|${attempt}`);
    const context: RequestContext = {
      ...base,
      subject,
      conversation,
      turn: position.turn,
      step: position.step,
      attempt,
      script: script.name,
      model: conversation.model,
    };

    const fault = this.faults.match({
      cli,
      session: subject.session ?? subject.cliSession,
      key,
      now: arrival,
    });
    const inStream =
      fault?.kind === 'cut' || fault?.kind === 'stream-error' || fault?.kind === 'slow-first-token';
    if (fault && !inStream) return this.faultAnswer(context, fault);
    // A whole (non-streamed) answer has no middle: a cut resets it, a stream error is a 500.
    if (fault && !conversation.stream && fault.kind !== 'slow-first-token')
      return this.faultAnswer(context, { ...fault, kind: fault.kind === 'cut' ? 'outage' : 'server-error' });

    const reply = planReply(script, position, conversation.tools, (text) => this.tokens.count(text), random);
    const inputTokens = this.countInput(conversation);
    const outputTokens =
      this.tokens.count(reply.text ?? '') + (reply.kind === 'tool-call' ? this.tokens.count(reply.args) : 0);
    const admission = this.limits.admit(key, inputTokens, outputTokens, arrival);
    if (!admission.ok) {
      const headers = {
        ...this.limitHeaders(route.api, admission.states),
        'retry-after': String(Math.ceil(admission.retryAfterMs / 1000)),
      };
      return this.error(
        { ...context, tokensIn: inputTokens, limit: admission.limit },
        429,
        'rate_limit',
        admission.message,
        headers,
      );
    }
    this.inFlight += 1;
    const release = () => {
      this.inFlight -= 1;
      admission.release();
    };
    const timing = planTiming(
      this.latency,
      inputTokens,
      outputTokens,
      random,
      fault?.kind === 'slow-first-token' ? (fault.delayMs ?? 5000) : 0,
    );
    const pieces = splitText(reply.kind === 'text' ? reply.text : (reply.text ?? ''), timing.chunks);
    const render: RenderInput = {
      api: route.api,
      id: idFrom(random, 24),
      callId: route.api === 'messages' ? `toolu_${idFrom(random, 24)}` : `call_${idFrom(random, 24)}`,
      model: conversation.model,
      reply,
      usage: { input: inputTokens, output: outputTokens },
      pieces,
      includeUsage: conversation.includeUsage,
      createdS: Math.floor(this.clock.toWallMs(arrival) / 1000),
    };
    const headers = {
      ...this.limitHeaders(route.api, admission.states),
      [route.api === 'messages' ? 'request-id' : 'x-request-id']: requestId,
    };
    const record = { ...context, tokensIn: inputTokens, tokensOut: outputTokens, reply, fault: fault?.kind };
    if (!conversation.stream) {
      const at = timing.ttftMs + timing.outputMs;
      return this.answer(
        record,
        release,
        {
          status: 200,
          headers: { ...headers, 'content-type': 'application/json' },
          body: renderWhole(render),
          bodyAtMs: at,
        },
        at,
      );
    }
    const rendered = renderStream(render);
    const chunks: PlannedChunk[] = rendered.start.map((data) => ({ atMs: 0, data }));
    rendered.content.forEach((events, i) => {
      const atMs = timing.ttftMs + (timing.chunks > 1 ? (timing.outputMs * i) / (timing.chunks - 1) : 0);
      chunks.push({ atMs, data: events.join(''), ...(i === 0 ? { firstToken: true } : {}) });
    });
    const endAt = timing.ttftMs + timing.outputMs;
    for (const data of rendered.end) chunks.push({ atMs: endAt, data });
    const streamed: Omit<ProviderAnswer, 'finish'> = {
      status: 200,
      headers: {
        ...headers,
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
      },
      chunks,
    };
    if (fault?.kind === 'cut' || fault?.kind === 'stream-error') {
      const contentChunks = rendered.content.length;
      const after = Math.min(fault.afterChunks ?? Math.floor(contentChunks / 2), contentChunks);
      const at = rendered.start.length + after;
      if (fault.kind === 'cut') streamed.cutAt = at;
      else {
        // The error event replaces the rest of the reply; the stream then ends normally.
        const errorAt = at < chunks.length ? (chunks[at] as PlannedChunk).atMs : endAt;
        chunks.splice(at, chunks.length - at, {
          atMs: errorAt,
          data: streamErrorEvent(render, fault.retryAfterS),
        });
        return this.answer(
          { ...record, error: 'stream-error', retryAfterS: fault.retryAfterS?.toString() },
          release,
          streamed,
          timing.ttftMs,
        );
      }
    }
    return this.answer(record, release, streamed, timing.ttftMs);
  }

  private nextAttempt(place: string): number {
    const attempt = (this.attempts.get(place) ?? 0) + 1;
    // Bounded: a long run forgets the oldest places (their retries are long over).
    if (this.attempts.size >= PROVIDER_LIMITS.maxTrackedConversations && !this.attempts.has(place))
      this.attempts.clear();
    this.attempts.set(place, attempt);
    return attempt;
  }

  /** Input tokens: exact up to a bound of new text per request, estimated past it (docs/limits.md). */
  private countInput(conversation: Conversation): number {
    let exactBudget = PROVIDER_LIMITS.maxExactTokenChars;
    let total = 0;
    for (const text of inputTexts(conversation)) {
      if (text.length <= exactBudget) {
        total += this.tokens.count(text);
        exactBudget -= text.length;
      } else total += Math.ceil(Buffer.byteLength(text) / 4);
    }
    return total;
  }

  private limitHeaders(api: ProviderApi, states: LimitStates): Record<string, string> {
    const out: Record<string, string> = {};
    if (api === 'messages') {
      const add = (name: string, state: LimitStates[keyof LimitStates]) => {
        if (!state) return;
        out[`anthropic-ratelimit-${name}-limit`] = String(state.limit);
        out[`anthropic-ratelimit-${name}-remaining`] = String(state.remaining);
        out[`anthropic-ratelimit-${name}-reset`] = new Date(
          this.clock.toWallMs(this.clock.now() + state.resetMs),
        )
          .toISOString()
          .replace(/\.\d{3}Z$/, 'Z');
      };
      add('requests', states.requests);
      add('input-tokens', states.inputTokens);
      add('output-tokens', states.outputTokens);
      add('tokens', states.tokens);
      return out;
    }
    const add = (name: string, state: LimitStates[keyof LimitStates]) => {
      if (!state) return;
      out[`x-ratelimit-limit-${name}`] = String(state.limit);
      out[`x-ratelimit-remaining-${name}`] = String(state.remaining);
      out[`x-ratelimit-reset-${name}`] = goDuration(state.resetMs);
    };
    add('requests', states.requests);
    add('tokens', states.tokens ?? states.inputTokens);
    return out;
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

  private json(status: number, body: unknown): ProviderAnswer {
    return {
      status,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      bodyAtMs: 0,
      finish: () => {},
    };
  }

  private error(
    context: BaseContext & Partial<RequestContext> & { tokensIn?: number; limit?: string; fault?: string },
    status: number,
    kind: ErrorKind,
    message: string,
    headers: Record<string, string> = {},
  ): ProviderAnswer {
    const answer = {
      status,
      headers: {
        'content-type': 'application/json',
        [context.api === 'messages' ? 'request-id' : 'x-request-id']: context.requestId,
        ...headers,
      },
      body: errorBody(context.api, kind, message, context.requestId),
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
    release: () => void,
    planned: Omit<ProviderAnswer, 'finish'>,
    plannedTtft: number | undefined,
  ): ProviderAnswer {
    let finished = false;
    return {
      ...planned,
      finish: (outcome: PlayOutcome, firstTokenAt?: number) => {
        if (finished) return;
        finished = true;
        release();
        this.writeRecord(record, planned.status, outcome, firstTokenAt, plannedTtft);
      },
    };
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
    if (fields.cliVersion !== undefined) {
      stats.cliVersions[fields.cli] ??= {};
      const versions = stats.cliVersions[fields.cli] as Record<string, number>;
      versions[fields.cliVersion] = (versions[fields.cliVersion] ?? 0) + 1;
    }
    stats.inputTokens += fields.tokensIn ?? 0;
    const complete = outcome === 'complete' && status === 200 && fields.error === undefined;
    if (complete) stats.outputTokens += fields.tokensOut ?? 0;
    if (!this.trace) return;
    const data: Record<string, unknown> = { requestId: fields.requestId, bytesIn: fields.bytesIn };
    const put = (name: string, value: unknown) => {
      if (value !== undefined) data[name] = value;
    };
    put('cliVersion', fields.cliVersion);
    put('cliSession', fields.cliSession);
    put('model', fields.model);
    put('script', fields.script);
    put('turn', fields.turn);
    put('step', fields.step);
    put('attempt', fields.attempt);
    put('tools', fields.conversation?.tools.length);
    put('reply', fields.reply?.kind);
    if (fields.reply?.kind === 'tool-call') put('command', fields.reply.command);
    put('tokensIn', fields.tokensIn);
    put('tokensOut', complete ? fields.tokensOut : undefined);
    put('ttftMs', firstTokenAt !== undefined ? firstTokenAt - fields.arrival : undefined);
    put('plannedTtftMs', plannedTtft);
    put('fault', fields.fault);
    put('error', fields.error);
    put('limit', fields.limit);
    put('retryAfterS', fields.retryAfterS !== undefined ? Number(fields.retryAfterS) : undefined);
    put('outcome', outcome);
    const labels: Record<string, string | number> = {
      ...fields.subject?.labels,
      api: fields.api ?? 'none',
      cli: fields.cli,
      status: statusText,
    };
    this.trace.write({
      kind: 'span',
      name: 'provider.request',
      t: fields.arrival,
      dur: Math.max(0, end - fields.arrival),
      ...((fields.subject?.session ?? fields.cliSession)
        ? { session: (fields.subject?.session ?? fields.cliSession) as string }
        : {}),
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
}

interface RequestContext extends BaseContext {
  subject: Subject;
  conversation: Conversation;
  turn: number;
  step: number;
  attempt: number;
  script: string;
  model: string;
}

type RecordFields = BaseContext &
  Partial<RequestContext> & {
    tokensIn?: number;
    tokensOut?: number;
    reply?: Reply;
    fault?: string | undefined;
    error?: string;
    limit?: string;
    retryAfterS?: string | undefined;
  };

/** A short fingerprint of where a history starts (its first prompt), for telling conversations apart. */
function historyStart(conversation: Conversation): string {
  const first = conversation.items.find((item) => item.kind === 'prompt');
  const text = first?.kind === 'prompt' ? first.text.slice(0, 512) : '';
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return (hash >>> 0).toString(36);
}

/** `text` in `n` pieces of about equal length (the stream's chunks), never splitting a surrogate pair. */
export function splitText(text: string, n: number): string[] {
  if (n <= 1 || text.length === 0) return [text];
  const pieces: string[] = [];
  const chars = Array.from(text);
  const size = Math.ceil(chars.length / n);
  for (let i = 0; i < n; i++) pieces.push(chars.slice(i * size, (i + 1) * size).join(''));
  return pieces;
}

function idFrom(rng: Rng, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += rng.int(0, 35).toString(36);
  return out;
}

/** OpenAI's reset format: `1s`, `6m0s`, `17ms`. */
function goDuration(ms: number): string {
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const totalSeconds = Math.ceil(ms / 1000);
  const minutes = Math.floor(totalSeconds / 60);
  const seconds = totalSeconds % 60;
  return minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
}
