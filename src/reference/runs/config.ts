/**
 * Native runs' settings: the control plane's stage timings and the per-adapter provider knobs
 * (scenario `control-plane` and `providers`, docs/reference-control-plane.md), and the provider
 * faults a run can inject.
 */

import type { Distribution } from '../../base/distribution.ts';
import type { Adapter } from '../../contract/types.ts';
import type { LearnedLatencies } from '../providers.ts';

export type LaunchReason = 'start' | 'recovery' | 'crash';

export interface NativeRunConfig {
  /**
   * Per adapter: a factor on boot, session load and first-activity latency (1: as profiled), and
   * a learned profile's latencies in place of the adapter's own (docs/model.md#speed).
   */
  providers: Record<Adapter, { slowdown: number; learned?: LearnedLatencies }>;
  controlPlane: {
    /** The control plane's own stages of a run start. */
    stages: {
      claim: Distribution;
      prepare: Distribution;
      runtime: Distribution;
      launch: Distribution;
      /** The launch of a cold start (an agent's first run), when it differs (a learned model's). */
      launchCold?: Distribution;
    };
    /** Input received → the run exists. */
    dispatch: Distribution;
    /** Recovery: reading one run back from durable state before it is claimed again. */
    reclaim: Distribution;
    /** Extra control-plane recovery work per run (the `control-plane.recovery-delay` knob). */
    recoveryDelay: Distribution;
    /** Runs recovered at once after a restart. */
    recoveryConcurrency: number;
    /** Hot restart: reattaching a surviving runner. */
    reattach: Distribution;
    /** A provider process died → the control plane notices. */
    crashDetect: Distribution;
    /** Graceful restart: how long runners get to reach an item boundary. */
    drainTimeoutMs: number;
  };
}

const lognormal = (median: number, p95: number): Distribution => ({ kind: 'lognormal', median, p95 });

export function defaultNativeRunConfig(): NativeRunConfig {
  return {
    providers: { claude: { slowdown: 1 }, codex: { slowdown: 1 }, opencode: { slowdown: 1 } },
    controlPlane: {
      stages: {
        claim: lognormal(100, 250),
        prepare: lognormal(220, 500),
        runtime: lognormal(300, 700),
        launch: lognormal(180, 400),
      },
      dispatch: lognormal(60, 300),
      reclaim: lognormal(100, 250),
      recoveryDelay: { kind: 'fixed', ms: 0 },
      recoveryConcurrency: 4,
      reattach: lognormal(250, 700),
      crashDetect: lognormal(1_000, 3_000),
      drainTimeoutMs: 10_000,
    },
  };
}

export type ProviderFaultSpec =
  | { type: 'slowdown'; adapter?: string; factor: number; durationMs?: number }
  | { type: 'crash'; adapter?: string; count: number };
