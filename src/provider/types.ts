/**
 * The provider emulator's request/answer contract, shared by the HTTP binding and in-process
 * callers: a request comes in whole, and the answer is a plan (status, headers, then either a
 * body or a stream of chunks, each with its time after arrival) that the caller plays on the
 * run's clock. Planning is synchronous and seeded; playing it is the only waiting.
 */

export interface ProviderRequest {
  method: string;
  /** Path and query as sent (`/v1/messages?beta=true`). */
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * A planned stream: `length` chunks, chunk i due `atMs(i)` after arrival (never decreasing),
 * its bytes rendered by `data(i)` when it is played (called once per chunk, in order, so a long
 * reply is never held rendered whole).
 */
export interface PlannedStream {
  length: number;
  atMs(i: number): number;
  data(i: number): string;
  /** The chunk that carries the first output token (time to first token is measured at it). */
  firstToken: number;
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
