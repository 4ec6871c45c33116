/**
 * The few calls of Paperclip's HTTP API the target makes (auth mode `local_trusted`: no token on
 * loopback). Run rows and log chunks keep Paperclip's own field names and ISO timestamps; the
 * target turns them into trace records (records.ts).
 */
import { Agent, type ClientRequest, request } from 'node:http';

/** A heartbeat run as Paperclip lists it (the fields the target reads). */
export interface HeartbeatRun {
  id: string;
  agentId: string;
  status: string;
  createdAt: string;
  startedAt: string | null;
  processStartedAt: string | null;
  finishedAt: string | null;
  error: string | null;
  errorCode: string | null;
  retryOfRunId: string | null;
  sessionIdBefore: string | null;
  sessionIdAfter: string | null;
  scheduledRetryAt: string | null;
  processPid: number | null;
  exitCode: number | null;
  signal: string | null;
  invocationSource: string | null;
}

/** One chunk of a run's log (NDJSON in Paperclip's store): `ts` is when the server read it. */
export interface LogChunk {
  ts: string;
  stream: string;
  chunk: string;
}

export class PaperclipApiError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'PaperclipApiError';
  }
}

const REQUEST_TIMEOUT_MS = 30_000;

/**
 * One keep-alive connection pool for the target's calls (the run polls every agent's runs each
 * second), over node:http rather than fetch: fetch's request, headers, abort signal and web
 * streams per call made it the largest part of what fleetbench spent during a real-agent wave
 * (docs/performance.md, "Harness share"). Answers are asked for uncompressed: compressing them
 * was Paperclip's CPU, spent for fleetbench, and inflating them ours.
 */
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

export class PaperclipApi {
  constructor(private readonly baseUrl: () => string) {}

  private call<T>(method: string, path: string, body?: unknown, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise<T>((resolve, reject) => {
      const fail = (error: Error) => reject(new PaperclipApiError(`${method} ${path}: ${error.message}`));
      let req: ClientRequest;
      try {
        req = request(
          `${this.baseUrl()}${path}`,
          {
            method,
            agent,
            timeout: timeoutMs,
            headers: {
              'accept-encoding': 'identity',
              ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
            },
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('error', fail);
            response.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              const status = response.statusCode ?? 0;
              if (status < 200 || status > 299) {
                reject(new PaperclipApiError(`${method} ${path}: ${status} ${text.slice(0, 300)}`, status));
                return;
              }
              try {
                resolve((text ? JSON.parse(text) : undefined) as T);
              } catch (error) {
                reject(error);
              }
            });
          },
        );
      } catch (error) {
        fail(error as Error);
        return;
      }
      req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
      req.on('error', fail);
      req.end(payload);
    });
  }

  /** GET /health, or undefined when the server does not answer (in `timeoutMs`) or not with a 2xx. */
  async health(timeoutMs: number): Promise<Record<string, unknown> | undefined> {
    try {
      return await this.call<Record<string, unknown>>('GET', '/health', undefined, timeoutMs);
    } catch {
      return undefined;
    }
  }

  createCompany(name: string): Promise<{ id: string }> {
    return this.call('POST', '/companies', { name });
  }

  createAgent(
    companyId: string,
    agent: { name: string; adapterType: string; adapterConfig: Record<string, unknown> },
  ): Promise<{ id: string }> {
    return this.call('POST', `/companies/${companyId}/agents`, agent);
  }

  /**
   * An on-demand wake: 202 with the run queued, or 202 `{status: "skipped"}` and no run when
   * Paperclip declines it (its heartbeat policy does not wake on demand, scheduling suppressed).
   */
  async wake(agentId: string): Promise<HeartbeatRun | { skipped: string }> {
    const answer = await this.call<Partial<HeartbeatRun> & { status?: string }>(
      'POST',
      `/agents/${agentId}/wakeup`,
      { source: 'on_demand' },
    );
    if (typeof answer?.id === 'string' && typeof answer.createdAt === 'string') return answer as HeartbeatRun;
    return { skipped: typeof answer?.status === 'string' ? answer.status : 'no run in the answer' };
  }

  /** An agent's latest runs, newest first: a run in flight and the retry Paperclip made of it. */
  agentRuns(companyId: string, agentId: string, limit = 5): Promise<HeartbeatRun[]> {
    return this.call(
      'GET',
      `/companies/${companyId}/heartbeat-runs?agentId=${agentId}&limit=${limit}`,
      undefined,
      10_000,
    );
  }

  run(runId: string): Promise<HeartbeatRun> {
    return this.call('GET', `/heartbeat-runs/${runId}`);
  }

  /** The run's whole log, parsed (the target reads it once the run is over). */
  async log(runId: string, timeoutMs = REQUEST_TIMEOUT_MS): Promise<LogChunk[]> {
    // Pages are cut at byte offsets, not at lines: join them, then split.
    let content = '';
    let offset = 0;
    for (let page = 0; page < 100; page++) {
      const result = await this.call<{ content?: string; nextOffset?: number | null }>(
        'GET',
        `/heartbeat-runs/${runId}/log?offset=${offset}`,
        undefined,
        timeoutMs,
      );
      content += result?.content ?? '';
      const next = typeof result?.nextOffset === 'number' ? result.nextOffset : undefined;
      if (next === undefined || next <= offset) break;
      offset = next;
    }
    const chunks: LogChunk[] = [];
    for (const line of content.split('\n')) {
      if (!line.trim()) continue;
      try {
        const parsed = JSON.parse(line) as LogChunk;
        if (typeof parsed.ts === 'string' && typeof parsed.chunk === 'string') chunks.push(parsed);
      } catch {
        // Not a chunk: left out.
      }
    }
    return chunks;
  }
}
