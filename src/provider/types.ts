/**
 * The provider emulator's request/answer contract, shared by the HTTP binding and in-process
 * callers: a request comes in whole, and the answer is a plan (status, headers, then either a
 * body or a stream of chunks, each with its time after arrival) that the caller plays on the
 * run's clock. Planning is synchronous and seeded; playing it is the only waiting.
 */

/** A parsed body, or the parser's complaint about a body that is not JSON. */
export type ParsedBody = { ok: true; value: unknown } | { ok: false; message: string };

export interface ProviderRequest {
  method: string;
  /** Path and query as sent (`/v1/messages?beta=true`). */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /**
   * `body` already parsed (the HTTP binding parses a large one off the main thread, and keeps of
   * it only the fields the emulator reads: REQUEST_FIELDS).
   */
  parsedBody?: ParsedBody;
  /**
   * `body` as the bytes that came in, instead of `body` (the HTTP binding): parsed with what
   * recurs from earlier requests remembered (src/provider/recurring-values.ts).
   */
  rawBody?: Buffer;
  /** The body's size in bytes, when the caller knows it (else counted from `body`). */
  bodyBytes?: number;
  /** The run time the request arrived, when it waited before it was planned (else now). */
  arrivedAt?: number;
}

/**
 * A planned stream: `length` chunks, chunk i due `atMs(i)` after arrival (never decreasing),
 * rendered when played: `data(from, to)` is the bytes of chunks from … to-1, which go out
 * together (called in order, each chunk once, so a long reply is never held rendered whole, and
 * chunks sent together are rendered as one event, not one each).
 */
export interface PlannedStream {
  length: number;
  atMs(i: number): number;
  data(from: number, to: number): string;
  /** The chunk that carries the first output token (time to first token is measured at it). */
  firstToken: number;
  /**
   * The least time between two writes of this stream after its first token, now (ms): it grows
   * with the streams in flight, and chunks due within it go out together.
   */
  writeGapMs?(): number;
}

export type PlayOutcome = 'complete' | 'cut' | 'cancelled' | 'reset';

export interface ProviderAnswer {
  status: number;
  headers: Record<string, string>;
  /** A whole body (a non-streamed reply or an error), sent at `bodyAtMs`. */
  body?: string;
  bodyAtMs?: number;
  /** A stream, in time order. */
  chunks?: PlannedStream;
  /** A cut stream: only the chunks before this index go out, then the connection closes. */
  cutAt?: number;
  /** An outage: the connection is reset and nothing is answered. */
  reset?: boolean;
  /**
   * Called once by whoever plays the answer, when it is over: what happened and, when a first
   * token went out, the run time it did. Writes the request's trace record and frees its place.
   */
  finish(outcome: PlayOutcome, firstTokenAt?: number): void;
}
