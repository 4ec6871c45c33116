// DuckDB as a whole process, for `npm run bench -- analyze` (plain JavaScript: no tsx start-up
// in its figures, as there is none in fleetbench's bundled start). Prints the api record count.
// Usage: node bench/duckdb-query.mjs FILE declared|auto
import { analyzeWithDuckDB } from './duckdb-analysis.mjs';

const [path, mode] = process.argv.slice(2);
console.log(await analyzeWithDuckDB(path, mode === 'declared'));
