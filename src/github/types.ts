/**
 * The contract between the GitHub emulator and its clients (the reference control plane, the
 * HTTP binding, tests). One request/response shape serves both paths: in-process, a client calls
 * `GitHubEmulator.handle()` directly (virtual time); over HTTP, the binding turns a real request
 * into the same shape and calls the same `handle()`. So quota, ETag and secondary-limit logic is
 * one piece of code whichever way a request arrives.
 */

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
