/** Does the control plane keep its time: the poll loop's interval, and an open-model schedule. */
import type { Analysis } from '../../analyze/schema.ts';
import { fmtInt, fmtMs, fmtPct, type Section } from '../table.ts';
import { note, pairs } from './build.ts';

/** The poll loop: does it keep its interval? */
export function pollCyclesSection(a: Analysis): Section[] {
  const pc = a.controlPlane.pollCycles;
  if (pc === null) return [];
  const d = pc.durationMs;
  const lag = pc.lagMs;
  const blocks = [
    pairs([
      ['cycles', fmtInt(pc.count)],
      ['interval', pc.intervalMs === null ? '– (the cycles declare none)' : fmtMs(pc.intervalMs)],
      ['duration p50 / p95 / max', d ? `${fmtMs(d.p50)} / ${fmtMs(d.p95)} / ${fmtMs(d.max)}` : '–'],
      [
        'overruns (duration > interval)',
        pc.intervalMs === null
          ? '–'
          : `${fmtInt(pc.overruns)} of ${fmtInt(pc.intervalKnown)} (${fmtPct(pc.overrunPct)})`,
      ],
      ['start lag p95 / max', lag ? `${fmtMs(lag.p95)} / ${fmtMs(lag.max)}` : '–'],
      ['skipped cycles', fmtInt(pc.skipped)],
    ]),
  ];
  if (pc.overruns > 0 || pc.skipped > 0) {
    blocks.push(
      note(
        [
          'the poll loop does not keep its interval: cycles outlast it, start late or are skipped (more concurrency, fewer calls per cycle, or a longer interval)',
        ],
        'warning',
      ),
    );
  }
  return [{ title: 'Poll cycles (control plane)', blocks }];
}

/**
 * A learned model's replay (docs/model.md#coverage): the share of its session-cycles made from
 * profiles the model saw, and what was extrapolated from profiles it never saw.
 */
export function modelCoverageSection(a: Analysis): Section[] {
  const m = a.model;
  if (!m) return [];
  const made = m.extrapolated.reduce((n, e) => n + e.sessionCycles, 0);
  const blocks = [
    pairs([
      [
        'model coverage',
        `${fmtPct(m.coverage * 100)} of ${fmtInt(m.sessionCycles)} session-cycles from profiles the model saw`,
      ],
      ...m.extrapolated.map((e): [string, string] => [
        `  extrapolated: ${e.part}`,
        `${fmtInt(e.sessionCycles)} session-cycles`,
      ]),
    ]),
  ];
  if (made > 0)
    blocks.push(
      note(
        [
          `EXTRAPOLATED: ${fmtInt(made)} session-cycles were made from profiles the model never saw (the nearest it had); their cost is a guess, not a measurement: learn from a run that shows them (docs/model.md#coverage)`,
        ],
        'warning',
      ),
    );
  return [{ title: 'Learned model', blocks }];
}

/** Open-model schedule accuracy: intended vs actual starts, missed starts, the verdict. */
export function scheduleSection(a: Analysis): Section[] {
  const s = a.schedule;
  if (!s) return [];
  const blocks = [
    pairs([
      ['scheduled starts', fmtInt(s.operations)],
      ['missed', fmtInt(s.missed)],
      [
        'start lag',
        s.lag ? `p50 ${fmtMs(s.lag.p50)} · p99 ${fmtMs(s.lag.p99)} · max ${fmtMs(s.lag.max)}` : '–',
      ],
      [
        'schedule',
        s.kept ? 'kept (a valid ceiling)' : 'NOT kept: not a valid ceiling (the offered load fell short)',
      ],
    ]),
  ];
  if (!s.kept) blocks.push(note(s.reasons, 'warning'));
  return [{ title: 'Schedule', blocks }];
}
