export * from './budgets.ts';
export * from './derive.ts';
export * from './judge.ts';
export * from './metrics.ts';
export * from './report.ts';
