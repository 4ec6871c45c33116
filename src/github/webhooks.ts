/**
 * Repository webhooks (docs/github-emulator.md, "Webhooks"): the hooks a repository's admin made
 * (REST `…/hooks`, rest-hooks.ts), and their deliveries. When the world changes (world/notices.ts)
 * each active hook whose `events` name the change's event (or `*`) is sent an HTTP POST, as
 * GitHub's "Webhook events and payloads" and "Validating webhook deliveries" describe: the
 * `X-GitHub-Event`, `X-GitHub-Delivery` (a GUID from the run's seed), `X-GitHub-Hook-ID` headers,
 * `X-Hub-Signature-256` (and the SHA-1 `X-Hub-Signature`) when the hook has a secret.
 *
 * Delivery never holds up the change that caused it: payloads are rendered after the synchronous
 * change is whole (a microtask), then each hook sends its deliveries one at a time, in order, each
 * bounded by GitHub's 10 s timeout. The deliveries waiting, over all hooks, are bounded too
 * (WEBHOOK_BOUNDS, docs/limits.md): past it a delivery is dropped and recorded as such, so a
 * receiver that is down or slow costs a bounded queue and nothing else. Each delivery is kept for
 * `GET …/hooks/{id}/deliveries` (the latest WEBHOOK_BOUNDS.deliveriesKept per hook) and written to
 * the trace as one `github.webhook` event (docs/trace-format.md); deliveries cost no API quota.
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/index.ts';
import type { TraceSink } from '../trace/writer.ts';
import { repoObject, userObject } from './shapes.ts';
import type { GitHubState, Repo, User } from './state.ts';
import { eventOf, payloadOf, repoOf } from './webhook-payloads.ts';
import type { WorldNotice } from './world/notices.ts';

export const WEBHOOK_BOUNDS = {
  /** GitHub's: at most 20 webhooks on a repository for one event; here 20 on a repository. */
  hooksPerRepo: 20,
  /** GitHub's delivery timeout ("Handling webhook deliveries"): 10 s for the whole exchange. */
  deliveryTimeoutMs: 10_000,
  /** Deliveries waiting to be sent, over every hook; past it one is dropped (recorded). */
  queued: 1_000,
  /**
   * Their payloads' characters, over every hook; past it one is dropped likewise. Without it a
   * receiver that never answers held 1,000 payloads of whatever size: an issue's 4 MB body edited
   * 200 times kept 2.9 GB (each `edited` payload holds the body and the body before).
   */
  queuedChars: 64 * 1024 * 1024,
  /** Deliveries each hook keeps for `GET …/deliveries` (the oldest go first). */
  deliveriesKept: 100,
  /** The most of a receiver's answer kept with its delivery. */
  responseBytes: 4_096,
  /** The deliveries' requests and answers kept, over every hook (characters); the oldest go first. */
  keptBodyBytes: 32 * 1024 * 1024,
  /** A hook's URL and secret: at most this many characters. */
  configChars: 2_048,
} as const;

/** The events this emulator delivers (docs/github-emulator.md, "Webhooks"); `*` is every one. */
export const DELIVERED_EVENTS = [
  'ping',
  'issues',
  'issue_comment',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'push',
  'create',
  'delete',
  'check_run',
  'check_suite',
  'status',
] as const;

export interface HookConfig {
  url: string;
  contentType: 'json' | 'form';
  secret: string | undefined;
  insecureSsl: '0' | '1';
}

export interface Delivery {
  id: number;
  guid: string;
  /** Run time it was sent (or dropped). */
  at: number;
  /** Seconds the exchange took. */
  duration: number;
  /** `OK`, `Invalid HTTP Response: 500`, `failed to connect: …`, `timed out`, `dropped: …`. */
  status: string;
  /** The receiver's HTTP status; 0 when there was no answer. */
  statusCode: number;
  event: string;
  action: string | null;
  repositoryId: number;
  requestHeaders: Record<string, string>;
  requestBody: string;
  responseHeaders: Record<string, string>;
  responseBody: string;
}

export interface Hook {
  id: number;
  repo: Repo;
  active: boolean;
  events: string[];
  config: HookConfig;
  createdAt: number;
  updatedAt: number;
  lastResponse: { code: number | null; status: string; message: string | null };
  deliveries: Delivery[];
  /** Deliveries waiting for this hook's one in flight. */
  queue: Pending[];
  busy: boolean;
}

