// DuckDB as a whole process, for `npm run bench -- analyze` (plain JavaScript: no tsx start-up
// in its figures, as there is none in fleetbench's bundled start). Prints the api record count.
// Usage: node bench/duckdb-query.mjs FILE declared|auto
import { DuckDBInstance } from '@duckdb/node-api';

const [path, mode] = process.argv.slice(2);
const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
const source =
  mode === 'declared'
    ? `read_json('${path}', format = 'newline_delimited', columns = {kind: 'VARCHAR', op: 'VARCHAR', route: 'VARCHAR', status: 'INTEGER', source: 'VARCHAR', session: 'VARCHAR', dur: 'DOUBLE'})`
    : `read_json_auto('${path}', format = 'newline_delimited')`;
await con.run(
  `CREATE TEMP TABLE calls AS SELECT op, route, status, source, session, dur FROM ${source} WHERE kind = 'api'`,
);
for (const column of ['op', 'route', 'status', 'source', 'session']) {
  await con.runAndReadAll(`SELECT ${column}, count(*) FROM calls GROUP BY ${column}`);
}
const summary = await con.runAndReadAll(
  'SELECT count(*) AS n, quantile_cont(dur, [0.5, 0.9, 0.95, 0.99]) AS q, max(dur) AS mx FROM calls',
);
console.log(Number(summary.getRowObjects()[0].n));
con.closeSync();
instance.closeSync();
