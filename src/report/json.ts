/** `--json`: the document itself (the Analysis, or the Summary subset), pretty-printed. */
import type { Reporter, ReportInput } from './reporter.ts';

export function createJsonReporter(): Reporter {
  return {
    render({ document }: ReportInput): string {
      return `${JSON.stringify(document, null, 2)}\n`;
    },
  };
}
