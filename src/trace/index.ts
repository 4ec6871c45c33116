export * from './reader.ts';
export * from './schema.ts';
export * from './writer.ts';
