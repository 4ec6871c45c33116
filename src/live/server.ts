/**
 * The live HTTP endpoints of a real-clock run, on 127.0.0.1:
 *
 * - `GET /metrics`: Prometheus text format 0.0.4 (metrics.ts decides what is in it);
 * - `POST /v1/traces`: an OTLP/HTTP receiver (protobuf or JSON, gzip or not: otlp-proto.ts).
 *   Spans the system under test exports go into the run's trace (the one TraceWriter) as `span`
 *   and `event` records, mapped exactly as `fleetbench import otlp` maps them, with times placed
 *   on the run's clock (Unix ns → run ms). A refused body is answered as OTLP does: 4xx with a
 *   `google.rpc.Status` in the request's encoding.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BodyTooLargeError, readBoundedBody } from '../base/http-body.ts';
import { answered, InFlight } from '../base/http-inflight.ts';
import { Routes } from '../base/http-router.ts';
import { BODY_LIMITS, LISTEN_BACKLOG, OTLP_RECEIVER_LIMITS } from '../base/limits.ts';
import { describeZodError, describeZodIssues } from '../base/validation.ts';
import type { Clock } from '../clock/clock.ts';
import {
  type OtlpRequest,
  otlpEnvelopeSchema,
  otlpRecordsBySpan,
  spanSchema,
} from '../trace/importers/otlp.ts';
import {
  checkJsonShape,
  checkProtobufShape,
  checkSpanCounts,
  decodeContent,
  decodeTraceRequest,
  encodingOf,
  type OtlpEncoding,
  OtlpRequestError,
  statusBody,
  successBody,
} from '../trace/importers/otlp-proto.ts';
import type { TraceSink } from '../trace/writer.ts';
import { CONTENT_TYPE } from './prometheus.ts';

export interface LiveServerOptions {
  port: number;
  clock: Clock;
  trace: TraceSink;
  /** Text of GET /metrics (absent: 404). */
  metrics?: () => Promise<string>;
  /** Accept OTLP spans (protobuf or JSON, gzip or not) on POST /v1/traces. */
  otlp?: boolean;
  /** Biggest OTLP body accepted (bytes, default BODY_LIMITS.otlp, 16 MiB). */
  maxBodyBytes?: number;
}

export interface RunningLiveServer {
  url: string;
  port: number;
  /** OTLP spans and events written so far. */
  readonly received: {
    requests: number;
    spans: number;
    events: number;
    rejected: number;
    /** Spans and events refused for their times (each request's count is a `target.bad_record` event). */
    badRecords: number;
    /** Requests still being read or written when receiving stopped: answered 503, an `otlp.cancelled` event. */
    cancelled: number;
  };
  /**
   * Receiving stops (the run is ending, its trace still open): an OTLP request not answered yet
   * is answered 503 (`UNAVAILABLE`, which an exporter retries elsewhere) and counted in one
   * `otlp.cancelled` event; nothing more is written to the trace. GET /metrics goes on.
   */
  stopReceiving(): void;
  /** Stops receiving, then closes every connection. */
  close(): Promise<void>;
}

/** What the OTLP receiver writes to and counts in. */
interface Receiver {
  options: LiveServerOptions;
  received: RunningLiveServer['received'];
  maxBody: number;
  /** OTLP's Unix nanoseconds to the run's milliseconds. */
  toMs: (ns: string | number) => number;
  /** Set when receiving stops: a request still being written stops there. */
  closed: boolean;
}

/**
 * Spans a request is checked and written in between two turns of the event loop: a slice takes
 * a few milliseconds, so a request of thousands of spans never holds the run's other requests
 * (its /metrics, its target's events) for longer than that.
 */
const SPANS_PER_SLICE = 500;

/**
 * The request, checked against the OTLP schema: its envelope at once, its spans a slice at a
 * time, stopping at the first span that fails (named by its place in the request).
 */
async function checkedRequest(decoded: unknown, receiver: Receiver): Promise<OtlpRequest> {
  const envelope = otlpEnvelopeSchema.safeParse(decoded);
  if (!envelope.success) throw new OtlpRequestError(400, 3, describeZodError(envelope.error));
  let checked = 0;
  for (const [r, rs] of envelope.data.resourceSpans.entries())
    for (const [s, ss] of (rs.scopeSpans ?? []).entries())
      for (const [i, span] of (ss.spans ?? []).entries()) {
        const parsed = spanSchema.safeParse(span);
        if (!parsed.success) {
          const at = ['resourceSpans', r, 'scopeSpans', s, 'spans', i];
          const issues = parsed.error.issues.map((issue) => ({ ...issue, path: [...at, ...issue.path] }));
          throw new OtlpRequestError(400, 3, describeZodIssues(issues, 1)[0]!);
        }
        ss.spans![i] = parsed.data;
        if (++checked % SPANS_PER_SLICE === 0) await nextTurn();
        if (receiver.closed) throw new OtlpRequestError(503, 14, 'the run is over');
      }
  return envelope.data as OtlpRequest;
}

/**
 * POST /v1/traces: an OTLP/HTTP export (protobuf or JSON, gzip allowed), its spans and events
 * written to the run's trace; refusals in OTLP's Status, bad records reported as a partial success.
 */
