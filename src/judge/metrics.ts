/**
 * The metrics a budget can name (those of the one catalogue, src/analyze/metric-catalogue.ts,
 * that have budget statistics), and where a distribution's samples are in the analyses judged.
 */
import {
  BUDGET_METRICS,
  type CatalogueMetric,
  type DistributionMetric,
  type Stat,
  type ValueMetric,
} from '../analyze/metric-catalogue.ts';
import type { Analysis } from '../analyze/schema.ts';

export type { DistributionMetric, Stat, ValueMetric };
export { BUDGET_METRICS };

export type BudgetMetric = CatalogueMetric;

export function knownMetricNames(): string[] {
  return [...BUDGET_METRICS.keys()];
}

export interface SampleGroup {
  labels: Record<string, string>;
  values: number[];
}

/** Every group of a distribution metric across the inputs (their samples pool when judged). */
export function distributionGroups(name: string, analyses: readonly Analysis[]): SampleGroup[] {
  const out: SampleGroup[] = [];
  for (const a of analyses) {
    const metric = a.speed?.metrics[name as keyof NonNullable<Analysis['speed']>['metrics']];
    if (metric) for (const g of metric.groups) out.push({ labels: g.labels, values: g.values });
  }
  return out;
}

/** Values of a label key seen in any speed metric of the inputs (for `per:`). */
export function labelValuesSeen(key: string, analyses: readonly Analysis[]): Set<string> {
  const seen = new Set<string>();
  for (const a of analyses) {
    for (const metric of Object.values(a.speed?.metrics ?? {})) {
      for (const g of metric.groups) if (g.labels[key] !== undefined) seen.add(g.labels[key]);
    }
  }
  return seen;
}
