/**
 * A lean HTTP/1.1 client over plain TCP with keep-alive: what HttpTransport uses for `http://`
 * base URLs, the live generator's request path. node:http and undici both cost 250-300 µs of CPU
 * per request at 1,000/s on this machine (request and response objects, streams, per-request
 * timers and listeners); writing the request line and headers in one write and framing the
 * answer from the bytes costs a fraction of that (docs/performance.md#live).
 *
 * What it speaks: requests with Content-Length bodies; responses framed by Content-Length,
 * chunked transfer coding, or the connection closing; 1xx interim answers skipped; no body for
 * HEAD, 204 and 304; `connection: close` honoured. Header names come back lower-cased and
 * repeated headers joined with ", ", as node:http's `headers` does for all but set-cookie. An
 * idempotent request whose reused connection closes before any answer byte (the server dropped
 * an idle keep-alive socket) is sent once more on a new connection. TLS goes through node:https.
 *
 * Where the CPU goes, and what is not done per request (docs/performance.md#live):
 * - Reads land in one buffer shared by every connection (`onread`), framed in place: no Buffer
 *   per chunk and no readable-stream machinery (push, 'data' events, read-more ticks).
 * - An answer's headers are parsed on first use: framing needs only Content-Length,
 *   Transfer-Encoding and Connection, found by a scan that allocates nothing else. A client that
 *   reads headers pays what it paid before; one that reads only the status (a load generator)
 *   does not build an object of twenty headers per request.
 * - Timeouts are counted in sweeps, not read off the clock per request, and the pools of a process
 *   share one sweep interval per period: a thousand clients with a connection each (a thousand
 *   pools) would otherwise wake the process a thousand times a second for their sweeps.
 * - A request to the route of the one before it reuses its head, built and checked once.
 * - Pipelining (opt-in, `pipelining` > 1): GET and HEAD requests started in one run of code (a
 *   timer's callback that starts a group of operations; written out when it returns, before any
 *   promise callback) share a connection and one write, up to that many in flight on it, and
 *   their answers usually come back in one read. Other methods are never pipelined. A server
 *   that closes the connection after an answer with requests behind it turns pipelining off for
 *   the pool; those requests are sent again, one per connection.
 */
import { connect, type Socket } from 'node:net';

export interface Http1Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

interface Pending {
  method: string;
  bytes: string;
  body: string | undefined;
  /** The sweep count at which it times out (see Sweeper). */
  expiresAt: number;
  retried: boolean;
  /** GET or HEAD without a body, not a resend: may share a connection with others in flight. */
  pipelinable: boolean;
  resolve: (answer: Http1Answer) => void;
  reject: (error: Error) => void;
}

/** Answer heads beyond this many bytes are refused (node:http's default limit is 16 KB). */
const MAX_HEAD_BYTES = 64 * 1024;
/** A whole answer beyond this is refused, never buffered further (docs/limits.md). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** Requests in flight on one connection at most, whatever `pipelining` asks (docs/limits.md). */
export const MAX_PIPELINING = 64;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const INVALID_HEADER_CHAR = /[\r\n\0]/;
const READ_BUFFER_BYTES = 64 * 1024;
const RESOLVED = Promise.resolve();
/** The blank line that ends a head, as bytes: searched for without encoding a string each time. */
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');

/**
 * One read buffer for every connection of every pool: a read is framed synchronously in the
 * callback that receives it, and what outlives the callback (a partial answer) is copied out.
 */
let sharedReadBuffer: Buffer | undefined;

function protocolError(message: string): Error {
  return Object.assign(new Error(`HTTP/1.1 answer: ${message}`), { code: 'HPE_INVALID' });
}

/** One framed answer and the offset just past it in the bytes read. */
interface Framed {
  answer: Http1Answer;
  keepAlive: boolean;
  end: number;
}

