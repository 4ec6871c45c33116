/**
 * API cost: primary-limit burn per window, conditional requests, the polling floor, burst shape,
 * call latency, the hourly projection and the /rate_limit bracket.
 */
import type { Analysis } from '../../analyze/schema.ts';
import {
  type Block,
  columns,
  fmtInt,
  fmtMs,
  fmtNum,
  fmtPct,
  numericColumn,
  type Section,
  textColumn,
} from '../table.ts';
import { note, notesIf, pairs, percentileColumns, percentileRow, table } from './build.ts';

export function burnSection(a: Analysis): Section {
  const burn = a.api.burn;
  const rows = burn.windows.map((w) => [
    w.resource,
    w.basis === 'reset' && w.reset !== null
      ? `resets ${new Date(w.reset * 1000).toISOString().slice(11, 19)}Z`
      : `hour ${fmtMs(w.startMs)}`,
    fmtMs(w.coveredMs),
    fmtInt(w.calls),
    fmtNum(w.points),
    fmtNum(w.pointsPerHour, 0),
    fmtInt(w.limit),
    fmtInt(w.usedMax),
    fmtPct(w.headroomPct),
  ]);
  const notes = [...burn.warnings];
  const opaque = Object.entries(a.api.opaque.byResource);
  if (opaque.length > 0) {
    notes.push(
      `not in the burn: ${opaque.map(([r, n]) => `${fmtInt(n)} opaque ${r} calls`).join(', ')} (cost unknown)`,
    );
  }
  return {
    title: 'Primary-limit burn per reset window',
    blocks: [
      table(
        [
          textColumn('resource'),
          textColumn('window'),
          ...['covered', 'calls', 'points', 'points/h', 'limit', 'used max', 'headroom'].map(numericColumn),
        ],
        rows,
      ),
      ...notesIf(notes, 'warning'),
    ],
  };
}

function conditionalSection(a: Analysis): Section {
  const c = a.api.conditional;
  return {
    title: 'Conditional requests',
    blocks: [
      pairs([
        ['conditional requests', fmtInt(c.requests)],
        ['answered 304', `${fmtInt(c.notModified)} (${fmtPct(c.notModifiedPct)})`],
      ]),
    ],
  };
}

type Distribution = Record<
  string,
  { cells: number; calls: number; p50: number | null; mean: number | null; max: number | null }
>;

/** Calls per session per cycle (or per cycle), one row per resource. */
function distributionTable(first: string, d: Distribution): Block {
  return table(
    columns('resource', first, 'calls', 'p50', 'mean', 'max'),
    Object.entries(d).map(([resource, v]) => [
      resource,
      fmtInt(v.cells),
      fmtInt(v.calls),
      fmtNum(v.p50),
      fmtNum(v.mean),
      fmtNum(v.max),
    ]),
  );
}

const nonEmpty = (d: Distribution) => Object.keys(d).length > 0;

function pollingFloorSection(a: Analysis): Section {
  const pf = a.api.pollingFloor;
  const title = 'Polling floor (calls per session per poll cycle)';
  if (pf.attributedCalls === 0 && !nonEmpty(pf.sharedPerCycle)) {
    return {
      title,
      blocks: [
        note(
          [
            'no call carries a poll cycle id (attribution `cycle`): the polling floor cannot be computed per session per cycle',
          ],
          'info',
        ),
      ],
    };
  }
  const blocks: Block[] = [
    pairs([
      ['session-attributed calls', fmtInt(pf.attributedCalls)],
      ['sessions × cycles', `${fmtInt(pf.sessions)} × ${fmtInt(pf.cycles)}`],
    ]),
  ];
  if (nonEmpty(pf.perSessionCycle)) blocks.push(distributionTable('session·cycles', pf.perSessionCycle));
  if (nonEmpty(pf.sharedPerCycle)) {
    blocks.push(
      note(['calls with a cycle but no session (shared, per cycle):'], 'info'),
      distributionTable('cycles', pf.sharedPerCycle),
    );
  }
  const st = pf.steady;
  if (st) {
    blocks.push(
      note(
        [
          `steady state: the ${fmtInt(st.cycles)} cycles from the steady.start marker (${fmtMs(st.sinceMs)}) on, ${fmtInt(st.sessions)} sessions:`,
        ],
        'info',
      ),
      nonEmpty(st.perSessionCycle)
        ? distributionTable('session·cycles', st.perSessionCycle)
        : note(['no session-attributed calls after the marker'], 'info'),
    );
    if (nonEmpty(st.sharedPerCycle)) {
      blocks.push(
        note(['steady state, shared (per cycle):'], 'info'),
        distributionTable('cycles', st.sharedPerCycle),
      );
    }
  }
  return { title, blocks };
}

