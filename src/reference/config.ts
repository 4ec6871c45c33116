/**
 * The reference control plane's settings and their one schema. The embedded control plane gets
 * them from `referenceConfigFor(scenario)` (src/targets/reference-config.ts); the served one
 * reads them from the `config` of `POST /v1/run`, validated here, so both read the same settings
 * and a malformed one is a 400 naming the field, not a crash later in the run.
 */
import { z } from 'zod';
import { type Distribution, distributionSchema } from '../base/distribution.ts';
import { ADAPTERS, type Adapter, lifecycleModes, type RestartKind, resumeModes } from '../contract/types.ts';
import {
  type Model,
  modelOverrunRule,
  modelProvenanceLine,
  modelSchema,
  type OverrunRule,
  overrunRules,
} from '../model/format.ts';
import type { ActorHostConfig } from './actors.ts';
import { type DashboardMode, dashboardModes } from './dashboard.ts';
import { type PollingStrategyName, pollingStrategies } from './polling.ts';
import { type AoGhMode, aoGhModes } from './polling-ao.ts';
import type { NativeRunConfig } from './runs/config.ts';

export interface ReferenceConfig {
  polling: {
    strategy: PollingStrategyName;
    /** `ao-0.2` only: which gh the modelled agent-orchestrator shells out to. */
    aoGh?: AoGhMode;
    /** `ao-0.2` only: that gh's version, when it was found on this machine (what the run prints). */
    aoGhVersion?: string;
    /** `learned` only: the model to replay (its content, not its path: a served control plane gets it too). */
    learned?: Model;
    /** `learned` only: cores the client's calls queue on (default: the model's). */
    modelCores?: number;
    /**
     * `learned` and `ao-0.2`: the machine's other work, runnable tasks sharing the cores with the
     * client's calls (host.load; default: the model's, or none).
     */
    hostLoad?: number;
    /**
     * `learned` only: what the replay needs that the model never saw, when extrapolation was
     * allowed (a replay that needs any is refused otherwise: docs/model.md#coverage).
     */
    extrapolated?: Array<{ part: string; what: string; wholeRun?: boolean }>;
    /** `learned` only: the replay's scale against the model's, when it is beyond it. */
    scaleNote?: string;
    /** `ao-0.2` only: CPU time of one gh process, queued on `aoCpus` cores (0: not modelled). */
    aoGhProcessMs?: number;
    aoCpus?: number;
    intervalMs: number;
    /**
     * A tick that comes while a cycle still runs (docs/reference-control-plane.md#the-poll-loop);
     * absent: the strategy's own (`overrunRuleOf`).
     */
    overrun?: OverrunRule;
    concurrency: number;
    reviewThrottleMs: number;
    /** Requests per second the client sends at most (0: unpaced). */
    maxRps: number;
  };
  dashboard: { mode: DashboardMode; refreshMs: number; cacheTtlMs: number };
  /** spawning → working. */
  spawnTime: Distribution;
  /** Agent: review comments received → fix pushed and replies posted. */
  fixAfter: Distribution;
  /** Kill (or drain end) → ready, per restart kind. */
  restartOutage: Record<RestartKind, Distribution>;
  /** ETag LRU sizes (docs/reference-control-plane.md: 100 repos, 500 commits, 500 PRs). */
  cacheSizes: { repos: number; commits: number; prs: number };
  project?: string;
  /** Actors (park/wake): lifecycle and resume modes, failure rates. Default: suspend, implicit. */
  actors?: ActorHostConfig;
  /** Native runs and providers (runs.ts); defaults when absent. */
  runs?: NativeRunConfig;
}

/** The modelled outage of a restart in virtual time (a served control plane's outage is real). */
export const defaultRestartOutage: Record<RestartKind, Distribution> = {
  hard: { kind: 'lognormal', median: 2_500, p95: 6_000 },
  graceful: { kind: 'lognormal', median: 1_500, p95: 3_000 },
  hot: { kind: 'lognormal', median: 400, p95: 900 },
};

