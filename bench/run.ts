/**
 * `npm run bench [-- name...]`: runs every bench/*.bench.ts (or the named ones) one after the
 * other and prints their figures. Benchmarks are not tests: each compares fleetbench with a
 * reference measured in the same run and reports ratios, because this machine is shared and
 * noisy. Copy the printed tables into docs/performance.md with the command that produced them.
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BenchSettingError } from './env.ts';

export interface Bench {
  name: string;
  description: string;
  /** Prints its figures (markdown tables) and returns them for the summary. */
  run(): Promise<Record<string, number | string>>;
}

const dir = fileURLToPath(new URL('.', import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort();
const unknown = wanted.filter((w) => !files.includes(`${w}.bench.ts`));
if (unknown.length > 0) {
  console.error(
    `unknown bench: ${unknown.join(', ')} (have: ${files.map((f) => f.replace('.bench.ts', '')).join(', ')})`,
  );
  process.exit(2);
}
const summary: Record<string, Record<string, number | string>> = {};
for (const file of files) {
  const name = file.replace('.bench.ts', '');
  if (wanted.length > 0 && !wanted.includes(name)) continue;
  let bench: Bench;
  try {
    bench = (await import(new URL(file, import.meta.url).href)).default as Bench;
  } catch (error) {
    if (!(error instanceof BenchSettingError)) throw error;
    console.error(`bench ${name}: ${error.message}`);
    process.exit(2);
  }
  console.log(`\n## ${bench.name}: ${bench.description}\n`);
  const started = performance.now();
  summary[bench.name] = await bench.run();
  console.log(`\n(${bench.name} took ${((performance.now() - started) / 1000).toFixed(1)} s)`);
}
console.log('\n## Summary\n');
console.log(JSON.stringify(summary, null, 2));
