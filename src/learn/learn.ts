/**
 * `fleetbench model learn`: a control plane's behaviour learned from its traces as data
 * (docs/model.md). Any trace whose API calls carry their session and poll cycle will do (the
 * reference's, agent-orchestrator's through `--target ao`, an `http` or `module` target's that
 * writes the same records); what each part is learned from is said beside it in trace.ts and in
 * the docs. Each trace is read into a Learner (trace.ts); the model is made from it here.
 */
import { FleetbenchError } from '../base/errors.ts';
import { MODEL_LEARN_LIMITS } from '../base/limits.ts';
import { VERSION } from '../base/version.ts';
import type {
  Model,
  ModelCalls,
  ModelCoverage,
  ModelEventProfile,
  ModelHistogram,
  ModelTransition,
} from '../model/format.ts';
import { MODEL_FORMAT, type ModelState, type ModelTrigger, modelTriggers } from '../model/words.ts';
import {
  coarseFitWindows,
  FIT_MAX_CALLS,
  type FittedClientTimes,
  fitClientTimes,
  fitWindows,
} from './cycle-time.ts';
import { Learner, percentile, percentiles, round } from './learner.ts';
import { decideOverrun } from './overrun.ts';
import { learnTrace } from './trace.ts';

/**
 * The triggers that explain a change into each state, when two kinds came at the same moment (a
 * PR opened as its session was created): the PR's opening explains `pr_open`, the creation
 * `working`. Only a tie is decided by it.
 */
const EXPLAINS: Record<ModelTrigger, ReadonlySet<ModelState>> = {
  created: new Set(['spawning', 'working']),
  'pr-opened': new Set(['pr_open']),
  'ci-completed': new Set(['pr_open', 'review']),
  'review-posted': new Set(['review', 'working']),
  pushed: new Set(['pr_open', 'working']),
  merged: new Set(['merged', 'closed']),
  restart: new Set(),
};

/**
 * The rule of each change between two states: its cause is the kind of trigger that came before
 * every one of them (or, failing that, before most) and is nearest in the session's cycles; a
 * restart only when nothing else came before; between kinds that came at the same moment, the one
 * that explains the state it moved to (EXPLAINS). A change made outside any cycle has lag 0 and
 * the time from its cause.
 */
function learnTransitions(samples: Learner['transitionSamples'], notes: Set<string>): ModelTransition[] {
  const groups = new Map<string, Learner['transitionSamples']>();
  for (const sample of samples) {
    const key = `${sample.from}→${sample.to}`;
    const group = groups.get(key);
    if (group) group.push(sample);
    else groups.set(key, [sample]);
  }
  const out: ModelTransition[] = [];
  for (const group of groups.values()) {
    const to = group[0]!.to;
    const kinds = new Set(group.flatMap((g) => [...g.byKind.keys()]));
    const ranked = [...kinds]
      .map((kind) => {
        const present = group.filter((g) => g.byKind.has(kind));
        const meanLag =
          present.reduce((a, g) => a + g.byKind.get(kind)!.lag, 0) / Math.max(1, present.length);
        const meanMs = present.reduce((a, g) => a + g.byKind.get(kind)!.ms, 0) / Math.max(1, present.length);
        return { kind, share: present.length / group.length, meanLag, meanMs };
      })
      .sort(
        (a, b) =>
          Number(b.share === 1) - Number(a.share === 1) ||
          Number(b.share >= 0.8) - Number(a.share >= 0.8) ||
          Number(a.kind === 'restart') - Number(b.kind === 'restart') ||
          a.meanLag - b.meanLag ||
          a.meanMs - b.meanMs ||
          Number(EXPLAINS[b.kind].has(to)) - Number(EXPLAINS[a.kind].has(to)),
      );
    const cause = ranked[0]!.kind;
    const used = group.filter((g) => g.byKind.has(cause));
    if (used.length < group.length)
      notes.add(
        `${group[0]!.from} → ${group[0]!.to}: ${group.length - used.length} of ${group.length} changes had no ${cause} before them and were left out`,
      );
    const afterCycles: ModelHistogram = {};
    const ms: number[] = [];
    for (const g of used) {
      const { lag, ms: after } = g.byKind.get(cause)!;
      afterCycles[String(lag)] = (afterCycles[String(lag)] ?? 0) + 1;
      if (lag === 0) ms.push(after);
    }
    out.push({
      from: group[0]!.from,
      on: cause,
      to: group[0]!.to,
      samples: used.length,
      afterCycles: Object.fromEntries(Object.entries(afterCycles).sort(([a], [b]) => Number(a) - Number(b))),
      afterMs: ms.length > 0 ? percentiles(ms) : null,
    });
  }
  return out.sort((a, b) => b.samples - a.samples);
}