class Connection {
  readonly socket: Socket;
  /** Requests written and not answered yet, oldest first (more than one only when pipelining). */
  readonly inFlight: Pending[] = [];
  /** A request was answered on it already: a close before the next answer may be a stale socket. */
  reused = false;
  /** Request bytes of this turn's pipelined batch, written together when the turn's code is done. */
  batch = '';
  /**
   * Bytes of an answer that is not complete yet, copied out of the shared read buffer, and how
   * many it needs in all when its head said (0: not known yet): joined only once they are there.
   */
  private parts: Buffer[] = [];
  private partsLength = 0;
  private needed = 0;

  constructor(
    private readonly pool: Http1Pool,
    host: string,
    port: number,
  ) {
    sharedReadBuffer ??= Buffer.allocUnsafe(READ_BUFFER_BYTES);
    this.socket = connect({
      port,
      host,
      onread: { buffer: sharedReadBuffer, callback: (n: number, buf: Uint8Array) => this.onRead(n, buf) },
    });
    this.socket.setNoDelay(true);
    this.socket.on('error', (error: Error) => this.lost(error));
    this.socket.on('close', () => this.lost(undefined));
  }

  send(pending: Pending): void {
    this.inFlight.push(pending);
    this.socket.ref();
    if (pending.body === undefined) this.socket.write(pending.bytes, 'latin1');
    else {
      this.socket.cork();
      this.socket.write(pending.bytes, 'latin1');
      this.socket.write(pending.body, 'utf8');
      this.socket.uncork();
    }
  }

  /** Adds a pipelined request to this turn's batch (the pool writes it at the end of the turn). */
  append(pending: Pending): void {
    this.inFlight.push(pending);
    if (this.batch === '') this.socket.ref();
    this.batch += pending.bytes;
  }

  writeBatch(): void {
    const batch = this.batch;
    this.batch = '';
    if (batch !== '' && !this.socket.destroyed) this.socket.write(batch, 'latin1');
  }

