/**
 * Joins the segments of one live run (src/distributed/run-segment.ts) into the run's result, as
 * one process would have written it: one trace in time order (the segments' traces and the shared
 * emulator's API calls, streamed: merge-traces.ts), its Analysis from the analyzer's own merge,
 * and summary.json beside it. A segment that is missing, lost (`running`), failed or interrupted
 * is named, and the result says it is partial.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { makeDirectories, writeOutputFile } from '../base/safe-write.ts';
import { RUN_SUMMARY_VERSION, type RunSummary } from '../results/run-summary.ts';
import type { Scenario } from '../workload/scenario.ts';
import { mergeSegmentTraces, type TraceMergeInput, type TraceMergeOutcome } from './merge-traces.ts';
import type { FoundRunSegment, RunSegmentRecord } from './run-segment.ts';
import { segmentsByIndex } from './segment.ts';

export interface RunSegmentReport {
  index: number;
  status: RunSegmentRecord['status'] | 'missing';
  file: string | null;
  sessions: number;
  /** Records of its trace in the merged one. */
  records: number;
  error?: string;
}

export interface RunMergeOutcome {
  summary: RunSummary & { segments: RunSegmentReport[]; github: { trace: string | null; records: number } };
  tracePath: string;
  summaryPath: string;
  segments: RunSegmentReport[];
  partial: boolean;
  merge: TraceMergeOutcome;
}

/** Where the shared emulator's trace is looked for when none is given: `<dir>/github/trace.jsonl`. */
export const GITHUB_TRACE = join('github', 'trace.jsonl');

export async function mergeRunSegments(
  found: FoundRunSegment[],
  outDir: string,
  options: { githubTrace?: string; searchDirs?: string[] } = {},
): Promise<RunMergeOutcome> {
  if (found.length === 0) throw new FleetbenchError('E_RESULTS', 'no run segment records to merge');
  const first = found[0]!;
  const { run, segment } = first.record;
  for (const f of found.slice(1)) {
    if (f.record.run.runId !== run.runId || f.record.run.scenario.hash !== run.scenario.hash)
      throw new FleetbenchError(
        'E_RESULTS',
        `${f.path}: a segment of another run than ${first.path} (${f.record.run.runId} vs ${run.runId}); merge the segments of one run at a time`,
      );
    if (f.record.segment.count !== segment.count)
      throw new FleetbenchError(
        'E_RESULTS',
        `${f.path}: ${f.record.segment.count} segments, ${first.path}: ${segment.count}; merge the segments of one run at a time`,
      );
  }
  const byIndex = segmentsByIndex(found, (s) => String(s.index));
  const inputs: TraceMergeInput[] = [];
  const reports: RunSegmentReport[] = [];
  for (let index = 0; index < segment.count; index++) {
    const f = byIndex.get(index);
    const trace = f ? join(f.dir, f.record.trace) : undefined;
    if (!f || !trace || !existsSync(trace)) {
      reports.push({
        index,
        status: 'missing',
        file: f?.path ?? null,
        sessions: 0,
        records: 0,
        ...(f ? { error: `its trace ${trace} is not there` } : {}),
      });
      continue;
    }
    inputs.push({ path: trace, index });
    reports.push({
      index,
      status: f.record.status,
      file: f.path,
      sessions: f.record.sessionsStarted,
      records: 0,
      ...(f.record.error ? { error: f.record.error } : {}),
    });
  }
  if (inputs.length === 0)
    throw new FleetbenchError(
      'E_RESULTS',
      `no segment of ${run.runId} has a trace: nothing to merge (${found.map((f) => f.path).join(', ')})`,
    );
  const githubTrace =
    options.githubTrace ??
    [...(options.searchDirs ?? []), outDir].map((d) => join(d, GITHUB_TRACE)).find((p) => existsSync(p));
  if (options.githubTrace !== undefined && !existsSync(options.githubTrace))
    throw new FleetbenchError('E_FILE', `--github-trace ${options.githubTrace}: no such file`);
  if (githubTrace) inputs.push({ path: githubTrace, index: -1, role: 'github' });

  makeDirectories(outDir);
  const tracePath = join(outDir, 'trace.jsonl');
  const sessions = reports.reduce((n, r) => n + r.sessions, 0);
  const merge = await mergeSegmentTraces(inputs, tracePath, {
    lenient: reports.some((r) => r.status !== 'done'),
    sessions: sessions || undefined,
  });
  for (const s of merge.segments) {
    const report = reports.find((r) => r.index === s.index);
    if (report) report.records = s.records;
  }
  const partial = reports.some((r) => r.status !== 'done');
  const scenario = readScenario(inputs.filter((i) => i.role !== 'github').map((i) => join(i.path, '..')));
  const summaryPath = join(outDir, 'summary.json');
  const githubRecords = merge.segments.find((s) => s.index === -1)?.records ?? 0;
  const summary: RunMergeOutcome['summary'] = {
    kind: 'fleetbench-run',
    schemaVersion: RUN_SUMMARY_VERSION,
    scenario: { ...scenario, hash: run.scenario.hash },
    outcome: {
      reason: partial && merge.reason === 'completed' ? 'failed' : merge.reason,
      ...(partial
        ? {
            failure: {
              source: 'merge',
              message: `segments not done: ${reports
                .filter((r) => r.status !== 'done')
                .map((r) => `${r.index} (${r.status})`)
                .join(', ')}`,
            },
          }
        : {}),
      partial: partial || merge.reason !== 'completed',
      endedAtMs: merge.analysis.run.endMs,
      sessionsStarted: sessions,
      sessionsDropped: found.reduce((n, f) => n + f.record.sessionsDropped, 0),
      wallMs: Math.max(...found.map((f) => f.record.wallMs)),
      tracePath,
      summaryPath,
    },
    analysis: merge.analysis,
    segments: reports,
    github: {
      trace: githubTrace ? relative(outDir, githubTrace) || githubTrace : null,
      records: githubRecords,
    },
  };
  writeOutputFile(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
  return { summary, tracePath, summaryPath, segments: reports, partial: summary.outcome.partial, merge };
}

/** The resolved scenario, from a segment's summary.json (every segment resolved the same one). */
function readScenario(dirs: string[]): Scenario {
  for (const dir of dirs) {
    try {
      const summary = JSON.parse(readFileSync(join(dir, 'summary.json'), 'utf8')) as { scenario?: Scenario };
      if (summary.scenario) {
        const { hash: _hash, ...scenario } = summary.scenario as Scenario & { hash?: string };
        return scenario as Scenario;
      }
    } catch {
      // a lost segment has no summary: try the next one
    }
  }
  throw new FleetbenchError(
    'E_RESULTS',
    `no segment summary.json in ${dirs.join(', ')}: the scenario of the run is not known (a segment writes it when it ends)`,
  );
}
