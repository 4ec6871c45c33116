/**
 * The `http` target: fleetbench drives a system under test through the small JSON protocol of
 * docs/http-target.md (src/contract/protocol.ts). A real orchestrator implements it in a shim;
 * `fleetbench reference serve` implements it for the reference control plane.
 *
 * Requests the system cannot take right now (503, connection refused or reset: a restart under
 * way) are retried with back-off for up to `retryForMs`, as a real client would. Events arrive
 * on one long-lived stream (NDJSON), become trace records through the run's one TraceSink, and
 * are counted: at the end the count the target declares is compared with what was received and
 * written (`target.events`), so a lost record is a reported fact, not a silent gap.
 */
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { MAX_LINE_BYTES, TARGET_LIVENESS } from '../base/limits.ts';
import type { Clock } from '../clock/clock.ts';
import {
  actorCountsSchema,
  actorReplySchema,
  countsResponseSchema,
  eventToRecord,
  type InfoResponse,
  infoSchema,
  type RestartResponse,
  restartResponseSchema,
  runOpenResponseSchema,
  runStartResponseSchema,
  runStopResponseSchema,
  TARGET_PROTOCOL,
  type TargetEvent,
} from '../contract/protocol.ts';
import type {
  ActorCounts,
  ActorFootprint,
  ActorPhase,
  ActorReply,
  ActorStepRequest,
  ProviderFault,
  RestartKind,
  RunNotice,
  RunStartSpec,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
} from '../contract/types.ts';
import type { BodyRecord } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';

export interface HttpTargetOptions {
  /** `http://HOST:PORT` (a path prefix is kept: `http://host/fleet` → `/fleet/v1/...`). */
  baseUrl: string;
  clock: Clock;
  trace: TraceSink;
  run: { runId: string; seed: number; scenario: string };
  /** The GitHub this run offers the target (the emulator fleetbench serves). */
  github?: { url: string; token: string };
  /** Target-specific settings sent with POST /v1/run. */
  config?: object;
  /** Real ms per request before it fails (default 30 s; restarts wait up to 120 s). */
  requestTimeoutMs?: number;
  /** How long a request the target cannot take (503, refused) is retried, real ms (default 60 s). */
  retryForMs?: number;
  /**
   * One generator of several in this run (live-run segments, docs/distributed.md): sent with
   * POST /v1/run and /v1/run/stop, so the target starts the run once and ends it after the last.
   */
  segment?: { index: number; count: number };
  /**
   * Which of the shared stream's records this generator writes (a segment: its own sessions',
   * and the run-wide ones in segment 0). The others are counted as `foreign`, not written.
   */
  keep?: (record: BodyRecord) => boolean;
  /** How the target's liveness is watched (real ms); default TARGET_LIVENESS. */
  liveness?: { probeEveryMs: number; probeTimeoutMs: number; deadAfterMs: number };
}

export interface EventStreamStats {
  /** Event lines received (control lines not counted). */
  received: number;
  /** Received events that became trace records. */
  written: number;
  /** Received events that were not valid records (each reported once per reason). */
  rejected: number;
  /** Valid records another segment of the run writes (live-run segments only). */
  foreign?: number;
  /** Events the target says it emitted for the run (from POST /v1/run/stop), if it said. */
  declared: number | undefined;
  reconnects: number;
  /** Sequence numbers the target skipped (events it sent that never arrived). */
  gaps: number;
}

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

const RETRYABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ECONNABORTED', 'socket hang up']);

