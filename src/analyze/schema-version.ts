/** The Analysis schemaVersion: bumped when a field is renamed or removed (adding one is compatible). */
export const ANALYSIS_SCHEMA_VERSION = 1;
