import { type SessionState, stateRank } from '../../targets/types.ts';
import type { Executor } from '../scenario.ts';
import type { ExecutorContext } from './index.ts';

/**
 * Spawn storm: N sessions at once, then wait until every one of them has reached `until`
 * (pr_open by default). The wait is a `batch.settle` span and a `<name>.done` marker.
 */
export async function runBatchSpawn(
  executor: Extract<Executor, { type: 'batch-spawn' }>,
  ctx: ExecutorContext,
): Promise<void> {
  const start = ctx.clock.now();
  const goal = stateRank[executor.until];
  const mine = new Set<string>();
  const reached = new Set<string>();
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => {
    resolveDone = resolve;
  });
  ctx.target.onSessionState((id: string, _from: SessionState | 'none', to: SessionState) => {
    if (!mine.has(id) || reached.has(id) || stateRank[to] < goal) return;
    reached.add(id);
    if (reached.size === executor.count) resolveDone();
  });
  // All at once: no start waits for the target to answer the one before it.
  const starts: Promise<string>[] = [];
  for (let i = 0; i < executor.count; i++)
    starts.push(ctx.spawner.spawn(ctx.name, start, (id) => mine.add(id)));
  await Promise.all(starts);
  ctx.markers.emit(`${ctx.name}.spawned`, { count: executor.count });
  const aborted = new Promise<void>((resolve) =>
    ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  await Promise.race([done, aborted]);
  if (ctx.signal.aborted && reached.size < executor.count) return;
  ctx.trace.write({
    kind: 'span',
    name: 'batch.settle',
    t: start,
    dur: ctx.clock.now() - start,
    labels: { executor: ctx.name, until: executor.until },
    data: { count: executor.count },
  });
  ctx.markers.emit(`${ctx.name}.done`, { until: executor.until });
}
