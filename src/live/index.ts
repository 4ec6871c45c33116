/**
 * Live telemetry of a real-clock run (docs/live-runs.md): the progress line, the Prometheus
 * endpoint and the OTLP/HTTP receiver (protobuf or JSON), attached to the run through the engine's `attach` hook
 * and closed once the target has stopped and the closing /rate_limit bracket is read, before the
 * trace closes: it sees every record the trace gets (calls in flight at the planned end too),
 * nothing writes to a closed trace, and no server is left open after an interrupt.
 */
import { FleetbenchError } from '../base/errors.ts';
import type { Verdict } from '../judge/judge.ts';
import type { RunAttachment, RunHandle } from '../run/engine.ts';
import { budgetFamilies, metricsText } from './metrics.ts';
import { OtlpExporter } from './otlp-export.ts';
import { ProgressLine } from './progress.ts';
import { formatFamilies } from './prometheus.ts';
import type { RunningLiveServer } from './server.ts';
import { LiveStats } from './stats.ts';

export type { OtlpExporter } from './otlp-export.ts';
export { formatFamilies } from './prometheus.ts';
export { LiveStats } from './stats.ts';

export interface LiveOptions {
  /** Print the progress line (to `progressOut`, default stderr). */
  progress?: boolean;
  progressOut?: { write(text: string): boolean; isTTY?: boolean };
  progressEveryMs?: number;
  /** Serve GET /metrics here (0: a free port). */
  metricsPort?: number;
  /** Accept OTLP spans here (may equal metricsPort: one server answers both). */
  otlpPort?: number;
  /** Told where the endpoints listen. */
  onListening?: (endpoints: { metrics?: string; otlp?: string }) => void;
  /**
   * Keep GET /metrics up after the run with its final values (a scraper's last scrape sees
   * them): the metrics server is handed to `onFinished` instead of being closed, and whoever
   * takes it closes it (MetricsLinger.hold). Without `onFinished` everything closes with the run.
   */
  onFinished?: (linger: MetricsLinger) => void;
  /** The user's Ctrl-C: once aborted, nothing lingers. */
  interrupt?: AbortSignal;
  /** Send the run's spans and metrics to this OTLP/HTTP endpoint (otlp-export.ts). */
  otlpExport?: string;
  /** Handed the exporter (to export the budgets' verdicts after the run, and read its stats). */
  onExporter?: (exporter: OtlpExporter) => void;
}