const count = z.number().int().nonnegative();
const ms = z.number().nonnegative();

const pollingSchema = z.object({
  strategy: z.enum(pollingStrategies),
  aoGh: z.enum(aoGhModes).optional(),
  aoGhVersion: z.string().optional(),
  learned: modelSchema.optional(),
  modelCores: count.optional(),
  hostLoad: z.number().nonnegative().optional(),
  extrapolated: z
    .array(z.object({ part: z.string(), what: z.string(), wholeRun: z.boolean().optional() }))
    .optional(),
  scaleNote: z.string().optional(),
  aoGhProcessMs: ms.optional(),
  aoCpus: count.optional(),
  intervalMs: ms,
  overrun: z.enum(overrunRules).optional(),
  concurrency: count,
  reviewThrottleMs: ms,
  maxRps: z.number().nonnegative(),
});
const dashboardSchema = z.object({ mode: z.enum(dashboardModes), refreshMs: ms, cacheTtlMs: ms });
const cacheSizesSchema = z.object({ repos: count, commits: count, prs: count });
const restartOutageSchema = z.object({
  hard: distributionSchema,
  graceful: distributionSchema,
  hot: distributionSchema,
});
const failureRatesSchema = z.object({
  busy: z.number().min(0).max(1),
  crashed: z.number().min(0).max(1),
  notFound: z.number().min(0).max(1),
});
const actorsSchema = z.object({
  lifecycle: z.enum(lifecycleModes),
  resume: z.enum(resumeModes),
  failures: failureRatesSchema.optional(),
});
const latencySchema = z.object({ median: z.number().nonnegative(), p95: z.number().nonnegative() });
const learnedLatenciesSchema = z.object({
  bootCold: latencySchema.optional(),
  bootWarmProcess: latencySchema.optional(),
  load: latencySchema.optional(),
  loadContention: z.number().nonnegative().optional(),
  replay: latencySchema.optional(),
  firstActivity: z.object({ cold: latencySchema.optional(), warm: latencySchema.optional() }).optional(),
  warmBootHoldsLoad: z.boolean().optional(),
});
const providerKnobsSchema = z.object({
  slowdown: z.number().positive(),
  learned: learnedLatenciesSchema.optional(),
});
const providersSchema = z.object(
  Object.fromEntries(ADAPTERS.map((a) => [a, providerKnobsSchema])) as Record<
    Adapter,
    typeof providerKnobsSchema
  >,
);
const nativeRunsSchema = z.object({
  providers: providersSchema,
  controlPlane: z.object({
    stages: z.object({
      claim: distributionSchema,
      prepare: distributionSchema,
      runtime: distributionSchema,
      launch: distributionSchema,
      launchCold: distributionSchema.optional(),
    }),
    dispatch: distributionSchema,
    reclaim: distributionSchema,
    recoveryDelay: distributionSchema,
    recoveryConcurrency: count,
    reattach: distributionSchema,
    crashDetect: distributionSchema,
    drainTimeoutMs: ms,
  }),
});

/** A whole ReferenceConfig: what `referenceConfigFor` builds from a scenario. */
export const referenceConfigSchema = z.object({
  polling: pollingSchema,
  dashboard: dashboardSchema,
  spawnTime: distributionSchema,
  fixAfter: distributionSchema,
  restartOutage: restartOutageSchema,
  cacheSizes: cacheSizesSchema,
  project: z.string().optional(),
  actors: actorsSchema.optional(),
  runs: nativeRunsSchema.optional(),
});

/** What a run may send as `config`: any part, over the defaults (a hand-written client sends none). */
export const servedConfigSchema = referenceConfigSchema
  .extend({
    polling: pollingSchema.partial(),
    dashboard: dashboardSchema.partial(),
    cacheSizes: cacheSizesSchema.partial(),
  })
  .partial();

export type ServedConfig = z.infer<typeof servedConfigSchema>;

// The schema must describe the interface: a drift between them is a compile error here.
const _wholeConfigFits = (c: z.infer<typeof referenceConfigSchema>): ReferenceConfig => c;
void _wholeConfigFits;