interface Pending {
  guid: string;
  event: string;
  action: string | null;
  /** The JSON payload. */
  json: string;
}

/** How a delivery reaches the hook's URL: a connection to its host and port. */
export type WebhookDialer = (url: URL) => Promise<Socket>;

/** A plain TCP connection to the URL's host and port (a world inside a sandbox dials its own way). */
export const directDial: WebhookDialer = (url) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(
      { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) },
      () => {
        socket.off('error', reject);
        resolve(socket);
      },
    );
    socket.once('error', reject);
  });

/** Each world's webhooks, for its REST routes (rest-hooks.ts), which are handed the world alone. */
const WEBHOOKS_OF = new WeakMap<GitHubState, Webhooks>();

export function webhooksOf(state: GitHubState): Webhooks | undefined {
  return WEBHOOKS_OF.get(state);
}

export class Webhooks {
  /** Each repository's hooks, in the order they were made. */
  private readonly byRepo = new Map<Repo, Hook[]>();
  /** Notices of the change under way, rendered once it is whole. */
  private notices: WorldNotice[] = [];
  private queuedTotal = 0;
  /** The characters of the payloads waiting (a payload waiting for several hooks counts for each). */
  private queuedChars = 0;
  private closed = false;
  private readonly inFlight = new Set<Socket>();
  /** How deliveries reach their URLs; the command target's world sets its own (docs/world.md). */
  dialer: WebhookDialer = directDial;
  private nextDeliveryId = 1;
  /** Kept deliveries whose request and answer are still kept, oldest first, and their bytes. */
  private readonly withBodies: Delivery[] = [];
  private keptBytes = 0;
  /** Deliveries dropped because the queue was full. */
  dropped = 0;
  /** How long one delivery may take (GitHub's 10 s; a test shortens it). */
  timeoutMs: number = WEBHOOK_BOUNDS.deliveryTimeoutMs;

  constructor(
    private readonly state: GitHubState,
    private readonly clock: Clock,
    private readonly rng: Rng,
    private readonly trace: TraceSink | undefined,
  ) {
    WEBHOOKS_OF.set(state, this);
  }

  /** Deliveries waiting, over every hook (at most WEBHOOK_BOUNDS.queued). */
  queuedCount(): number {
    return this.queuedTotal;
  }

  hooksOf(repo: Repo): readonly Hook[] {
    return this.byRepo.get(repo) ?? [];
  }

  hook(repo: Repo, id: number): Hook | undefined {
    return this.byRepo.get(repo)?.find((h) => h.id === id);
  }

  /**
   * A new hook; GitHub then pings it (not an App installation's: `ping: false`, what the command
   * target's `webhook` is, docs/command-target.md).
   */
  create(
    repo: Repo,
    input: { config: HookConfig; events: string[]; active: boolean },
    sender: User,
    options: { ping?: boolean } = {},
  ): Hook {
    // The world tells its changes from the first hook on: a run with none pays nothing.
    if (this.byRepo.size === 0) this.state.listen((notice) => this.onNotice(notice));
    const hooks = this.byRepo.get(repo) ?? [];
    const at = this.clock.now();
    const hook: Hook = {
      id: this.state.time.id(),
      repo,
      active: input.active,
      events: [...new Set(input.events)],
      config: input.config,
      createdAt: at,
      updatedAt: at,
      lastResponse: { code: null, status: 'unused', message: null },
      deliveries: [],
      queue: [],
      busy: false,
    };
    hooks.push(hook);
    this.byRepo.set(repo, hooks);
    if (options.ping !== false) this.ping(hook, sender);
    return hook;
  }

  update(hook: Hook, change: Partial<Pick<Hook, 'active' | 'events' | 'config'>>): Hook {
    if (change.active !== undefined) hook.active = change.active;
    if (change.events !== undefined) hook.events = [...new Set(change.events)];
    if (change.config !== undefined) hook.config = change.config;
    hook.updatedAt = this.clock.now();
    return hook;
  }

