/**
 * The scenario → reference control plane mapping, written once: the embedded control plane is
 * built with it and an `http` target is sent it as `config` (the served control plane reads it
 * with the same schema, src/reference/config.ts).
 */
import { resolve } from 'node:path';
import type { Distribution } from '../distribution.ts';
import { loadModelFile, type Model } from '../model/format.ts';
import { defaultRestartOutage, type ReferenceConfig, referenceConfigSchema } from '../reference/config.ts';
import { defaultNativeRunConfig, type NativeRunConfig } from '../reference/runs/config.ts';
import type { Scenario } from '../workload/scenario.ts';
import { detectGhOnce } from './ao/gh.ts';

/** The native runs' settings from a scenario's `providers` and `control-plane`. */
function nativeRunConfig(scenario: Scenario): NativeRunConfig {
  const defaults = defaultNativeRunConfig();
  return {
    providers: scenario.providers,
    controlPlane: {
      ...defaults.controlPlane,
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

/**
 * The reference control plane's settings for a scenario, checked against the schema the served
 * control plane validates with, so the two cannot drift apart. A learned model is read here, so a
 * bad one is refused before the run starts.
 */
export function referenceConfigFor(scenario: Scenario): ReferenceConfig {
  const t = scenario.turnover;
  const { model: modelFile, modelCores, aoGh: _asked, ...polling } = scenario.polling;
  const learned =
    scenario.polling.strategy === 'learned' && modelFile ? loadModelFile(resolve(modelFile)) : undefined;
  return referenceConfigSchema.parse({
    polling: {
      ...polling,
      ...(scenario.polling.strategy === 'ao-0.2' ? aoGhOf(scenario) : {}),
      ...(learned ? { learned, ...(modelCores !== undefined ? { modelCores } : {}) } : {}),
    },
    dashboard: scenario.dashboard,
    spawnTime: scenario.sessions.spawnTime,
    fixAfter: scenario.sessions.fixAfter,
    restartOutage: learned ? learnedOutage(learned) : defaultRestartOutage,
    cacheSizes: scenario.caches,
    runs: nativeRunConfig(scenario),
    ...(t ? { actors: { lifecycle: t.lifecycleMode, resume: t.resumeMode, failures: t.failures } } : {}),
  } satisfies ReferenceConfig);
}
