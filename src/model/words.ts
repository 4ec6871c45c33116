/**
 * What every reader and writer of a learned model needs without its schema (docs/model.md): the
 * format's name, the states and triggers a model is keyed by, the loop's overrun rules, the YAML
 * `model learn` writes, a model's one-line provenance. Apart from format.ts, which validates a
 * model file with zod, so that `model learn` (which writes one and never reads one) does not load
 * the validator.
 */
import { stringify } from 'yaml';

export const MODEL_FORMAT = 'fleetbench-model/1';

/** The session states a model is keyed by: the workload's, whatever the control plane calls its own. */
export const modelStates = ['spawning', 'working', 'pr_open', 'review', 'merged', 'closed'] as const;
export type ModelState = (typeof modelStates)[number];

/**
 * What moves a session: its creation, what the world did to its PR (the `world.*` trace events) or
 * the control plane's own restart (`controlplane.ready`).
 */
export const modelTriggers = [
  'created',
  'pr-opened',
  'ci-completed',
  'review-posted',
  'pushed',
  'merged',
  'restart',
] as const;
export type ModelTrigger = (typeof modelTriggers)[number];

/**
 * What a poll loop does with a tick that comes while its cycle still runs
 * (docs/model.md#the-overrun-rule): `skip` it and start on the next tick of the interval's grid
 * (a setInterval with a busy guard, as agent-orchestrator's), or start the next cycle `immediate`ly
 * when the overrunning one ends (the reference's own loop).
 */
export const overrunRules = ['skip', 'immediate'] as const;
export type OverrunRule = (typeof overrunRules)[number];

/**
 * The rule when the traces could not tell (too few overruns) and for a model written before the
 * rule was learned: agent-orchestrator's `skip` for its traces, else the reference loop's `immediate`.
 */
export function defaultOverrunRule(targets: ReadonlyArray<string | null>): OverrunRule {
  return targets.includes('ao') ? 'skip' : 'immediate';
}

/**
 * The parts of a model (format.ts's `Model`) these functions read, written out here so this file
 * imports nothing of format.ts, which imports it.
 */
interface ModelFacts {
  name: string;
  loop: { overrun?: OverrunRule | undefined };
  provenance: {
    traces: ReadonlyArray<{
      target: string | null;
      controlPlane: string | null;
      scenario: string;
      cell: string | null;
      sessions: number;
      durationMs: number;
      cycles: number;
      sha256: string;
      load: { start: number[]; cpus: number } | null;
    }>;
  };
}

/** The model as the YAML `model learn` writes: a comment line, then the fields in schema order. */
export function modelToYaml(model: object): string {
  return `# fleetbench learned model (docs/model.md). Replay: --set polling.strategy=learned --set polling.model=THIS_FILE\n${stringify(model, { lineWidth: 0 })}`;
}

/** The model's overrun rule: the learned one, else the default for the targets of its traces. */
export function modelOverrunRule(model: ModelFacts): OverrunRule {
  return model.loop.overrun ?? defaultOverrunRule(model.provenance.traces.map((t) => t.target));
}

/** One line naming where a model came from, for run headers and reports. */
export function modelProvenanceLine(model: ModelFacts): string {
  const traces = model.provenance.traces;
  const first = traces[0]!;
  const load = first.load ? `, load ${first.load.start[0]} on ${first.load.cpus} cores` : '';
  const what = first.controlPlane ?? first.target ?? 'unknown target';
  const more = traces.length > 1 ? ` and ${traces.length - 1} more trace${traces.length > 2 ? 's' : ''}` : '';
  return `${model.name}: learned from ${first.scenario}${first.cell ? ` (${first.cell})` : ''} on ${what}, ${first.sessions} sessions, ${Math.round(first.durationMs / 1000)} s, ${first.cycles} cycles${load} (trace ${first.sha256.slice(0, 12)})${more}`;
}
