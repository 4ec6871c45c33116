/**
 * `fleetbench run <scenario>`: one run of a built-in cell, a built-in scenario or a YAML file.
 * Writes trace.jsonl and summary.json under --out and prints a compact summary.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { claimOutputDir } from '../base/output-dir.ts';
import { safePathSegment } from '../base/safe-name.ts';
import { parseTarget, type TargetRef, targetInfo } from '../contract/target-ref.ts';
import {
  planRunSegment,
  type RunSegmentPlan,
  runSegmentRecord,
  writeRunSegmentRecord,
} from '../distributed/run-segment.ts';
import {
  ADMIN_TOKEN_ENV,
  connectSharedGitHub,
  parseEmulatorUrl,
  waitReachable,
} from '../distributed/shared-github.ts';
import { verdictSection } from '../judge/report.ts';
import { liveTelemetry, type MetricsLinger, type OtlpExporter } from '../live/index.ts';
import { analysisSections, reporters, runSummarySections } from '../report/index.ts';
import type { RunHooks, RunResult } from '../run/engine.ts';
import { executeRun, type RunDone } from '../run/pipeline.ts';
import { planScenario } from '../run/plan.ts';
import { resolveScenarioRef } from '../workload/builtins.ts';
import { type Override, parseOverride } from '../workload/load.ts';
import type { Scenario } from '../workload/scenario.ts';
import { verdictExitCode } from './check.ts';
import { onInterrupt } from './interrupt.ts';
import { collect } from './options.ts';
import type { CommandIo } from './output.ts';

interface RunFlags {
  set: string[];
  seed?: string;
  out?: string;
  json?: boolean;
  markdown?: boolean;
  /** --no-budgets: commander sets budgets false. */
  budgets?: boolean;
  /** --no-report: commander sets report false. */
  report?: boolean;
  target?: string;
  clock?: string;
  segment?: string;
  github?: string;
  githubAdminToken?: string;
  startAt?: string;
  timeScale?: string;
  allowExtrapolation?: boolean;
  metricsPort?: number;
  otlpPort?: number;
  metricsLinger: number;
  otlpExport?: string;
  progress: boolean;
}

function otlpUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FleetbenchError('E_USAGE', `--otlp-export: expected an http(s) URL, got '${text}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new FleetbenchError('E_USAGE', `--otlp-export: expected an http(s) URL, got '${text}'`);
  return text;
}

function seconds(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 3600)
    throw new FleetbenchError('E_USAGE', `expected seconds (0-3600), got '${text}'`);
  return n;
}

function portNumber(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new FleetbenchError('E_USAGE', `expected a port (0-65535), got '${text}'`);
  return n;
}

/**
 * What `fleetbench run` prints after the compact k6-like summary (runSummarySections: the run,
 * the GitHub API figures, the scorecard): the sections of the analysis that belong to what the
 * scenario exercised. Everything else is one `fleetbench analyze` away.
 */
const OWN_CALLS_SECTIONS = new Set(['Calls by operation', 'Calls by session']);

const EXTRA_SECTIONS = new Set([
  'Turnover window',
  'Turnover (whole run)',
  'Actor failures',
  'Speed',
  'Schedule',
  'Warnings',
]);

export function register(program: Command, io: CommandIo): void {
  program
    .command('run')
    .description('run a scenario: an A2 cell (S2-T1-50), a built-in scenario (turnover, ...), or a YAML file')
    .argument('<scenario>', 'cell id, built-in scenario name, or path to a scenario YAML file')
    .option(
      '--set <key=value>',
      'override a scenario field (repeatable), e.g. --set sessions.count=50',
      collect,
      [],
    )
    .option('--seed <n>', 'shorthand for --set seed=N')
    .option(
      '--out <dir>',
      'where trace.jsonl and summary.json go (default fleetbench-out/runs/<name>, with --real-<target> for a real-clock run and --<overrides> when --set or --seed is given)',
    )
    .option('--json', 'print summary.json instead of the terminal summary')
    .option('--markdown', 'print the summary as Markdown')
    .option(
      '--target <target>',
      'shorthand for --set target=...: reference, ao (agent-orchestrator, real clock), ao:DIR, paperclip (the real Paperclip, real clock: docs/paperclip.md), paperclip/ADAPTER, paperclip:DIR, http://HOST:PORT or module:PATH',
    )
    .option('--clock <kind>', 'shorthand for --set clock=...: virtual or real')
    .option('--time-scale <x>', 'shorthand for --set time-scale=X (real clock: run ms per real ms)')
    .option(
      '--allow-extrapolation',
      'shorthand for --set polling.allow-extrapolation=true: replay a learned model where the run needs states or events it never saw, saying so, instead of refusing (docs/model.md#coverage)',
    )
    .option(
      '--metrics-port <n>',
      'real clock: serve Prometheus metrics on 127.0.0.1:N/metrics (0: a free port)',
      portNumber,
    )
    .option(
      '--otlp-port <n>',
      'real clock: accept OTLP/HTTP spans (protobuf or JSON, gzip or not) on 127.0.0.1:N/v1/traces into the trace',
      portNumber,
    )
    .option(
      '--metrics-linger <seconds>',
      'real clock: keep /metrics up this long after the run, with the final values and budget verdicts',
      seconds,
      15,
    )
    .option(
      '--otlp-export <url>',
      "real clock: send the run's spans and metrics to this OTLP/HTTP endpoint (protobuf; e.g. http://127.0.0.1:4318)",
      otlpUrl,
    )
    .option('--no-progress', 'real clock: no progress line on stderr')
    .option('--no-budgets', "run without judging the scenario's budgets")
    .option('--no-report', 'do not write report.html beside summary.json')
    .option(
      '--segment <i/n>',
      'live run (real clock): run segment i of n (its share of the starts, on the common timeline) against a shared --target http://… and --github URL; default: JOB_COMPLETION_INDEX + FLEETBENCH_SEGMENTS. Virtual-time runs are not split (docs/distributed.md)',
    )
    .option(
      '--github <url>',
      `real clock: use this shared GitHub emulator (fleetbench github serve) instead of one of the run's own; its admin token from --github-admin-token or ${ADMIN_TOKEN_ENV}`,
    )
    .option(
      '--github-admin-token <token>',
      `admin token of the --github emulator (default: $${ADMIN_TOKEN_ENV})`,
    )
    .option(
      '--start-at <time>',
      "segments: the run's common start (Unix ms or ISO time, at most 24 h ahead); default: agreed through --out (the first segment sets it 10 s ahead)",
    )
    .addHelpText(
      'after',
      '\nExamples:\n  fleetbench run S2-T1-50\n  fleetbench run S2-T1-50 --set polling.strategy=naive\n  fleetbench run my.yaml --set sessions.count=25 --out runs/mine\n  fleetbench run turnover --set turnover.target-rps=50\n  fleetbench run chaos-codex-c4\n  fleetbench run S2-T1-5 --target http://127.0.0.1:PORT --clock real --metrics-port 9464\n  fleetbench run S3-T2-10 --set polling.strategy=learned --set polling.model=model.yaml --set host.load=18\n\nScenario fields: docs/scenarios.md. Live runs (real clock, targets, telemetry): docs/live-runs.md.\nExit codes: 0 done (every judged budget holds), 2 bad input, 3 the run failed (target lost, clock stalled: partial summary written), 99 a judged budget failed, 104 budgets misconfigured, 130 interrupted (partial summary written).',
    )
    .action((ref: string, flags: RunFlags) => runCommand(ref, flags, io));
}

/** A command line resolved: the scenario, its target, where it goes, and a live segment's part. */
interface RunRequest {
  scenario: Scenario;
  target: TargetRef;
  cell?: string;
  /** What the user changed, in words (shown in the summary and the directory name). */
  changed: string[];
  outDir: string;
  /** A live-run segment's plan (docs/distributed.md), when this process runs one. */
  segment?: RunSegmentPlan;
  /** The shared emulator (`--github URL`), connected once. */
  github?: () => ReturnType<typeof connectSharedGitHub>;
}

