/**
 * The Analysis schema's constants that the analysis worker threads need too: they load no zod
 * (worker-source.ts), so these live apart from schema.ts.
 */

/** The Analysis schemaVersion: bumped when a field is renamed or removed (adding one is compatible). */
export const ANALYSIS_SCHEMA_VERSION = 1;

/** A run schedules at most a few hundred faults (a chaos wave a dozen); more are left out. */
export const MAX_FAULT_MARKS = 1_000;

/** The speed timeline (the report's runs over time) lists at most this many runs; the rest are counted. */
export const MAX_TIMELINE_RUNS = 5_000;

/** The edges section (docs/analysis.md#edges-any-control-plane-from-its-traffic) lists at most this many sessions, spawns and orphans each. */
export const MAX_EDGE_ROWS = 5_000;

/** At most this many (via, host) groups of blocked attempts, and processes named per group. */
export const MAX_BLOCKED_HOSTS = 1_000;
export const MAX_BLOCKED_PROCESSES = 10;

/** At most this many paths of requests to the vendor's own endpoints are named; the rest count as `(other)`. */
export const MAX_FIRST_PARTY_PATHS = 100;
