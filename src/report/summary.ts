/**
 * The Summary: what `fleetbench summarize --json` prints. A subset of the Analysis with the same
 * names, so one description (docs/analysis.md) covers both.
 */
import type { Analysis } from '../analyze/schema.ts';

export interface Summary {
  schemaVersion: Analysis['schemaVersion'];
  generator: Analysis['generator'];
  run: Analysis['run'];
  input: Analysis['input'];
  api: Pick<Analysis['api'], 'totals' | 'opaque' | 'burn'> & {
    counts: Pick<
      Analysis['api']['counts'],
      'byOperation' | 'byRoute' | 'byStatus' | 'bySource' | 'bySession'
    >;
  };
  warnings: string[];
}

export function summaryOf(a: Analysis): Summary {
  const c = a.api.counts;
  return {
    schemaVersion: a.schemaVersion,
    generator: a.generator,
    run: a.run,
    input: a.input,
    api: {
      totals: a.api.totals,
      counts: {
        byOperation: c.byOperation,
        byRoute: c.byRoute,
        byStatus: c.byStatus,
        bySource: c.bySource,
        bySession: c.bySession,
      },
      opaque: a.api.opaque,
      burn: a.api.burn,
    },
    warnings: a.warnings,
  };
}