async function runCommand(ref: string, flags: RunFlags, io: CommandIo): Promise<void> {
  const request = resolveRequest(ref, flags, io);
  const { scenario, segment } = request;
  const outClaim = claimOutputDir(request.outDir, `run ${ref}`);
  // First Ctrl-C: stop the run, keep the trace, write a partial summary. Second: leave now.
  const interrupt = onInterrupt('stopping the run, writing a partial summary', io);
  const telemetry = new Telemetry(flags, io, interrupt.signal);
  const started = performance.now();
  const record = (state: Parameters<typeof runSegmentRecord>[3]) => {
    if (segment)
      writeRunSegmentRecord(segment.recordPath, runSegmentRecord(segment, scenario, flags.github!, state));
  };
  try {
    if (segment) {
      record({ status: 'running', sessionsStarted: 0, sessionsDropped: 0, wallMs: 0 });
      await joinSegment(request, flags, interrupt.signal, io);
    }
    const done = await executeRun(
      {
        ...planScenario(scenario, request.outDir, request.cell),
        ...(segment ? { segment: segment.segment, epochMs: segment.startAtMs } : {}),
        ...(request.github ? { github: request.github } : {}),
      },
      {
        signal: interrupt.signal,
        // A segment has no report: alone it is not the run (fleetbench merge writes the run's).
        report: flags.report !== false && !segment,
        attach: withTargetHeader(io, telemetry.attach()),
        afterRun: (outcome) => telemetry.afterRun(outcome),
      },
    );
    const { outcome } = done;
    record({
      status:
        outcome.reason === 'completed' ? 'done' : outcome.reason === 'interrupted' ? 'interrupted' : 'failed',
      ...(outcome.failure ? { error: `${outcome.failure.source}: ${outcome.failure.message}` } : {}),
      sessionsStarted: outcome.sessionsStarted,
      sessionsDropped: outcome.sessionsDropped,
      wallMs: performance.now() - started,
    });
    printRun(request, done, flags, io);
    io.exitCode = exitCodeOf(outcome, request.outDir, io);
    if (outcome.reason !== 'interrupted') await telemetry.linger();
  } catch (error) {
    record({
      status: interrupt.signal.aborted ? 'interrupted' : 'failed',
      error: (error as Error)?.message ?? String(error),
      sessionsStarted: 0,
      sessionsDropped: 0,
      wallMs: performance.now() - started,
    });
    throw error;
  } finally {
    await telemetry.close();
    interrupt.dispose();
    outClaim.release();
  }
}

/** Flags → overrides → the resolved scenario, its directory and, for a live segment, its plan. */
function resolveRequest(ref: string, flags: RunFlags, io: CommandIo): RunRequest {
  const overrides: Override[] = flags.set.map(parseOverride);
  if (flags.seed !== undefined) {
    if (!/^-?\d+$/.test(flags.seed))
      throw new FleetbenchError('E_USAGE', `--seed: expected an integer, got '${flags.seed}'`);
    overrides.push({ path: ['seed'], value: Number(flags.seed) });
  }
  if (flags.budgets === false) overrides.push({ path: ['budgets'], value: [] });
  if (flags.target !== undefined) overrides.push({ path: ['target'], value: flags.target });
  if (flags.clock !== undefined) overrides.push({ path: ['clock'], value: flags.clock });
  if (flags.timeScale !== undefined) overrides.push({ path: ['time-scale'], value: Number(flags.timeScale) });
  if (flags.allowExtrapolation === true)
    overrides.push({ path: ['polling', 'allow-extrapolation'], value: true });
  if (flags.github !== undefined) flags.github = parseEmulatorUrl(flags.github);
  const { scenario, cell } = resolveScenarioRef(ref, overrides);
  const target = parseTarget(scenario.target);
  if (flags.github !== undefined && scenario.clock === 'virtual')
    throw new FleetbenchError(
      'E_USAGE',
      '--github: a shared emulator runs on the real clock; add --clock real (docs/distributed.md)',
    );
  if (scenario.clock === 'virtual') warnInertFlags(flags, io);
  // What the user changed, in words: shown in the summary and, by default, in the run's
  // directory name, so a run with overrides does not overwrite the plain one.
  const changed = [...flags.set, ...(flags.seed !== undefined ? [`seed=${flags.seed}`] : [])];
  // A live run never overwrites the virtual run of the same scenario: its directory names
  // the clock and the target (`S2-T1-5--real-reference`, `S2-T1-5--real-http-127.0.0.1-7070`).
  const live = scenario.clock === 'real' ? [`real-${targetInfo(target).tag(target)}`] : [];
  const sharedOut =
    flags.out ?? join('fleetbench-out', 'runs', runDirName(scenario.name, [...live, ...changed]));
  const segment = planRunSegment(flags.segment, scenario, {
    github: flags.github,
    startAt: flags.startAt,
    outDir: sharedOut,
    env: io.env,
  });
  const adminToken = flags.githubAdminToken ?? io.env[ADMIN_TOKEN_ENV];
  if (flags.github !== undefined && !adminToken)
    throw new FleetbenchError(
      'E_USAGE',
      `--github: the emulator's admin token is needed (the world opens PRs and finishes CI through it): --github-admin-token or ${ADMIN_TOKEN_ENV}`,
    );
  if (flags.github !== undefined && !segment)
    io.notice(
      `fleetbench: GitHub is the shared emulator at ${flags.github}: it records the API calls (github serve --trace), not this run's trace (docs/distributed.md)\n`,
    );
  // Connected when the run asks for it, or (a segment) before the common start, so the run
  // does not spend its first moments on it.
  let connected: ReturnType<typeof connectSharedGitHub> | undefined;
  const github =
    flags.github !== undefined
      ? () =>
          (connected ??= connectSharedGitHub({
            url: flags.github!,
            adminToken: adminToken!,
            snapshots: segment === undefined || segment.segment.index === 0,
          }))
      : undefined;
  return {
    scenario,
    target,
    ...(cell ? { cell } : {}),
    changed,
    // A segment writes under the shared directory: segments/run-<i>-of-<n>/ and its record.
    outDir: segment ? segment.dir : sharedOut,
    ...(segment ? { segment } : {}),
    ...(github ? { github } : {}),
  };
}

