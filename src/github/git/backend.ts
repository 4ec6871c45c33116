/**
 * One git smart HTTP request answered by Debian git's `git http-backend` (a CGI program: the
 * request in its environment and on its standard input, the answer's headers and body on its
 * standard output), so the protocol (v0 and v2, gzip bodies, side-band progress, receive-pack's
 * status report) is git's own and never reimplemented here.
 *
 * Bounded: a request body over `GIT_HTTP_LIMITS.maxBodyBytes` is refused (413, before a byte is
 * read when its Content-Length says so, else when it passes the bound and the process is stopped),
 * at most `maxBackends` processes run at once with `maxQueued` requests waiting (503 past them),
 * and a process still running after `maxRequestMs` is stopped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { GIT_HTTP_LIMITS } from '../../base/limits.ts';
import { gitEnvironment } from './repos.ts';

export type GitRequest = IncomingMessage | Http2ServerRequest;
export type GitResponse = ServerResponse | Http2ServerResponse;

/** What happened to one request, for its trace record. */
export interface BackendResult {
  status: number;
  bytesIn: number;
  bytesOut: number;
  outcome: 'ok' | 'error' | 'cancelled';
  error?: string;
}

/** Headers of a CGI answer a server must not pass on (HTTP/2 refuses connection-specific ones). */
const HOP_BY_HOP = new Set(['connection', 'transfer-encoding', 'keep-alive', 'status']);

/** A plain-text answer (git prints it after `remote:` / `fatal:`). */
export function answerText(
  res: GitResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

/**
 * A bounded number of processes at once, the rest in a bounded queue: `acquire` resolves with a
 * release function, or undefined at once when the queue is full.
 */
export class BackendGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number = GIT_HTTP_LIMITS.maxBackends,
    private readonly maxQueued: number = GIT_HTTP_LIMITS.maxQueued,
  ) {}

  acquire(): Promise<() => void> | undefined {
    if (this.running < this.max) return Promise.resolve(this.take());
    if (this.waiting.length >= this.maxQueued) return undefined;
    return new Promise((resolve) => this.waiting.push(() => resolve(this.take())));
  }

  private take(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running--;
      this.waiting.shift()?.();
    };
  }
}

export interface BackendRequest {
  /** `GIT_PROJECT_ROOT`. */
  root: string;
  /** `/ID.git/info/refs`, `/ID.git/git-upload-pack`, … */
  pathInfo: string;
  query: string;
  /** The pusher's login (receive-pack needs one). */
  remoteUser: string | undefined;
  /** The process is stopped when this fires (the server closing). */
  signal: AbortSignal;
  /**
   * Called when the process has exited and before the answer ends, for work the client must see
   * done when its command returns (a push read into the world).
   */
  beforeEnd?: () => Promise<void>;
}

