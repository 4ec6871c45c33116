/**
 * The contract between the GitHub emulator and its clients (the reference control plane, the
 * HTTP binding, tests). One request/response shape serves both paths: in-process, a client calls
 * `GitHubEmulator.handle()` directly (virtual time); over HTTP, the binding turns a real request
 * into the same shape and calls the same `handle()`. So quota, ETag and secondary-limit logic is
 * one piece of code whichever way a request arrives.
 */

import type { TokenInfo } from './auth.ts';
import type { Identity, SecondaryBreach } from './quota.ts';

/**
 * A request counted in flight for its identity since it arrived (`GitHubEmulator.admit()`), until
 * `release()`. The HTTP binding admits a request when its headers arrive and releases it when the
 * answer is written, so the concurrency limit sees body upload and response write time too; the
 * CPU-time limit is charged the emulator's own time only, from the body in hand to the answer.
 */
export interface Admission {
  readonly identity: Identity;
  readonly token: TokenInfo | undefined;
  /** Run time of the arrival. */
  readonly arrivedAt: number;
  /**
   * The concurrency limit's refusal, decided at arrival: such a request is answered at once,
   * without reading its body, and is not counted in flight.
   */
  readonly refused: SecondaryBreach | undefined;
  /** Marks the request served (not refused by a limit): `ms`, its own response time, counts as CPU time. */
  served(graphql: boolean, ms: number): void;
  /** Idempotent: stops counting the request in flight and charges a served one's CPU time. */
  release(): void;
}

export interface EmulatorRequest {
  method: string;
  /** Path and query as sent: `/repos/o/r/pulls?state=open`; `/api/v3` prefix allowed. */
  path: string;
  /** Header names lower-case. */
  headers: Record<string, string | undefined>;
  /** Raw request body (JSON text) for POST/PATCH/PUT. */
  body?: string;
  /** Client address, for the unauthenticated per-IP limit. */
  remoteAddress?: string;
  /**
   * Scheme and host the client used (`https://127.0.0.1:8443`), for absolute URLs in Link
   * headers. The HTTP binding sets it; in-process requests fall back to the Host header or the
   * emulator's public URL.
   */
  baseUrl?: string;
  /** Set by a caller that counted the request in flight itself (the HTTP binding). */
  admission?: Admission;
  /**
   * Set by the HTTP binding when the server stops before answering: the request was recorded
   * as cancelled then (`GitHubEmulator.recordCancelled`), and is not recorded again.
   */
  cancelled?: boolean;
  /** Run time it arrived, when it waited before being handled (its merges computed ahead, merge-ahead.ts). */
  arrivedAt?: number;
  /** How many times its merges were computed ahead (the emulator's MERGE_AHEAD_ROUNDS bounds it). */
  mergeRounds?: number;
}

export interface EmulatorResponse {
  status: number;
  /** Header names lower-case; always carries x-ratelimit-* for API routes. */
  headers: Record<string, string>;
  /** JSON text ('' for a 304). */
  body: string;
}

/** How a client reaches the emulator: directly in-process, or over HTTP (fetch). */
export interface GitHubTransport {
  request(request: EmulatorRequest): Promise<EmulatorResponse>;
}

/**
 * Attribution headers. A client that cannot add headers is attributed through a per-session
 * token minted with `mintToken({ session, source })`.
 */
export const ATTRIBUTION_HEADERS = {
  session: 'x-fleetbench-session',
  source: 'x-fleetbench-source',
  op: 'x-fleetbench-op',
  cycle: 'x-fleetbench-cycle',
  phase: 'x-fleetbench-phase',
  project: 'x-fleetbench-project',
} as const;

/** Counters of what the emulator answered (the admin API's `stats`). */
export interface EmulatorStats {
  requests: number;
  byStatus: Record<string, number>;
  notModified: number;
  limitedPrimary: number;
  limitedSecondary: number;
  injectedErrors: number;
  inFlight: number;
  traceRecords: number;
}
