/**
 * One merge of segment traces in its own process (so /usr/bin/time's peak RSS is the merge's
 * alone): `tsx bench/merge-child.ts OUT IN...`. Prints the record count.
 */
import { mergeSegmentTraces } from '../src/distributed/merge-traces.ts';

const [out, ...inputs] = process.argv.slice(2);
const merged = await mergeSegmentTraces(
  inputs.map((path, index) => ({ path, index })),
  out!,
);
console.log(JSON.stringify({ records: merged.records, calls: merged.analysis.api.totals.calls }));
