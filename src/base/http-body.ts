/**
 * Bounded request bodies, for every server fleetbench runs (the GitHub emulator, `reference
 * serve` and its supervisor, a live run's OTLP receiver). A body is refused as soon as it is
 * known to be too big: at once when its Content-Length says so, otherwise when the bytes read
 * pass the limit. Nothing over the limit is ever buffered, so one request cannot take a server's
 * memory (limits in src/base/limits.ts, docs/limits.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';

/** HTTP/1.1 or HTTP/2 (the emulator's TLS binding speaks both). */
type Request = IncomingMessage | Http2ServerRequest;
type Response = ServerResponse | Http2ServerResponse;

export class BodyTooLargeError extends Error {
  readonly limit: number;
  constructor(limit: number) {
    super(`request body over the ${limit} byte limit (docs/limits.md)`);
    this.name = 'BodyTooLargeError';
    this.limit = limit;
  }
}

/** The declared length when it is over `limit` (the body need not be read to refuse it). */
export function declaredTooLarge(req: Request, limit: number): boolean {
  const declared = req.headers['content-length'];
  return declared !== undefined && Number(declared) > limit;
}

/**
 * The whole body, or BodyTooLargeError once it passes `limit` bytes. What is left of a refused
 * body is not read: the caller answers 413 with refuseBody(), which closes the connection.
 */
export async function readBoundedBody(req: Request, limit: number): Promise<Buffer> {
  const { chunks, size } = await readBoundedChunks(req, limit);
  return Buffer.concat(chunks, size);
}

/**
 * The body as the chunks it arrived in, and their size in bytes, bounded as readBoundedBody: for
 * a server that decodes many large bodies and joins them without a buffer of its own for each.
 */
export function readBoundedChunks(req: Request, limit: number): Promise<{ chunks: Buffer[]; size: number }> {
  // Events, not `for await`: leaving an async iterator early destroys the request, and with it
  // the socket the 413 has to go out on.
  return new Promise((resolve, reject) => {
    if (declaredTooLarge(req, limit)) {
      reject(new BodyTooLargeError(limit));
      return;
    }
    let chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    const onData = (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > limit) {
        refused = true;
        chunks = [];
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      // Nothing of the body stays reachable from the request (which lives as long as its answer).
      req.off('data', onData);
      if (!refused) resolve({ chunks, size });
      chunks = [];
    });
    req.once('error', (error) => {
      if (!refused) reject(error);
    });
  });
}

/**
 * Answers 413 with a JSON body and closes the connection once it is sent (the rest of a body
 * that may be gigabytes long is not worth reading). The server goes on serving other clients.
 */
export function refuseBody(res: Response, body: unknown): void {
  const http2 = 'stream' in res;
  if (res.headersSent) {
    if (http2) res.stream.close();
    else res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(413, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    // HTTP/2 has no connection header: the stream ends, the session stays.
    ...(http2 ? {} : { connection: 'close' }),
  });
  if (http2) {
    res.end(text, () => res.stream.close());
    res.req.resume();
    return;
  }
  res.end(text, () => {
    // Let the client read the answer before the socket goes away under its upload.
    setTimeout(() => res.socket?.destroy(), 1_000).unref();
  });
  // Discard whatever of the body still arrives meanwhile, without keeping it.
  res.req?.resume();
}
