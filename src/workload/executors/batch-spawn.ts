import { type SessionState, stateRank } from '../../contract/types.ts';
import type { Executor } from '../scenario.ts';
import { type ExecutorContext, ownsStart } from './context.ts';

/**
 * Spawn storm: N sessions at once, then wait until every one of them has reached `until`
 * (pr_open by default). The wait is a `batch.settle` span and a `<name>.done` marker.
 */
export async function runBatchSpawn(
  executor: Extract<Executor, { type: 'batch-spawn' }>,
  ctx: ExecutorContext,
): Promise<void> {
  const start = ctx.segment?.startAt ?? ctx.clock.now();
  // A segment starts its share (global index k) and waits for those only.
  const indexes = Array.from({ length: executor.count }, (_, k) => k).filter((k) => ownsStart(ctx, k));
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
    if (reached.size === indexes.length) resolveDone();
  });
  if (indexes.length === 0) resolveDone();
  // All at once: no start waits for the target to answer the one before it.
  const starts: Promise<string>[] = [];
  for (const k of indexes)
    starts.push(
      ctx.segment
        ? ctx.spawner.spawn(ctx.name, start, (id) => mine.add(id), ctx.segment.offset + k)
        : ctx.spawner.spawn(ctx.name, start, (id) => mine.add(id)),
    );
  await Promise.all(starts);
  ctx.markers.emit(`${ctx.name}.spawned`, { count: executor.count });
  const aborted = new Promise<void>((resolve) =>
    ctx.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  await Promise.race([done, aborted]);
  if (ctx.signal.aborted && reached.size < indexes.length) return;
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
