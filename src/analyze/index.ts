export * from './analyzer.ts';
export * from './bins.ts';
export * from './file.ts';
export * from './histogram.ts';
export * from './schema.ts';
