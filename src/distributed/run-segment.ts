/**
 * `fleetbench run --segment i/n` (or a run inside an Indexed Job). Not split, with the reason:
 * a virtual-time run's sessions share one GitHub quota and one simulated clock in one process,
 * so splitting it would measure n smaller fleets, not one; live-run segments (each process its
 * share of the sessions and of the open-model schedule, against one shared target and emulator)
 * are not built yet (docs/distributed.md). Refusing beats running the whole scenario in every pod.
 */
import { FleetbenchError } from '../errors.ts';
import type { Scenario } from '../workload/scenario.ts';
import { resolveSegment, segmentLabel } from './segment.ts';

export function refuseRunSegment(flag: string | undefined, scenario: Scenario): void {
  const segment = resolveSegment(flag);
  if (!segment) return;
  if (scenario.clock === 'virtual')
    throw new FleetbenchError(
      'E_USAGE',
      `run: segment ${segmentLabel(segment)} asked, but a virtual-time run is not split: its sessions share one GitHub quota and one simulated clock in one process, so n processes would measure n smaller fleets, not this one`,
      {
        hint: 'split a matrix instead (fleetbench matrix --segment i/n), or repeat the run with --seed; see docs/distributed.md',
      },
    );
  throw new FleetbenchError(
    'E_USAGE',
    `run: segment ${segmentLabel(segment)} asked, but live-run segments are not available yet: run the scenario in one process (docs/distributed.md says what is split today)`,
  );
}
