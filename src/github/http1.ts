/**
 * A lean HTTP/1.1 client over plain TCP with keep-alive, one request per connection at a time
 * (no pipelining): what HttpTransport uses for `http://` base URLs, the live generator's request
 * path. node:http and undici both cost 250-300 µs of CPU per request at 1,000/s on this machine
 * (request and response objects, streams, per-request timers and listeners); writing the request
 * line and headers in one write and framing the answer from the bytes costs about a third less,
 * and that is the generator's efficiency against Locust (docs/performance.md#live).
 *
 * What it speaks: requests with Content-Length bodies; responses framed by Content-Length,
 * chunked transfer coding, or the connection closing; 1xx interim answers skipped; no body for
 * HEAD, 204 and 304; `connection: close` honoured. Header names come back lower-cased and
 * repeated headers joined with ", ", as node:http's `headers` does for all but set-cookie. An
 * idempotent request whose reused connection closes before any answer byte (the server dropped
 * an idle keep-alive socket) is sent once more on a new connection. TLS goes through node:https.
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
  deadline: number;
  retried: boolean;
  resolve: (answer: Http1Answer) => void;
  reject: (error: Error) => void;
}

/** Answer heads beyond this many bytes are refused (node:http's default limit is 16 KB). */
const MAX_HEAD_BYTES = 64 * 1024;
/** A whole answer beyond this is refused, never buffered further (docs/limits.md). */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const INVALID_HEADER_CHAR = /[\r\n\0]/;

function protocolError(message: string): Error {
  return Object.assign(new Error(`HTTP/1.1 answer: ${message}`), { code: 'HPE_INVALID' });
}

class Connection {
  readonly socket: Socket;
  pending: Pending | undefined;
  /** A request was answered on it already: a close before the next answer may be a stale socket. */
  reused = false;
  private acc: Buffer | undefined;
  private received = 0;

  constructor(
    private readonly pool: Http1Pool,
    host: string,
    port: number,
  ) {
    this.socket = connect(port, host);
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('error', (error: Error) => this.lost(error));
    this.socket.on('close', () => this.lost(undefined));
  }

  send(pending: Pending): void {
    this.pending = pending;
    this.acc = undefined;
    this.received = 0;
    this.socket.ref();
    if (pending.body === undefined) this.socket.write(pending.bytes, 'latin1');
    else {
      this.socket.cork();
      this.socket.write(pending.bytes, 'latin1');
      this.socket.write(pending.body, 'utf8');
      this.socket.uncork();
    }
  }

  private onData(chunk: Buffer): void {
    if (this.pending === undefined) {
      // Bytes nobody asked for: the connection is out of step, so it is not reused.
      this.socket.destroy();
      return;
    }
    this.received += chunk.length;
    if (this.received > MAX_ANSWER_BYTES) {
      this.fail(protocolError(`answer over ${MAX_ANSWER_BYTES} bytes (docs/limits.md)`));
      return;
    }
    this.acc = this.acc === undefined ? chunk : Buffer.concat([this.acc, chunk]);
    let answer: { answer: Http1Answer; keepAlive: boolean } | undefined;
    try {
      answer = this.parse(this.acc, false);
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (answer !== undefined) this.complete(answer.answer, answer.keepAlive);
  }

  /** The socket errored or closed: the answer it framed by closing, a resend, or a failure. */
  private lost(error: Error | undefined): void {
    const pending = this.pending;
    if (pending !== undefined) {
      let answer: { answer: Http1Answer } | undefined;
      if (error === undefined && this.acc !== undefined) {
        try {
          answer = this.parse(this.acc, true);
        } catch {
          answer = undefined;
        }
      }
      if (answer !== undefined) {
        this.complete(answer.answer, false);
        return;
      }
      if (this.received === 0 && this.reused && !pending.retried && IDEMPOTENT.has(pending.method)) {
        this.pending = undefined;
        pending.retried = true;
        this.socket.destroy();
        this.pool.forget(this);
        this.pool.dispatch(pending);
        return;
      }
      this.fail(error ?? Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }));
      return;
    }
    this.socket.destroy();
    this.pool.forget(this);
  }

  fail(error: Error): void {
    const pending = this.pending;
    this.pending = undefined;
    this.socket.destroy();
    this.pool.forget(this);
    pending?.reject(error);
  }

  private complete(answer: Http1Answer, keepAlive: boolean): void {
    const pending = this.pending!;
    this.pending = undefined;
    this.acc = undefined;
    this.reused = true;
    if (keepAlive) this.pool.release(this);
    else {
      this.socket.destroy();
      this.pool.forget(this);
    }
    pending.resolve(answer);
  }

  /** The whole answer from `data` once it is all there; undefined while more bytes are due. */
  private parse(data: Buffer, ended: boolean): { answer: Http1Answer; keepAlive: boolean } | undefined {
    let start = 0;
    for (;;) {
      const headEnd = data.indexOf('\r\n\r\n', start, 'latin1');
      if (headEnd < 0) {
        if (data.length - start > MAX_HEAD_BYTES) throw protocolError('head too large');
        return undefined;
      }
      const head = data.toString('latin1', start, headEnd);
      const lines = head.split('\r\n');
      const statusLine = lines[0]!;
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
      const headers: Record<string, string> = {};
      for (let i = 1; i < lines.length; i++) {
        const line = lines[i]!;
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        const had = headers[name];
        headers[name] = had === undefined ? value : `${had}, ${value}`;
      }
      const http10 = statusLine.charCodeAt(7) === 48;
      const connection = headers.connection?.toLowerCase();
      let keepAlive = http10 ? connection === 'keep-alive' : connection !== 'close';
      const method = this.pending!.method;
      let body: string;
      if (method === 'HEAD' || status === 204 || status === 304) body = '';
      else if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
        const chunked = dechunk(data, bodyStart);
        if (chunked === undefined) {
          if (ended) throw protocolError('connection closed inside a chunked body');
          return undefined;
        }
        body = chunked;
      } else if (headers['content-length'] !== undefined) {
        const length = Number(headers['content-length']);
        if (!Number.isSafeInteger(length) || length < 0) throw protocolError('bad content-length');
        if (data.length - bodyStart < length) {
          if (ended) throw protocolError('connection closed inside the body');
          return undefined;
        }
        body = data.toString('utf8', bodyStart, bodyStart + length);
      } else {
        // Framed by the close.
        if (!ended) return undefined;
        body = data.toString('utf8', bodyStart);
        keepAlive = false;
      }
      return { answer: { status, headers, body }, keepAlive };
    }
  }
}

