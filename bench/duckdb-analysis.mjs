// The DuckDB side of `npm run bench -- analyze`, in one place for the in-process run
// (bench/analyze.bench.ts) and the whole-process one (bench/duckdb-query.mjs): read the api
// records (columns declared, or `read_json_auto`), five group-bys and the latency quantiles.
// Plain JavaScript so the process version has no tsx start-up in its figures.
import { DuckDBInstance } from '@duckdb/node-api';

/** Returns the number of api records DuckDB read. */
export async function analyzeWithDuckDB(path, declared) {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  const source = declared
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
  const records = Number(summary.getRowObjects()[0].n);
  con.closeSync();
  instance.closeSync();
  return records;
}
