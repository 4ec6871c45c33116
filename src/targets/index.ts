/**
 * Targets: what the run engine drives. `reference` (the embedded reference control plane,
 * reference.ts), `ao`/`ao:DIR` (agent-orchestrator, ao/), `http://HOST:PORT` (the http protocol,
 * http.ts) and `module:PATH` (a user's module, module.ts). `openTarget` builds any of them for a
 * run and, under the real clock, serves the run's GitHub emulator over HTTP for the http and
 * module targets.
 */

import type { Clock } from '../clock/clock.ts';
import { FleetbenchError } from '../errors.ts';
import { type RunningGitHubServer, startGitHubServer } from '../github/http.ts';
import type { Rng } from '../rng.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { GitHubSide } from '../workload/github-side.ts';
import type { Scenario } from '../workload/scenario.ts';
import type { World } from '../workload/world.ts';
import { connectHttpTarget, type HttpTargetOptions } from './http.ts';
import { loadModuleTarget } from './module.ts';
import { ReferenceTarget } from './reference.ts';
import { referenceConfigFor } from './reference-config.ts';
import type { Target } from './types.ts';

export type { EventStreamStats, HttpTargetOptions } from './http.ts';
export { HttpTarget } from './http.ts';
export type { TargetContext, TargetFactory } from './module.ts';
export * from './protocol.ts';
export * from './types.ts';

export type TargetKind = 'reference' | 'http' | 'module' | 'ao';

export function targetKind(target: string): TargetKind {
  if (target === 'reference') return 'reference';
  if (/^https?:\/\//.test(target)) return 'http';
  if (target.startsWith('module:')) return 'module';
  if (target === 'ao' || target.startsWith('ao:')) {
    if (target === 'ao:') throw new FleetbenchError('E_TARGET', "target 'ao:': expected ao or ao:DIR");
    return 'ao';
  }
  throw new FleetbenchError(
    'E_TARGET',
    `target '${target}': expected reference, ao, ao:DIR, http://HOST:PORT or module:PATH`,
  );
}

export interface OpenTargetContext {
  scenario: Scenario;
  clock: Clock;
  rng: Rng;
  trace: TraceSink;
  github: GitHubSide;
  runId: string;
  /** The scripted world (agents, CI, reviewers): the `ao` target's stand-in agents act through it. */
  world: World;
  /** The run's directory (the `ao` target keeps AO's own log there). */
  outDir: string;
  /** A live-run segment's part in a shared run (docs/distributed.md): http targets only. */
  httpOptions?: Pick<HttpTargetOptions, 'segment' | 'keep'>;
}

/** Builds the run's target, whatever its kind; its stop() also stops what was opened for it. */
export async function openTarget(ctx: OpenTargetContext): Promise<Target> {
  const { scenario, clock } = ctx;
  const kind = targetKind(scenario.target);
  if (kind === 'reference') {
    return new ReferenceTarget({
      clock,
      rng: ctx.rng,
      trace: ctx.trace,
      transport: ctx.github.transport,
      token: ctx.github.token,
      agentWorld: ctx.world,
      config: referenceConfigFor(scenario),
    });
  }
  if (kind === 'ao') {
    if (clock.kind !== 'real')
      throw new FleetbenchError('E_TARGET', 'the ao target runs on the real clock only');
    const { AoTarget } = await import('./ao/target.ts');
    const dir = scenario.target.startsWith('ao:') ? scenario.target.slice(3) : undefined;
    return new AoTarget({ ...ctx, ...(dir ? { dir } : {}) });
  }
  if (kind === 'http' && clock.kind !== 'real') {
    throw new FleetbenchError(
      'E_TARGET',
      `target ${scenario.target} is a real system: it needs the real clock`,
      {
        hint: 'add --clock real (or clock: real in the scenario)',
      },
    );
  }
  let served: RunningGitHubServer | undefined;
  if (clock.kind === 'real' && ctx.github.emulator)
    served = await startGitHubServer({ emulator: ctx.github.emulator });
  const githubUrl = ctx.github.url ?? served?.url;
  let target: Target;
  try {
    target =
      kind === 'http'
        ? await connectHttpTarget({
            baseUrl: scenario.target,
            clock,
            trace: ctx.trace,
            run: { runId: ctx.runId, seed: scenario.seed, scenario: scenario.name },
            github: githubUrl ? { url: githubUrl, token: ctx.github.token } : undefined,
            config: referenceConfigFor(scenario),
            ...ctx.httpOptions,
          })
        : await loadModuleTarget(scenario.target, {
            clock,
            rng: ctx.rng,
            trace: ctx.trace,
            github: { transport: ctx.github.transport, token: ctx.github.token, url: githubUrl },
            scenario,
          });
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
