/**
 * `fleetbench merge DIR…`: joins the segments of a distributed matrix (or live run) into one
 * result, exactly (docs/distributed.md). Each DIR is a shared output directory holding
 * `segments/`, or one segment's own directory (results copied back from an object store).
 */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { ExitCode, FleetbenchError } from '../base/errors.ts';
import { type FoundSegment, findMatrixSegments } from '../distributed/matrix-segment.ts';
import { type MatrixMergeOutcome, mergeMatrixSegments } from '../distributed/merge-matrix.ts';
import { GITHUB_TRACE, mergeRunSegments, type RunMergeOutcome } from '../distributed/merge-run.ts';
import { findRunSegments } from '../distributed/run-segment.ts';
import { fmtInt, fmtMs } from '../report/table.ts';
import { htmlReportFor } from '../report-html/index.ts';
import { matrixTable } from './matrix.ts';
import type { CommandIo } from './output.ts';

interface MergeFlags {
  out?: string;
  report?: boolean;
  githubTrace?: string;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('merge')
    .description(
      'join the segments of a distributed matrix or live run into one result (docs/distributed.md)',
    )
    .argument('<dirs...>', 'output directories holding segments/ (one shared directory, or one per segment)')
    .option('--out <dir>', 'where the merged result goes (default: the directory, when there is one)')
    .option('--report', 'also write report.html (fleetbench report) for the merged result')
    .option(
      '--github-trace <file>',
      `live runs: the shared emulator's trace (github serve --trace), merged in for the API calls (default: DIR/${GITHUB_TRACE} when there)`,
    )
    .addHelpText(
      'after',
      `
Examples:
  fleetbench matrix --cells priority --segment 0/2 --out runs/m   # one pod each, same --out
  fleetbench matrix --cells priority --segment 1/2 --out runs/m
  fleetbench merge runs/m                                          # → runs/m/baseline.json, baseline.md
  fleetbench merge seg-0 seg-1 seg-2 --out runs/m                  # segments copied back one per directory
  fleetbench merge runs/live                                       # a live run's segments (run --segment i/n)
                                                                   # → runs/live/trace.jsonl, summary.json

A missing, failed, lost or interrupted segment is named, the merged result is written and
marked partial, and the exit code is 2; re-run that index with the same command and merge
again (a segment's output is replaced, never appended to).
Exit codes: 0 complete, 2 bad input or a partial result.`,
    )
    .action(async (dirs: string[], flags: MergeFlags) => {
      for (const dir of dirs) {
        if (!statSync(dir, { throwIfNoEntry: false })?.isDirectory())
          throw new FleetbenchError('E_FILE', `${dir}: not a directory`);
      }
      if (dirs.length > 1 && flags.out === undefined)
        throw new FleetbenchError(
          'E_USAGE',
          `merge: ${dirs.length} directories given: say where the result goes with --out DIR`,
        );
      const outDir = flags.out ?? dirs[0]!;
      // Either merge ends alike: the report if asked for, the summary, exit 2 when partial.
      const finish = (lines: string[], partial: boolean) => {
        if (flags.report) {
          const out = `${outDir}/report.html`;
          htmlReportFor(outDir, out);
          lines.push(`  report....: ${out}`);
        }
        io.stdout.write(`${lines.join('\n')}\n`);
        if (partial) io.exitCode = ExitCode.badInput;
      };
      const runSegments = dirs.flatMap((dir) => findRunSegments(dir));
      if (runSegments.length > 0) {
        const outcome = await mergeRunSegments(runSegments, outDir, {
          githubTrace: flags.githubTrace,
          searchDirs: dirs,
        });
        finish(runMergeLines(outcome), outcome.partial);
        return;
      }
      const matrixSegments: FoundSegment[] = dirs.flatMap((dir) => findMatrixSegments(dir));
      if (matrixSegments.length === 0)
        throw new FleetbenchError(
          'E_RESULTS',
          `${dirs.join(', ')}: no segments found (looked for segments/matrix-*.json and segments/run-*.json)`,
          { hint: 'segments are written by fleetbench matrix --segment i/n; see docs/distributed.md' },
        );
      const outcome = mergeMatrixSegments(matrixSegments, outDir);
      finish(matrixMergeLines(outcome), outcome.baseline.partial);
    });
}

