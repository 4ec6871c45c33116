/**
 * The scenario → reference control plane mapping, written once: the embedded control plane is
 * built with it and an `http` target is sent it as `config` (the served control plane reads it
 * with the same schema, src/reference/config.ts).
 */
import { resolve } from 'node:path';
import type { Distribution } from '../base/distribution.ts';
import { FleetbenchError } from '../base/errors.ts';
import { ADAPTERS } from '../contract/types.ts';
import { coverageGaps, type ReplayWorld, scaleNote, teachingHint } from '../model/coverage.ts';
import {
  loadModelFile,
  type Model,
  type ModelSpeed,
  type OverrunRule,
  type SpeedLatency,
} from '../model/format.ts';
import { defaultRestartOutage, type ReferenceConfig, referenceConfigSchema } from '../reference/config.ts';
import type { Latency, LearnedLatencies } from '../reference/providers.ts';
import { defaultNativeRunConfig, type NativeRunConfig } from '../reference/runs/config.ts';
import type { Scenario } from '../workload/scenario.ts';
import { detectGhOnce } from './ao/gh.ts';

/** A learned latency as the reference's profiles state it (log-normal median and p95). */
function asLatency(l: SpeedLatency | null | undefined): Latency | undefined {
  return l ? { median: l.p50, p95: Math.max(l.p50, l.p95) } : undefined;
}

function asDistribution(l: SpeedLatency | null | undefined, fallback: Distribution): Distribution {
  if (!l) return fallback;
  return l.p95 > l.p50 && l.p50 > 0
    ? { kind: 'lognormal', median: l.p50, p95: l.p95 }
    : { kind: 'fixed', ms: l.p50 };
}

/** A learned speed profile's latencies, per adapter the model knows, over the reference's. */
function learnedProviders(providers: Scenario['providers'], speed: ModelSpeed): NativeRunConfig['providers'] {
  const out = { ...providers } as NativeRunConfig['providers'];
  // A model of one adapter (a Paperclip run's `codex_local`, say) stands for every adapter.
  const only = Object.values(speed.adapters);
  for (const adapter of ADAPTERS) {
    const a = speed.adapters[adapter] ?? (only.length === 1 ? only[0] : undefined);
    if (!a) continue;
    const learned: LearnedLatencies = {};
    const put = <K extends 'bootCold' | 'bootWarmProcess' | 'load' | 'replay'>(
      key: K,
      l: SpeedLatency | null,
    ) => {
      const latency = asLatency(l);
      if (latency) learned[key] = latency;
    };
    put('bootCold', a.bootCold);
    put('bootWarmProcess', a.bootWarmProcess);
    put('load', a.load);
    put('replay', a.replay);
    if (a.loadContention !== null) learned.loadContention = a.loadContention;
    if (a.warmBootHoldsLoad) learned.warmBootHoldsLoad = true;
    const cold = asLatency(a.firstActivity.cold);
    const warm = asLatency(a.firstActivity.warm);
    if (cold || warm) learned.firstActivity = { ...(cold ? { cold } : {}), ...(warm ? { warm } : {}) };
    out[adapter] = { ...providers[adapter], learned };
  }
  return out;
}