  private onRead(nread: number, buf: Uint8Array): boolean {
    if (this.inFlight.length === 0) {
      // Bytes nobody asked for: the connection is out of step, so it is not reused.
      this.socket.destroy();
      return false;
    }
    const fresh = Buffer.from(buf.buffer, buf.byteOffset, nread);
    let data = fresh;
    if (this.partsLength > 0) {
      if (this.partsLength + nread > MAX_ANSWER_BYTES) {
        this.fail(protocolError(`answer over ${MAX_ANSWER_BYTES} bytes (docs/limits.md)`));
        return false;
      }
      this.parts.push(Buffer.from(fresh));
      this.partsLength += nread;
      if (this.partsLength < this.needed) return true;
      data = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partsLength);
      this.parts = [];
      this.partsLength = 0;
    }
    let at = 0;
    let needed = 0;
    while (at < data.length) {
      let framed: Framed | number;
      try {
        framed = frame(data, at, false, this.inFlight[0]!.method);
      } catch (error) {
        this.fail(error as Error);
        return false;
      }
      if (typeof framed === 'number') {
        needed = framed;
        break;
      }
      at = framed.end;
      // Bytes past the only answer due: the connection is out of step, so it is not reused.
      const keepAlive = framed.keepAlive && !(at < data.length && this.inFlight.length === 1);
      if (!this.complete(framed.answer, keepAlive)) return false;
    }
    if (at < data.length) {
      if (data.length - at > MAX_ANSWER_BYTES) {
        this.fail(protocolError(`answer over ${MAX_ANSWER_BYTES} bytes (docs/limits.md)`));
        return false;
      }
      // What stays must not point into the shared buffer, which the next read overwrites.
      const rest = data.subarray(at);
      this.parts.push(data === fresh ? Buffer.from(rest) : rest);
      this.partsLength = rest.length;
      this.needed = needed;
    }
    return true;
  }

  /** The socket errored or closed: the answer it framed by closing, resends, or failures. */
  private lost(error: Error | undefined): void {
    const received = this.partsLength > 0;
    if (error === undefined && received) {
      let framed: Framed | number;
      try {
        framed = frame(Buffer.concat(this.parts, this.partsLength), 0, true, this.inFlight[0]!.method);
      } catch {
        framed = 0;
      }
      this.parts = [];
      this.partsLength = 0;
      if (typeof framed !== 'number') {
        this.complete(framed.answer, false);
        return;
      }
    }
    const head = this.inFlight[0];
    const stale =
      head !== undefined && !received && this.reused && !head.retried && IDEMPOTENT.has(head.method);
    const [first, ...behind] = this.drop();
    const hangUp = error ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    // A stale keep-alive socket (nothing of the answer came): the request is sent again.
    if (stale) this.pool.resend(first!, hangUp);
    else first?.reject(hangUp);
    for (const pending of behind) this.pool.resend(pending, hangUp);
  }

  /** Closes the connection and hands back the requests it had in flight, oldest first. */
  private drop(): Pending[] {
    const all = this.inFlight.splice(0);
    this.parts = [];
    this.partsLength = 0;
    this.batch = '';
    this.socket.destroy();
    this.pool.forget(this);
    return all;
  }

  /** Fails the request being answered; those pipelined behind it are sent again elsewhere. */
  fail(error: Error): void {
    const [head, ...behind] = this.drop();
    head?.reject(error);
    for (const pending of behind) this.pool.resend(pending, error);
  }

  /**
   * The oldest request is past its deadline: the connection is dropped (the answer may never come,
   * and those behind it wait for it); requests past theirs fail, the others are sent again.
   */
  timeOut(now: number, timeoutMs: number): void {
    const error = new Error(`timeout after ${timeoutMs} ms`);
    for (const pending of this.drop()) {
      if (pending.expiresAt <= now) pending.reject(error);
      else this.pool.resend(pending, error);
    }
  }

  /** Hands the oldest request its answer; false when the connection is done with. */
  private complete(answer: Http1Answer, keepAlive: boolean): boolean {
    const pending = this.inFlight.shift()!;
    this.reused = true;
    if (keepAlive) {
      if (this.inFlight.length === 0) this.pool.release(this);
    } else {
      // The server processes nothing after an answer that closes: what was pipelined behind it
      // is sent again, one request per connection from now on.
      const behind = this.drop();
      if (behind.length > 0) this.pool.refusedPipelining(behind);
    }
    pending.resolve(answer);
    return keepAlive;
  }
}

/**
 * Where the three headers framing needs are, read off the head without building the others;
 * `odd` when a header name has whitespace around it, which the full parse trims and this scan
 * does not: then the full parse frames the answer, so both give the same answer always.
 */
interface Framing {
  contentLength: string | undefined;
  transferEncoding: string | undefined;
  connection: string | undefined;
  odd: boolean;
}

/** Whitespace String.prototype.trim removes, within latin1 (a head is decoded as latin1). */
function trimmable(code: number): boolean {
  return code === 32 || (code >= 9 && code <= 13) || code === 160;
}

function join(had: string | undefined, value: string): string {
  return had === undefined ? value : `${had}, ${value}`;
}

function scanFraming(head: string, from: number): Framing {
  const found: Framing = {
    contentLength: undefined,
    transferEncoding: undefined,
    connection: undefined,
    odd: false,
  };
  let at = from;
  while (at < head.length) {
    let lineEnd = head.indexOf('\r\n', at);
    if (lineEnd < 0) lineEnd = head.length;
    const colon = head.indexOf(':', at);
    if (colon > at && colon < lineEnd) {
      if (trimmable(head.charCodeAt(at)) || trimmable(head.charCodeAt(colon - 1))) found.odd = true;
      const length = colon - at;
      if (length === 10 || length === 14 || length === 17) {
        const name = head.slice(at, colon).toLowerCase();
        if (name === 'content-length')
          found.contentLength = join(found.contentLength, head.slice(colon + 1, lineEnd).trim());
        else if (name === 'transfer-encoding')
          found.transferEncoding = join(found.transferEncoding, head.slice(colon + 1, lineEnd).trim());
        else if (name === 'connection')
          found.connection = join(found.connection, head.slice(colon + 1, lineEnd).trim());
      }
    }
    at = lineEnd + 2;
  }
  return found;
}

