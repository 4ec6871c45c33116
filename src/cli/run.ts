/**
 * `fleetbench run <scenario>`: one run of a built-in cell, a built-in scenario or a YAML file.
 * Writes trace.jsonl and summary.json under --out and prints a compact summary. What the run is
 * (scenario, target, directory, segment, shared GitHub, telemetry) is planned in src/run/
 * (`planFromOptions`); this file turns flags into its options, wires the run and prints.
 */
import type { Command } from 'commander';
import { ExitCode } from '../base/errors.ts';
import { claimOutputDir } from '../base/output-dir.ts';
import { targetInfo } from '../contract/target-ref.ts';
import { RunSegmentProcess } from '../distributed/run-segment.ts';
import { verdictSection } from '../judge/report.ts';
import { RunTelemetry } from '../live/run-telemetry.ts';
import { analysisSections, ownCallsSections, reporters, runSummarySections } from '../report/index.ts';
import type { RunHooks, RunResult } from '../run/engine.ts';
import { executeRun, type RunDone } from '../run/pipeline.ts';
import type { RunPlan } from '../run/plan.ts';
import {
  DEFAULT_METRICS_LINGER_SECONDS,
  parseLingerSeconds,
  parseOtlpExportUrl,
  parsePort,
  planFromOptions,
  type RunOptions,
} from '../run/request.ts';
import { ADMIN_TOKEN_ENV } from '../run/shared-github.ts';
import { verdictExitCode } from './check.ts';
import { onInterrupt } from './interrupt.ts';
import { collect, tokenOption } from './options.ts';
import type { CommandIo } from './output.ts';

/** What commander gives: RunOptions by their names (commander fills the defaults), and the format. */
interface RunFlags extends Omit<RunOptions, 'ref' | 'set'> {
  set: string[];
  metricsLinger: number;
  progress: boolean;
  json?: boolean;
  markdown?: boolean;
}

/**
 * What `fleetbench run` prints after the compact k6-like summary (runSummarySections: the run,
 * the GitHub API figures, the scorecard): the sections of the analysis that belong to what the
 * scenario exercised. Everything else is one `fleetbench analyze` away.
 */
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
    .option(
      '--agents <kind>',
      "shorthand for --set agents=...: standin (default) or real: the real codex / Claude Code CLIs against the run's provider emulator (paperclip, ao; docs/agents.md)",
    )
    .option('--clock <kind>', 'shorthand for --set clock=...: virtual or real')
    .option(
      '--allow-extrapolation',
      'shorthand for --set polling.allow-extrapolation=true: replay a learned model where the run needs states or events it never saw, saying so, instead of refusing (docs/model.md#coverage)',
    )
    .option('--time-scale <x>', 'shorthand for --set time-scale=X (real clock: run ms per real ms)')
    .option(
      '--metrics-port <n>',
      'real clock: serve Prometheus metrics on 127.0.0.1:N/metrics (0: a free port)',
      parsePort,
    )
    .option(
      '--otlp-port <n>',
      'real clock: accept OTLP/HTTP spans (protobuf or JSON, gzip or not) on 127.0.0.1:N/v1/traces into the trace',
      parsePort,
    )
    .option(
      '--metrics-linger <seconds>',
      'real clock: keep /metrics up this long after the run, with the final values and budget verdicts',
      parseLingerSeconds,
      DEFAULT_METRICS_LINGER_SECONDS,
    )
    .option(
      '--otlp-export <url>',
      "real clock: send the run's spans and metrics to this OTLP/HTTP endpoint (protobuf; e.g. http://127.0.0.1:4318)",
      parseOtlpExportUrl,
    )
    .option('--no-progress', 'real clock: no progress line on stderr')
    .option('--no-budgets', "run without judging the scenario's budgets")
    .option(
      '--require-samples',
      'a budget row with no samples (or a projection the run cannot support) fails (exit 99) instead of being shown as not judged',
    )
    .option('--require-judged', 'the same as --require-samples, by what it means for CI')
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
      tokenOption,
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

async function runCommand(ref: string, flags: RunFlags, io: CommandIo): Promise<void> {
  const notice = (message: string) => io.notice(`fleetbench: ${message}\n`);
  const plan = planFromOptions({
    ...flags,
    ref,
    env: io.env,
    progress: flags.progress && !io.quiet,
    warn: (message) => io.stderr.write(`fleetbench: warning: ${message}\n`),
    notice,
  });
  const outClaim = claimOutputDir(plan.outDir, `run ${ref}`);
  // First Ctrl-C: stop the run, keep the trace, write a partial summary. Second: leave now.
  const interrupt = onInterrupt('stopping the run, writing a partial summary', io);
  const telemetry = new RunTelemetry(plan.telemetry, {
    progressOut: io.stderr,
    notice,
    interrupt: interrupt.signal,
  });
  const segment = RunSegmentProcess.of(plan);
  try {
    await segment?.join(interrupt.signal, notice);
    const done = await executeRun(plan, {
      signal: interrupt.signal,
      attach: withTargetHeader(io, telemetry.attach()),
      afterRun: (outcome) => telemetry.afterRun(outcome),
    });
    const { outcome } = done;
    segment?.ended(outcome);
    printRun(plan, done, flags, io);
    io.exitCode = exitCodeOf(outcome, plan.outDir, io);
    if (outcome.reason !== 'interrupted') await telemetry.linger();
  } catch (error) {
    segment?.failed(error, interrupt.signal.aborted);
    throw error;
  } finally {
    await telemetry.close();
    interrupt.dispose();
    outClaim.release();
  }
}

/** The compact summary, the run's own sections and its verdicts, in the format asked for. */
function printRun(plan: RunPlan, done: RunDone, flags: RunFlags, io: CommandIo): void {
  const { scenario, target, segment } = plan;
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
      overrides: plan.changed ?? [],
      steadyStartMs: scenario.markers.steadyStartMs,
      // A failed run shows no verdict of any kind: nothing it measured is whole.
      scorecard: scenario.budgets.length === 0 && outcome.reason !== 'failed',
    }),
    ...analysisSections(summary.analysis, { top: 10 }).filter(
      (s) =>
        EXTRA_SECTIONS.has(s.title) ||
        // A real control plane's calls: who and what, AO's own blind spots made visible.
        (targetInfo(target).ownCalls && ownCallsSections(summary.analysis).has(s.title)),
    ),
    ...(outcome.verdicts ?? []).map(verdictSection),
  ];
  const text = reporters[format]().render({
    title: `run ${plan.cell ?? scenario.name}${segment ? ` segment ${segment.index}/${segment.count}` : ''}${outcome.reason === 'interrupted' ? ' (interrupted: partial)' : outcome.reason === 'failed' ? ' (FAILED: partial)' : ''}`,
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