/** The metrics endpoint of a run that has ended, serving its final values. */
export interface MetricsLinger {
  url: string;
  /** Adds the budgets' verdicts (judged on the finished trace) to what the endpoint serves. */
  setVerdicts(verdicts: readonly Verdict[]): void;
  /** Serves for `ms` (or until `signal` aborts), then closes. */
  hold(ms: number, signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** Stands in for a target that no longer answers, for the final metrics. */
const NO_SESSIONS = { sessionCounts: async () => ({}) } as unknown as RunHandle['target'];

/** An `attach` for runScenario. Only a real-clock run gets live telemetry. */
export function liveTelemetry(options: LiveOptions) {
  return async (run: RunHandle): Promise<RunAttachment> => {
    if (run.clock.kind !== 'real') return { close: async () => undefined };
    const stats = new LiveStats();
    const exporter = options.otlpExport
      ? new OtlpExporter({
          url: options.otlpExport,
          clock: run.clock,
          runId: run.trace.header.runId,
          scenario: run.scenario.name,
        })
      : undefined;
    if (exporter) options.onExporter?.(exporter);
    const untap = run.trace.tap((record) => {
      stats.add(record);
      exporter?.add(record);
    });
    const sources: MetricSources = {
      clock: run.clock,
      durationMs: run.scenario.durationMs,
      stats,
      target: run.target,
      emulator: run.github.emulator,
      scenario: run.scenario.name,
      runId: run.trace.header.runId,
      targetName: run.trace.header.target ?? 'reference',
    };
    let serveMetrics = () => metricsText(sources);
    let endpoints: Endpoints;
    try {
      endpoints = await startEndpoints(options, run, () => serveMetrics());
    } catch (error) {
      untap();
      await exporter?.close(0);
      throw error;
    }
    options.onListening?.(endpoints.urls);
    const progress = options.progress
      ? new ProgressLine({
          clock: run.clock,
          durationMs: run.scenario.durationMs,
          stats,
          target: run.target,
          out: options.progressOut ?? process.stderr,
          everyMs: options.progressEveryMs,
        })
      : undefined;
    progress?.start();
    return {
      async close() {
        // Receiving stops while the trace is still open: a request cut here is recorded.
        for (const server of endpoints.servers) server.stopReceiving();
        // An interrupted run does not linger: the user asked to stop.
        const lingering =
          endpoints.metricsServer && options.onFinished && !options.interrupt?.aborted
            ? endpoints.metricsServer
            : undefined;
        if (lingering) {
          const final = await finalMetrics(sources);
          let verdictText = '';
          serveMetrics = async () => final + verdictText;
          options.onFinished!(
            lingerOn(lingering, endpoints.urls.metrics!, (verdicts) => {
              verdictText = formatFamilies(budgetFamilies(verdicts));
            }),
          );
        }
        await Promise.all(endpoints.servers.filter((s) => s !== lingering).map((s) => s.close()));
        await progress?.stop();
        untap();
        await exporter?.close();
      },
    };
  };
}

type MetricSources = Parameters<typeof metricsText>[0];

interface Endpoints {
  urls: { metrics?: string; otlp?: string };
  servers: RunningLiveServer[];
  metricsServer?: RunningLiveServer;
}

/**
 * The metrics endpoint and the OTLP receiver (one server when they share a port). A port in use
 * is a usage error naming it; whatever already listens is closed.
 */
async function startEndpoints(
  options: LiveOptions,
  run: RunHandle,
  serveMetrics: () => Promise<string>,
): Promise<Endpoints> {
  const endpoints: Endpoints = { urls: {}, servers: [] };
  if (options.metricsPort === undefined && options.otlpPort === undefined) return endpoints;
  // Loaded only when an endpoint is asked for: the server and its router (find-my-way) cost a
  // run that serves nothing ~40 ms of start-up otherwise.
  const { startLiveServer } = await import('./server.ts');
  try {
    const same =
      options.metricsPort !== undefined &&
      options.metricsPort === options.otlpPort &&
      options.metricsPort !== 0;
    if (options.metricsPort !== undefined) {
      const serverOptions = {
        port: options.metricsPort,
        clock: run.clock,
        trace: run.trace,
        metrics: serveMetrics,
        otlp: same,
      };
      const server = await startLiveServer(serverOptions);
      endpoints.servers.push(server);
      endpoints.metricsServer = server;
      endpoints.urls.metrics = `${server.url}/metrics`;
      if (same) endpoints.urls.otlp = `${server.url}/v1/traces`;
    }
    if (options.otlpPort !== undefined && !same) {
      const server = await startLiveServer({
        port: options.otlpPort,
        clock: run.clock,
        trace: run.trace,
        otlp: true,
      });
      endpoints.servers.push(server);
      endpoints.urls.otlp = `${server.url}/v1/traces`;
    }
  } catch (error) {
    await Promise.all(endpoints.servers.map((s) => s.close()));
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw new FleetbenchError(
        'E_USAGE',
        `live telemetry: ${(error as Error).message.replace(/^listen /, '')}`,
      );
    throw error;
  }
  return endpoints;
}

/**
 * The final values, taken while the target still answers; a target that does not answer within
 * 5 s leaves out its session counts (the trace closes after this).
 */
async function finalMetrics(sources: MetricSources): Promise<string> {
  let slowTarget: NodeJS.Timeout | undefined;
  const final = await Promise.race([
    metricsText({ ...sources, finished: true }),
    new Promise<void>((resolve) => {
      slowTarget = setTimeout(resolve, 5_000);
    }).then(() => metricsText({ ...sources, finished: true, target: NO_SESSIONS })),
  ]);
  clearTimeout(slowTarget);
  return final;
}

/** The ended run's metrics server, handed to whoever keeps it up and then closes it. */
function lingerOn(
  server: RunningLiveServer,
  url: string,
  setVerdicts: (verdicts: readonly Verdict[]) => void,
): MetricsLinger {
  return {
    url,
    setVerdicts,
    hold: (ms, signal) =>
      new Promise<void>((resolve) => {
        let timer: NodeJS.Timeout | undefined;
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', done);
          server.close().then(resolve, resolve);
        };
        timer = setTimeout(done, ms);
        if (signal?.aborted) done();
        else signal?.addEventListener('abort', done, { once: true });
      }),
    close: () => server.close(),
  };
}