/** Every header of a head (status line first): names lower-cased, repeats joined with ", ". */
function parseHeaders(head: string): Record<string, string> {
  const headers: Record<string, string> = {};
  const lines = head.split('\r\n');
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    headers[name] = join(headers[name], line.slice(colon + 1).trim());
  }
  return headers;
}

/**
 * An answer's headers, parsed from its head the first time anything looks at them: a plain
 * object to every reader (property reads, `in`, keys, spread, JSON, util.inspect), through a
 * proxy whose target holds the head until then. Building twenty header strings and an object per
 * answer was the largest allocation of a request a load generator never reads.
 */
const HEAD = Symbol('http1.head');
const unparsed = Object.create(Object.prototype, {
  // util.inspect looks at a proxy's target, not through it: show the headers there too.
  [Symbol.for('nodejs.util.inspect.custom')]: {
    value(this: Record<PropertyKey, unknown>) {
      return { ...filled(this) };
    },
  },
}) as object;

/** The target with its headers in it: parsed now if this is the first look. */
function filled(target: Record<PropertyKey, unknown>): Record<PropertyKey, unknown> {
  const head = target[HEAD];
  if (head === undefined) return target;
  delete target[HEAD];
  Object.setPrototypeOf(target, Object.prototype);
  return Object.assign(target, parseHeaders(head as string));
}

const lazyHeaders: ProxyHandler<Record<PropertyKey, unknown>> = {
  get: (t, k) => filled(t)[k],
  has: (t, k) => k in filled(t),
  set: (t, k, v) => Reflect.set(filled(t), k, v),
  deleteProperty: (t, k) => Reflect.deleteProperty(filled(t), k),
  ownKeys: (t) => Reflect.ownKeys(filled(t)),
  getOwnPropertyDescriptor: (t, k) => Reflect.getOwnPropertyDescriptor(filled(t), k),
  defineProperty: (t, k, d) => Reflect.defineProperty(filled(t), k, d),
  getPrototypeOf: (t) => Reflect.getPrototypeOf(filled(t)),
  setPrototypeOf: (t, p) => Reflect.setPrototypeOf(filled(t), p),
  isExtensible: (t) => Reflect.isExtensible(filled(t)),
  preventExtensions: (t) => Reflect.preventExtensions(filled(t)),
};

function headersOf(head: string): Record<string, string> {
  const target = Object.create(unparsed) as Record<PropertyKey, unknown>;
  target[HEAD] = head;
  return new Proxy(target, lazyHeaders) as Record<string, string>;
}

/**
 * The whole answer starting at `start` once it is all there; while more bytes are due, how many
 * it needs from `start` in all when its head says (0 while that is not known).
 */
