/**
 * A learned model's coverage of its replay (docs/model.md#coverage): the share of session-cycles
 * the replay made from profiles its model saw, and what it made from those it never saw, from the
 * `controlplane.model.coverage` event the replay writes at the run's end. A finisher
 * (finisher.ts), so the figure is the trace's whatever read it: `run`, `analyze`, a merge. Its
 * schema is in schema.ts (worker threads load no zod).
 */
import type { Finisher, RetainedRecord } from './finisher.ts';
import type { ModelCoverageFigures } from './schema.ts';

const EVENT = 'controlplane.model.coverage';

export const modelCoverageFinisher: Finisher = {
  key: 'model',
  retains: (name: string) => name === EVENT,
  finish(records: readonly RetainedRecord[]): ModelCoverageFigures | undefined {
    let sessionCycles = 0;
    const extrapolated = new Map<string, number>();
    let seen = false;
    // One per run; merged segments' events add up.
    for (const r of records) {
      if (r.kind !== 'event' || r.name !== EVENT) continue;
      seen = true;
      const data = (r.data ?? {}) as { sessionCycles?: unknown; extrapolated?: unknown };
      if (typeof data.sessionCycles === 'number') sessionCycles += data.sessionCycles;
      if (data.extrapolated && typeof data.extrapolated === 'object')
        for (const [part, n] of Object.entries(data.extrapolated as Record<string, unknown>))
          if (typeof n === 'number') extrapolated.set(part, (extrapolated.get(part) ?? 0) + n);
    }
    if (!seen) return undefined;
    const out = [...extrapolated].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const made = out.reduce((a, [, n]) => a + n, 0);
    return {
      coverage:
        sessionCycles === 0 ? 1 : Math.round(((sessionCycles - made) / sessionCycles) * 10_000) / 10_000,
      sessionCycles,
      extrapolated: out.map(([part, n]) => ({ part, sessionCycles: n })),
    };
  },
};
