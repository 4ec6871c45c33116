/**
 * What native runs keep across restarts: the run table, queued inputs, turn progress and the
 * providers' saved sessions. A served control plane writes it to its state directory after every
 * change (file-store.ts), so a process started after a real kill recovers the runs.
 */

import type { Rng } from '../../base/rng.ts';
import type { Adapter, RestartKind } from '../../contract/types.ts';
import { type ItemKind, PROVIDER_PROFILES, type ProviderProfile, type StartKind } from '../providers.ts';
import type { Runner } from './runner.ts';

export interface TurnState {
  index: number;
  items: ItemKind[];
  done: number;
  startedAt: number;
  /** The run's first turn: its first item is the run's first activity. */
  first: boolean;
}

export interface NativeRun {
  id: string;
  session: string;
  adapter: Adapter;
  profile: ProviderProfile;
  start: StartKind;
  createdAt: number;
  /** Control-plane draws, provider draws, and knob draws: apart, so one never shifts another. */
  cpRng: Rng;
  providerRng: Rng;
  knobRng: Rng;
  inputs: string[];
  turns: number;
  turn?: TurnState;
  runner?: Runner;
  launching: boolean;
  ended: boolean;
  /** The provider's saved session was closed cleanly (a drained runner, or never opened). */
  cleanSave: boolean;
  /** The runner's phase, as durable state knows it: none, booting (boot or load), running. */
  runnerPhase: 'none' | 'booting' | 'running';
  /** The client's idempotency keys: the request that opened the run, the last input. */
  openKey?: string;
  inputKey?: string;
}

/**
 * The run manager's durable state (a served control plane writes it to its state directory
 * after every change, so a process started after a real kill recovers the runs: restore()).
 */
export interface RunsSnapshot {
  counter: number;
  /** How many processes restored this state before (forks fresh random streams each time). */
  incarnation: number;
  saved: Array<[string, number]>;
  slowdowns: Array<{ adapter?: Adapter; factor: number; until: number | null }>;
  runs: Array<{
    id: string;
    session: string;
    adapter: Adapter;
    start: StartKind;
    createdAt: number;
    inputs: string[];
    turns: number;
    turn?: TurnState;
    cleanSave: boolean;
    runnerPhase: 'none' | 'booting' | 'running';
    openKey?: string;
    inputKey?: string;
  }>;
}

/** Where a served control plane keeps the runs' durable state (file-store.ts). */
export interface RunStore {
  loadRuns(): RunsSnapshot | undefined;
  saveRuns(snapshot: RunsSnapshot): void;
}

/** The durable state of the run manager at this moment. */
export function snapshotOf(state: {
  counter: number;
  incarnation: number;
  saved: Map<string, number>;
  slowdowns: ReadonlyArray<{ adapter?: Adapter; factor: number; until: number }>;
  active: Map<string, NativeRun>;
}): RunsSnapshot {
  return {
    counter: state.counter,
    incarnation: state.incarnation,
    saved: [...state.saved],
    slowdowns: state.slowdowns.map((s) => ({
      ...s,
      until: Number.isFinite(s.until) ? s.until : null,
    })),
    runs: [...state.active.values()].map((run) => ({
      id: run.id,
      session: run.session,
      adapter: run.adapter,
      start: run.start,
      createdAt: run.createdAt,
      inputs: [...run.inputs],
      turns: run.turns,
      ...(run.turn ? { turn: { ...run.turn, items: [...run.turn.items] } } : {}),
      cleanSave: run.cleanSave,
      runnerPhase: run.runnerPhase,
      ...(run.openKey !== undefined ? { openKey: run.openKey } : {}),
      ...(run.inputKey !== undefined ? { inputKey: run.inputKey } : {}),
    })),
  };
}

/**
 * The runs a snapshot holds, as a new process takes them over. A hard kill left busy runners'
 * saved sessions unclean; after a hot restart, runners that were running are handed over
 * (reattached without a reload); runners still booting are launched again. Each run draws from
 * fresh streams of this incarnation.
 */
export function runsFromSnapshot(
  snapshot: RunsSnapshot,
  kind: RestartKind,
  rng: Rng,
  incarnation: number,
  profileOf: (adapter: Adapter) => ProviderProfile = (adapter) => PROVIDER_PROFILES[adapter],
): { runs: NativeRun[]; handedOver: NativeRun[] } {
  const runs: NativeRun[] = [];
  const handedOver: NativeRun[] = [];
  for (const r of snapshot.runs) {
    const base = rng.fork(`run:${r.id}:incarnation:${incarnation}`);
    const run: NativeRun = {
      ...r,
      profile: profileOf(r.adapter),
      cpRng: base.fork('control-plane'),
      providerRng: base.fork('provider'),
      knobRng: base.fork('knobs'),
      launching: false,
      ended: false,
    };
    const handOver = kind === 'hot' && r.runnerPhase === 'running';
    if (handOver) handedOver.push(run);
    else {
      if (r.runnerPhase !== 'none') run.cleanSave = false;
      run.runnerPhase = 'none';
    }
    runs.push(run);
  }
  return { runs, handedOver };
}
