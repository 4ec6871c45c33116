/**
 * Targets: what the run engine drives. `reference` (the embedded reference control plane,
 * reference.ts), `ao`/`ao:DIR` (agent-orchestrator, ao/), `paperclip`/`paperclip:DIR` (the real
 * Paperclip server, paperclip/), `http://HOST:PORT` (the http protocol, http.ts) and
 * `module:PATH` (a user's module, module.ts). `openTarget` builds any of them for a
 * run from its parsed `TargetRef` (target-ref.ts), one opener per kind in `OPENERS`, and, under
 * the real clock, serves the run's GitHub emulator over HTTP for the kinds that reach GitHub
 * over the network.
 */

import { FleetbenchError } from '../base/errors.ts';
import type { ProcessCpu } from '../base/process-cpu.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import { type TargetKind, type TargetRef, targetInfo } from '../contract/target-ref.ts';
import type { Target } from '../contract/types.ts';
import { type RunningGitHubServer, startGitHubServer } from '../github/http.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { GitHubSide } from '../workload/github-side.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { World } from '../workload/world.ts';
import { connectHttpTarget, type HttpTargetOptions } from './http.ts';
import { loadModuleTarget } from './module.ts';
import { ReferenceTarget } from './reference.ts';
import { referenceConfigFor } from './reference-config.ts';

export * from '../contract/protocol.ts';
export * from '../contract/target-ref.ts';
export * from '../contract/types.ts';
export type { EventStreamStats, HttpTargetOptions } from './http.ts';
export { HttpTarget } from './http.ts';
export type { TargetContext, TargetFactory } from './module.ts';

export interface OpenTargetContext {
  scenario: Scenario;
  /** What the scenario's `target` names, parsed once (target-ref.ts). */
  target: TargetRef;
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  github: GitHubSide;
  runId: string;
  /** The scripted world (agents, CI, reviewers): the `ao` target's stand-in agents act through it. */
  world: World;
  /** The run's directory (the `ao` target keeps AO's own log there). */
  outDir: string;
  /**
   * A target whose processes share this machine registers the root of each process tree it
   * starts here, with its role (control plane, agents): the run reports fleetbench's share of the
   * CPU (src/base/process-cpu.ts). Present for such targets under the real clock.
   */
  processes?: ProcessCpu;
  /** A live-run segment's part in a shared run (docs/distributed.md): http targets only. */
  httpOptions?: Pick<HttpTargetOptions, 'segment' | 'keep'>;
}

/** The run's context with the URL of the GitHub it reaches over the network, if any. */
type OpenContext = OpenTargetContext & { githubUrl?: string };

interface Opener<K extends TargetKind> {
  /** Under the real clock, serve the run's in-process emulator on loopback for this target. */
  servesGitHub: boolean;
  open(ref: Extract<TargetRef, { kind: K }>, ctx: OpenContext): Promise<Target>;
}

/** How each kind of target is built: one row per kind of TARGET_KINDS (target-ref.ts). */
const OPENERS: { [K in TargetKind]: Opener<K> } = {
  reference: {
    servesGitHub: false,
    open: async (_ref, ctx) =>
      new ReferenceTarget({
        clock: ctx.clock,
        rng: ctx.rng,
        trace: ctx.trace,
        transport: ctx.github.transport,
        token: ctx.github.token,
        agentWorld: ctx.world,
        config: referenceConfigFor(ctx.scenario),
      }),
  },
  ao: {
    servesGitHub: false,
    async open(ref, ctx) {
      const { AoTarget } = await import('./ao/target.ts');
      return new AoTarget({ ...ctx, ...(ref.dir ? { dir: ref.dir } : {}) });
    },
  },
  http: {
    servesGitHub: true,
    open: (ref, ctx) =>
      connectHttpTarget({
        baseUrl: ref.url,
        clock: ctx.clock,
        trace: ctx.trace,
        run: { runId: ctx.runId, seed: ctx.scenario.seed, scenario: ctx.scenario.name },
        github: ctx.githubUrl ? { url: ctx.githubUrl, token: ctx.github.token } : undefined,
        config: referenceConfigFor(ctx.scenario),
        ...ctx.httpOptions,
      }),
  },
  paperclip: {
    // Paperclip's runs make no GitHub calls here: its agents are stand-ins.
    servesGitHub: false,
    async open(ref, ctx) {
      const { PaperclipTarget } = await import('./paperclip/target.ts');
      return new PaperclipTarget({ ...ctx, ref });
    },
  },
  command: {
    // Its world serves the run's emulators itself, under the real host names.
    servesGitHub: false,
    async open(ref, ctx) {
      const { CommandTarget } = await import('./command/target.ts');
      return new CommandTarget({ ...ctx, ref });
    },
  },
  module: {
    servesGitHub: true,
    open: (ref, ctx) =>
      loadModuleTarget(ref, {
        clock: ctx.clock,
        rng: ctx.rng,
        trace: ctx.trace,
        github: { transport: ctx.github.transport, token: ctx.github.token, url: ctx.githubUrl },
        scenario: ctx.scenario,
      }),
  },
};

/** Builds the run's target, whatever its kind; its stop() also stops what was opened for it. */
export async function openTarget(ctx: OpenTargetContext): Promise<Target> {
  const { target: ref, clock } = ctx;
  const needsReal = targetInfo(ref).realClock;
  if (needsReal === 'implied' && clock.kind !== 'real')
    throw new FleetbenchError('E_TARGET', `the ${ref.kind} target runs on the real clock only`);
  if (needsReal === 'required' && clock.kind !== 'real')
    throw new FleetbenchError('E_TARGET', `target ${ref.text} is a real system: it needs the real clock`, {
      hint: 'add --clock real (or clock: real in the scenario)',
    });
  const opener = OPENERS[ref.kind] as Opener<TargetKind>;
  let served: RunningGitHubServer | undefined;
  if (opener.servesGitHub && clock.kind === 'real' && ctx.github.emulator)
    served = await startGitHubServer({ emulator: ctx.github.emulator });
  const githubUrl = ctx.github.url ?? served?.url;
  let target: Target;
  try {
    target = await opener.open(ref, { ...ctx, ...(githubUrl ? { githubUrl } : {}) });
  } catch (error) {
    await served?.close();
    throw error;
  }
  if (!served) return target;
  const stop = target.stop.bind(target);
  target.stop = async () => {
    try {
      await stop();
    } finally {
      await served.close();
    }
  };
  return target;
}
