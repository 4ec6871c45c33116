/** The HTML report: data from results (model.ts), one self-contained page (page.ts). */

import { writeOutputFile } from '../base/safe-write.ts';
import { loadResults, type ResultSet } from '../results/results.ts';
import { reportData } from './model.ts';
import { renderReportHtml } from './page.ts';

export { reportData, unitReport } from './model.ts';
export { renderReportHtml } from './page.ts';
export type * from './types.ts';

export function writeHtmlReport(
  set: ResultSet,
  outFile: string,
  options: { title?: string } = {},
): { bytes: number } {
  const html = renderReportHtml(reportData(set, options));
  writeOutputFile(outFile, html);
  return { bytes: Buffer.byteLength(html) };
}

/** Reads a run or matrix directory (or summary.json / baseline.json) and writes its report. */
export function htmlReportFor(path: string, outFile: string): { bytes: number; set: ResultSet } {
  const set = loadResults(path);
  return { ...writeHtmlReport(set, outFile), set };
}
