export {
  cliOf,
  type KeyBinding,
  ProviderEmulator,
  type ProviderEmulatorOptions,
  type ProviderStats,
} from './emulator.ts';
export { FAULT_KINDS, type FaultKind, type FaultRule, faultRuleSchema, parseFaultFlag } from './faults.ts';
export { type ProviderServerOptions, type RunningProviderServer, startProviderServer } from './http.ts';
export { type InProcessAnswer, requestInProcess } from './in-process.ts';
export { customProfile, LATENCY_PROFILES, type LatencyProfile, latencyProfileSchema } from './latency.ts';
export { LIMIT_KEYS, type LimitKey, type ProviderLimits } from './limits.ts';
export { type ExtraModel, parseModelSpec, parseModelSpecs } from './models.ts';
export {
  BUILTIN_SCRIPTS,
  DEFAULT_SCRIPT,
  defaultScriptName,
  loadScriptsFile,
  type ScriptsFile,
  scriptsFileSchema,
} from './scripts.ts';
export type { PlayOutcome, ProviderAnswer, ProviderRequest } from './types.ts';