async function receiveTraces(receiver: Receiver, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { options, received, maxBody, toMs } = receiver;
  const { clock } = options;
  const encoding = encodingOf(req.headers['content-type']);
  const refuse = (error: OtlpRequestError, as: OtlpEncoding = encoding ?? 'json') => {
    received.rejected++;
    replyBytes(res, error.httpStatus, statusBody(error.rpcCode, error.message, as), as);
  };
  if (!encoding) {
    req.resume();
    return refuse(
      new OtlpRequestError(
        415,
        3,
        'OTLP/HTTP bodies are application/x-protobuf or application/json (gzip allowed)',
      ),
    );
  }
  let raw: Buffer;
  try {
    raw = await readBoundedBody(req, maxBody);
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    // Whatever of the body still arrives is discarded, never kept (docs/limits.md).
    req.resume();
    return refuse(new OtlpRequestError(413, 8, `body over ${maxBody} bytes (docs/limits.md)`));
  }
  let request: OtlpRequest;
  try {
    const body = decodeContent(raw, req.headers['content-encoding'], maxBody);
    // Counted before anything is decoded (docs/limits.md): what the decoder then makes is bounded.
    if (encoding === 'protobuf') checkProtobufShape(body, OTLP_RECEIVER_LIMITS);
    else checkJsonShape(body, OTLP_RECEIVER_LIMITS);
    const decoded = decodeTraceRequest(body, encoding);
    checkSpanCounts(decoded, OTLP_RECEIVER_LIMITS);
    request = await checkedRequest(decoded, receiver);
  } catch (error) {
    if (error instanceof OtlpRequestError) return refuse(error);
    throw error;
  }
  received.requests++;
  // A bad span from the system under test is counted and reported, never fatal to the run:
  // OTLP's partial success says how many were refused and why.
  const bad: string[] = [];
  let spans = 0;
  for (const records of otlpRecordsBySpan(request, toMs, undefined, (reason) => bad.push(reason))) {
    if (receiver.closed) return refuse(new OtlpRequestError(503, 14, 'the run is over'));
    for (const record of records) {
      options.trace.write(record);
      if (record.kind === 'span') received.spans++;
      else received.events++;
    }
    if (++spans % SPANS_PER_SLICE === 0) await nextTurn();
  }
  if (receiver.closed) return refuse(new OtlpRequestError(503, 14, 'the run is over'));
  if (bad.length > 0) {
    received.badRecords += bad.length;
    options.trace.write({
      kind: 'event',
      name: 'target.bad_record',
      t: clock.now(),
      labels: { source: 'otlp' },
      data: { count: bad.length, reason: bad[0] },
    });
  }
  replyBytes(
    res,
    200,
    successBody(encoding, bad.length > 0 ? { spans: bad.length, message: bad[0]! } : undefined),
    encoding,
  );
}

function notFound(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  reply(res, 404, JSON.stringify({ message: 'not found: GET /metrics, POST /v1/traces' }));
}

function reply(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  if (answered(res)) return; // cancelled when receiving stopped
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
function replyBytes(res: ServerResponse, status: number, body: Buffer, encoding: OtlpEncoding): void {
  if (answered(res)) return;
  const type = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
  res.writeHead(status, { 'content-type': type, 'content-length': body.length });
  res.end(body);
}

export async function startLiveServer(options: LiveServerOptions): Promise<RunningLiveServer> {
  const received = { requests: 0, spans: 0, events: 0, rejected: 0, badRecords: 0, cancelled: 0 };
  const maxBody = options.maxBodyBytes ?? BODY_LIMITS.otlp;
  const { clock } = options;
  const epochNs = BigInt(Math.round(clock.epochMs)) * 1_000_000n;
  const toMs = (ns: string | number) => (Number(BigInt(ns) - epochNs) / 1e6) * clock.timeScale;

  const receiver: Receiver = { options, received, maxBody, toMs, closed: false };

  const routes = new Routes();
  const metrics = options.metrics;
  if (metrics)
    routes.on('GET', '/metrics', (_req, res) =>
      metrics().then(
        (text) => reply(res, 200, text, CONTENT_TYPE),
        (error: Error) => reply(res, 500, `# error: ${error.message}\n`, CONTENT_TYPE),
      ),
    );
  // Read at each request: receiving stops when the run ends (options.otlp turns false) while the
  // metrics endpoint lingers on the same server.
  const receiving = new InFlight();
  routes.on('POST', '/v1/traces', (req, res) => {
    if (!options.otlp) return notFound(req, res);
    receiving.track(res);
    return receiveTraces(receiver, req, res).catch((error: Error) => {
      if (!res.headersSent) reply(res, 500, JSON.stringify({ code: 13, message: error.message }));
    });
  });
  const server: Server = createServer((req, res) => {
    // Its routes take no parameters: a malformed path is simply not one of them.
    const answer = routes.match(req);
    if (typeof answer === 'function') answer(res);
    else notFound(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', LISTEN_BACKLOG, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const stopReceiving = () => {
    if (receiver.closed) return;
    receiver.closed = true;
    options.otlp = false;
    const cancelled = receiving.cancelAll((res) =>
      reply(res, 503, JSON.stringify({ code: 14, message: 'the run is over: this request was not taken' })),
    );
    if (cancelled === 0) return;
    received.cancelled += cancelled;
    options.trace.write({
      kind: 'event',
      name: 'otlp.cancelled',
      t: clock.now(),
      labels: { source: 'otlp' },
      data: { requests: cancelled, reason: 'the run ended while they were being received' },
    });
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    stopReceiving,
    close: () =>
      new Promise<void>((resolve) => {
        stopReceiving();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
