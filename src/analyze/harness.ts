/**
 * fleetbench's own share of a run's CPU: the `harness.cpu` event the engine writes at the end of
 * a run on a target with processes on this machine (src/base/process-cpu.ts), read into
 * `analysis.harness`. A finisher (finisher.ts), so the event is retained and merged across
 * threads like the speed records; its schema is in schema.ts (this file runs in analysis worker
 * threads, which load no zod).
 */
import { HARNESS_CPU_EVENT } from '../base/process-cpu.ts';
import { round } from './figures.ts';
import type { Finisher, RetainedRecord } from './finisher.ts';
import type { HarnessAnalysis } from './schema.ts';

/** A figure of the event in seconds: what a hand-made trace holds is kept within 0 and 1e9 s. */
const seconds = (value: unknown) =>
  typeof value === 'number' && Number.isFinite(value) ? round(Math.min(1e12, Math.max(0, value)) / 1000) : 0;

export const harnessFinisher: Finisher = {
  key: 'harness',
  retains: (name: string) => name === HARNESS_CPU_EVENT,
  finish(records: readonly RetainedRecord[]): HarnessAnalysis | undefined {
    // One per run; a merged trace of segments keeps the last.
    const event = records.findLast((record) => record.kind === 'event');
    if (event === undefined || event.kind !== 'event') return undefined;
    const data = (event.data ?? {}) as Record<string, unknown>;
    const cpuMs = (data.cpuMs ?? {}) as Record<string, unknown>;
    const cpuS = {
      harness: seconds(cpuMs.harness),
      controlPlane: seconds(cpuMs.controlPlane),
      agents: seconds(cpuMs.agents),
      other: seconds(cpuMs.other),
    };
    const percent = (value: unknown) =>
      typeof value === 'number' && Number.isFinite(value) ? round(Math.min(100, Math.max(0, value))) : null;
    const share = percent(data.harnessSharePct);
    const bound = percent(data.boundPct);
    return {
      cpuS,
      sharePct: share,
      boundPct: bound,
      over: share !== null && bound !== null && share > bound,
      windowS: seconds(data.windowMs),
      samples:
        typeof data.samples === 'number' && Number.isInteger(data.samples) && data.samples >= 0
          ? data.samples
          : 0,
    };
  },
};

/** Below this mean load (cores) the harness cannot have loaded the machine: the share is large because the control plane was nearly idle. */
const IDLE_HARNESS_CORES = 0.1;

/**
 * The run's words when the harness took more than its bound. A share is relative: beside a control
 * plane that barely ran (a Python loop polling every 2 s), fleetbench's emulators take a quarter
 * of the run's CPU at 0.02 of a core. So the words give the harness's mean load in cores too, and
 * say which case it is.
 */
export function harnessWarning(harness: HarnessAnalysis): string | undefined {
  if (!harness.over) return undefined;
  const cores = harness.windowS > 0 ? harness.cpuS.harness / harness.windowS : null;
  const load =
    cores === null ? '' : `, ${round(cores, 2)} of a core over the run's ${round(harness.windowS, 0)} s`;
  const meaning =
    cores !== null && cores < IDLE_HARNESS_CORES
      ? 'a share this large at so small a load means the control plane and agents used little CPU (a disturbance only where they waited for a core)'
      : 'the control plane and agents ran on a machine the harness was loading';
  return `the observer disturbed the observed: fleetbench's own processes took ${harness.sharePct} % of the run's CPU (${harness.cpuS.harness} CPU-s${load}), over the ${harness.boundPct} % bound; ${meaning}`;
}