function sleepReal(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

class Http {
  readonly base: URL;
  private readonly agent: Agent;
  private readonly send: typeof httpRequest;

  constructor(
    baseUrl: string,
    private readonly timeoutMs: number,
  ) {
    this.base = new URL(baseUrl.endsWith('/') ? baseUrl.slice(0, -1) : baseUrl);
    const https = this.base.protocol === 'https:';
    this.agent = https
      ? new HttpsAgent({ keepAlive: true, maxSockets: 64 })
      : new Agent({ keepAlive: true, maxSockets: 64 });
    this.send = https ? (httpsRequest as unknown as typeof httpRequest) : httpRequest;
  }

  path(p: string): string {
    return `${this.base.pathname === '/' ? '' : this.base.pathname}${p}`;
  }

  request(method: string, path: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = this.send(
        {
          protocol: this.base.protocol,
          hostname: this.base.hostname,
          port: this.base.port,
          method,
          path: this.path(path),
          agent: this.agent,
          timeout: timeoutMs,
          headers: {
            accept: 'application/json',
            ...(payload !== undefined
              ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            // A protocol answer is small JSON: one of gigabytes is refused, not buffered.
            if (size > MAX_LINE_BYTES)
              return req.destroy(new Error(`answer over ${MAX_LINE_BYTES} bytes (docs/limits.md)`));
            chunks.push(c);
          });
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  stream(path: string, onResponse: (res: IncomingMessage) => void, onError: (error: Error) => void) {
    const req = this.send(
      {
        protocol: this.base.protocol,
        hostname: this.base.hostname,
        port: this.base.port,
        method: 'GET',
        path: this.path(path),
        headers: { accept: 'application/x-ndjson' },
      },
      onResponse,
    );
    req.on('error', onError);
    req.end();
    return req;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Connects: reads GET /v1/info (retrying while the target starts) and checks the protocol. */
export async function connectHttpTarget(options: HttpTargetOptions): Promise<HttpTarget> {
  const http = new Http(options.baseUrl, options.requestTimeoutMs ?? 30_000);
  const deadline = Date.now() + Math.min(options.retryForMs ?? 60_000, 15_000);
  let lastError = '';
  for (;;) {
    try {
      const answer = await http.request('GET', '/v1/info', undefined, 5_000);
      if (answer.status === 200) {
        const info = infoSchema.safeParse(JSON.parse(answer.body));
        if (!info.success)
          throw new FleetbenchError('E_TARGET', `${options.baseUrl}/v1/info: not a fleetbench target answer`);
        const [name, version] = info.data.protocol.split('/');
        if (name !== 'fleetbench-target' || version !== TARGET_PROTOCOL.split('/')[1]) {
          throw new FleetbenchError(
            'E_TARGET',
            `${options.baseUrl} speaks '${info.data.protocol}', fleetbench speaks '${TARGET_PROTOCOL}'`,
          );
        }
        return new HttpTarget(options, http, info.data);
      }
      lastError = `HTTP ${answer.status}`;
    } catch (error) {
      if (error instanceof FleetbenchError) throw error;
      lastError = (error as Error).message;
    }
    if (Date.now() > deadline) {
      http.close();
      throw new FleetbenchError(
        'E_TARGET',
        `cannot reach the http target at ${options.baseUrl}: ${lastError}`,
        {
          hint: 'is it running? (fleetbench reference serve prints its URL)',
        },
      );
    }
    await sleepReal(250);
  }
}

export class HttpTarget implements Target {
  readonly name = 'http';
  readonly info: InfoResponse;
  restart?: (kind: RestartKind) => Promise<{ outageMs: number }>;
  flushCaches?: () => Promise<void>;
  setDashboard?: (open: boolean) => Promise<void>;
  // Native runs (capability `runs`, with `events`: notices come from the stream).
  startRun?: (spec: RunStartSpec) => Promise<{ run: string; start: 'cold' | 'warm' }>;
  sendInput?: (session: string, input: string) => Promise<void>;
  endRun?: (session: string) => Promise<void>;
  onRunNotice?: (listener: (notice: RunNotice) => void) => void;
  providerFault?: (fault: ProviderFault) => Promise<void>;
  // Actors (capability `actors`).
  createActor?: (id: string, base: ActorFootprint, phase: ActorPhase) => Promise<ActorReply>;
  parkActor?: (id: string, phase: ActorPhase) => Promise<ActorReply>;
  wakeActor?: (id: string, phase: ActorPhase) => Promise<ActorReply>;
  actorStep?: (id: string, step: ActorStepRequest, phase: ActorPhase) => Promise<ActorReply>;
  actorCounts?: () => Promise<ActorCounts>;
  /** The last restart's answer (pids before and after, when the target says). */
  lastRestart: RestartResponse | undefined;

  private readonly listeners: SessionStateListener[] = [];
  private readonly runListeners: Array<(notice: RunNotice) => void> = [];
  /** Idempotency keys of run requests (a retry after a restart is not done twice). */
  private requestCounter = 0;
  private readonly stats: EventStreamStats = {
    received: 0,
    written: 0,
    rejected: 0,
    declared: undefined,
    reconnects: 0,
    gaps: 0,
  };
  private readonly rejectReasons = new Map<string, number>();
  private lastCounts: Partial<Record<SessionState, number>> = {};
  private since = 1;
  private lastSeq = 0;
  private streamReq: ReturnType<Http['stream']> | undefined;
  private streaming = false;
  private stopping = false;
  private ended: (() => void) | undefined;
  private readonly endedPromise: Promise<void>;
  private readonly failureListeners: Array<(error: Error) => void> = [];
  /** The watchdog's next probe while the run is on, and the restarts the run asked for under way. */
  private watchdog: ReturnType<typeof setTimeout> | undefined;
  private restartsUnderWay = 0;
  /** Real time since which the target has given no answer at all (undefined: it answers). */
  private silentSince: number | undefined;
  /** Set once the target is lost: every later request fails at once with it. */
  private lost: FleetbenchError | undefined;
  /** The run is over (stop returned): a request still retrying gives up instead of outliving it. */
  private closed = false;

  constructor(
    private readonly options: HttpTargetOptions,
    private readonly http: Http,
    info: InfoResponse,
  ) {
    this.info = info;
    if (options.keep) this.stats.foreign = 0;
    this.endedPromise = new Promise((resolve) => {
      this.ended = resolve;
    });
    const has = (c: string) => info.capabilities.includes(c);
    if (has('restart')) this.restart = (kind) => this.doRestart(kind);
    if (has('flushCaches'))
      this.flushCaches = async () => {
        await this.call('POST', '/v1/caches/flush', {});
      };
    if (has('setDashboard'))
      this.setDashboard = async (open) => {
        await this.call('POST', '/v1/dashboard', { open });
      };
    // Run notices come from the event stream: without it, runs cannot be driven.
    if (has('runs') && has('events')) {
      const session = (id: string) => `/v1/sessions/${encodeURIComponent(id)}`;
      this.startRun = async (spec) => {
        const answer = await this.call('POST', `${session(spec.session)}/run`, {
          adapter: spec.adapter,
          input: spec.input,
          key: this.key(),
        });
        const parsed = runOpenResponseSchema.safeParse(answerJson(answer, 'POST /v1/sessions/{id}/run'));
        if (!parsed.success)
          throw new FleetbenchError('E_TARGET', 'POST /v1/sessions/{id}/run: unexpected answer');
        return parsed.data;
      };
      this.sendInput = async (id, input) => {
        await this.call('POST', `${session(id)}/turns`, { input, key: this.key() });
      };
      this.endRun = async (id) => {
        await this.call('DELETE', `${session(id)}/run`);
      };
      this.onRunNotice = (listener) => {
        this.runListeners.push(listener);
      };
    }
    if (has('providerFaults'))
      this.providerFault = async (fault) => {
        await this.call('POST', '/v1/providers/faults', fault);
      };
    if (has('actors')) {
      const reply = async (path: string, body: unknown): Promise<ActorReply> => {
        const answer = await this.call('POST', path, body);
        const parsed = actorReplySchema.safeParse(answerJson(answer, `POST ${path}`));
        if (!parsed.success) throw new FleetbenchError('E_TARGET', `POST ${path}: unexpected answer`);
        return parsed.data;
      };
      const actor = (id: string, op: string) => `/v1/actors/${encodeURIComponent(id)}/${op}`;
      this.createActor = (id, base, phase) => reply('/v1/actors', { id, base, phase });
      this.parkActor = (id, phase) => reply(actor(id, 'park'), { phase });
      this.wakeActor = (id, phase) => reply(actor(id, 'wake'), { phase });
      this.actorStep = (id, step, phase) => reply(actor(id, 'steps'), { step, phase });
      this.actorCounts = async () => {
        const answer = await this.call('GET', '/v1/actors');
        const parsed = actorCountsSchema.safeParse(answerJson(answer, 'GET /v1/actors'));
        if (!parsed.success) throw new FleetbenchError('E_TARGET', 'GET /v1/actors: unexpected answer');
        return parsed.data.counts;
      };
    }
  }

  private key(): string {
    return `${this.options.run.runId}:${++this.requestCounter}`;
  }

  get eventStats(): Readonly<EventStreamStats> {
    return this.stats;
  }

  onFailure(listener: (error: Error) => void): void {
    this.failureListeners.push(listener);
  }

  /**
   * The target must keep answering from the run's start to its end: probed every second, one
   * that gives no answer at all (refused, reset, timed out; a 503 is an answer) for
   * `deadAfterMs` in a row, outside a restart the run asked for, is lost and fails the run.
   */
  private watch(): void {
    const { probeEveryMs, probeTimeoutMs, deadAfterMs } = this.options.liveness ?? TARGET_LIVENESS;
    const probe = async () => {
      this.watchdog = undefined;
      if (this.stopping || this.lost) return;
      let silent: string | undefined;
      try {
        await this.http.request('GET', '/v1/info', undefined, probeTimeoutMs);
      } catch (error) {
        silent = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      }
      if (this.stopping || this.lost) return;
      const now = performance.now();
      if (silent === undefined || this.restartsUnderWay > 0) this.silentSince = undefined;
      else {
        this.silentSince ??= now - probeTimeoutMs;
        if (now - this.silentSince >= deadAfterMs) {
          this.declareLost(
            `the target at ${this.options.baseUrl} stopped answering: no answer for ${Math.round((now - this.silentSince) / 1000)} s (${silent})`,
          );
          return;
        }
      }
      this.watchdog = setTimeout(() => void probe(), probeEveryMs);
    };
    this.watchdog = setTimeout(() => void probe(), probeEveryMs);
  }

  /** The target is gone: the run fails (exit 3), and every later request says so at once. */
  private declareLost(message: string): FleetbenchError {
    this.lost ??= new FleetbenchError('E_TARGET', `target lost: ${message}`, {
      exitCode: ExitCode.runFailed,
    });
    this.options.trace.write({
      kind: 'event',
      name: 'target.lost',
      t: this.options.clock.now(),
      data: { message },
    });
    for (const listener of this.failureListeners) listener(this.lost);
    return this.lost;
  }

  async start(): Promise<void> {
    const { clock } = this.options;
    // Watched from the run's start request on (docs/http-target.md, "Liveness"): a target that
    // answered GET /v1/info and then died has begun a run that cannot complete. That is a lost
    // target (exit 3), not bad input; and it is known after 15 s of silence, not 60 s of retries.
    this.watch();
    let started: ReturnType<typeof runStartResponseSchema.safeParse>;
    try {
      const answer = await this.call('POST', '/v1/run', {
        runId: this.options.run.runId,
        epochMs: clock.epochMs,
        timeScale: clock.timeScale,
        seed: this.options.run.seed,
        scenario: this.options.run.scenario,
        ...(this.options.github ? { github: this.options.github } : {}),
        ...(this.options.config ? { config: this.options.config } : {}),
        ...(this.options.segment ? { segment: this.options.segment } : {}),
      });
      started = runStartResponseSchema.safeParse(answerJson(answer, 'POST /v1/run'));
    } catch (error) {
      // No answer at all: lost. A target that answered (a 4xx, 503 for as long as it was
      // retried, or no JSON) is there and refused the run, which never began: nothing is left to
      // watch (a probe timer left running kept the process alive).
      if (error instanceof TargetUnavailable && !error.answered) throw this.declareLost(error.message);
      this.unwatch();
      throw error;
    }
    this.since = started.success ? started.data.since : 1;
    this.lastSeq = this.since - 1;
    if (this.info.capabilities.includes('events')) this.openStream();
    else this.ended?.();
  }

  /** The run is ending (or never began): no more liveness probes. */
  private unwatch(): void {
    this.stopping = true;
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }

  async stop(): Promise<void> {
    this.unwatch();
    let lostAtStop: FleetbenchError | undefined = this.lost;
    // A target already lost is not asked to stop (it would not answer).
    if (!lostAtStop)
      try {
        const { segment } = this.options;
        const answer = await this.call(
          'POST',
          '/v1/run/stop',
          segment ? { runId: this.options.run.runId, segment } : {},
          { retryForMs: 5_000, timeoutMs: 10_000 },
        );
        const stopped = runStopResponseSchema.safeParse(JSON.parse(answer.body || '{}'));
        if (stopped.success) this.stats.declared = stopped.data.events;
        // Other segments still run: no `end` line comes for this one; the events declared so far do.
        if (stopped.success && (stopped.data.running ?? 0) > 0 && this.streaming) {
          const declared = stopped.data.events;
          const deadline = Date.now() + 5_000;
          while (this.lastSeq - this.since + 1 < declared && Date.now() < deadline) await sleepReal(20);
          this.streaming = false;
          this.ended?.();
        }
      } catch (error) {
        this.options.trace.write({
          kind: 'event',
          name: 'target.error',
          t: this.options.clock.now(),
          labels: { op: 'stop' },
          data: { message: (error as Error).message },
        });
        // No answer at all to the run's end: the target is gone, not merely refusing the stop.
        if (error instanceof TargetUnavailable)
          lostAtStop ??= new FleetbenchError('E_TARGET', `target lost: ${error.message}`, {
            exitCode: ExitCode.runFailed,
          });
      }
    // The stream ends with an `end` line after the stop; wait for it, but not forever.
    if (this.streaming && !lostAtStop) await Promise.race([this.endedPromise, sleepReal(5_000)]);
    this.streamReq?.destroy();
    this.streaming = false;
    const rejected = Object.fromEntries(this.rejectReasons);
    this.options.trace.write({
      kind: 'event',
      name: 'target.events',
      t: this.options.clock.now(),
      data: {
        ...this.stats,
        declared: this.stats.declared ?? null,
        ...(this.rejectReasons.size > 0 ? { rejectedReasons: rejected } : {}),
      },
    });
    this.http.close();
    this.closed = true;
    // The run cannot be judged against a target that did not see it to its end.
    if (lostAtStop) throw lostAtStop;
  }

  async createSession(spec: SessionSpec): Promise<void> {
    await this.call('POST', '/v1/sessions', spec);
  }

  async sessionCounts(): Promise<Partial<Record<SessionState, number>>> {
    try {
      const answer = await this.http.request('GET', '/v1/sessions', undefined, 2_000);
      if (answer.status === 200) {
        const parsed = countsResponseSchema.safeParse(JSON.parse(answer.body));
        if (parsed.success) this.lastCounts = parsed.data.counts as Partial<Record<SessionState, number>>;
      }
    } catch {
      // Down (a restart): the last counts stand.
    }
    return this.lastCounts;
  }

  onSessionState(listener: SessionStateListener): void {
    this.listeners.push(listener);
  }

  private async doRestart(kind: RestartKind): Promise<{ outageMs: number }> {
    const started = performance.now();
    // A restart may take the target down for as long as its own call waits.
    this.restartsUnderWay++;
    try {
      const answer = await this.call('POST', '/v1/restart', { kind }, { timeoutMs: 120_000 });
      const parsed = restartResponseSchema.safeParse(JSON.parse(answer.body));
      if (!parsed.success) throw new Error('restart: unexpected answer');
      this.lastRestart = parsed.data;
      return { outageMs: parsed.data.outageMs * this.options.clock.timeScale };
    } catch (error) {
      const message = (error as Error).message;
      const realMs = performance.now() - started;
      this.options.trace.write({
        kind: 'event',
        name: 'target.error',
        t: this.options.clock.now(),
        labels: { op: 'restart', kind },
        data: { message, afterMs: Math.round(realMs * this.options.clock.timeScale) },
      });
      // A restart that did not bring the control plane back is a lost target, not an outage
      // to measure: the run fails (engine.ts) rather than go on against nothing.
      throw new FleetbenchError('E_TARGET', `target lost: restart ${kind} failed: ${message}`, {
        exitCode: ExitCode.runFailed,
      });
    } finally {
      this.restartsUnderWay--;
    }
  }

  /** One JSON request, retried while the target cannot take it. Non-2xx answers throw. */
  private async call(
    method: string,
    path: string,
    body?: unknown,
    options: { timeoutMs?: number; retryForMs?: number } = {},
  ): Promise<Answer> {
    const deadline = Date.now() + (options.retryForMs ?? this.options.retryForMs ?? 60_000);
    let wait = 100;
    for (;;) {
      if (this.lost && !this.stopping) throw this.lost;
      if (this.closed) throw new TargetUnavailable(`${method} ${path}: the run is over`);
      let answer: Answer | undefined;
      let failure: string;
      let answered = false;
      try {
        answer = await this.http.request(method, path, body, options.timeoutMs);
        if (answer.status >= 200 && answer.status < 300) return answer;
        failure = describeError(answer);
        if (answer.status !== 503) throw new FleetbenchError('E_TARGET', `${method} ${path}: ${failure}`);
        answered = true;
        const retryAfter = Number(answer.headers['retry-after']);
        if (Number.isFinite(retryAfter) && retryAfter > 0) wait = Math.min(retryAfter * 1000, 1_000);
      } catch (error) {
        if (error instanceof FleetbenchError) throw error;
        const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        if (!RETRYABLE.has(code))
          throw new FleetbenchError('E_TARGET', `${method} ${path}: ${(error as Error).message}`);
        failure = code;
      }
      if (Date.now() + wait > deadline)
        throw new TargetUnavailable(`${method} ${path}: still unavailable (${failure})`, answered);
      await sleepReal(wait);
      wait = Math.min(wait * 2, 1_000);
    }
  }

  private openStream(): void {
    this.streaming = true;
    let buffered = '';
    let skipping = false;
    const req = this.http.stream(
      `/v1/events?since=${this.lastSeq + 1}`,
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          this.reconnect();
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let newline = buffered.indexOf('\n');
          while (newline >= 0) {
            const line = buffered.slice(0, newline);
            buffered = buffered.slice(newline + 1);
            if (skipping) skipping = false;
            else if (line.trim() !== '') this.onLine(line);
            newline = buffered.indexOf('\n');
          }
          // An event line with no end in sight: refused and counted, the rest of it skipped.
          if (buffered.length > MAX_LINE_BYTES) {
            if (!skipping) this.reject(`event line longer than ${MAX_LINE_BYTES} bytes (docs/limits.md)`);
            skipping = true;
            buffered = '';
          }
        });
        res.on('end', () => this.reconnect());
        res.on('error', () => this.reconnect());
      },
      () => this.reconnect(),
    );
    this.streamReq = req;
  }

  private reconnect(): void {
    if (!this.streaming) return;
    if (this.stopping) {
      this.streaming = false;
      this.ended?.();
      return;
    }
    this.stats.reconnects++;
    setTimeout(() => {
      if (this.streaming) this.openStream();
    }, 200);
  }

  private onLine(line: string): void {
    let event: TargetEvent & { events?: number };
    try {
      event = JSON.parse(line);
    } catch {
      this.stats.received++;
      this.reject('malformed JSON');
      return;
    }
    if ((event.type as string) === 'hello') return;
    if ((event.type as string) === 'end') {
      if (typeof event.events === 'number') this.stats.declared = event.events;
      this.streaming = false;
      this.ended?.();
      this.streamReq?.destroy();
      return;
    }
    if (typeof event.seq === 'number') {
      if (event.seq <= this.lastSeq) return; // a replay after a reconnect
      if (event.seq > this.lastSeq + 1) this.stats.gaps += event.seq - this.lastSeq - 1;
      this.lastSeq = event.seq;
    }
    this.stats.received++;
    const { clock } = this.options;
    const converted = eventToRecord(event, {
      epochMs: clock.epochMs,
      timeScale: clock.timeScale,
      now: () => clock.now(),
    });
    if (!converted.ok) {
      this.reject(converted.reason);
      return;
    }
    const record = converted.record;
    if (this.options.keep && !this.options.keep(record)) {
      this.stats.foreign = (this.stats.foreign ?? 0) + 1;
      return;
    }
    this.options.trace.write(record);
    this.stats.written++;
    if (record.kind === 'event' && record.name === 'session.state' && record.session !== undefined) {
      const from = record.labels?.from as SessionState | 'none' | undefined;
      const to = record.labels?.to as SessionState | undefined;
      if (to !== undefined)
        for (const listener of this.listeners) listener(record.session, from ?? 'none', to);
    }
    // Run notices: a `run.turn` span is a completed turn, a `run.ended` event an ended run.
    if (this.runListeners.length > 0 && (record.kind === 'span' || record.kind === 'event')) {
      const session = record.session;
      const data = record.data ?? {};
      const run = typeof data.run === 'string' ? data.run : '';
      let notice: RunNotice | undefined;
      if (session === undefined) notice = undefined;
      else if (record.kind === 'span' && record.name === 'run.turn')
        notice = { type: 'turn.completed', session, run, turn: Number(data.turn ?? 0) };
      else if (record.kind === 'event' && record.name === 'run.ended')
        notice = { type: 'run.ended', session, run, turn: Number(data.turns ?? 0) };
      if (notice) for (const listener of this.runListeners) listener(notice);
    }
  }

  private reject(reason: string): void {
    this.stats.rejected++;
    this.rejectReasons.set(reason, (this.rejectReasons.get(reason) ?? 0) + 1);
    // The first few refusals are reported in the trace as they happen (the rest are counted in
    // `target.events`): a bad record from the system under test never fails the run.
    if (this.stats.rejected > 20) return;
    try {
      this.options.trace.write({
        kind: 'event',
        name: 'target.bad_record',
        t: this.options.clock.now(),
        labels: { source: 'http' },
        data: { count: 1, reason },
      });
    } catch {
      // The trace closed under a late event: it is counted in `target.events` all the same.
    }
  }
}

/** A request the target never took (503, refused, reset) for as long as it was retried. */
class TargetUnavailable extends FleetbenchError {
  /** Whether the target's last word was an answer (a 503): it is there, not lost. */
  readonly answered: boolean;
  constructor(message: string, answered = false) {
    super('E_TARGET', message);
    this.answered = answered;
  }
}

/**
 * A 2xx answer's JSON body (an empty one is `{}`). A target's answer that is not JSON is the
 * target's fault, said as such and naming the request: JSON.parse's own error was an internal
 * error with a stack trace.
 */
function answerJson(answer: Answer, request: string): unknown {
  if (answer.body.trim() === '') return {};
  try {
    return JSON.parse(answer.body);
  } catch {
    throw new FleetbenchError(
      'E_TARGET',
      `${request}: the answer is not JSON (HTTP ${answer.status}, ${answer.body.length} bytes; docs/http-target.md)`,
    );
  }
}

function describeError(answer: Answer): string {
  try {
    const body = JSON.parse(answer.body) as { error?: { code?: string; message?: string } };
    if (body.error) return `${answer.status} ${body.error.code}: ${body.error.message}`;
  } catch {
    // not JSON
  }
  return `HTTP ${answer.status}`;
}