  delete(hook: Hook): void {
    const hooks = this.byRepo.get(hook.repo) ?? [];
    this.byRepo.set(
      hook.repo,
      hooks.filter((h) => h !== hook),
    );
    this.queuedTotal -= hook.queue.length;
    for (const pending of hook.queue) this.queuedChars -= pending.json.length;
    hook.queue = [];
  }

  /** `ping`: sent when a hook is made and on `POST …/pings`, whatever its events. */
  ping(hook: Hook, sender: User): void {
    const payload = {
      zen: 'Keep it logically awesome.',
      hook_id: hook.id,
      hook: hookObject(this.state, hook),
      repository: repoObject(this.state, hook.repo),
      sender: userObject(this.state, sender),
    };
    this.enqueue(hook, { guid: this.guid(), event: 'ping', action: null, json: JSON.stringify(payload) });
  }

  /** Stops delivering: the queues are dropped, connections in flight closed. */
  close(): void {
    this.closed = true;
    for (const hooks of this.byRepo.values()) for (const hook of hooks) hook.queue = [];
    this.queuedTotal = 0;
    this.queuedChars = 0;
    for (const socket of this.inFlight) socket.destroy();
    this.inFlight.clear();
  }

  private onNotice(notice: WorldNotice): void {
    if (this.closed || !this.byRepo.get(repoOf(notice))?.some((h) => h.active)) return;
    if (this.notices.length === 0) queueMicrotask(() => this.flush());
    this.notices.push(notice);
  }

  /** Renders the change's notices (each once, whatever the number of hooks) and queues them. */
  private flush(): void {
    const notices = this.notices;
    this.notices = [];
    for (const notice of notices) {
      const { event, action } = eventOf(notice);
      const hooks = this.hooksOf(repoOf(notice)).filter((h) => h.active && wants(h, event));
      if (hooks.length === 0) continue;
      // A full queue drops it anyway: a receiver that is down costs no rendering either.
      const full = this.queueFull(0);
      const pending = {
        guid: this.guid(),
        event,
        action,
        json: full ? '' : JSON.stringify(payloadOf(this.state, notice)),
      };
      for (const hook of hooks) this.enqueue(hook, pending);
    }
  }

  /** A GUID from the run's seed (the same run sends the same `X-GitHub-Delivery`s). */
  private guid(): string {
    const hex = (digits: number) =>
      Array.from({ length: digits }, () => this.rng.int(0, 15).toString(16)).join('');
    return `${hex(8)}-${hex(4)}-4${hex(3)}-${(8 + this.rng.int(0, 3)).toString(16)}${hex(3)}-${hex(12)}`;
  }

  private enqueue(hook: Hook, pending: Pending): void {
    if (this.closed) return;
    if (this.queueFull(pending.json.length)) {
      this.dropped++;
      this.record(hook, pending, this.clock.now(), 0, 0, 'dropped: the delivery queue is full', {}, '');
      return;
    }
    this.queuedTotal++;
    this.queuedChars += pending.json.length;
    hook.queue.push(pending);
    this.pump(hook);
  }

  /** Whether the queue can take no delivery of `chars` more (WEBHOOK_BOUNDS). */
  private queueFull(chars: number): boolean {
    return (
      this.queuedTotal >= WEBHOOK_BOUNDS.queued ||
      (this.queuedChars > 0 && this.queuedChars + chars > WEBHOOK_BOUNDS.queuedChars)
    );
  }

  private pump(hook: Hook): void {
    if (hook.busy || this.closed) return;
    const next = hook.queue.shift();
    if (next === undefined) return;
    this.queuedTotal--;
    this.queuedChars -= next.json.length;
    hook.busy = true;
    void this.deliver(hook, next).finally(() => {
      hook.busy = false;
      this.pump(hook);
    });
  }