/** A chunked body from `start`, or undefined when the last chunk has not arrived yet. */
function dechunk(data: Buffer, start: number): string | undefined {
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
      if (data[at] !== 13 || data[at + 1] !== 10) {
        if (data.indexOf('\r\n\r\n', at, 'latin1') < 0) return undefined;
      }
      return Buffer.concat(parts).toString('utf8');
    }
    if (data.length < at + size + 2) return undefined;
    parts.push(data.subarray(at, at + size));
    at += size + 2;
  }
}

/** Keep-alive connections to one host and port, at most `maxSockets` at a time, the rest queued. */
export class Http1Pool {
  private readonly idle: Connection[] = [];
  private readonly busy = new Set<Connection>();
  private readonly queue: Pending[] = [];
  private readonly hostHeader: string;
  private sweeper: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly maxSockets: number,
    private readonly timeoutMs: number,
  ) {
    this.hostHeader = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  request(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<Http1Answer> {
    let bytes = `${method} ${path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\n`;
    for (const name in headers) {
      const value = headers[name]!;
      if (INVALID_HEADER_CHAR.test(name) || INVALID_HEADER_CHAR.test(value))
        return Promise.reject(new TypeError(`invalid character in header ${JSON.stringify(name)}`));
      bytes += `${name}: ${value}\r\n`;
    }
    if (INVALID_HEADER_CHAR.test(path) || path.includes(' '))
      return Promise.reject(new TypeError(`invalid request path ${JSON.stringify(path)}`));
    if (body !== undefined) bytes += `content-length: ${Buffer.byteLength(body)}\r\n`;
    else if (method === 'POST' || method === 'PUT' || method === 'PATCH') bytes += 'content-length: 0\r\n';
    bytes += '\r\n';
    return new Promise<Http1Answer>((resolve, reject) => {
      if (this.closed) {
        reject(new Error('transport closed'));
        return;
      }
      this.sweeper ??= this.startSweeper();
      this.dispatch({
        method,
        bytes,
        body,
        deadline: performance.now() + this.timeoutMs,
        retried: false,
        resolve,
        reject,
      });
    });
  }

  dispatch(pending: Pending): void {
    let connection = this.idle.pop();
    if (connection === undefined) {
      if (this.busy.size >= this.maxSockets) {
        this.queue.push(pending);
        return;
      }
      connection = new Connection(this, this.host, this.port);
    }
    this.busy.add(connection);
    connection.send(pending);
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
    const i = this.idle.indexOf(connection);
    if (i >= 0) this.idle.splice(i, 1);
    // A slot freed: a queued request gets a new connection.
    if (this.queue.length > 0 && !this.closed && this.busy.size < this.maxSockets)
      this.dispatch(this.queue.shift()!);
  }

  /**
   * Fails requests past their deadline, checked four times per timeout (at most every second):
   * a request times out between timeoutMs and 1.25 × timeoutMs after it was sent.
   */
  private startSweeper(): NodeJS.Timeout {
    const every = Math.max(1, Math.min(1_000, this.timeoutMs / 4));
    const sweeper = setInterval(() => {
      const now = performance.now();
      for (const connection of [...this.busy]) {
        const pending = connection.pending;
        if (pending !== undefined && pending.deadline <= now)
          connection.fail(new Error(`timeout after ${this.timeoutMs} ms`));
      }
      for (let i = this.queue.length - 1; i >= 0; i--) {
        const pending = this.queue[i]!;
        if (pending.deadline > now) continue;
        this.queue.splice(i, 1);
        pending.reject(new Error(`timeout after ${this.timeoutMs} ms`));
      }
    }, every);
    sweeper.unref();
    return sweeper;
  }

  /** Closes every connection; requests still in flight or queued fail. */
  close(): void {
    this.closed = true;
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const pending of this.queue.splice(0)) pending.reject(new Error('transport closed'));
    for (const connection of [...this.busy, ...this.idle]) connection.fail(new Error('transport closed'));
  }
}