/** The native runs' settings from a scenario's `providers` and `control-plane` (and its learned model). */
function nativeRunConfig(scenario: Scenario): NativeRunConfig {
  const defaults = defaultNativeRunConfig();
  const file = scenario.controlPlane.model;
  const speed = file ? loadModelFile(resolve(file)).speed : undefined;
  if (file && !speed)
    throw new FleetbenchError(
      'E_MODEL',
      `${file}: control-plane.model replays a speed profile, and this model has none (its traces had no native-run records: docs/model.md#speed)`,
    );
  const stages = defaults.controlPlane.stages;
  const cp = speed?.controlPlane;
  return {
    providers: speed ? learnedProviders(scenario.providers, speed) : scenario.providers,
    controlPlane: {
      ...defaults.controlPlane,
      ...(cp
        ? {
            // A control plane that reports no stages of its own: its whole way to the boot is one.
            stages:
              !cp.claim && !cp.prepare && !cp.runtime && !cp.launch && cp.toBoot
                ? {
                    claim: { kind: 'fixed', ms: 0 },
                    prepare: { kind: 'fixed', ms: 0 },
                    runtime: { kind: 'fixed', ms: 0 },
                    launch: asDistribution(cp.toBoot, stages.launch),
                    ...(cp.toBootCold ? { launchCold: asDistribution(cp.toBootCold, stages.launch) } : {}),
                  }
                : {
                    claim: asDistribution(cp.claim, stages.claim),
                    prepare: asDistribution(cp.prepare, stages.prepare),
                    runtime: asDistribution(cp.runtime, stages.runtime),
                    launch: asDistribution(cp.launch, stages.launch),
                  },
            dispatch: asDistribution(cp.dispatch, defaults.controlPlane.dispatch),
            reattach: asDistribution(cp.reattach, defaults.controlPlane.reattach),
          }
        : {}),
      recoveryDelay: scenario.controlPlane.recoveryDelay,
      recoveryConcurrency: scenario.controlPlane.recoveryConcurrency,
      drainTimeoutMs: scenario.controlPlane.drainTimeoutMs,
    },
  };
}

/**
 * `ao-0.2`'s gh: as asked, or (`auto`) the one a real run on this machine would use, found the way
 * `--target ao` finds it; `current` when this machine has none.
 */
function aoGhOf(scenario: Scenario): Pick<ReferenceConfig['polling'], 'aoGh' | 'aoGhVersion'> {
  const asked = scenario.polling.aoGh;
  if (asked !== 'auto') return { aoGh: asked };
  const gh = detectGhOnce();
  return gh ? { aoGh: gh.prChecksJson ? 'current' : 'legacy', aoGhVersion: gh.version } : { aoGh: 'current' };
}

/** A restart's outage as the model measured it, per kind; the defaults for kinds it never saw. */
function learnedOutage(model: Model): ReferenceConfig['restartOutage'] {
  const outage = { ...defaultRestartOutage };
  for (const kind of ['hard', 'graceful', 'hot'] as const) {
    const seen = model.restartOutageMs[kind];
    if (!seen) continue;
    outage[kind] =
      seen.p95 > seen.p50 && seen.p50 > 0
        ? ({ kind: 'lognormal', median: seen.p50, p95: seen.p95 } satisfies Distribution)
        : { kind: 'fixed', ms: seen.p50 };
  }
  return outage;
}

/** The largest value a distribution can draw (a log-normal's has no bound). */
const maxOf = (d: Distribution) =>
  d.kind === 'fixed' ? d.ms : d.kind === 'uniform' ? d.max : Number.POSITIVE_INFINITY;

/** What the scenario will make happen to its sessions, for the model's coverage (src/model/coverage.ts). */
function replayWorld(scenario: Scenario, model: Model): ReplayWorld {
  const { sessions, faults, topology } = scenario;
  return {
    sessions: sessions.count,
    sessionsPerLoop:
      model.loop.scope === 'project'
        ? Math.ceil(sessions.count / Math.max(1, topology.repos))
        : sessions.count,
    prLater: maxOf(sessions.prAfter) > 0,
    ciLater: maxOf(sessions.ciAfter) > 0,
    reviews: faults.some((f) => f.type === 'review-burst'),
    fixLater: maxOf(sessions.fixAfter) > 0,
    merges: sessions.mergeAfter !== undefined,
    restarts: faults.flatMap((f) => (f.type === 'restart' ? [f.kind] : [])),
    repos: topology.repos,
    intervalMs: scenario.polling.intervalMs,
    ...(scenario.host ? { host: scenario.host } : {}),
  };
}

