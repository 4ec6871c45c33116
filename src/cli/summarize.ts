import type { Command } from 'commander';
import { summaryOf, summarySections } from '../report/index.ts';
import type { CommandIo } from './output.ts';
import { addTraceReportOptions, runTraceReport, type TraceReportFlags } from './trace-report.ts';

export function register(program: Command, io: CommandIo): void {
  addTraceReportOptions(
    program
      .command('summarize')
      .description(
        'totals; calls by operation, route, status, source and session; primary-limit burn per reset window (flags a run that straddles a reset); opaque calls',
      ),
  ).action((trace: string, flags: TraceReportFlags) =>
    runTraceReport(
      trace,
      flags,
      {
        name: 'summarize',
        document: summaryOf,
        sections: (a, top) => summarySections(a, { top }),
      },
      io,
    ),
  );
}
