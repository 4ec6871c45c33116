/**
 * Reporters, by name. Each turns one report (a document plus the sections that present it) into
 * text; what a report contains is decided once, in sections/.
 */
import { createJsonReporter } from './json.ts';
import { createMarkdownReporter } from './markdown.ts';
import type { Section } from './table.ts';
import { createTerminalReporter } from './terminal.ts';

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

export const reporters = {
  terminal: createTerminalReporter,
  json: createJsonReporter,
  markdown: createMarkdownReporter,
} satisfies Record<string, () => Reporter>;

export type ReportFormat = keyof typeof reporters;

export * from './sections/index.ts';
export * from './summary.ts';
export * from './table.ts';
