/**
 * Live telemetry of a real-clock run (docs/live-runs.md): the progress line, the Prometheus
 * endpoint and the OTLP/HTTP receiver (protobuf or JSON), attached to the run through the engine's `attach` hook
 * and closed before the target stops and the trace closes (so nothing writes to a closed trace
 * and no server is left open after an interrupt).
 */
import { FleetbenchError } from '../errors.ts';
import type { Verdict } from '../judge/judge.ts';
import type { RunAttachment, RunHandle } from '../run/engine.ts';
import { budgetFamilies, metricsText } from './metrics.ts';
import { OtlpExporter } from './otlp-export.ts';
import { ProgressLine } from './progress.ts';
import { formatFamilies } from './prometheus.ts';
import { type RunningLiveServer, startLiveServer } from './server.ts';
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
    const servers: RunningLiveServer[] = [];
    const sources = {
      clock: run.clock,
      durationMs: run.scenario.durationMs,
      stats,
      target: run.target,
      emulator: run.github.emulator,
      scenario: run.scenario.name,
      runId: run.trace.header.runId,
      targetName: run.trace.header.target ?? 'reference',
    };
    const endpoints: { metrics?: string; otlp?: string } = {};
    let metricsServer: RunningLiveServer | undefined;
    let serveMetrics = () => metricsText(sources);
    /** The options of a server that also receives OTLP: receiving stops with the run. */
    const receivers: Array<{ otlp?: boolean }> = [];
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
          metrics: () => serveMetrics(),
          otlp: same,
        };
        const server = await startLiveServer(serverOptions);
        servers.push(server);
        receivers.push(serverOptions);
        metricsServer = server;
        endpoints.metrics = `${server.url}/metrics`;
        if (same) endpoints.otlp = `${server.url}/v1/traces`;
      }
      if (options.otlpPort !== undefined && !same) {
        const server = await startLiveServer({
          port: options.otlpPort,
          clock: run.clock,
          trace: run.trace,
          otlp: true,
        });
        servers.push(server);
        endpoints.otlp = `${server.url}/v1/traces`;
      }
    } catch (error) {
      untap();
      await Promise.all(servers.map((s) => s.close()));
      await exporter?.close(0);
      if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE')
        throw new FleetbenchError(
          'E_USAGE',
          `live telemetry: ${(error as Error).message.replace(/^listen /, '')}`,
        );
      throw error;
    }
    options.onListening?.(endpoints);
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
        // An interrupted run does not linger: the user asked to stop.
        const lingering =
          metricsServer && options.onFinished && !options.interrupt?.aborted ? metricsServer : undefined;
        if (lingering) {
          // Final values, taken while the target still answers (a target that does not answer
          // within 5 s leaves out its session counts); the trace closes after this.
          let slowTarget: NodeJS.Timeout | undefined;
          const final = await Promise.race([
            metricsText({ ...sources, finished: true }),
            new Promise<void>((resolve) => {
              slowTarget = setTimeout(resolve, 5_000);
            }).then(() => metricsText({ ...sources, finished: true, target: NO_SESSIONS })),
          ]);
          clearTimeout(slowTarget);
          let verdictText = '';
          serveMetrics = async () => final + verdictText;
          for (const receiver of receivers) receiver.otlp = false;
          options.onFinished!({
            url: endpoints.metrics!,
            setVerdicts: (verdicts) => {
              verdictText = formatFamilies(budgetFamilies(verdicts));
            },
            hold: (ms, signal) =>
              new Promise<void>((resolve) => {
                let timer: NodeJS.Timeout | undefined;
                const done = () => {
                  clearTimeout(timer);
                  signal?.removeEventListener('abort', done);
                  lingering.close().then(resolve, resolve);
                };
                timer = setTimeout(done, ms);
                if (signal?.aborted) done();
                else signal?.addEventListener('abort', done, { once: true });
              }),
            close: () => lingering.close(),
          });
        }
        await Promise.all(servers.filter((s) => s !== lingering).map((s) => s.close()));
        await progress?.stop();
        untap();
        await exporter?.close();
      },
    };
  };
}
