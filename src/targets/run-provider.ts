/**
 * The provider emulator of a run whose agents are real (`agents: real`, docs/agents.md): served
 * on 127.0.0.1 for the run's control plane to start its agents against, with the scenario's
 * `provider:` settings, a key per session, and its records in the run's trace. What it saw is
 * written when the run ends (`provider.emulator.stopped`), with any CLI version the requests
 * named that is not the binary the run configured: the agent that ran is then not the one
 * recorded, and `mismatch` says so. Shared by the targets that start real agents (paperclip, ao).
 */
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import {
  DEFAULT_SCRIPT,
  defaultScriptName,
  LATENCY_PROFILES,
  loadScriptsFile,
  ProviderEmulator,
  type RunningProviderServer,
  type ScriptsFile,
  startProviderServer,
} from '../provider/index.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { ProviderSettings } from '../workload/scenario.ts';

export class RunProvider {
  private emulator?: ProviderEmulator;
  private server?: RunningProviderServer;
  /** When each session's model requests began (run time), in arrival order: see firstRequest. */
  private readonly requestStarts = new Map<string, number[]>();
  /** The user's scripts file, read (and refused) before anything starts. */
  private readonly file: ScriptsFile | undefined;
  /**
   * The script sessions follow when their key names none: the scenario's `provider.script`, else
   * the scripts file's `default`, else the target's own default.
   */
  readonly script: string;

  /**
   * `scripts`: scripts of the target's own beside the user's file (a user's file may redefine
   * them); `targetDefault`: the script when neither the scenario nor the file names one.
   */
  constructor(
    private readonly settings: ProviderSettings,
    targetDefault: string = DEFAULT_SCRIPT,
    private readonly scripts: ScriptsFile['scripts'] = {},
  ) {
    this.file = settings.scripts ? loadScriptsFile(settings.scripts) : undefined;
    this.script = defaultScriptName(settings.script, this.file, targetDefault);
  }

  get url(): string {
    if (!this.server) throw new Error('the run provider is not started');
    return this.server.url;
  }

  /** Serves the emulator; `clis` (CLI → configured version) goes into the start record. */
  async start(clock: Clock, rng: Rng, trace: TraceSink, clis: Record<string, string>): Promise<void> {
    // The emulator's records go to the run's trace; the start of each model request is kept
    // besides, so a target can time an agent's boot to it (firstRequest).
    const tapped: TraceSink = {
      write: (record) => {
        if (
          record.kind === 'span' &&
          record.name === 'provider.request' &&
          record.session !== undefined &&
          record.labels?.api !== 'first-party'
        ) {
          const starts = this.requestStarts.get(record.session);
          if (starts) starts.push(record.t);
          else this.requestStarts.set(record.session, [record.t]);
        }
        trace.write(record);
      },
    };
    this.emulator = new ProviderEmulator({
      clock,
      rng,
      trace: tapped,
      scripts: { scripts: { ...this.scripts, ...this.file?.scripts }, default: this.script },
      latency: LATENCY_PROFILES[this.settings.latency],
      limits: this.settings.limits,
      models: this.settings.models,
    });
    for (const fault of this.settings.faults) this.emulator.addFault(fault);
    this.server = await startProviderServer({ emulator: this.emulator });
    trace.write({
      kind: 'event',
      name: 'provider.emulator.started',
      t: clock.now(),
      labels: { latency: this.settings.latency },
      data: { url: this.server.url, script: this.script, clis },
    });
  }

  /** A key of the session's own: its requests are attributed to it. */
  mintKey(session: string): string {
    if (!this.emulator) throw new Error('the run provider is not started');
    return this.emulator.mintKey({ session, script: this.script });
  }

  /**
   * When the session's first model request at or after `from` (and before `until`) began, run
   * time: the moment its agent, spawned at `from`, was ready (docs/paperclip.md#what-is-measured).
   * A request is recorded when its answer ends, so ask once the agent has finished.
   */
  firstRequest(session: string, from: number, until = Number.POSITIVE_INFINITY): number | undefined {
    let first: number | undefined;
    for (const t of this.requestStarts.get(session) ?? [])
      if (t >= from && t < until && (first === undefined || t < first)) first = t;
    return first;
  }

  /** A provider slowdown on real agents: the first tokens come later while it lasts. */
  slowdown(factor: number, now: number, durationMs: number): void {
    const ttft = LATENCY_PROFILES[this.settings.latency]?.ttft;
    const base = ttft?.kind === 'lognormal' ? ttft.median : ttft?.kind === 'fixed' ? ttft.ms : 0;
    this.emulator?.addFault({
      kind: 'slow-first-token',
      delayMs: Math.max(500, (factor - 1) * Math.max(base, 1000)),
      fromMs: now,
      untilMs: now + durationMs,
    });
  }

  /** Stops the emulator and writes what it saw, against `pinned` (CLI → configured version). */
  async stop(trace: TraceSink, now: number, pinned: Record<string, string>): Promise<void> {
    await this.server?.close();
    if (!this.emulator) return;
    const stats = this.emulator.snapshot();
    const mismatch = Object.entries(stats.cliVersions).flatMap(([cli, versions]) =>
      Object.keys(versions)
        .filter((version) => pinned[cli] !== undefined && version !== pinned[cli])
        .map((version) => `${cli} ${version} (configured ${pinned[cli]})`),
    );
    trace.write({
      kind: 'event',
      name: 'provider.emulator.stopped',
      t: now,
      labels: { mismatch: mismatch.length > 0 },
      data: {
        requests: stats.requests,
        byStatus: stats.byStatus,
        byCli: stats.byCli,
        cliVersions: stats.cliVersions,
        inputTokens: stats.inputTokens,
        outputTokens: stats.outputTokens,
        ...(mismatch.length > 0 ? { mismatch } : {}),
      },
    });
  }
}
