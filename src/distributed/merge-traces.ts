/**
 * Merging the traces of a live run's segments (docs/distributed.md): one trace in time order,
 * streamed (one record per input held at a time, so memory does not grow with the traces), and
 * one Analysis from the analyzer's own merge: each segment's records go to an analyzer of their
 * own, and the analyzers are merged (HDR histograms merged, counts added, never percentiles
 * averaged), so the figures equal one pass over the merged trace.
 *
 * Segments share one epoch when they start together (`--start-at`); when their epochs differ,
 * every record is moved onto the earliest epoch (× the time scale: times are run ms), so times
 * stay absolute. The shared GitHub emulator's own trace (`github serve --trace`: the API calls
 * of the whole run) can be one more input: its records are moved onto the run's epoch and only
 * those within the run (0 to the last segment's end) are kept; it has no say in how complete
 * the run is (a serving emulator's trace has no footer yet). Each input keeps its
 * own record order (a trace is only roughly time-ordered: a span is written when it ends);
 * the inputs are interleaved by time, the earliest head first.
 */

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { type Analyzer, createAnalyzer } from '../analyze/analyzer.ts';
import type { Analysis } from '../analyze/schema.ts';
import { FleetbenchError } from '../base/errors.ts';
import { emptyStats, type ReadStats } from '../trace/parser.ts';
import { TraceReader } from '../trace/reader.ts';
import type { BodyRecord, EndFooter, RunHeader } from '../trace/schema.ts';
import { TraceWriter } from '../trace/writer.ts';

export interface TraceMergeInput {
  path: string;
  /** Segment index, for messages and the merged header's labels. */
  index: number;
  /** `github`: the shared emulator's trace (see above); default `segment`. */
  role?: 'segment' | 'github';
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
  /** Records outside the run's window (the github input), not merged. */
  outside: number;
}

const shifted = (record: BodyRecord, by: number): BodyRecord =>
  by === 0 ? record : { ...record, t: record.t + by };

