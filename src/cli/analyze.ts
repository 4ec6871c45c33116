import type { Command } from 'commander';
import { analysisSections } from '../report/index.ts';
import type { CommandIo } from './output.ts';
import { addTraceReportOptions, runTraceReport, type TraceReportFlags } from './trace-report.ts';

export function register(program: Command, io: CommandIo): void {
  addTraceReportOptions(
    program
      .command('analyze')
      .description(
        'every metric: API cost (burn, polling floor, burst shape, concurrency, writes, 403/429, latency, projection), the Track B scorecard, speed metrics (first activity, boot, restart recovery), span percentiles, events and gauges',
      ),
  ).action((trace: string, flags: TraceReportFlags) =>
    runTraceReport(
      trace,
      flags,
      {
        name: 'analyze',
        document: (a) => a,
        sections: (a, top) => analysisSections(a, { top }),
      },
      io,
    ),
  );
}