/** Runs `git http-backend` for the request and streams its answer. */
export function runBackend(
  req: GitRequest,
  res: GitResponse,
  request: BackendRequest,
): Promise<BackendResult> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > GIT_HTTP_LIMITS.maxBodyBytes) {
    req.resume();
    answerText(res, 413, tooLargeText(), { connection: 'close' });
    return Promise.resolve({ status: 413, bytesIn: 0, bytesOut: 0, outcome: 'error', error: tooLargeText() });
  }
  const header = (name: string) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  const env: NodeJS.ProcessEnv = {
    ...gitEnvironment(request.root),
    GIT_PROJECT_ROOT: request.root,
    GIT_HTTP_EXPORT_ALL: '1',
    GIT_HTTP_MAX_REQUEST_BUFFER: String(GIT_HTTP_LIMITS.maxBodyBytes),
    PATH_INFO: request.pathInfo,
    REQUEST_METHOD: req.method ?? 'GET',
    QUERY_STRING: request.query,
    REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
  };
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined) env[key] = value;
  };
  set('CONTENT_TYPE', header('content-type'));
  set('CONTENT_LENGTH', header('content-length'));
  set('HTTP_CONTENT_ENCODING', header('content-encoding'));
  set('GIT_PROTOCOL', header('git-protocol'));
  set('REMOTE_USER', request.remoteUser);

  // Both kinds of answer write the same way (the HTTP/2 one is a compatibility layer of HTTP/1.1's).
  const out = res as ServerResponse;
  return new Promise((resolve) => {
    const result: BackendResult = { status: 200, bytesIn: 0, bytesOut: 0, outcome: 'ok' };
    let child: ChildProcess;
    try {
      child = spawn('git', ['http-backend'], { env, cwd: request.root, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      answerText(res, 503, `git http-backend could not start: ${(error as Error).message}\n`);
      resolve({ ...result, status: 503, outcome: 'error', error: (error as Error).message });
      return;
    }
    let stderr = '';
    let head: Buffer | undefined = Buffer.alloc(0);
    let refused: string | undefined;
    const stop = (why: string) => {
      refused ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(
      () => stop(`stopped after ${GIT_HTTP_LIMITS.maxRequestMs} ms`),
      GIT_HTTP_LIMITS.maxRequestMs,
    );
    const onAbort = () => {
      result.outcome = 'cancelled';
      stop('cancelled: the server stopped before answering');
    };
    request.signal.addEventListener('abort', onAbort);
    if (request.signal.aborted) onAbort();
    // The client went away before its answer was written: nothing more to do for it.
    res.once('close', () => {
      if (!res.writableEnded) {
        result.outcome = 'cancelled';
        stop('the client closed the connection');
      }
    });

    req.on('data', (chunk: Buffer) => {
      result.bytesIn += chunk.length;
      if (result.bytesIn > GIT_HTTP_LIMITS.maxBodyBytes) {
        stop(tooLargeText());
        req.pause();
      }
    });
    req.pipe(child.stdin!);
    // git's HTTP client sends a whole request before it reads the answer (stateless RPC), and the
    // backend writes its headers first: held until the body has all arrived, a body past the
    // bound can still be answered 413. Held, not buffered: the backend waits on its pipe.
    child.stdout!.pause();
    req.once('end', () => child.stdout!.resume());
    child.stdin!.on('error', () => undefined);
    child.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      // Stopped (a body past the bound, a timeout, the server closing): what it still says is not the answer.
      if (refused !== undefined) return;
      if (head === undefined) {
        result.bytesOut += chunk.length;
        if (!out.write(chunk)) {
          child.stdout!.pause();
          res.once('drain', () => child.stdout!.resume());
        }
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = headerEnd(head);
      if (end === undefined) return;
      const { status, headers } = parseCgiHeaders(head.subarray(0, end.at).toString('latin1'));
      const body = head.subarray(end.at + end.length);
      head = undefined;
      result.status = status;
      res.writeHead(status, headers);
      result.bytesOut += body.length;
      if (body.length > 0) out.write(body);
    });
    child.once('error', (error) => {
      refused ??= `git http-backend could not run: ${error.message}`;
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      request.signal.removeEventListener('abort', onAbort);
      const finish = () => {
        if (refused !== undefined) {
          if (result.outcome !== 'cancelled') result.outcome = 'error';
          result.error = refused;
          if (refused === tooLargeText()) {
            result.status = 413;
            answerText(res, 413, refused, { connection: 'close' });
          } else if (!res.headersSent) {
            result.status = 503;
            answerText(res, 503, `${refused}\n`);
          } else res.destroy();
        } else if (head !== undefined) {
          // No answer at all: git failed before writing its headers.
          result.status = 500;
          result.outcome = 'error';
          result.error = stderr.trim() || `git http-backend exited with ${code}`;
          answerText(res, 500, `${result.error}\n`);
        } else {
          if (result.status >= 400) {
            result.outcome = 'error';
            result.error = stderr.trim() || undefined;
          }
          res.end();
        }
        resolve(result);
      };
      if (request.beforeEnd !== undefined && refused === undefined && head === undefined) {
        request.beforeEnd().then(finish, (error: unknown) => {
          refused = `the push could not be read into the world: ${(error as Error).message}`;
          result.outcome = 'error';
          result.error = refused;
          res.end();
          resolve(result);
        });
      } else finish();
    });
  });
}

function tooLargeText(): string {
  return `request body over ${GIT_HTTP_LIMITS.maxBodyBytes} bytes (fleetbench docs/limits.md)\n`;
}

function headerEnd(buffer: Buffer): { at: number; length: number } | undefined {
  const crlf = buffer.indexOf('\r\n\r\n');
  const lf = buffer.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf <= lf)) return { at: crlf, length: 4 };
  if (lf >= 0) return { at: lf, length: 2 };
  return undefined;
}

/** A CGI answer's headers: `Status: 404 Not Found` gives the status, the rest are passed on. */
export function parseCgiHeaders(text: string): { status: number; headers: Record<string, string> } {
  let status = 200;
  const headers: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'status') status = Number.parseInt(value, 10) || 500;
    else if (!HOP_BY_HOP.has(name)) headers[name] = value;
  }
  return { status, headers };
}
