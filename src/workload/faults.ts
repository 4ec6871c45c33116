/**
 * Scheduled faults (docs/scenarios.md#faults). Each fault writes `fault.start` and, when it has a duration,
 * `fault.end` events, so analysis can line effects up with causes.
 */

import { FleetbenchError } from '../base/errors.ts';
import type { Clock } from '../clock/clock.ts';
import { hasCapability, type Target, type TargetCapability } from '../contract/types.ts';
import type { Labels } from '../trace/schema.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { MarkerBus } from './markers.ts';
import type { Fault } from './scenario.ts';
import type { World } from './world.ts';

/** Extra latency in ms, share of 5xx answers, share of forced secondary-limit answers. */
export interface GitHubFaultSettings {
  extraLatencyMs?: number;
  errorShare?: number;
  secondaryShare?: number;
}

/** GitHub-side fault controls (the emulator's admin API). */
export interface GitHubFaults {
  setFaults(faults: GitHubFaultSettings): Promise<void>;
}

export interface FaultContext {
  clock: Clock;
  trace: TraceSink;
  target: Target;
  world: World;
  github: GitHubFaults;
  markers: MarkerBus;
  sessionCount: number;
}

const needs: Partial<Record<Fault['type'], TargetCapability>> = {
  restart: 'restart',
  'cache-flush': 'flushCaches',
  dashboard: 'setDashboard',
  'provider-slowdown': 'providerFault',
  'provider-crash': 'providerFault',
};

/** Fails up front when the target cannot do what a fault asks. */
export function checkFaults(faults: readonly Fault[], target: Target): void {
  for (const fault of faults) {
    const capability = needs[fault.type];
    if (capability && !hasCapability(target, capability)) {
      throw new FleetbenchError(
        'E_TARGET',
        `fault '${fault.type}' needs a target that supports ${capability}; '${target.name}' does not`,
      );
    }
  }
}

export function scheduleFaults(
  faults: readonly Fault[],
  ctx: FaultContext & {
    /** A fault that could not be applied (a restart that never came back): the run fails. */
    onFailure?: (index: number, error: unknown) => void;
  },
): void {
  faults.forEach((fault, index) => {
    ctx.markers.schedule(fault, () =>
      applyFault(fault, index, ctx).catch((error: unknown) => {
        ctx.trace.write({
          kind: 'event',
          name: 'fault.failed',
          t: ctx.clock.now(),
          labels: { type: fault.type, index },
          data: { message: (error as Error)?.message ?? String(error) },
        });
        if (ctx.onFailure) ctx.onFailure(index, error);
        else throw error;
      }),
    );
  });
}

async function applyFault(fault: Fault, index: number, ctx: FaultContext): Promise<void> {
  const { clock, trace, target } = ctx;
  const event = (name: string, labels: Labels) =>
    trace.write({ kind: 'event', name, t: clock.now(), labels: { type: fault.type, index, ...labels } });
  const later = (ms: number | undefined, fn: () => Promise<void>) => {
    if (ms !== undefined) clock.setTimeout(() => void fn(), ms);
  };
  /** A fault that holds for `durationMs`: started, `undo` once it is over, then ended. */
  const timed = async (
    labels: Labels,
    durationMs: number | undefined,
    apply: () => Promise<unknown>,
    undo: () => Promise<unknown>,
  ) => {
    event('fault.start', labels);
    await apply();
    later(durationMs, async () => {
      await undo();
      event('fault.end', {});
    });
  };
  /** A GitHub-side fault: one emulator setting at `value` for `durationMs`, then back to 0. */
  const githubFault = (
    labels: Labels,
    durationMs: number | undefined,
    setting: keyof GitHubFaultSettings,
    value: number,
  ) =>
    timed(
      labels,
      durationMs,
      () => ctx.github.setFaults({ [setting]: value }),
      () => ctx.github.setFaults({ [setting]: 0 }),
    );
  switch (fault.type) {
    case 'restart': {
      event('fault.start', { kind: fault.kind });
      const { outageMs } = await target.restart!(fault.kind);
      event('fault.end', { kind: fault.kind, outageMs: Math.round(outageMs) });
      return;
    }
    case 'cache-flush':
      event('fault.start', {});
      await target.flushCaches!();
      return;
    case 'review-burst': {
      const prs = fault.prs ?? Math.min(ctx.sessionCount, 10);
      const result = await ctx.world.reviewBurst(prs, fault.comments);
      event('fault.start', { prs: result.prs, comments: result.comments });
      return;
    }
    case 'dashboard':
      return timed(
        { durationMs: fault.durationMs },
        fault.durationMs,
        () => target.setDashboard!(true),
        () => target.setDashboard!(false),
      );
    case 'github-latency':
      return githubFault({ extraMs: fault.extraMs }, fault.durationMs, 'extraLatencyMs', fault.extraMs);
    case 'github-5xx':
      return githubFault({ share: fault.share }, fault.durationMs, 'errorShare', fault.share);
    case 'github-secondary':
      return githubFault({ share: fault.share }, fault.durationMs, 'secondaryShare', fault.share);
    case 'provider-slowdown':
      event('fault.start', { factor: fault.factor, ...(fault.adapter ? { adapter: fault.adapter } : {}) });
      await target.providerFault!({
        type: 'slowdown',
        adapter: fault.adapter,
        factor: fault.factor,
        durationMs: fault.durationMs,
      });
      later(fault.durationMs, async () => event('fault.end', {}));
      return;
    case 'provider-crash':
      event('fault.start', { count: fault.count, ...(fault.adapter ? { adapter: fault.adapter } : {}) });
      await target.providerFault!({ type: 'crash', adapter: fault.adapter, count: fault.count });
      return;
  }
}