export function matrixMergeLines(outcome: MatrixMergeOutcome): string[] {
  const b = outcome.baseline;
  const runs = b.units.reduce((n, u) => n + u.runs.length, 0);
  const planned = runs + outcome.missingRuns.length;
  const incomplete = outcome.segments.filter((s) => s.status !== 'done');
  const lines = [
    `fleetbench merge: ${outcome.segments.length} segments, ${runs} of ${planned} runs, ${b.units.length} units${b.partial ? ' (PARTIAL)' : ''}, slowest segment ${fmtMs(b.timing.wallMs)}`,
    '',
    ...outcome.segments.map(
      (s) =>
        `  segment ${s.index}: ${s.status === 'missing' ? 'MISSING (never ran, or its output is not here)' : s.status === 'running' ? 'LOST (started, never finished: the pod failed or is still running)' : s.status === 'done' ? 'done' : s.status.toUpperCase()}${s.assigned === null ? '' : `, ${s.merged} of ${s.assigned} runs`}${s.error ? ` (${s.error})` : ''}`,
    ),
    '',
    ...matrixTable(b),
    '',
  ];
  if (b.partial) {
    lines.push(
      `  PARTIAL: ${outcome.missingRuns.length} run${outcome.missingRuns.length === 1 ? '' : 's'} missing${incomplete.length ? ` (segment${incomplete.length === 1 ? '' : 's'} ${incomplete.map((s) => s.index).join(', ')}: re-run ${incomplete.length === 1 ? 'that index' : 'those indexes'} with the same command and merge again)` : ''}${outcome.missingRuns.length ? `: ${outcome.missingRuns.slice(0, 10).join(', ')}${outcome.missingRuns.length > 10 ? ', …' : ''}` : ''}`,
    );
  }
  lines.push(`  baseline..: ${outcome.markdownPath}`, `  json......: ${outcome.jsonPath}`);
  return lines;
}

export function runMergeLines(outcome: RunMergeOutcome): string[] {
  const { summary, merge } = outcome;
  const count = outcome.segments.length;
  const done = outcome.segments.filter((s) => s.status === 'done').length;
  const api = summary.analysis.api.totals.calls;
  const lines = [
    `fleetbench merge: run ${summary.scenario.name}, ${done} of ${count} segments${outcome.partial ? ' (PARTIAL)' : ''}, ${fmtInt(summary.outcome.sessionsStarted)} sessions, ${fmtInt(merge.records)} records, ${fmtInt(api)} API calls`,
    '',
    ...outcome.segments.map(
      (s) =>
        `  segment ${s.index}: ${s.status === 'missing' ? 'MISSING (never ran, or its output is not here)' : s.status === 'running' ? 'LOST (started, never finished: the pod failed or is still running)' : s.status === 'done' ? 'done' : s.status.toUpperCase()}${s.status === 'missing' ? '' : `, ${fmtInt(s.sessions)} sessions, ${fmtInt(s.records)} records`}${s.error ? ` (${s.error})` : ''}`,
    ),
    summary.github.trace
      ? `  github....: ${summary.github.trace}, ${fmtInt(summary.github.records)} records of the run`
      : '  github....: no emulator trace (github serve --trace; --github-trace FILE): the merged trace has no API calls',
    '',
  ];
  if (outcome.partial) {
    const bad = outcome.segments.filter((s) => s.status !== 'done').map((s) => s.index);
    lines.push(
      `  PARTIAL: segment${bad.length === 1 ? '' : 's'} ${bad.join(', ')} did not complete: the merged run lacks their sessions' records; a live run is re-run whole, with a new start (docs/distributed.md)`,
    );
  }
  lines.push(`  trace.....: ${outcome.tracePath}`, `  summary...: ${outcome.summaryPath}`);
  return lines;
}