  private async deliver(hook: Hook, pending: Pending): Promise<void> {
    const at = this.clock.now();
    const started = performance.now();
    const { headers, body } = this.request(hook, pending);
    let status: string;
    let statusCode = 0;
    let responseHeaders: Record<string, string> = {};
    let responseBody = '';
    try {
      const url = new URL(hook.config.url);
      if (url.protocol !== 'http:') throw new DeliveryError(`${url.protocol} URLs are not delivered to here`);
      // Nothing leaves the machine (docs/world.md): a hook's URL elsewhere is recorded as refused.
      if (this.dialer === directDial && !isLoopback(url.hostname))
        throw new DeliveryError(`refused: ${url.hostname} is not this machine's loopback`);
      const answer = await this.post(url, headers, body);
      statusCode = answer.status;
      responseHeaders = answer.headers;
      responseBody = answer.body;
      status = statusCode >= 200 && statusCode < 300 ? 'OK' : `Invalid HTTP Response: ${statusCode}`;
    } catch (error) {
      status =
        error instanceof DeliveryError ? error.message : `failed to connect: ${(error as Error).message}`;
    }
    const duration = (performance.now() - started) / 1000;
    this.record(
      hook,
      pending,
      at,
      duration,
      statusCode,
      status,
      responseHeaders,
      responseBody,
      headers,
      body,
    );
  }

