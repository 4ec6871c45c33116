/**
 * What a summary and an analysis show, format-neutral: sections of tables, key/value pairs and
 * notes. The terminal and Markdown reporters render the same sections, so they never disagree.
 * One file per area (overview, cost, scorecard, control plane, turnover, speed, edges, the run
 * summary), built with build.ts; this file decides their order.
 */
import { NONE } from '../../analyze/analyzer.ts';
import type { Analysis } from '../../analyze/schema.ts';
import type { Section } from '../table.ts';
import { modelCoverageSection, pollCyclesSection, scheduleSection } from './control-plane.ts';
import { burnSection, costSections } from './cost.ts';
import { edgesSections } from './edges.ts';
import { breakdownSections, type Dimension, runSection, totalsSection, warningsSection } from './overview.ts';
import { providerSections } from './provider.ts';
import { scorecardSection } from './scorecard.ts';
import { speedMetricsSection, traceRecordSections } from './speed.ts';
import { turnoverSections } from './turnover.ts';

export { scheduleSection } from './control-plane.ts';
export { sparkline } from './cost.ts';
export { type RunOutcome, type RunSummaryOptions, runSummarySections } from './run-summary.ts';
export { turnoverSections } from './turnover.ts';

export interface SectionOptions {
  /** Rows shown per breakdown table (the rest are counted as "more"). */
  top: number;
}

const SUMMARY_DIMENSIONS: Dimension[] = [
  ['byOperation', 'operation'],
  ['byRoute', 'route'],
  ['byStatus', 'status'],
  ['bySource', 'source'],
  ['bySession', 'session'],
];

/**
 * The sections that show a control plane's own calls (a target that makes them: `run` prints
 * them): what it called and for whom. One that names no operation (any unmodified one, measured
 * from the world's edges) is shown by route: "no call carries an operation" says nothing of what
 * it called.
 */
export function ownCallsSections(a: Analysis): ReadonlySet<string> {
  const operations = Object.keys(a.api.counts.byOperation);
  const unnamed = operations.length === 1 && operations[0] === NONE;
  return new Set([unnamed ? 'Calls by route' : 'Calls by operation', 'Calls by session']);
}

export function summarySections(a: Analysis, options: SectionOptions): Section[] {
  const shown = new Set(a.api.burn.warnings);
  return [
    runSection(a),
    totalsSection(a),
    ...breakdownSections(a, options.top, SUMMARY_DIMENSIONS),
    burnSection(a),
    ...warningsSection(a, shown),
  ];
}

export function analysisSections(a: Analysis, options: SectionOptions): Section[] {
  const shown = new Set([...a.api.burn.warnings, ...(a.api.bracket?.warnings ?? [])]);
  return [
    runSection(a),
    totalsSection(a),
    ...breakdownSections(a, options.top, [...SUMMARY_DIMENSIONS, ['byRepo', 'repo'], ['byPhase', 'phase']]),
    burnSection(a),
    ...costSections(a),
    ...pollCyclesSection(a),
    ...modelCoverageSection(a),
    scorecardSection(a),
    ...turnoverSections(a),
    ...speedMetricsSection(a),
    ...providerSections(a),
    ...edgesSections(a, options.top),
    ...scheduleSection(a),
    ...traceRecordSections(a, options.top),
    ...warningsSection(a, shown),
  ];
}