function warnInertFlags(flags: RunFlags, io: CommandIo): void {
  const inert = [
    flags.metricsPort !== undefined && '--metrics-port',
    flags.otlpPort !== undefined && '--otlp-port',
    flags.timeScale !== undefined && '--time-scale',
    flags.otlpExport !== undefined && '--otlp-export',
  ].filter((f): f is string => typeof f === 'string');
  for (const flag of inert)
    io.stderr.write(
      `fleetbench: warning: ${flag} has no effect with the virtual clock (add --clock real; docs/live-runs.md)\n`,
    );
}

/** A segment waits for what it shares, connects, and waits for the common start. */
async function joinSegment(request: RunRequest, flags: RunFlags, signal: AbortSignal, io: CommandIo) {
  // A pod may start before the Services it shares: wait for them (admin paths are not traced).
  await waitReachable(`${flags.github!.replace(/\/+$/, '')}/_fleetbench/stats`, 'the shared GitHub emulator');
  await waitReachable(`${request.scenario.target.replace(/\/+$/, '')}/v1/info`, 'the shared target');
  await request.github!();
  await untilStart(request.segment!, signal, io);
}

/** Live telemetry of a real-clock run: progress, /metrics (and its linger after the run), OTLP. */
class Telemetry {
  private lingering: MetricsLinger | undefined;
  private exporter: OtlpExporter | undefined;

  constructor(
    private readonly flags: RunFlags,
    private readonly io: CommandIo,
    private readonly interrupt: AbortSignal,
  ) {}

