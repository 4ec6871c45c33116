export * from './ao-gh.ts';
export * from './otlp.ts';