export async function mergeSegmentTraces(
  inputs: TraceMergeInput[],
  outPath: string,
  options: { lenient?: boolean; sessions?: number } = {},
): Promise<TraceMergeOutcome> {
  if (!inputs.some((i) => (i.role ?? 'segment') === 'segment'))
    throw new FleetbenchError('E_RESULTS', 'no segment traces to merge');
  // Segments first: the first is the merged header's base.
  const ordered = [
    ...inputs.filter((i) => (i.role ?? 'segment') === 'segment'),
    ...inputs.filter((i) => i.role === 'github'),
  ];
  // The run's window for the github input: up to the latest segment footer (read from the end).
  const footerTimes = ordered
    .filter((i) => i.role !== 'github')
    .map((i) => lastFooterT(i.path))
    .filter((t): t is number => t !== undefined);
  // No segment ended (all lost): nothing bounds the run, every call of the emulator is kept.
  const windowEnd = footerTimes.length > 0 ? Math.max(...footerTimes) : Number.POSITIVE_INFINITY;
  const heads: Head[] = [];
  for (const input of ordered) {
    // A serving emulator's trace may end in a half-written line: read leniently.
    const reader = new TraceReader(input.path, { lenient: options.lenient || input.role === 'github' });
    const iterator = reader.records();
    const first = await iterator.next();
    heads.push({
      input,
      reader,
      iterator,
      next: first.done ? undefined : first.value,
      shift: 0,
      records: 0,
      outside: 0,
    });
  }
  const headers = checkedHeaders(heads);
  const base = headers[0]!;
  const timeScale = base.timeScale ?? 1;
  const segmentCount = heads.filter((h) => h.input.role !== 'github').length;
  const epochMs = Math.min(
    ...headers.filter((_, i) => heads[i]!.input.role !== 'github').map((h) => h.epochMs),
  );
  const { segment: _segment, ...baseLabels } = base.labels ?? {};
  const header: RunHeader = {
    ...base,
    epochMs,
    startedAt: new Date(epochMs).toISOString(),
    labels: { ...baseLabels, segments: segmentCount },
  };
  for (const [i, h] of heads.entries()) {
    h.shift = (headers[i]!.epochMs - epochMs) * timeScale;
    h.analyzer = createAnalyzer({ header, sessions: options.sessions });
  }
  const github = heads.filter((h) => h.input.role === 'github');
  // The github input's records before the run or after its end are not the run's.
  const advance = async (h: Head) => {
    for (;;) {
      const next = await h.iterator.next();
      h.next = next.done ? undefined : next.value;
      if (h.input.role !== 'github' || h.next === undefined) return;
      const t = h.next.t + h.shift;
      if (t >= 0 && t <= windowEnd) return;
      h.outside++;
    }
  };
  for (const h of github) {
    if (h.next === undefined) continue;
    const t = h.next.t + h.shift;
    if (t < 0 || t > windowEnd) {
      h.outside++;
      await advance(h);
    }
  }
  const { kind: _kind, format: _format, ...headerInput } = header;
  const writer = new TraceWriter(outPath, headerInput, { flushIntervalMs: 0 });
  const records = await interleave(heads, writer, advance);
  const footers = heads.map((h) => h.reader.stats.footer);
  const segmentFooters = footers.filter((_, i) => heads[i]!.input.role !== 'github');
  // The merged run is as complete as its least complete segment.
  const reason: EndFooter['reason'] = segmentFooters.some((f) => f === undefined || f.reason === 'failed')
    ? 'failed'
    : segmentFooters.some((f) => f!.reason === 'interrupted')
      ? 'interrupted'
      : 'completed';
  const endT = Math.max(
    ...heads.map((h, i) => (h.input.role === 'github' ? 0 : (footers[i]?.t ?? 0) + h.shift)),
  );
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

/**
 * Each input's run header, checked: every segment of the same scenario and clock as the first,
 * the github input on the run's real clock and time scale (else its calls cannot be placed).
 */
function checkedHeaders(heads: readonly Head[]): RunHeader[] {
  const headers = heads.map((h) => {
    const header = h.reader.stats.header;
    if (!header) throw new FleetbenchError('E_TRACE', `${h.input.path}: no run header`);
    return header;
  });
  const base = headers[0]!;
  const timeScale = base.timeScale ?? 1;
  for (const [i, header] of headers.entries()) {
    if (heads[i]!.input.role === 'github') {
      if (header.clock !== 'real' || (header.timeScale ?? 1) !== timeScale)
        throw new FleetbenchError(
          'E_RESULTS',
          `${heads[i]!.input.path}: the emulator ran at time scale ${header.timeScale ?? 1} (${header.clock} clock), the run at ${timeScale}: its API calls cannot be placed on the run's timeline (start github serve with --time-scale ${timeScale})`,
        );
      continue;
    }
    if (header.scenario.hash !== base.scenario.hash || header.clock !== base.clock)
      throw new FleetbenchError(
        'E_RESULTS',
        `${heads[i]!.input.path}: not a segment of the same run as ${heads[0]!.input.path} (scenario ${header.scenario.name} ${String(header.scenario.hash).slice(0, 8)} vs ${base.scenario.name} ${String(base.scenario.hash).slice(0, 8)}, clock ${header.clock} vs ${base.clock})`,
      );
  }
  return headers;
}

/** Writes the inputs' records in time order (each shifted onto the merged timeline); their count. */
async function interleave(
  heads: readonly Head[],
  writer: TraceWriter,
  advance: (h: Head) => Promise<void>,
): Promise<number> {
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
      await advance(best);
    }
  } catch (error) {
    writer.close('failed');
    throw error;
  }
  return records;
}

/** The run time of a trace's footer, read from the file's end (undefined without one). */
function lastFooterT(path: string): number | undefined {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 64 * 1024);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').trimEnd().split('\n');
    const last = lines[lines.length - 1] ?? '';
    try {
      const footer = JSON.parse(last) as { kind?: string; t?: unknown };
      return footer.kind === 'end' && typeof footer.t === 'number' ? footer.t : undefined;
    } catch {
      return undefined;
    }
  } finally {
    closeSync(fd);
  }
}