  attach(): NonNullable<RunHooks['attach']> {
    const { flags, io } = this;
    return liveTelemetry({
      progress: flags.progress && !io.quiet,
      progressOut: io.stderr,
      metricsPort: flags.metricsPort,
      otlpPort: flags.otlpPort,
      onListening: ({ metrics, otlp }) => {
        if (metrics) io.notice(`fleetbench: metrics at ${metrics}\n`);
        if (otlp) io.notice(`fleetbench: OTLP spans accepted at ${otlp}\n`);
      },
      otlpExport: flags.otlpExport,
      interrupt: this.interrupt,
      onExporter: (handle) => {
        this.exporter = handle;
      },
      onFinished:
        flags.metricsLinger > 0
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
      `fleetbench: OTLP export to ${this.flags.otlpExport}: ${x.spansSent} spans sent` +
        (x.spansDropped > 0 ? `, ${x.spansDropped} dropped (endpoint too slow)` : '') +
        (x.failedRequests > 0
          ? `, ${x.failedRequests} of ${x.requests} requests failed (${x.lastError})`
          : '') +
        '\n',
    );
  }

  /** Keeps the final /metrics up for --metrics-linger (Ctrl-C cuts it short). */
  async linger(): Promise<void> {
    if (!this.lingering) return;
    this.io.notice(
      `fleetbench: final metrics stay up at ${this.lingering.url} for ${this.flags.metricsLinger} s (Ctrl-C or --metrics-linger 0 to skip)\n`,
    );
    await this.lingering.hold(this.flags.metricsLinger * 1000, this.interrupt);
  }

  async close(): Promise<void> {
    await this.lingering?.close();
  }
}

/** The compact summary, the run's own sections and its verdicts, in the format asked for. */
function printRun(request: RunRequest, done: RunDone, flags: RunFlags, io: CommandIo): void {
  const { scenario, target, segment } = request;
  const { outcome, summary, report } = done;
  if (report && 'error' in report) io.stderr.write(`fleetbench: report.html not written: ${report.error}\n`);
  const reportPath = report && 'path' in report ? report.path : undefined;
  const format = flags.json ? 'json' : flags.markdown ? 'markdown' : 'terminal';
  const sections = () => [
    // The scorecard shows when no budget judges the run: with track-b among the budgets its
    // verdict table says the same with limits; with others (a chaos wave), API cost is not
    // what the run is judged on.
    ...runSummarySections(summary.analysis, {
      outcome: summary.outcome,
      overrides: request.changed,
      // A failed run shows no verdict of any kind: nothing it measured is whole.
      scorecard: scenario.budgets.length === 0 && outcome.reason !== 'failed',
    }),
    ...analysisSections(summary.analysis, { top: 10 }).filter(
      (s) =>
        EXTRA_SECTIONS.has(s.title) ||
        // A real control plane's calls: who and what, AO's own blind spots made visible.
        (targetInfo(target).ownCalls && OWN_CALLS_SECTIONS.has(s.title)),
    ),
    ...(outcome.verdicts ?? []).map(verdictSection),
  ];
  const text = reporters[format]().render({
    title: `run ${request.cell ?? scenario.name}${segment ? ` segment ${segment.segment.index}/${segment.segment.count}` : ''}${outcome.reason === 'interrupted' ? ' (interrupted: partial)' : outcome.reason === 'failed' ? ' (FAILED: partial)' : ''}`,
    document: summary,
    sections,
  });
  io.stdout.write(format === 'terminal' ? io.colourVerdicts(text) : text);
  if (format === 'terminal') {
    io.stdout.write(
      `${reportPath ? `\n  report...: ${reportPath}   (open it in a browser: charts and verdicts, offline)` : ''}\n  details..: fleetbench analyze ${outcome.tracePath}   (every metric; --markdown, --json)\n\n`,
    );
  }
}

/** 3 failed (partial, not judged), 130 interrupted, else the verdicts' (0, 99, 104). */
function exitCodeOf(outcome: RunResult, outDir: string, io: CommandIo): number {
  if (outcome.reason === 'failed') {
    io.stderr.write(
      `fleetbench: the run failed (${outcome.failure?.source}): ${outcome.failure?.message}\n  partial trace and summary in ${outDir}; budgets not judged\n`,
    );
    return ExitCode.runFailed;
  }
  if (outcome.reason === 'interrupted') return ExitCode.interrupted;
  if (!outcome.verdicts) return io.exitCode;
  for (const verdict of outcome.verdicts)
    for (const error of verdict.errors) io.stderr.write(`fleetbench: ${error}\n`);
  return verdictExitCode(outcome.verdicts);
}

/** A segment waits for the common start, so every segment reads one timeline (docs/distributed.md). */
async function untilStart(plan: RunSegmentPlan, signal: AbortSignal, io: CommandIo): Promise<void> {
  const wait = plan.startAtMs - Date.now();
  io.notice(
    `fleetbench: segment ${plan.segment.index}/${plan.segment.count} of ${plan.runId}${wait > 0 ? `: starts in ${(wait / 1000).toFixed(1)} s` : `: joining ${(-wait / 1000).toFixed(1)} s after its start`}\n`,
  );
  if (wait <= 0) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, wait);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
  if (signal.aborted)
    throw new FleetbenchError('E_USAGE', 'interrupted before the start', { exitCode: ExitCode.interrupted });
}

/** What a target says about itself at the start (the `ao` target: AO's version, gh, time scale). */
function withTargetHeader(
  io: CommandIo,
  attach: NonNullable<RunHooks['attach']>,
): NonNullable<RunHooks['attach']> {
  return (run) => {
    const describe = (run.target as { describe?: () => string[] }).describe;
    for (const line of describe?.call(run.target) ?? []) io.notice(`fleetbench: ${line}\n`);
    return attach(run);
  };
}

/** `S2-T1-50`, or `S2-T1-50--polling.strategy=naive` with overrides (a safe, bounded name). */
export function runDirName(scenarioName: string, overrides: readonly string[]): string {
  // The scenario's name is the user's text: one safe segment, so no run writes outside --out.
  const name = safePathSegment(scenarioName);
  if (overrides.length === 0) return name;
  const suffix = overrides
    .join('--')
    .replace(/[^A-Za-z0-9._=-]+/g, '_')
    .slice(0, 80);
  return `${name}--${suffix}`;
}
