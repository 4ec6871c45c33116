/**
 * The Track B scorecard (docs/analysis.md#the-track-b-scorecard): a pure function of the API
 * figures, judged at `at` sessions; headroom rows are projected from the run's own sessions at
 * the measured per-session cost.
 */
import { round } from './figures.ts';
import type { Analysis, ScorecardRow } from './schema.ts';

/** The scorecard of `api`, measured with `sessions` sessions, judged at `at` (the analyzer option scorecardSessions, 50 unless set). */
export function trackBScorecard(api: Analysis['api'], sessions: number, at: number): Analysis['scorecard'] {
  const projected = sessions !== at;
  const costBasis =
    sessions === 0
      ? 'no session attribution: per-session cost unknown'
      : projected
        ? `projected from ${sessions} to ${at} sessions at the measured per-session cost`
        : `measured at ${at} sessions`;
  const measuredBasis = projected
    ? `measured at ${sessions} sessions (not projected)`
    : `measured at ${at} sessions`;
  const headroom = (resource: string, atSessions = at): number | null => {
    const p = api.projection.byResource[resource];
    if (p === undefined || p.perSessionPointsPerHour === null) {
      if (p && p.pointsPerHour === 0) return 100;
      return null;
    }
    const perSession = p.pointsPerHour! / sessions;
    return round(100 * (1 - (perSession * atSessions) / p.limit), 2);
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
    const shown =
      projected && sessions > 0
        ? { ...row, projected: true, observed: headroom(resource, sessions), observedAt: sessions }
        : row;
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