function frame(data: Buffer, start: number, ended: boolean, method: string): Framed | number {
  const from = start;
  for (;;) {
    const headEnd = data.indexOf(HEAD_END, start);
    if (headEnd < 0) {
      if (data.length - start > MAX_HEAD_BYTES) throw protocolError('head too large');
      return 0;
    }
    const head = data.toString('latin1', start, headEnd);
    let statusEnd = head.indexOf('\r\n');
    if (statusEnd < 0) statusEnd = head.length;
    const statusLine = head.slice(0, statusEnd);
    if (!statusLine.startsWith('HTTP/1.'))
      throw protocolError(`bad status line ${JSON.stringify(statusLine)}`);
    const status = Number(statusLine.slice(9, 12));
    if (!Number.isInteger(status) || status < 100)
      throw protocolError(`bad status ${JSON.stringify(statusLine)}`);
    const bodyStart = headEnd + 4;
    if (status < 200) {
      // An interim answer (100 Continue): the real one follows.
      start = bodyStart;
      continue;
    }
    let framing = scanFraming(head, statusEnd + 2);
    let parsed: Record<string, string> | undefined;
    if (framing.odd) {
      parsed = parseHeaders(head);
      framing = {
        contentLength: parsed['content-length'],
        transferEncoding: parsed['transfer-encoding'],
        connection: parsed.connection,
        odd: true,
      };
    }
    const http10 = statusLine.charCodeAt(7) === 48;
    const connection = framing.connection?.toLowerCase();
    let keepAlive = http10 ? connection === 'keep-alive' : connection !== 'close';
    let body: string;
    let end: number;
    if (method === 'HEAD' || status === 204 || status === 304) {
      body = '';
      end = bodyStart;
    } else if (framing.transferEncoding?.toLowerCase().includes('chunked')) {
      const chunked = dechunk(data, bodyStart);
      if (chunked === undefined) {
        if (ended) throw protocolError('connection closed inside a chunked body');
        return 0;
      }
      body = chunked.body;
      end = chunked.end;
    } else if (framing.contentLength !== undefined) {
      const length = Number(framing.contentLength);
      if (!Number.isSafeInteger(length) || length < 0) throw protocolError('bad content-length');
      if (data.length - bodyStart < length) {
        if (ended) throw protocolError('connection closed inside the body');
        return bodyStart + length - from;
      }
      end = bodyStart + length;
      body = data.toString('utf8', bodyStart, end);
    } else {
      // Framed by the close.
      if (!ended) return 0;
      body = data.toString('utf8', bodyStart);
      end = data.length;
      keepAlive = false;
    }
    return { answer: { status, headers: parsed ?? headersOf(head), body }, keepAlive, end };
  }
}

/** A chunked body from `start` and where it ends, or undefined when the last chunk is not in yet. */
function dechunk(data: Buffer, start: number): { body: string; end: number } | undefined {
  const parts: Buffer[] = [];
  let at = start;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at, 'latin1');
    if (lineEnd < 0) return undefined;
    const sizeText = data.toString('latin1', at, lineEnd);
    const semicolon = sizeText.indexOf(';');
    const size = Number.parseInt(semicolon < 0 ? sizeText : sizeText.slice(0, semicolon), 16);
    if (!Number.isSafeInteger(size) || size < 0)
      throw protocolError(`bad chunk size ${JSON.stringify(sizeText)}`);
    at = lineEnd + 2;
    if (size === 0) {
      // Trailers (if any) end with an empty line.
      if (data.length < at + 2) return undefined;
      let end = at + 2;
      if (data[at] !== 13 || data[at + 1] !== 10) {
        const trailersEnd = data.indexOf(HEAD_END, at);
        if (trailersEnd < 0) return undefined;
        end = trailersEnd + 4;
      }
      return { body: Buffer.concat(parts).toString('utf8'), end };
    }
    if (data.length < at + size + 2) return undefined;
    parts.push(data.subarray(at, at + size));
    at += size + 2;
  }
}

