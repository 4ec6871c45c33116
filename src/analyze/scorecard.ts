/**
 * The Track B scorecard (docs/analysis.md#the-track-b-scorecard): a pure function of the API
 * figures, judged at `at` sessions; headroom rows are projected from the run's own sessions at
 * the measured per-session cost.
 */
import { round } from './figures.ts';

/**
 * An integer with en-US thousands separators, as `toLocaleString('en-US')` writes it, without
 * ICU: its first call in a process costs ~25-30 ms of CPU (loading the locale's data), a
 * percent of `analyze`'s on two million records, for the one figure written here.
 */
const fmtInt = (n: number) => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

import type { Analysis, ScorecardRow } from './schema.ts';

/**
 * The token Track B's headroom rows are judged on: GitHub's 5,000 points an hour of one token,
 * whatever limit the run's GitHub had (an emulator given more, GitHub Enterprise): a raised limit
 * is shown beside the row, never judged (docs/analysis.md#the-track-b-scorecard).
 */
export const TRACK_B_TOKEN_PER_HOUR = 5000;

/** The scorecard of `api`, measured with `sessions` sessions, judged at `at` (the analyzer option scorecardSessions, 50 unless set). */
export function trackBScorecard(api: Analysis['api'], sessions: number, at: number): Analysis['scorecard'] {
  const projected = sessions !== at;
  const token = TRACK_B_TOKEN_PER_HOUR;
  const costBasis =
    sessions === 0
      ? 'no session attribution: per-session cost unknown'
      : projected
        ? `projected from ${sessions} to ${at} sessions at the measured per-session cost, on the ${fmtInt(token)}/h token`
        : `measured at ${at} sessions, on the ${fmtInt(token)}/h token`;
  const measuredBasis = projected
    ? `measured at ${sessions} sessions (not projected)`
    : `measured at ${at} sessions`;
  const headroomOf = (pointsPerHour: number, atSessions: number, limit = token): number =>
    round(100 * (1 - ((pointsPerHour / sessions) * atSessions) / limit), 2);
  const headroom = (resource: string, atSessions = at, limit = token): number | null => {
    const p = api.projection.byResource[resource];
    if (p === undefined || p.perSessionPointsPerHour === null) {
      if (p && p.pointsPerHour === 0) return 100;
      return null;
    }
    return headroomOf(p.pointsPerHour!, atSessions, limit);
  };
  // The points the busiest hour of the run really charged, at its own sessions or more (scaled
  // down to `at`, never up): a breach no window, marker or declared end can hide.
  const spent = (resource: string): number | null => {
    const busiest = api.projection.byResource[resource]?.busiestHourPoints;
    if (busiest === undefined || sessions < at || sessions === 0) return null;
    return headroomOf(busiest, at);
  };
  // A projection read from a window that cannot carry it (no steady window, or one shorter than
  // a poll interval: the run's start is most of it) is not judged: the row says why and what
  // would judge it, with the whole run's figure beside it (docs/analysis.md#the-track-b-scorecard).
  const window = api.projection.window;
  const notJudged =
    window && !window.judged
      ? `not judged: ${window.reason}${window.advice ? `; ${window.advice}` : ''}`
      : null;
  // A projected headroom row carries the figure measured in the run beside it, so no report
  // shows a projection as if it were measured (docs/analysis.md#the-track-b-scorecard).
  const projection = (row: ScorecardRow, resource: string): ScorecardRow => {
    const limit = api.projection.byResource[resource]?.limit;
    const raised =
      limit !== undefined && limit !== token
        ? { runLimit: limit, runLimitHeadroom: headroom(resource, at, limit) }
        : {};
    const shown: ScorecardRow =
      projected && sessions > 0
        ? { ...row, projected: true, observed: headroom(resource, sessions), observedAt: sessions, ...raised }
        : { ...row, ...raised };
    const floor = spent(resource);
    // The hour the run spent already leaves less than the rule: a measured breach, judged
    // whatever the window (a steady rate under it, or none at all).
    if (floor !== null && floor < row.limit && (row.measured === null || notJudged || floor < row.measured))
      return {
        ...shown,
        measured: floor,
        verdict: 'fail',
        basis: `measured: the points its busiest hour charged${sessions === at ? '' : `, scaled from ${sessions} to ${at} sessions`}, on the ${fmtInt(token)}/h token (no projection in time)`,
      };
    if (notJudged === null) return shown;
    return {
      ...shown,
      measured: null,
      verdict: 'unknown',
      basis: notJudged,
      notJudged,
      // What the whole run burnt, at its own sessions: shown, never judged.
      observed: sessions > 0 ? headroom(resource, sessions) : null,
      observedAt: sessions,
    };
  };
  const rows: ScorecardRow[] = [
    projection(
      row(
        'rest-core-headroom',
        `REST core headroom at ${at} sessions`,
        headroom('core'),
        '>=',
        40,
        '%',
        costBasis,
      ),
      'core',
    ),
    projection(
      row(
        'graphql-headroom',
        `GraphQL headroom at ${at} sessions`,
        headroom('graphql'),
        '>=',
        40,
        '%',
        costBasis,
      ),
      'graphql',
    ),
    row('peak-concurrency', 'peak concurrency', api.concurrency.peak, '<', 50, 'in flight', measuredBasis),
    row(
      'max-1s',
      'max req/s over any 1 s',
      api.burst.max1s?.perSecond ?? null,
      '<=',
      30,
      'req/s',
      measuredBasis,
    ),
    row(
      'max-10s',
      'max req/s over any 10 s',
      api.burst.max10s?.perSecond ?? null,
      '<=',
      20,
      'req/s',
      measuredBasis,
    ),
    row(
      'writes-per-minute',
      'writes per minute',
      api.writes.maxPerMinute,
      '<',
      200,
      'writes/min',
      measuredBasis,
    ),
    row(
      'limited-answers',
      '403 / 429 / retry-after answers',
      api.limited.answers,
      '==',
      0,
      'answers',
      measuredBasis,
    ),
  ];
  const verdict = rows.some((r) => r.verdict === 'fail')
    ? 'fail'
    : rows.some((r) => r.verdict === 'unknown')
      ? 'unknown'
      : 'pass';
  return { name: 'track-b', sessions, at, projected, verdict, rows };
}

function row(
  id: string,
  title: string,
  measured: number | null,
  comparison: ScorecardRow['comparison'],
  limit: number,
  unit: string,
  basis: string,
): ScorecardRow {
  let verdict: ScorecardRow['verdict'] = 'unknown';
  if (measured !== null) {
    const ok =
      comparison === '>='
        ? measured >= limit
        : comparison === '<'
          ? measured < limit
          : comparison === '<='
            ? measured <= limit
            : measured === limit;
    verdict = ok ? 'pass' : 'fail';
  }
  return { id, title, measured, limit, comparison, unit, verdict, basis };
}
