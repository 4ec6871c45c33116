/** The matrix: units, the child-process pool, baselines, pruning, and run comparison. */
export * from './baseline.ts';
export * from './markdown.ts';
export * from './metrics.ts';
export * from './pool.ts';
export * from './prune.ts';
export * from './run.ts';
export * from './select.ts';
export * from './stats.ts';
export * from './summary.ts';
