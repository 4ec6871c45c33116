/**
 * What `summarize` and `analyze` share: reading a trace (flags, threads) and printing a report
 * in the chosen format.
 */
import { type Command, Option } from 'commander';
import { analyzeFile } from '../analyze/file.ts';
import type { Analysis } from '../analyze/schema.ts';
import { FleetbenchError } from '../base/errors.ts';
import { MAX_ANALYSIS_THREADS } from '../base/limits.ts';
import { type ReportFormat, reporters, type Section } from '../report/index.ts';
import type { CommandIo } from './output.ts';

export interface TraceReportFlags {
  json?: boolean;
  markdown?: boolean;
  lenient?: boolean;
  threads: string;
  sessions?: string;
  top: string;
}

function positiveInt(name: string, value: string, max = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new FleetbenchError('E_USAGE', `${name}: expected a positive integer, got '${value}'`);
  if (n > max) throw new FleetbenchError('E_USAGE', `${name}: at most ${max} (docs/limits.md), got ${value}`);
  return n;
}

export function addTraceReportOptions(command: Command): Command {
  return command
    .argument('<trace>', 'canonical trace (JSONL, optionally gzip-compressed)')
    .addOption(
      new Option('--json', 'print the stable JSON document (see docs/analysis.md)').conflicts('markdown'),
    )
    .option('--markdown', 'print Markdown tables')
    .option('--lenient', 'skip bad lines (counted and shown) and accept a trace without its end footer')
    .option(
      '--threads <n>',
      "worker threads for large plain files: a number up to 64, or 'auto' (one per core)",
      'auto',
    )
    .option(
      '--sessions <n>',
      'session count for per-session figures (default: distinct sessions in the trace)',
    )
    .option('--top <n>', 'rows per breakdown table in terminal and Markdown output', '10');
}

export async function runTraceReport(
  trace: string,
  flags: TraceReportFlags,
  view: {
    name: 'summarize' | 'analyze';
    document(a: Analysis): unknown;
    sections(a: Analysis, top: number): Section[];
  },
  io: CommandIo,
): Promise<void> {
  const threads =
    flags.threads === 'auto' ? 'auto' : positiveInt('--threads', flags.threads, MAX_ANALYSIS_THREADS);
  const top = positiveInt('--top', flags.top);
  const sessions = flags.sessions === undefined ? undefined : positiveInt('--sessions', flags.sessions);
  const { analysis } = await analyzeFile(trace, {
    lenient: flags.lenient ?? false,
    threads,
    analyzer: sessions === undefined ? {} : { sessions },
  });
  const format: ReportFormat = flags.json ? 'json' : flags.markdown ? 'markdown' : 'terminal';
  const text = reporters[format]().render({
    title: `${view.name} ${trace}`,
    document: view.document(analysis),
    sections: () => view.sections(analysis, top),
  });
  io.stdout.write(format === 'terminal' ? io.colourVerdicts(text) : text);
}
