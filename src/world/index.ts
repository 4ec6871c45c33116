/** The world a command runs in (docs/world.md): see world.ts. */
export { makeWorldCa, type WorldCa } from './ca.ts';
export type { BlockedAttempt, BlockedVia } from './edge.ts';
export { DEFAULT_HOSTS, hostTable, SERVICE_ADDRESS, type WorldService } from './hosts.ts';
export { sandboxSupport } from './sandbox.ts';
export { type Spawn, SpawnRegistry } from './spawns.ts';
export {
  openWorld,
  resolveWorldMode,
  WORLD_MODES,
  type World,
  type WorldMode,
  type WorldModeOption,
  type WorldOptions,
  type WorldProcess,
} from './world.ts';
