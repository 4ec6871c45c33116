/**
 * The trace an importer writes: its header says where it came from (`source`, the input file's
 * name in the run id, a real clock, no seed), flushed only at the end.
 */
import { basename } from 'node:path';
import { VERSION } from '../../base/version.ts';
import { TraceWriter } from '../writer.ts';

export function importedTraceWriter(
  output: string,
  input: string,
  source: 'ao-gh' | 'otlp',
  scenarioName: string,
  epochMs: number,
): TraceWriter {
  return new TraceWriter(
    output,
    {
      runId: `${source}-${basename(input).replace(/\.[^.]*$/, '')}`,
      tool: { name: 'fleetbench', version: VERSION },
      clock: 'real',
      seed: null,
      scenario: { name: scenarioName, hash: null },
      epochMs,
      startedAt: new Date(epochMs).toISOString(),
      source,
    },
    { flushIntervalMs: 0 },
  );
}