/** `name: value\r\n` for each header, or throws on a character that would split the head. */
export function headerLines(headers: Record<string, string>): string {
  let lines = '';
  for (const name in headers) {
    const value = headers[name]!;
    if (INVALID_HEADER_CHAR.test(name) || INVALID_HEADER_CHAR.test(value))
      throw new TypeError(`invalid character in header ${JSON.stringify(name)}`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

/**
 * One interval for every pool that sweeps at the same period: each tick counts a sweep and lets
 * each pool fail what is past its deadline. It runs while a pool has sent a request and is not
 * closed, and never keeps the process alive.
 */
class Sweeper {
  private static readonly byPeriod = new Map<number, Sweeper>();
  /** Sweeps so far: a request sent now times out at `sweeps + sweepsToTimeout`. */
  sweeps = 0;
  private readonly pools = new Set<Http1Pool>();
  private readonly timer: NodeJS.Timeout;

  private constructor(private readonly periodMs: number) {
    this.timer = setInterval(() => {
      const now = ++this.sweeps;
      for (const pool of this.pools) pool.sweep(now);
    }, periodMs);
    this.timer.unref();
  }

  static join(periodMs: number, pool: Http1Pool): Sweeper {
    let sweeper = Sweeper.byPeriod.get(periodMs);
    if (sweeper === undefined) {
      sweeper = new Sweeper(periodMs);
      Sweeper.byPeriod.set(periodMs, sweeper);
    }
    sweeper.pools.add(pool);
    return sweeper;
  }

  leave(pool: Http1Pool): void {
    this.pools.delete(pool);
    if (this.pools.size > 0) return;
    clearInterval(this.timer);
    Sweeper.byPeriod.delete(this.periodMs);
  }
}

/** Keep-alive connections to one host and port, at most `maxSockets` at a time, the rest queued. */
export class Http1Pool {
  private readonly idle: Connection[] = [];
  private readonly busy = new Set<Connection>();
  private readonly queue: Pending[] = [];
  readonly hostHeader: string;
  /** The shared sweep this pool joined at its first request (until it is closed). */
  private sweeper: Sweeper | undefined;
  private readonly sweepEveryMs: number;
  private readonly sweepsToTimeout: number;
  private closed = false;
  /** This turn's pipelined batch: the connection GET/HEAD requests started now join. */
  private batch: Connection | undefined;
  private readonly batched: Connection[] = [];
  private readonly writeBatches = () => {
    this.batch = undefined;
    for (const connection of this.batched.splice(0)) connection.writeBatch();
  };
  private pipelining: number;
  /** The last bodiless request's head, checked and joined: sent again as is for the same route. */
  private lastHead = { method: '', path: '', lines: '', bytes: '' };

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly maxSockets: number,
    private readonly timeoutMs: number,
    pipelining = 1,
  ) {
    this.hostHeader = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    // Four sweeps per timeout, at most one a second. Sent between two sweeps, a request is due
    // `sweepsToTimeout` sweeps after the earlier one: at least timeoutMs after it was sent, at
    // most one sweep interval more (1.25 × timeoutMs when that is under 4 s).
    this.sweepEveryMs = Math.max(1, Math.min(1_000, timeoutMs / 4));
    this.sweepsToTimeout = Math.ceil(timeoutMs / this.sweepEveryMs) + 1;
    this.pipelining = Math.max(1, Math.min(MAX_PIPELINING, Math.floor(pipelining)));
  }

  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<Http1Answer> {
    let lines: string;
    try {
      lines = headerLines(headers);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.send(method, path, lines, body);
  }

  /** `request` with the header lines already checked and joined (see headerLines). */
  send(method: string, path: string, lines: string, body: string | undefined): Promise<Http1Answer> {
    let bytes: string;
    const last = this.lastHead;
    if (body === undefined && last.method === method && last.path === path && last.lines === lines)
      bytes = last.bytes;
    else {
      if (INVALID_HEADER_CHAR.test(path) || path.includes(' '))
        return Promise.reject(new TypeError(`invalid request path ${JSON.stringify(path)}`));
      bytes = `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n${lines}`;
      if (body !== undefined) bytes += `content-length: ${Buffer.byteLength(body)}\r\n`;
      else if (method === 'POST' || method === 'PUT' || method === 'PATCH') bytes += 'content-length: 0\r\n';
      bytes += '\r\n';
      // A generator polling one route sends the same head again: built and checked once.
      if (body === undefined) this.lastHead = { method, path, lines, bytes };
    }
    return new Promise<Http1Answer>((resolve, reject) => {
      if (this.closed) {
        reject(new Error('transport closed'));
        return;
      }
      this.sweeper ??= Sweeper.join(this.sweepEveryMs, this);
      this.dispatch({
        method,
        bytes,
        body,
        expiresAt: this.sweeper.sweeps + this.sweepsToTimeout,
        retried: false,
        pipelinable: body === undefined && (method === 'GET' || method === 'HEAD'),
        resolve,
        reject,
      });
    });
  }

  private dispatch(pending: Pending): void {
    const pipelined = this.pipelining > 1 && pending.pipelinable;
    if (pipelined && this.batch !== undefined && this.batch.inFlight.length < this.pipelining) {
      this.batch.append(pending);
      return;
    }
    let connection = this.idle.pop();
    if (connection === undefined) {
      if (this.busy.size >= this.maxSockets) {
        this.queue.push(pending);
        return;
      }
      connection = new Connection(this, this.host, this.port);
    }
    this.busy.add(connection);
    if (!pipelined) {
      connection.send(pending);
      return;
    }
    // A promise reaction, not queueMicrotask (an AsyncResource and a bound function each time).
    if (this.batched.length === 0) void RESOLVED.then(this.writeBatches);
    this.batch = connection;
    this.batched.push(connection);
    connection.append(pending);
  }

  /** Sends a request again after its connection was lost, once; a second loss fails it. */
  resend(pending: Pending, error: Error | undefined): void {
    if (pending.retried || !IDEMPOTENT.has(pending.method)) {
      pending.reject(error ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      return;
    }
    pending.retried = true;
    pending.pipelinable = false;
    if (this.closed) pending.reject(new Error('transport closed'));
    else this.dispatch(pending);
  }

  /**
   * The server closed a connection with pipelined requests still behind the answer: it does not
   * keep connections for them, so this pool stops pipelining and sends them one per connection.
   */
  refusedPipelining(behind: Pending[]): void {
    this.pipelining = 1;
    for (const pending of behind) {
      pending.pipelinable = false;
      if (this.closed) pending.reject(new Error('transport closed'));
      else this.dispatch(pending);
    }
  }

  release(connection: Connection): void {
    this.busy.delete(connection);
    const next = this.queue.shift();
    if (next !== undefined) {
      this.busy.add(connection);
      connection.send(next);
      return;
    }
    // Idle keep-alive sockets do not keep the process alive (as node:http's agent).
    connection.socket.unref();
    this.idle.push(connection);
  }

  forget(connection: Connection): void {
    this.busy.delete(connection);
    if (this.batch === connection) this.batch = undefined;
    const i = this.idle.indexOf(connection);
    if (i >= 0) this.idle.splice(i, 1);
    // A slot freed: a queued request gets a new connection.
    if (this.queue.length > 0 && !this.closed && this.busy.size < this.maxSockets)
      this.dispatch(this.queue.shift()!);
  }

  /** Fails what is past its deadline at sweep `now` (the shared Sweeper calls it). */
  sweep(now: number): void {
    if (this.busy.size === 0 && this.queue.length === 0) return;
    // Requests on a connection were sent in order, so the oldest is due first.
    for (const connection of [...this.busy]) {
      const oldest = connection.inFlight[0];
      if (oldest !== undefined && oldest.expiresAt <= now) connection.timeOut(now, this.timeoutMs);
    }
    for (let i = this.queue.length - 1; i >= 0; i--) {
      const pending = this.queue[i]!;
      if (pending.expiresAt > now) continue;
      this.queue.splice(i, 1);
      pending.reject(new Error(`timeout after ${this.timeoutMs} ms`));
    }
  }

  /** Closes every connection; requests still in flight or queued fail. */
  close(): void {
    this.closed = true;
    this.sweeper?.leave(this);
    this.sweeper = undefined;
    for (const pending of this.queue.splice(0)) pending.reject(new Error('transport closed'));
    for (const connection of [...this.busy, ...this.idle]) connection.fail(new Error('transport closed'));
  }
}
