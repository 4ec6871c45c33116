/**
 * What a reporter is: one report (a document plus the sections that present it) in, text out.
 * Apart from the table of reporters (index.ts), which imports every reporter.
 */
import type { Section } from './table.ts';

export interface ReportInput {
  /** e.g. `analyze examples/sample-trace.jsonl` */
  title: string;
  /** What --json prints. */
  document: unknown;
  /** What the terminal and Markdown show: built only by a reporter that shows them (not --json). */
  sections: () => Section[];
}

export interface Reporter {
  render(input: ReportInput): string;
}
