/**
 * Reporters, by name. Each turns one report (a document plus the sections that present it) into
 * text; what a report contains is decided once, in sections/.
 */
import { createJsonReporter } from './json.ts';
import { createMarkdownReporter } from './markdown.ts';
import type { Reporter } from './reporter.ts';
import { createTerminalReporter } from './terminal.ts';

export type { Reporter, ReportInput } from './reporter.ts';

export const reporters = {
  terminal: createTerminalReporter,
  json: createJsonReporter,
  markdown: createMarkdownReporter,
} satisfies Record<string, () => Reporter>;

export type ReportFormat = keyof typeof reporters;

export * from './sections/index.ts';
export * from './summary.ts';
export * from './table.ts';