/** The cost per task of the traces without poll cycles, if they had any task. */
function tasksOf(learner: Learner): Model['tasks'] {
  const { perTask, unattributed, points, durations } = learner.tasks;
  if (perTask.samples === 0) return undefined;
  return {
    samples: perTask.samples,
    calls: perTask.means(),
    points: round(points / perTask.samples, 3),
    durationMs: durations.length > 0 ? percentiles(durations) : null,
    unattributed: unattributed.means(),
  };
}

function histogram(map: Map<number, number>): ModelHistogram {
  const out: ModelHistogram = {};
  for (const [k, n] of [...map].sort((a, b) => a[0] - b[0])) out[String(k)] = n;
  return out;
}

function cycleMeanError(observed: readonly number[], modelled: readonly number[]): number | null {
  const pairs = observed.map((o, i) => [o, modelled[i] ?? 0] as const).filter(([o]) => o > 0);
  if (pairs.length === 0) return null;
  return round((pairs.reduce((a, [o, m]) => a + Math.abs(m - o) / o, 0) / pairs.length) * 100, 1);
}

const pctError = (model: number, trace: number) =>
  trace === 0 ? (model === 0 ? 0 : null) : round(((model - trace) / trace) * 100, 1);

export interface LearnOptions {
  /** What the model is called (default: what the first trace says ran). */
  name?: string;
  /** Told as each trace is read: its bytes read so far, of its size (a progress bar). */
  onProgress?: (file: string, bytesRead: number, bytesTotal: number) => void;
}

export async function learnModel(files: readonly string[], options: LearnOptions = {}): Promise<Model> {
  if (files.length === 0) throw new FleetbenchError('E_USAGE', 'model learn needs at least one trace');
  if (files.length > MODEL_LEARN_LIMITS.maxTraces)
    throw new FleetbenchError(
      'E_USAGE',
      `model learn reads at most ${MODEL_LEARN_LIMITS.maxTraces} traces (docs/limits.md), got ${files.length}`,
    );
  const learner = new Learner();
  const { onProgress } = options;
  for (const file of files)
    await learnTrace(file, learner, onProgress ? (read, total) => onProgress(file, read, total) : undefined);
  const speed = learner.speed.finish();
  const tasks = tasksOf(learner);
  if (learner.costTraces === 0 && speed === null && tasks === undefined)
    throw new FleetbenchError(
      'E_MODEL',
      `nothing to learn: ${learner.whyNothing.join('; ')}; and no native-run records (docs/model.md)`,
    );

  subtractSteadyShared(learner);
  // In this order: each adds its notes to the fit's, in the order they are read.
  const transitions = learnTransitions(learner.transitionSamples, learner.notes);
  if (learner.review.samples === 0)
    learner.notes.add('no review burst in the traces: the agent’s reaction to reviews is not modelled');
  const overrun = decideOverrun(
    learner.overrun,
    learner.traces.map((t) => t.target),
  );
  learner.notes.add(overrun.note);

  const windows = fitWindows(learner.fitGroups);
  if (windows !== learner.fitGroups)
    learner.notes.add(
      `the traces' cycles hold more than ${FIT_MAX_CALLS.toLocaleString('en-US')} calls: the cycle time was fitted on windows of consecutive cycles spread over them (${windows.reduce((n, w) => n + w.cycles.length, 0)} of ${learner.fitGroups.reduce((n, g) => n + g.cycles.length, 0)} cycles); the fit figures compare every cycle`,
    );
  const coarse = windows !== learner.fitGroups ? coarseFitWindows(learner.fitGroups) : windows;
  const fit = learner.fitGroups.length > 0 ? fitClientTimes(learner.fitGroups, windows, coarse) : NO_FIT;
  const { spawnCpuMs, cycleSpread } = fitSpawnAndSpread(learner.fitGroups, fit);
  const first = learner.traces[0]!;
  const intervals = learner.intervals.sort((a, b) => a - b);
  return {
    format: MODEL_FORMAT,
    name: options.name ?? first.controlPlane ?? first.target ?? first.scenario,
    provenance: { tool: { name: 'fleetbench', version: VERSION }, traces: learner.traces },
    loop: {
      scope: learner.scope,
      parallel: learner.parallel,
      intervalMs: intervals.length > 0 ? percentile(intervals, 50) : null,
      overrun: overrun.rule,
    },
    cycleTime: {
      cores: learner.fitGroups[0]?.cores ?? 1,
      load: learner.fitGroups[0]?.load ?? 0,
      cpuMsPerCall: fit.cpuMsPerCall,
      waitMsPerCall: fit.waitMsPerCall,
      launchMsPerCall: fit.launchMsPerCall,
      spawnCpuMs,
      cycleSpread,
      cycles: learner.fitGroups.reduce((n, g) => n + g.observed.length, 0),
    },
    operations: learner.operations.finish(),
    sessions: {
      spawn: { samples: learner.spawn.samples, calls: learner.spawn.means() },
      cycles: cycleProfiles(learner),
      transitions,
      review: reviewReaction(learner),
    },
    shared: { perProject: learner.perProject.means(), perRepo: learner.perRepo.means() },
    events: eventProfiles(learner),
    ...(tasks ? { tasks } : {}),
    speed,
    restartOutageMs: restartOutages(learner),
    coverage: coverageOf(learner),
    fit: fitReport(learner, fit),
  };
}

