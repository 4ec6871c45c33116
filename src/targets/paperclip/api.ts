/**
 * The few calls of Paperclip's HTTP API the target makes (auth mode `local_trusted`: no token on
 * loopback). Run rows and log chunks keep Paperclip's own field names and ISO timestamps; the
 * target turns them into trace records (records.ts).
 */

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

export class PaperclipApi {
  constructor(private readonly baseUrl: () => string) {}

  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = REQUEST_TIMEOUT_MS,
  ): Promise<T> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl()}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new PaperclipApiError(`${method} ${path}: ${(error as Error).message}`);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new PaperclipApiError(
        `${method} ${path}: ${response.status} ${text.slice(0, 300)}`,
        response.status,
      );
    }
    return (text ? JSON.parse(text) : undefined) as T;
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
