/**
 * Merging the traces of a live run's segments (docs/distributed.md): one trace in time order,
 * streamed (one record per input held at a time, so memory does not grow with the traces), and
 * one Analysis from the analyzer's own merge: each segment's records go to an analyzer of their
 * own, and the analyzers are merged (HDR histograms merged, counts added, never percentiles
 * averaged), so the figures equal one pass over the merged trace.
 *
 * Segments share one epoch when they start together (`--start-at`); when their epochs differ,
 * every record is moved onto the earliest epoch, so times stay absolute. Each input keeps its
 * own record order (a trace is only roughly time-ordered: a span is written when it ends);
 * the inputs are interleaved by time, the earliest head first.
 */
import { type Analyzer, createAnalyzer } from '../analyze/analyzer.ts';
import type { Analysis } from '../analyze/schema.ts';
import { FleetbenchError } from '../errors.ts';
import { emptyStats, type ReadStats } from '../trace/parser.ts';
import { TraceReader } from '../trace/reader.ts';
import type { BodyRecord, EndFooter, RunHeader } from '../trace/schema.ts';
import { TraceWriter } from '../trace/writer.ts';

export interface TraceMergeInput {
  path: string;
  /** Segment index, for messages and the merged header's labels. */
  index: number;
}

export interface MergedSegmentTrace {
  path: string;
  index: number;
  header: RunHeader;
  footer: EndFooter | undefined;
  records: number;
}

export interface TraceMergeOutcome {
  path: string;
  records: number;
  segments: MergedSegmentTrace[];
  reason: EndFooter['reason'];
  analysis: Analysis;
}

interface Head {
  input: TraceMergeInput;
  reader: TraceReader;
  iterator: AsyncGenerator<BodyRecord>;
  next: BodyRecord | undefined;
  shift: number;
  analyzer?: Analyzer;
  records: number;
}

const shifted = (record: BodyRecord, by: number): BodyRecord =>
  by === 0 ? record : { ...record, t: record.t + by };

export async function mergeSegmentTraces(
  inputs: TraceMergeInput[],
  outPath: string,
  options: { lenient?: boolean; sessions?: number } = {},
): Promise<TraceMergeOutcome> {
  if (inputs.length === 0) throw new FleetbenchError('E_RESULTS', 'no segment traces to merge');
  const heads: Head[] = [];
  for (const input of inputs) {
    const reader = new TraceReader(input.path, { lenient: options.lenient });
    const iterator = reader.records();
    const first = await iterator.next();
    heads.push({ input, reader, iterator, next: first.done ? undefined : first.value, shift: 0, records: 0 });
  }
  const headers = heads.map((h) => {
    const header = h.reader.stats.header;
    if (!header) throw new FleetbenchError('E_TRACE', `${h.input.path}: no run header`);
    return header;
  });
  const base = headers[0]!;
  for (const [i, header] of headers.entries()) {
    if (header.scenario.hash !== base.scenario.hash || header.clock !== base.clock)
      throw new FleetbenchError(
        'E_RESULTS',
        `${heads[i]!.input.path}: not a segment of the same run as ${heads[0]!.input.path} (scenario ${header.scenario.name} ${String(header.scenario.hash).slice(0, 8)} vs ${base.scenario.name} ${String(base.scenario.hash).slice(0, 8)}, clock ${header.clock} vs ${base.clock})`,
      );
  }
  const epochMs = Math.min(...headers.map((h) => h.epochMs));
  const header: RunHeader = {
    ...base,
    epochMs,
    startedAt: new Date(epochMs).toISOString(),
    labels: { ...base.labels, segments: inputs.length },
  };
  for (const [i, h] of heads.entries()) {
    h.shift = headers[i]!.epochMs - epochMs;
    h.analyzer = createAnalyzer({ header, sessions: options.sessions });
  }
  const { kind: _kind, format: _format, ...headerInput } = header;
  const writer = new TraceWriter(outPath, headerInput, { flushIntervalMs: 0 });
  let records = 0;
  try {
    for (;;) {
      let best: Head | undefined;
      let bestT = Number.POSITIVE_INFINITY;
      for (const h of heads) {
        if (h.next === undefined) continue;
        const t = h.next.t + h.shift;
        if (t < bestT) {
          best = h;
          bestT = t;
        }
      }
      if (best === undefined) break;
      const record = shifted(best.next!, best.shift);
      writer.write(record);
      best.analyzer!.add(record);
      best.records++;
      records++;
      const next = await best.iterator.next();
      best.next = next.done ? undefined : next.value;
    }
  } catch (error) {
    writer.close('failed');
    throw error;
  }
  const footers = heads.map((h) => h.reader.stats.footer);
  // The merged run is as complete as its least complete segment.
  const reason: EndFooter['reason'] = footers.some((f) => f === undefined || f.reason === 'failed')
    ? 'failed'
    : footers.some((f) => f!.reason === 'interrupted')
      ? 'interrupted'
      : 'completed';
  const endT = Math.max(...heads.map((h, i) => (footers[i]?.t ?? 0) + h.shift));
  writer.close(reason, endT);
  const merged = heads[0]!.analyzer!;
  for (const h of heads.slice(1)) merged.merge(h.analyzer!);
  const stats: ReadStats = {
    ...emptyStats(),
    header: writer.header,
    footer: { kind: 'end', t: endT, reason, counts: { ...writer.counts } },
    lines: records + 2,
    counts: { ...writer.counts },
    skipped: heads.reduce((n, h) => n + h.reader.stats.skipped, 0),
    skippedReasons: heads.flatMap((h) => h.reader.stats.skippedReasons).slice(0, 10),
    warnings: heads.flatMap((h) => h.reader.stats.warnings.map((w) => `${h.input.path}: ${w}`)),
  };
  return {
    path: outPath,
    records,
    reason,
    segments: heads.map((h, i) => ({
      path: h.input.path,
      index: h.input.index,
      header: headers[i]!,
      footer: footers[i],
      records: h.records,
    })),
    analysis: merged.finish({ file: outPath, stats }),
  };
}
