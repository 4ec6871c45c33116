/**
 * The scenario → reference control plane mapping, written once: the embedded control plane is
 * built with it and an `http` target is sent it as `config` (the served control plane reads it
 * with the same schema, src/reference/config.ts).
 */
import { defaultRestartOutage, type ReferenceConfig, referenceConfigSchema } from '../reference/config.ts';
import { defaultNativeRunConfig, type NativeRunConfig } from '../reference/runs/config.ts';
import type { Scenario } from '../workload/scenario.ts';

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
 * The reference control plane's settings for a scenario, checked against the schema the served
 * control plane validates with, so the two cannot drift apart.
 */
export function referenceConfigFor(scenario: Scenario): ReferenceConfig {
  const t = scenario.turnover;
  return referenceConfigSchema.parse({
    polling: scenario.polling,
    dashboard: scenario.dashboard,
    spawnTime: scenario.sessions.spawnTime,
    fixAfter: scenario.sessions.fixAfter,
    restartOutage: defaultRestartOutage,
    cacheSizes: scenario.caches,
    runs: nativeRunConfig(scenario),
    ...(t ? { actors: { lifecycle: t.lifecycleMode, resume: t.resumeMode, failures: t.failures } } : {}),
  } satisfies ReferenceConfig);
}