  private request(hook: Hook, pending: Pending): { headers: Record<string, string>; body: string } {
    const body =
      hook.config.contentType === 'json' ? pending.json : `payload=${encodeURIComponent(pending.json)}`;
    const headers: Record<string, string> = {
      Accept: '*/*',
      'Content-Type':
        hook.config.contentType === 'json' ? 'application/json' : 'application/x-www-form-urlencoded',
      'User-Agent': 'GitHub-Hookshot/fleetbench',
      'X-GitHub-Delivery': pending.guid,
      'X-GitHub-Event': pending.event,
      'X-GitHub-Hook-ID': String(hook.id),
      'X-GitHub-Hook-Installation-Target-ID': String(hook.repo.id),
      'X-GitHub-Hook-Installation-Target-Type': 'repository',
    };
    const secret = hook.config.secret;
    if (secret !== undefined && secret !== '') {
      headers['X-Hub-Signature'] = `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;
      headers['X-Hub-Signature-256'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
    }
    return { headers, body };
  }

  /** One POST, the whole exchange within the delivery timeout. */
  private async post(
    url: URL,
    headers: Record<string, string>,
    body: string,
  ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    let socket: Socket | undefined;
    let timer: NodeJS.Timeout | undefined;
    let over = false;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        over = true;
        socket?.destroy();
        reject(new DeliveryError('timed out'));
      }, this.timeoutMs);
    });
    try {
      const dialing = this.dialer(url);
      // A connection that arrives after the timeout (or the emulator's close) is closed at once.
      dialing.then((s) => (over || this.closed ? s.destroy() : undefined)).catch(() => {});
      socket = await Promise.race([dialing, timeout]);
      if (this.closed) throw new DeliveryError('the emulator stopped');
      this.inFlight.add(socket);
      const connected = socket;
      return await Promise.race([exchange(connected, url, headers, body), timeout]);
    } finally {
      clearTimeout(timer);
      if (socket) {
        this.inFlight.delete(socket);
        socket.destroy();
      }
    }
  }

  /**
   * The requests and answers kept, over every hook, are bounded (WEBHOOK_BOUNDS.keptBodyBytes):
   * past it the oldest delivery's are let go (its record stays, its payload reads null).
   */
  private keepBodies(delivery: Delivery): void {
    this.withBodies.push(delivery);
    this.keptBytes += bodiesBytes(delivery);
    while (this.keptBytes > WEBHOOK_BOUNDS.keptBodyBytes && this.withBodies.length > 1) {
      const oldest = this.withBodies.shift() as Delivery;
      this.keptBytes -= bodiesBytes(oldest);
      oldest.requestBody = '';
      oldest.responseBody = '';
    }
  }

  private record(
    hook: Hook,
    pending: Pending,
    at: number,
    duration: number,
    statusCode: number,
    status: string,
    responseHeaders: Record<string, string>,
    responseBody: string,
    requestHeaders: Record<string, string> = {},
    requestBody = '',
  ): void {
    const delivery: Delivery = {
      // Its own sequence: deliveries end when receivers answer, and the world's ids must not
      // depend on that (the same run makes the same issues with the same ids).
      id: this.nextDeliveryId++,
      guid: pending.guid,
      at,
      duration,
      status,
      statusCode,
      event: pending.event,
      action: pending.action,
      repositoryId: hook.repo.id,
      requestHeaders,
      requestBody,
      responseHeaders,
      responseBody,
    };
    hook.deliveries.push(delivery);
    if (hook.deliveries.length > WEBHOOK_BOUNDS.deliveriesKept) hook.deliveries.shift();
    this.keepBodies(delivery);
    hook.lastResponse =
      statusCode === 0
        ? { code: null, status: 'failed', message: status }
        : { code: statusCode, status: statusCode < 300 ? 'active' : 'failed', message: status };
    this.trace?.write({
      kind: 'event',
      name: 'github.webhook',
      t: this.clock.now(),
      labels: {
        event: pending.event,
        ...(pending.action === null ? {} : { action: pending.action }),
        repo: hook.repo.fullName,
      },
      data: {
        hook: hook.id,
        delivery: delivery.id,
        guid: pending.guid,
        statusCode,
        status,
        durationMs: Math.round(duration * 1000 * 10) / 10,
        sentAt: at,
      },
    });
  }
}

class DeliveryError extends Error {}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

function bodiesBytes(delivery: Delivery): number {
  return delivery.requestBody.length + delivery.responseBody.length;
}

function wants(hook: Hook, event: string): boolean {
  return hook.events.includes(event) || hook.events.includes('*');
}

function exchange(
  socket: Socket,
  url: URL,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        method: 'POST',
        path: `${url.pathname}${url.search}`,
        headers: {
          ...headers,
          Host: url.host,
          Connection: 'close',
          'Content-Length': String(Buffer.byteLength(body)),
        },
        createConnection: () => socket,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let kept = 0;
        res.on('data', (chunk: Buffer) => {
          // The rest of a long answer is read and let go: only its first bytes are kept.
          if (kept < WEBHOOK_BOUNDS.responseBytes) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        });
        res.on('end', () => {
          const responseHeaders: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers))
            if (v !== undefined) responseHeaders[k] = Array.isArray(v) ? v.join(', ') : v;
          resolve({
            status: res.statusCode ?? 0,
            headers: responseHeaders,
            body: Buffer.concat(chunks).toString('utf8').slice(0, WEBHOOK_BOUNDS.responseBytes),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A hook as the REST API shows it (schema `hook`); a secret shows as asterisks, as on GitHub. */
export function hookObject(state: GitHubState, hook: Hook): Record<string, unknown> {
  const url = `${state.apiUrl}/repos/${hook.repo.fullName}/hooks/${hook.id}`;
  return {
    type: 'Repository',
    id: hook.id,
    name: 'web',
    active: hook.active,
    events: hook.events,
    config: configObject(hook.config),
    updated_at: state.time.iso(hook.updatedAt),
    created_at: state.time.iso(hook.createdAt),
    url,
    test_url: `${url}/test`,
    ping_url: `${url}/pings`,
    deliveries_url: `${url}/deliveries`,
    last_response: hook.lastResponse,
  };
}

/** A hook's configuration (schema `webhook-config`). */
export function configObject(config: HookConfig): Record<string, unknown> {
  return {
    content_type: config.contentType,
    insecure_ssl: config.insecureSsl,
    url: config.url,
    ...(config.secret ? { secret: '********' } : {}),
  };
}

/** A delivery in the list (schema `hook-delivery-item`), or with its request and response (`hook-delivery`). */
export function deliveryObject(
  state: GitHubState,
  hook: Hook,
  delivery: Delivery,
  full: boolean,
): Record<string, unknown> {
  const item: Record<string, unknown> = {
    id: delivery.id,
    guid: delivery.guid,
    delivered_at: state.time.iso(delivery.at),
    redelivery: false,
    duration: delivery.duration,
    status: delivery.status,
    status_code: delivery.statusCode,
    event: delivery.event,
    action: delivery.action,
    installation_id: null,
    repository_id: delivery.repositoryId,
  };
  if (!full) return item;
  let payload: unknown = null;
  try {
    payload = delivery.requestBody === '' ? null : JSON.parse(delivery.requestBody);
  } catch {
    // A form-encoded delivery: its payload is the form's one field.
    payload = JSON.parse(decodeURIComponent(delivery.requestBody.slice('payload='.length)));
  }
  return {
    ...item,
    url: hook.config.url,
    request: { headers: delivery.requestHeaders, payload },
    response: { headers: delivery.responseHeaders, payload: delivery.responseBody },
  };
}
