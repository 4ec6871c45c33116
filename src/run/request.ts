/**
 * A run as asked for (`RunOptions`, plain values: what `fleetbench run`'s flags say) resolved
 * into its `RunPlan`: the scenario with its overrides, the target, the directory, a live-run
 * segment and its common start, the shared GitHub and the live telemetry. This is the one place
 * that decides what a run is from what a caller asked (as vitest resolves a user config into its
 * resolved config); the CLI fills the options from its flags and wires and prints around the
 * plan, and `k8s manifest run` resolves the scenario its pods will run with `requestedScenario`.
 */
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { safePathSegment } from '../base/safe-name.ts';
import { parseTarget, targetInfo } from '../contract/target-ref.ts';
import { resolveScenarioRef } from '../workload/builtins.ts';
import { type Override, parseOverride } from '../workload/load.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { RunPlan, TelemetryPlan } from './plan.ts';
import { planRunSegment } from './segment.ts';
import { ADMIN_TOKEN_ENV, parseEmulatorUrl } from './shared-github.ts';

export interface RunOptions {
  /** A cell id, a built-in scenario name or the path of a scenario YAML file. */
  ref: string;
  /** `key=value` overrides of scenario fields, applied in order (`--set`). */
  set?: readonly string[];
  /** The seed as typed (`--seed`): an integer. */
  seed?: string;
  /** false: judge none of the scenario's budgets (`--no-budgets`). */
  budgets?: boolean;
  /** Budget rows with no samples (or projections the run cannot support) fail (`--require-samples`). */
  requireSamples?: boolean;
  /** The same, by its other name (`--require-judged`). */
  requireJudged?: boolean;
  /** The scenario's `target` (`--target`), `clock` (`--clock`) and `time-scale` (`--time-scale`). */
  target?: string;
  clock?: string;
  timeScale?: string;
  /** The run's directory; default fleetbench-out/runs/<name>[--real-<target>][--<overrides>]. */
  out?: string;
  /** false: no report.html (`--no-report`). */
  report?: boolean;
  /** A live run's segment `i/n` (`--segment`); default: the Indexed Job's environment. */
  segment?: string;
  /** The segments' common start, Unix ms or ISO time (`--start-at`); default: agreed through `out`. */
  startAt?: string;
  /** A shared GitHub emulator's base URL (`--github`) and its admin token (default: $FLEETBENCH_GITHUB_ADMIN_TOKEN). */
  github?: string;
  githubAdminToken?: string;
  /** Where the segment (JOB_COMPLETION_INDEX, FLEETBENCH_SEGMENTS) and the admin token are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Live telemetry of a real-clock run (`--no-progress`, `--metrics-port`, ...); TelemetryPlan says what each is. */
  progress?: boolean;
  metricsPort?: number;
  otlpPort?: number;
  otlpExport?: string;
  /** Seconds; default DEFAULT_METRICS_LINGER_SECONDS. */
  metricsLinger?: number;
  /**
   * The scenario's `agents` (`--agents`): `real` runs the real agent CLIs against the run's
   * provider emulator (its `provider:` settings through `--set provider.…`; docs/agents.md).
   */
  agents?: string;
  /** A learned model replayed where it never saw what the run needs (`--allow-extrapolation`). */
  allowExtrapolation?: boolean;
  /** Told what the user should know while the plan is made: a flag with no effect (a warning), where GitHub is. */
  warn?: (message: string) => void;
  notice?: (message: string) => void;
}

export const DEFAULT_METRICS_LINGER_SECONDS = 15;

/** The scenario a request names, with its overrides applied (what `k8s manifest run` checks as its pods will). */
export function requestedScenario(options: RunOptions): { scenario: Scenario; cell?: string } {
  return resolveScenarioRef(options.ref, requestOverrides(options));
}

/** `--set`, then the flags that are shorthands for a field (`--seed`, `--target`, ...). */
function requestOverrides(options: RunOptions): Override[] {
  const overrides: Override[] = (options.set ?? []).map(parseOverride);
  if (options.seed !== undefined) {
    if (!/^-?\d+$/.test(options.seed))
      throw new FleetbenchError('E_USAGE', `--seed: expected an integer, got '${options.seed}'`);
    overrides.push({ path: ['seed'], value: Number(options.seed), flag: `--seed ${options.seed}` });
  }
  if (options.budgets === false) overrides.push({ path: ['budgets'], value: [] });
  // Each shorthand names itself in a refusal (`--time-scale abc: …`), not the --set it stands for.
  if (options.target !== undefined)
    overrides.push({ path: ['target'], value: options.target, flag: `--target ${options.target}` });
  if (options.clock !== undefined)
    overrides.push({ path: ['clock'], value: options.clock, flag: `--clock ${options.clock}` });
  if (options.timeScale !== undefined) {
    // A number when it reads as one; else the text, which the schema refuses as not a number.
    const scale = Number(options.timeScale);
    overrides.push({
      path: ['time-scale'],
      value: options.timeScale.trim() === '' || Number.isNaN(scale) ? options.timeScale : scale,
      flag: `--time-scale ${options.timeScale}`,
    });
  }
  if (options.agents !== undefined)
    overrides.push({ path: ['agents'], value: options.agents, flag: `--agents ${options.agents}` });
  if (options.allowExtrapolation === true)
    overrides.push({ path: ['polling', 'allow-extrapolation'], value: true });
  return overrides;
}