/** A model without poll cycles (speed only): no client times. */
const NO_FIT: FittedClientTimes = {
  cpuMsPerCall: 0,
  waitMsPerCall: 0,
  launchMsPerCall: 0,
  modelled: { durations: [], spreads: [], chainEnds: [] },
};

/** The restart rows' shared calls, made relative to the steady shared calls of a cycle. */
function subtractSteadyShared(learner: Learner): void {
  const steadyShared = new Map<string, number>();
  for (const [op, sum] of learner.perProject.sums)
    steadyShared.set(op, sum / Math.max(1, learner.perProject.samples));
  for (const [op, sum] of learner.perRepo.sums)
    steadyShared.set(op, (steadyShared.get(op) ?? 0) + sum / Math.max(1, learner.perRepo.samples));
  for (const entry of learner.excess.values())
    if (entry.perProject.samples > 0)
      for (const [op, mean] of steadyShared) entry.perProject.add(op, -mean * entry.perProject.samples);
}

function cycleProfiles(learner: Learner): Model['sessions']['cycles'] {
  return [...learner.cycleProfiles.values()]
    .map((e) => ({
      from: e.from,
      to: e.to,
      samples: e.all.samples,
      calls: (e.clean.samples > 0 ? e.clean : e.all).means(),
    }))
    .sort((a, b) => b.samples - a.samples);
}

function eventProfiles(learner: Learner): ModelEventProfile[] {
  return [...learner.excess.values()]
    .map((e) => ({
      on: e.on,
      afterCycle: e.k,
      samples: Math.max(e.perSession.samples, e.perProject.samples),
      perSession: e.perSession.means(0.05),
      perProject: e.perProject.means(0.05),
    }))
    .filter((e) => e.perSession.length > 0 || e.perProject.length > 0)
    .sort((a, b) => (a.on === b.on ? a.afterCycle - b.afterCycle : a.on < b.on ? -1 : 1));
}

/** The agent's calls after a review: per review, or per comment when they follow the comments. */
function reviewReaction(learner: Learner): Model['sessions']['review'] {
  const { review } = learner;
  if (review.samples === 0) return null;
  const perReaction: ModelCalls = [];
  const perComment: ModelCalls = [];
  const comments = review.comments;
  const totalComments = comments.reduce((a, b) => a + b, 0);
  for (const [op, list] of review.perReaction) {
    const total = list.reduce((a, b) => a + b, 0);
    const perReview = total / list.length;
    const ratio = total / Math.max(1, totalComments);
    const errReview = list.reduce((a, n) => a + Math.abs(n - perReview), 0);
    const errComment = list.reduce((a, n, i) => a + Math.abs(n - ratio * (comments[i] ?? 1)), 0);
    if (errComment < errReview) perComment.push({ operation: op, mean: round(ratio, 4) });
    else perReaction.push({ operation: op, mean: round(perReview, 4) });
  }
  return { samples: review.samples, toldAfterCycles: histogram(review.told), perReaction, perComment };
}

/** What the traces showed: every kind of event (0 for those they never did), restarts, the largest cycle. */
function coverageOf(learner: Learner): ModelCoverage {
  const { events, restarts, sessions, callsPerCycle, repos } = learner.coverage;
  const intervals = learner.intervals;
  const restartCounts: ModelCoverage['restarts'] = {};
  for (const kind of ['hard', 'graceful', 'hot'] as const) {
    const n = restarts.get(kind);
    if (n) restartCounts[kind] = n;
  }
  return {
    events: Object.fromEntries(modelTriggers.map((on) => [on, events.get(on) ?? 0])),
    restarts: restartCounts,
    scale: { sessions, callsPerCycle },
    repos,
    ...(intervals.length > 0
      ? {
          intervalMs: {
            min: intervals.reduce((a, b) => Math.min(a, b)),
            max: intervals.reduce((a, b) => Math.max(a, b)),
          },
        }
      : {}),
  };
}

