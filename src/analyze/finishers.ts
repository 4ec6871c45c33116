/** The table of finishers (their contract is finisher.ts). */
import { edgesFinisher } from './edges.ts';
import { faultsFinisher } from './faults.ts';
import type { Finisher } from './finisher.ts';
import { harnessFinisher } from './harness.ts';
import { modelCoverageFinisher } from './model-coverage.ts';
import { providerFinisher } from './provider.ts';
import { speedFinisher } from './speed.ts';
import { turnoverFinisher } from './turnover.ts';

/** Every finisher the analyzer runs. */
export const FINISHERS: readonly Finisher[] = [
  speedFinisher,
  turnoverFinisher,
  faultsFinisher,
  providerFinisher,
  modelCoverageFinisher,
  edgesFinisher,
  harnessFinisher,
];

export function retainedByAnyFinisher(name: string): boolean {
  for (const finisher of FINISHERS) if (finisher.retains(name)) return true;
  return false;
}