/** What a run is, from what was asked: the plan `executeRun` runs and its caller wires around. */
export function planFromOptions(options: RunOptions): RunPlan {
  const env = options.env ?? process.env;
  const overrides = requestOverrides(options);
  const github = options.github !== undefined ? parseEmulatorUrl(options.github) : undefined;
  const { scenario, cell } = resolveScenarioRef(options.ref, overrides);
  const target = parseTarget(scenario.target);
  if (github !== undefined && scenario.clock === 'virtual')
    throw new FleetbenchError(
      'E_USAGE',
      '--github: a shared emulator runs on the real clock; add --clock real (docs/distributed.md)',
    );
  if (scenario.clock === 'virtual') warnInert(options);
  // What the user changed, in words: shown in the summary and, by default, in the run's
  // directory name, so a run with overrides does not overwrite the plain one.
  const changed = [...(options.set ?? []), ...(options.seed !== undefined ? [`seed=${options.seed}`] : [])];
  // A live run never overwrites the virtual run of the same scenario: its directory names
  // the clock and the target (`S2-T1-5--real-reference`, `S2-T1-5--real-http-127.0.0.1-7070`).
  const live = scenario.clock === 'real' ? [`real-${targetInfo(target).tag(target)}`] : [];
  const sharedOut =
    options.out ?? join('fleetbench-out', 'runs', runDirName(scenario.name, [...live, ...changed]));
  const segment = planRunSegment(options.segment, scenario, {
    github,
    startAt: options.startAt,
    outDir: sharedOut,
    env,
  });
  const adminToken = options.githubAdminToken ?? env[ADMIN_TOKEN_ENV];
  if (github !== undefined && !adminToken)
    throw new FleetbenchError(
      'E_USAGE',
      `--github: the emulator's admin token is needed (the world opens PRs and finishes CI through it): --github-admin-token or ${ADMIN_TOKEN_ENV}`,
    );
  if (github !== undefined && !segment)
    options.notice?.(
      `GitHub is the shared emulator at ${github}: it records the API calls (github serve --trace), not this run's trace (docs/distributed.md)`,
    );
  return {
    scenario,
    target,
    ...(cell ? { cell } : {}),
    changed,
    // A segment writes under the shared directory: segments/run-<i>-of-<n>/ and its record.
    outDir: segment ? segment.dir : sharedOut,
    // A segment has no report: alone it is not the run (fleetbench merge writes the run's).
    report: options.report !== false && !segment,
    ...(options.requireSamples || options.requireJudged ? { requireSamples: true } : {}),
    ...(segment
      ? {
          segment: segment.segment,
          epochMs: segment.startAtMs,
          segmentRecord: { path: segment.recordPath, runId: segment.runId },
        }
      : {}),
    ...(github !== undefined
      ? {
          github: {
            url: github,
            adminToken: adminToken!,
            snapshots: segment === undefined || segment.segment.index === 0,
          },
        }
      : {}),
    ...(scenario.clock === 'real' ? { telemetry: telemetryPlan(options) } : {}),
  };
}

function telemetryPlan(options: RunOptions): TelemetryPlan {
  return {
    progress: options.progress !== false,
    ...(options.metricsPort !== undefined ? { metricsPort: options.metricsPort } : {}),
    ...(options.otlpPort !== undefined ? { otlpPort: options.otlpPort } : {}),
    ...(options.otlpExport !== undefined ? { otlpExport: options.otlpExport } : {}),
    metricsLingerSeconds: options.metricsLinger ?? DEFAULT_METRICS_LINGER_SECONDS,
  };
}

/** Live-run settings given to a virtual-time run: said, never an error. */
function warnInert(options: RunOptions): void {
  const inert = [
    options.metricsPort !== undefined && '--metrics-port',
    options.otlpPort !== undefined && '--otlp-port',
    options.timeScale !== undefined && '--time-scale',
    options.otlpExport !== undefined && '--otlp-export',
  ].filter((f): f is string => typeof f === 'string');
  for (const flag of inert)
    options.warn?.(`${flag} has no effect with the virtual clock (add --clock real; docs/live-runs.md)`);
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

/** `--otlp-export`: an http(s) URL. */
export function parseOtlpExportUrl(text: string): string {
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

/** `--metrics-linger`: seconds, 0 to 3600. */
export function parseLingerSeconds(text: string): number {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0 || n > 3600)
    throw new FleetbenchError('E_USAGE', `expected seconds (0-3600), got '${text}'`);
  return n;
}

/** `--metrics-port`, `--otlp-port`: 0 to 65535 (0: a free port). */
export function parsePort(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new FleetbenchError('E_USAGE', `expected a port (0-65535), got '${text}'`);
  return n;
}