const BARS = ' ▁▂▃▄▅▆▇█';

/** Calls per second as a one-line bar chart (max shown after it). */
export function sparkline(values: number[]): string {
  const max = Math.max(0, ...values);
  if (max === 0) return '(no calls)';
  return `${values.map((v) => BARS[Math.ceil((v / max) * (BARS.length - 1))]).join('')}  max ${fmtInt(max)}`;
}

function burstSection(a: Analysis): Section {
  const api = a.api;
  const b = api.burst;
  return {
    title: 'Burst shape',
    blocks: [
      pairs([
        ['max req/s, any 1 s', b.max1s ? `${fmtNum(b.max1s.perSecond)} (at ${fmtMs(b.max1s.atMs)})` : '–'],
        [
          'max req/s, any 10 s',
          b.max10s
            ? `${fmtNum(b.max10s.perSecond)} (${fmtInt(b.max10s.calls)} calls at ${fmtMs(b.max10s.atMs)})`
            : '–',
        ],
        [
          'peak concurrency',
          `${fmtInt(api.concurrency.peak)} in flight (at ${fmtMs(api.concurrency.atMs)}, ±${fmtMs(api.concurrency.resolutionMs)})`,
        ],
        [
          'writes per minute (max)',
          `${fmtInt(api.writes.maxPerMinute)} (of ${fmtInt(api.writes.total)} writes)`,
        ],
        [
          '403 / 429 / retry-after',
          `${fmtInt(api.limited.answers)} (403: ${fmtInt(api.limited.status403)}, 429: ${fmtInt(api.limited.status429)}, retry-after: ${fmtInt(api.limited.retryAfter)})`,
        ],
        ['first 60 s, calls per second', sparkline(b.first60s)],
      ]),
      note(
        [
          `windows slide ${fmtMs(b.stepMs)} at a time; concurrency bins are ${fmtMs(api.concurrency.resolutionMs)} wide`,
        ],
        'info',
      ),
    ],
  };
}

function latencySection(a: Analysis): Section {
  const latency = a.api.latency;
  return {
    title: 'Call latency',
    blocks: [
      table(percentileColumns('calls'), [
        percentileRow('all', latency.all),
        percentileRow('rest', latency.rest),
        percentileRow('graphql', latency.graphql),
      ]),
      note(['HDR histogram, 3 significant digits (1 µs unit); min and max exact'], 'info'),
    ],
  };
}

function projectionSection(a: Analysis): Section {
  const p = a.api.projection;
  const byResource = Object.entries(p.byResource);
  return {
    title: 'Projection: sessions under the hourly limit',
    blocks: [
      table(
        columns('resource', 'limit/h', 'points/h', 'shared/h', 'per session/h', 'sessions that fit'),
        byResource.map(([resource, v]) => [
          resource,
          `${fmtInt(v.limit)}${v.limitSource === 'default' ? '*' : ''}`,
          fmtNum(v.pointsPerHour, 1),
          fmtNum(v.sharedPointsPerHour, 1),
          fmtNum(v.perSessionPointsPerHour, 2),
          v.sessionsThatFit === null ? '–' : fmtInt(v.sessionsThatFit),
        ]),
      ),
      note(
        [
          `at ${fmtInt(p.sessions)} sessions; ${p.model}`,
          ...(byResource.some(([, v]) => v.limitSource === 'default')
            ? ['* limit not seen in any response: the default']
            : []),
        ],
        'info',
      ),
    ],
  };
}

function bracketSection(a: Analysis): Section[] {
  const br = a.api.bracket;
  if (!br) return [];
  return [
    {
      title: '/rate_limit bracket',
      blocks: [
        table(
          columns('resource', 'used before', 'used after', 'delta', 'trace points', 'unseen'),
          Object.entries(br.byResource).map(([resource, v]) => [
            resource,
            fmtNum(v.before?.used),
            fmtNum(v.after?.used),
            fmtNum(v.deltaUsed),
            fmtNum(v.tracePoints),
            fmtNum(v.unseenPoints),
          ]),
        ),
        ...notesIf(br.warnings, 'warning'),
      ],
    },
  ];
}

/** Every cost section after the burn, in report order. */
export function costSections(a: Analysis): Section[] {
  return [
    conditionalSection(a),
    pollingFloorSection(a),
    burstSection(a),
    latencySection(a),
    projectionSection(a),
    ...bracketSection(a),
  ];
}