const uniform = (min: number, max: number): Distribution => ({ kind: 'uniform', min, max });

/** Settings when a run sends none (a hand-written client, curl): the scenario defaults. */
export const DEFAULT_SERVED_CONFIG: ReferenceConfig = {
  polling: { strategy: 'guarded', intervalMs: 30_000, concurrency: 8, reviewThrottleMs: 120_000, maxRps: 10 },
  dashboard: { mode: 'enrich', refreshMs: 15_000, cacheTtlMs: 300_000 },
  spawnTime: uniform(2_000, 6_000),
  fixAfter: uniform(60_000, 180_000),
  restartOutage: defaultRestartOutage,
  cacheSizes: { repos: 100, commits: 500, prs: 500 },
};

/**
 * The served control plane's settings: a run's validated `config` over the defaults. A real
 * restart's outage is real, so the modelled one never applies.
 */
export function servedConfig(config: ServedConfig | undefined): ReferenceConfig {
  const c = config ?? {};
  return {
    ...DEFAULT_SERVED_CONFIG,
    ...c,
    polling: { ...DEFAULT_SERVED_CONFIG.polling, ...c.polling },
    dashboard: { ...DEFAULT_SERVED_CONFIG.dashboard, ...c.dashboard },
    cacheSizes: { ...DEFAULT_SERVED_CONFIG.cacheSizes, ...c.cacheSizes },
    restartOutage: defaultRestartOutage,
  };
}

/**
 * The poll loop's overrun rule: the one asked, else the strategy's: agent-orchestrator skips the
 * ticks that come during a poll (`ao-0.2`), a learned model does what its traces showed, and the
 * reference's own strategies start the next cycle as soon as an overrunning one ends.
 */
export function overrunRuleOf(polling: ReferenceConfig['polling']): OverrunRule {
  if (polling.overrun) return polling.overrun;
  if (polling.strategy === 'ao-0.2') return 'skip';
  if (polling.strategy === 'learned' && polling.learned) return modelOverrunRule(polling.learned);
  return 'immediate';
}

/**
 * What a modelled strategy is a model of, for the run's header and its trace: which gh `ao-0.2`
 * models (and whether it is this machine's), which traces a `learned` model came from.
 */
export function describeStrategy(polling: ReferenceConfig['polling']): string[] {
  if (polling.strategy === 'ao-0.2') {
    const gh = polling.aoGh ?? 'current';
    const which = polling.aoGhVersion
      ? `gh ${polling.aoGhVersion}, the one on this machine`
      : gh === 'legacy'
        ? 'a gh without `gh pr checks --json`'
        : 'a current gh';
    return [
      `polling ao-0.2 models agent-orchestrator 0.2.0 with ${which} (polling.ao-gh ${gh}${gh === 'legacy' ? ': open PRs read as failing CI' : ''})`,
    ];
  }
  if (polling.strategy === 'learned' && polling.learned) {
    const model = polling.learned;
    const extrapolated = polling.extrapolated ?? [];
    const lines = [
      `polling learned: ${modelProvenanceLine(model)}${extrapolated.length > 0 ? `; EXTRAPOLATED (--allow-extrapolation), never in its traces: ${extrapolated.map((g) => `${g.part} (${g.what})`).join('; ')}` : ''}`,
    ];
    const cores = polling.modelCores ?? model.cycleTime.cores;
    const load = polling.hostLoad ?? model.cycleTime.load ?? 0;
    const learnedAt = `${model.cycleTime.cores} cores at load ${model.cycleTime.load ?? 0}`;
    lines.push(
      `polling learned: the client's machine: ${cores} cores at load ${load}${cores === model.cycleTime.cores && load === (model.cycleTime.load ?? 0) ? ', as learned' : ` (learned on ${learnedAt}; host.cores, host.load)`}`,
    );
    if (polling.scaleNote) lines.push(`polling learned: scale: ${polling.scaleNote}`);
    return lines;
  }
  return [];
}
