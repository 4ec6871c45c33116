/**
 * Live telemetry of a real-clock run (docs/live-runs.md): the progress line, the Prometheus
 * endpoint and the OTLP/HTTP receiver (protobuf or JSON), attached to the run through the engine's `attach` hook
 * and closed before the target stops and the trace closes (so nothing writes to a closed trace
 * and no server is left open after an interrupt).
 */
import { FleetbenchError } from '../errors.ts';
import type { RunAttachment, RunHandle } from '../workload/engine.ts';
import { metricsText } from './metrics.ts';
import { ProgressLine } from './progress.ts';
import { type RunningLiveServer, startLiveServer } from './server.ts';
import { LiveStats } from './stats.ts';

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
}

/** An `attach` for runScenario. Only a real-clock run gets live telemetry. */
export function liveTelemetry(options: LiveOptions) {
  return async (run: RunHandle): Promise<RunAttachment> => {
    if (run.clock.kind !== 'real') return { close: async () => undefined };
    const stats = new LiveStats();
    const untap = run.trace.tap((record) => stats.add(record));
    const servers: RunningLiveServer[] = [];
    const sources = {
      clock: run.clock,
      durationMs: run.scenario.durationMs,
      stats,
      target: run.target,
      emulator: run.github.emulator,
      scenario: run.scenario.name,
    };
    const endpoints: { metrics?: string; otlp?: string } = {};
    try {
      const same =
        options.metricsPort !== undefined &&
        options.metricsPort === options.otlpPort &&
        options.metricsPort !== 0;
      if (options.metricsPort !== undefined) {
        const server = await startLiveServer({
          port: options.metricsPort,
          clock: run.clock,
          trace: run.trace,
          metrics: () => metricsText(sources),
          otlp: same,
        });
        servers.push(server);
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
        await Promise.all(servers.map((s) => s.close()));
        await progress?.stop();
        untap();
      },
    };
  };
}
