/**
 * What `compare` and the matrix measure in an Analysis: every value of the one metric catalogue
 * (src/analyze/metric-catalogue.ts), as compare's rows. Judged metrics are the ones a regression
 * fails the command on (the Track B scorecard rows and, when the runs carry them, judged budget
 * rows); every other metric is reported with the same statistics but never changes the exit code.
 */
import { type Better, type MetricGroup, measureAll } from '../analyze/metric-catalogue.ts';
import type { Analysis } from '../analyze/schema.ts';

export type { Better } from '../analyze/metric-catalogue.ts';

export interface MetricDef {
  /** The catalogue's name, e.g. `scorecard.peak-concurrency`, `api.points-per-hour.core`. */
  id: string;
  title: string;
  unit: string;
  /** Which way is better; the other way is a regression. */
  better: Better;
  judged: boolean;
  group: MetricGroup;
}

export interface MetricValue {
  def: MetricDef;
  value: number | null;
}

/** Every metric of one analysis, judged ones first. */
export function extractMetrics(a: Analysis): MetricValue[] {
  return measureAll(a).map(({ metric, title, value }) => ({
    def: {
      id: metric.name,
      title,
      unit: metric.unit,
      better: metric.better,
      judged: metric.judged,
      group: metric.group,
    },
    value,
  }));
}
