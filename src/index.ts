/**
 * fleetbench's public API for code that plugs into a run: `module` targets (docs/live-runs.md)
 * and shims of the `http` target protocol (docs/http-target.md). Import it as
 * `import type { Target, TargetContext } from 'fleetbench'`. Everything else under src/ is
 * internal and may change without notice; what is exported here follows semver.
 */

export type { Rng } from './base/rng.ts';
export type { Clock, TimerId } from './clock/clock.ts';
export type { EventConversion, ProtocolCapability, TargetEvent, TimeBase } from './contract/protocol.ts';
export { eventToRecord, TARGET_PROTOCOL } from './contract/protocol.ts';
export type {
  RestartKind,
  SessionSpec,
  SessionState,
  SessionStateListener,
  Target,
  TargetCapability,
} from './contract/types.ts';
export type { EmulatorRequest, EmulatorResponse, GitHubTransport } from './github/types.ts';
export { ATTRIBUTION_HEADERS } from './github/types.ts';
export type { TargetContext, TargetFactory } from './targets/module.ts';
export type { BodyRecord, EventRecord, GaugeRecord, Labels, SpanInput, SpanRecord } from './trace/schema.ts';
export type { TraceSink } from './trace/writer.ts';
export type { Scenario } from './workload/scenario.ts';