/**
 * A learned model against the run it would replay: a model with no polling (a speed profile only)
 * is refused, and so is a replay that needs states or events the model never saw, unless
 * extrapolation is allowed; then the run's header names them (docs/model.md#coverage).
 */
function learnedCoverage(
  scenario: Scenario,
  model: Model,
  file: string,
  allow: boolean,
): Pick<ReferenceConfig['polling'], 'extrapolated' | 'scaleNote'> {
  if (model.sessions.cycles.length === 0)
    throw new FleetbenchError(
      'E_MODEL',
      `${file}: this model has no poll cycles to replay (its traces had none: ${model.provenance.traces.map((t) => t.scenario).join(', ')}); it is ${[model.tasks ? `a cost per task (${model.tasks.samples} tasks done one after another: docs/model.md#cycles-from-traffic)` : '', model.speed ? 'a speed profile, for control-plane.model (docs/model.md#speed)' : ''].filter(Boolean).join(' and ') || 'empty'}`,
      { hint: 'learn a polling model from a trace with poll cycles: fleetbench run learn --target …' },
    );
  const world = replayWorld(scenario, model);
  const gaps = coverageGaps(model, world);
  const learnedFrom = [...new Set(model.provenance.traces.map((t) => t.cell ?? t.scenario))].join(', ');
  if (gaps.length > 0 && !allow)
    throw new FleetbenchError(
      'E_MODEL',
      `${file}: replaying ${scenario.name} needs what the model (learned from ${learnedFrom}) never saw: ${gaps.map((g) => `${g.part}: ${g.what}`).join('; ')}`,
      { hint: teachingHint(gaps) },
    );
  const note = scaleNote(model, world);
  return { ...(gaps.length > 0 ? { extrapolated: gaps } : {}), ...(note ? { scaleNote: note } : {}) };
}

// The scenario's overrun rules are the loop's: a drift between the two lists is a compile error here.
type SameValues<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _overrunRulesAgree: SameValues<NonNullable<Scenario['polling']['overrun']>, OverrunRule> = true;
void _overrunRulesAgree;

/**
 * The reference control plane's settings for a scenario, checked against the schema the served
 * control plane validates with, so the two cannot drift apart. A learned model is read here, so a
 * bad one is refused before the run starts.
 */
export function referenceConfigFor(scenario: Scenario): ReferenceConfig {
  const t = scenario.turnover;
  const { model: modelFile, modelCores, allowExtrapolation, aoGh: _asked, ...polling } = scenario.polling;
  const learned =
    scenario.polling.strategy === 'learned' && modelFile ? loadModelFile(resolve(modelFile)) : undefined;
  const host = scenario.host;
  const cores = host?.cores ?? modelCores;
  return referenceConfigSchema.parse({
    polling: {
      ...polling,
      ...(scenario.polling.strategy === 'ao-0.2'
        ? { ...aoGhOf(scenario), ...(host?.cores !== undefined ? { aoCpus: host.cores } : {}) }
        : {}),
      ...(host?.load !== undefined ? { hostLoad: host.load } : {}),
      ...(learned && modelFile
        ? {
            learned,
            ...(cores !== undefined ? { modelCores: cores } : {}),
            ...learnedCoverage(scenario, learned, modelFile, allowExtrapolation === true),
          }
        : {}),
    },
    dashboard: scenario.dashboard,
    spawnTime: scenario.sessions.spawnTime,
    fixAfter: scenario.sessions.fixAfter,
    restartOutage: learned
      ? learnedOutage(learned)
      : scenario.controlPlane.model
        ? learnedOutage(loadModelFile(resolve(scenario.controlPlane.model)))
        : defaultRestartOutage,
    cacheSizes: scenario.caches,
    runs: nativeRunConfig(scenario),
    ...(t ? { actors: { lifecycle: t.lifecycleMode, resume: t.resumeMode, failures: t.failures } } : {}),
  } satisfies ReferenceConfig);
}
