/**
 * `fleetbench report <run-or-matrix-dir>`: one self-contained HTML file (no network) that
 * explains a run or a matrix with charts and verdicts. See docs/report.md.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { writeHtmlReport } from '../report-html/index.ts';
import { checkResultTraces } from '../results/judge-inputs.ts';
import { loadResults } from '../results/results.ts';
import { refuseOutputOverInput } from './options.ts';
import type { CommandIo } from './output.ts';

interface ReportFlags {
  output?: string;
}

export function register(program: Command, io: CommandIo): void {
  program
    .command('report')
    .description('write one self-contained HTML report (charts, verdicts) of a run or a matrix')
    .argument('<results>', 'a run directory or summary.json, or a matrix directory or baseline.json')
    .option('-o, --output <file>', 'the HTML file (default: report.html in the results directory)')
    .addHelpText(
      'after',
      `
Examples:
  fleetbench report fleetbench-out/matrix              # writes fleetbench-out/matrix/report.html
  fleetbench report fleetbench-out/runs/S2-T1-50 -o s2.html

The file has everything inline (scripts, styles, data): open it in any browser, offline.
What it shows: docs/report.md.`,
    )
    .action(async (results: string, flags: ReportFlags) => {
      const dir = statSync(results, { throwIfNoEntry: false })?.isDirectory() ? results : join(results, '..');
      const out = flags.output ?? join(dir, 'report.html');
      refuseOutputOverInput('-o', out, [results]);
      const set = loadResults(results);
      // Results that say completed are shown beside their own trace only, as check reads them
      // (docs/budgets.md#only-a-completed-run-is-judged): never a verdict over a joined trace.
      await checkResultTraces(set, { completedOnly: true });
      const { bytes } = writeHtmlReport(set, out);
      const runs = set.units.reduce((n, u) => n + u.runs.length, 0);
      io.stdout.write(
        `fleetbench report: ${out} (${(bytes / 1024).toFixed(0)} kB; ${set.units.length} unit${set.units.length === 1 ? '' : 's'}, ${runs} run${runs === 1 ? '' : 's'})\n`,
      );
    });
}
