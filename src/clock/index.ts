export * from './clock.ts';
export * from './real.ts';
export * from './virtual.ts';
