/**
 * A run's live telemetry made from its plan (RunPlan.telemetry, built in src/run/request.ts):
 * the progress line, /metrics and its linger after the run, the OTLP receiver and exporter. It
 * lives here, not in src/run/, because src/live/ sits above the run (it attaches through the
 * engine's `attach` hook); the CLI only instantiates it and says what it reports.
 */
import type { RunHooks, RunResult } from '../run/engine.ts';
import type { TelemetryPlan } from '../run/plan.ts';
import { liveTelemetry, type MetricsLinger, type OtlpExporter } from './index.ts';

export interface RunTelemetryIo {
  /** Where the progress line goes. */
  progressOut: { write(text: string): boolean; isTTY?: boolean };
  /** Told where the endpoints listen, what the export did, how long the metrics linger. */
  notice: (message: string) => void;
  /** The user's Ctrl-C: nothing lingers after it. */
  interrupt: AbortSignal;
}

export class RunTelemetry {
  private lingering: MetricsLinger | undefined;
  private exporter: OtlpExporter | undefined;

  /** `plan` undefined (a virtual-time run): nothing is attached. */
  constructor(
    private readonly plan: TelemetryPlan | undefined,
    private readonly io: RunTelemetryIo,
  ) {}

  attach(): NonNullable<RunHooks['attach']> {
    const { plan, io } = this;
    if (!plan) return () => ({ close: async () => undefined });
    return liveTelemetry({
      progress: plan.progress,
      progressOut: io.progressOut,
      metricsPort: plan.metricsPort,
      otlpPort: plan.otlpPort,
      onListening: ({ metrics, otlp }) => {
        if (metrics) io.notice(`metrics at ${metrics}`);
        if (otlp) io.notice(`OTLP spans accepted at ${otlp}`);
      },
      otlpExport: plan.otlpExport,
      interrupt: io.interrupt,
      onExporter: (handle) => {
        this.exporter = handle;
      },
      onFinished:
        plan.metricsLingerSeconds > 0
          ? (handle) => {
              this.lingering = handle;
            }
          : undefined,
    });
  }

  /** The budgets' verdicts to /metrics and the OTLP endpoint, and what the export did. */
  async afterRun(outcome: RunResult): Promise<void> {
    this.lingering?.setVerdicts(outcome.verdicts ?? []);
    const exporter = this.exporter;
    if (!exporter) return;
    if (outcome.verdicts) await exporter.exportVerdicts(outcome.verdicts);
    const x = exporter.stats;
    this.io.notice(
      `OTLP export to ${this.plan?.otlpExport}: ${x.spansSent} spans sent` +
        (x.spansDropped > 0 ? `, ${x.spansDropped} dropped (endpoint too slow)` : '') +
        (x.failedRequests > 0
          ? `, ${x.failedRequests} of ${x.requests} requests failed (${x.lastError})`
          : ''),
    );
  }

  /** Keeps the final /metrics up for the linger (Ctrl-C cuts it short). */
  async linger(): Promise<void> {
    if (!this.lingering) return;
    const seconds = this.plan?.metricsLingerSeconds;
    this.io.notice(
      `final metrics stay up at ${this.lingering.url} for ${seconds} s (Ctrl-C or --metrics-linger 0 to skip)`,
    );
    await this.lingering.hold(seconds! * 1000, this.io.interrupt);
  }

  async close(): Promise<void> {
    await this.lingering?.close();
  }
}
