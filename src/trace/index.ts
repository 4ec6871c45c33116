export * from './lines.ts';
export * from './parser.ts';
export * from './reader.ts';
export * from './schema.ts';
export * from './validate.ts';
export * from './writer.ts';
