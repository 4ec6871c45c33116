/**
 * Faults on timelines: the analysis carries each injected fault's time and type (a finisher,
 * merged across threads like the speed records), and the HTML report marks them.
 */
import { describe, expect, it } from 'vitest';
import { analyzeFile } from '../src/analyze/file.ts';
import { unitReport } from '../src/report-html/model.ts';
import { runRef } from './helpers/run.ts';

describe('faults on timelines', () => {
  it('a review burst at 5 min is in the analysis and marked on the report’s timelines', async () => {
    const run = await runRef('S4-T1-5');
    // S4's review burst is scheduled at 5m: 300,000 ms of run time.
    expect(run.analysis.faults).toEqual([{ tMs: 300_000, type: 'review-burst', phase: 'start' }]);
    // The same over two threads (byte ranges merged).
    const split = await analyzeFile(run.outcome.tracePath, { threads: 2 });
    expect(split.analysis.faults).toEqual(run.analysis.faults);
    const unit = unitReport({
      id: 'S4-T1-5',
      heading: 'S4-T1-5',
      whatItTells: null,
      scorecardJudged: true,
      runs: [{ seed: 1, dir: null, analysis: run.analysis }],
    });
    expect(unit.markers).toContainEqual({ tMs: 300_000, label: 'review-burst', kind: 'fault' });
  });
});