function restartOutages(learner: Learner): Model['restartOutageMs'] {
  const outage: Model['restartOutageMs'] = {};
  for (const [kind, list] of learner.outages)
    if (kind === 'hard' || kind === 'graceful' || kind === 'hot')
      outage[kind] = { ...percentiles(list), samples: list.length };
  return outage;
}

/** The model beside its own traces: calls, calls per session-cycle, the cycles' length. */
function fitReport(learner: Learner, fit: FittedClientTimes): Model['fit'] {
  const modelledSessionCycleCalls = learner.fitUnits.reduce((a, f) => a + f(), 0);
  const sum = (calls: ModelCalls) => calls.reduce((a, c) => a + c.mean, 0);
  const modelledShared =
    sum(learner.perProject.means(0)) * learner.perProject.samples +
    sum(learner.perRepo.means(0)) * learner.perRepo.samples;
  const modelledSpawn = sum(learner.spawn.means(0)) * learner.spawn.samples;
  const agentTotal = [...learner.review.perReaction.values()].flat().reduce((a, b) => a + b, 0);
  const restartShared = [...learner.excess.values()].reduce(
    (a, e) => a + [...e.perProject.sums.values()].reduce((x, y) => x + y, 0),
    0,
  );
  const modelledCalls =
    modelledSessionCycleCalls + modelledShared + modelledSpawn + agentTotal + restartShared;
  const observedCycles = learner.fitGroups.flatMap((g) => g.observed).sort((a, b) => a - b);
  const modelledCycles = [...fit.modelled.durations].sort((a, b) => a - b);
  const figure = (trace: number | null, model: number | null) => ({
    trace: trace === null ? null : round(trace, 2),
    model: model === null ? null : round(model, 2),
    errorPct: trace === null || model === null ? null : pctError(model, trace),
  });
  const { fit: counts } = learner;
  return {
    calls: figure(counts.calls, modelledCalls),
    callsPerSessionCycle: figure(
      counts.sessionCycles > 0 ? counts.sessionCycleCalls / counts.sessionCycles : null,
      counts.sessionCycles > 0 ? modelledSessionCycleCalls / counts.sessionCycles : null,
    ),
    cycleP50Ms: figure(percentile(observedCycles, 50), percentile(modelledCycles, 50)),
    cycleP95Ms: figure(percentile(observedCycles, 95), percentile(modelledCycles, 95)),
    cycleMeanErrorPct: cycleMeanError(
      learner.fitGroups.flatMap((g) => g.observed),
      fit.modelled.durations,
    ),
    unmodelledCalls: counts.unmodelled,
    notes: [...learner.notes],
  };
}

/**
 * What the fitted client times leave over: the spawn's own work (the median of each spawn's time
 * beyond its calls', taken as CPU on the shared cores), and how much a cycle's length varies around
 * the model's (the p95 over the p50 of recorded ÷ modelled: what the machine's other load does).
 */
function fitSpawnAndSpread(
  groups: Learner['fitGroups'],
  fit: FittedClientTimes,
): { spawnCpuMs: number; cycleSpread: number } {
  const extra: number[] = [];
  const ratios: number[] = [];
  // The groups simulated with the fitted times (fit.modelled: one group's results after another's).
  let cycleBase = 0;
  let chainBase = 0;
  for (const g of groups) {
    const { durations, chainEnds } = fit.modelled;
    for (const spawn of g.spawns) {
      const simulated = chainEnds[chainBase + spawn.chain]! - g.chains[spawn.chain]!.startMs;
      extra.push(Math.max(0, spawn.tookMs - simulated));
    }
    g.observed.forEach((o, i) => {
      const m = durations[cycleBase + i]!;
      if (o > 0 && m > 0) ratios.push(o / m);
    });
    cycleBase += g.cycles.length;
    chainBase += g.chains.length;
  }
  const sorted = (v: number[]) => [...v].sort((a, b) => a - b);
  const r = sorted(ratios);
  return {
    spawnCpuMs: extra.length > 0 ? round(percentile(sorted(extra), 50), 0) : 0,
    cycleSpread: r.length > 1 ? round(Math.max(1, percentile(r, 95) / percentile(r, 50)), 3) : 1,
  };
}
