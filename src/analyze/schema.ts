/**
 * The Analysis: what `fleetbench analyze --json` prints and what budgets, the matrix and the
 * reports read. A public, stable contract: this zod schema is its one definition (types, the
 * validator a results-file reader uses, and docs/analysis.schema.json via
 * `fleetbench schema analysis`). Field names carry their unit (`Ms`, `Pct`, `PerHour`,
 * `perSecond`). Adding a field is compatible; renaming or removing one bumps `schemaVersion`.
 * Every metric is described in docs/analysis.md.
 */
import { z } from 'zod';
import { publishedJsonSchema } from '../base/json-schema.ts';
import { edgesSchema } from './edges-schema.ts';
import { ANALYSIS_SCHEMA_VERSION, MAX_FAULT_MARKS, MAX_TIMELINE_RUNS } from './schema-constants.ts';

export { ANALYSIS_SCHEMA_VERSION };

const faultsSchema = z
  .array(
    z.object({
      tMs: z.number().describe('run time of the event'),
      type: z.string().describe('the fault type (restart, review-burst, github-latency, ...)'),
      phase: z.enum(['start', 'end', 'failed']),
    }),
  )
  .describe(`injected faults in time order (at most ${MAX_FAULT_MARKS})`);

/** docs/model.md#coverage: a learned replay's session-cycles from profiles its model saw. */
const modelCoverageSchema = z
  .object({
    coverage: z
      .number()
      .min(0)
      .max(1)
      .describe('the share of session-cycles replayed from profiles the model saw (1: none extrapolated)'),
    sessionCycles: z.number().int().nonnegative(),
    extrapolated: z
      .array(z.object({ part: z.string(), sessionCycles: z.number().int().nonnegative() }))
      .describe(
        'session-cycles made from what the model never saw, by part (`spawning → spawning`, `after review-posted`)',
      ),
  })
  .describe("a learned model's replay (polling.strategy learned): how much of it its model covered");

const int = z.number().int();
const count = int.nonnegative();
const nullableNumber = z.number().nullable();

export const percentilesSchema = z
  .object({
    count,
    min: z.number(),
    mean: z.number(),
    p50: z.number(),
    p90: z.number(),
    p95: z.number(),
    p99: z.number(),
    max: z.number(),
    method: z
      .enum(['exact', 'hdr'])
      .optional()
      .describe(
        'exact: nearest-rank over the raw values (up to 10,000 samples); hdr: from the HDR histogram beyond',
      ),
  })
  .describe(
    'milliseconds; exact nearest-rank percentiles up to 10,000 samples, beyond from an HDR histogram with 3 significant digits (1 µs unit); min and max exact',
  );

const providerSchema = z.object({
  requests: count.describe('model requests the provider emulator answered'),
  retries: count.describe(
    'requests the client said were retries, or that followed a failed request at the same place of their conversation (attempt > 1)',
  ),
  byCli: z.record(
    z.string(),
    z.object({
      requests: count,
      byStatus: z.record(z.string(), count).describe('by HTTP status (`reset`: connection reset, no answer)'),
      retries: count,
      faults: z.record(z.string(), count).describe('injected provider faults answered, by kind'),
      versions: z.record(z.string(), count).describe('CLI versions the requests named (User-Agent)'),
      tokensIn: count,
      tokensOut: count.describe('output tokens of complete answers'),
      timeToFirstToken: percentilesSchema.nullable().describe('complete answers only'),
      duration: percentilesSchema.nullable().describe('arrival → last byte (or cut, reset)'),
    }),
  ),
});

const cpuSeconds = z.number().min(0);
const harnessSchema = z
  .object({
    cpuS: z
      .object({
        harness: cpuSeconds.describe(
          "fleetbench's own processes: the run process (emulators, writer), its children",
        ),
        controlPlane: cpuSeconds.describe("the control plane's process trees (its database included)"),
        agents: cpuSeconds.describe('the agent processes and whatever they ran'),
        other: cpuSeconds.describe('other processes a target registered'),
      })
      .describe('CPU seconds (user + system) by role, from the run time 0 to its end'),
    sharePct: z.number().nullable().describe('harness ÷ all roles, percent; null when nothing was spent'),
    boundPct: z.number().nullable().describe('the share above which the run warns'),
    over: z.boolean().describe('the share was over its bound: the observer disturbed the observed'),
    windowS: z.number().describe('the wall-clock window sampled'),
    samples: count.describe('samples of /proc taken'),
  })
  .describe(
    "fleetbench's own share of the run's CPU (targets with local processes): see docs/analysis.md#harness",
  );

const keyCountSchema = z.object({ calls: count, points: z.number() });
const countsBySchema = z.record(z.string(), keyCountSchema);

const distributionSchema = z.object({
  cells: count.describe('(session, cycle) pairs, or cycles for shared calls'),
  calls: count,
  p50: nullableNumber,
  mean: nullableNumber,
  max: nullableNumber,
});

const burnWindowSchema = z.object({
  resource: z.string(),
  basis: z
    .enum(['reset', 'hourly'])
    .describe('reset: grouped by the x-ratelimit-reset the responses carried'),
  reset: z.number().nullable().describe('epoch seconds the window resets at (basis reset)'),
  startMs: nullableNumber.describe('run time the window opens'),
  endMs: nullableNumber.describe('run time the window closes'),
  coveredMs: nullableNumber.describe('part of the window the run covered'),
  calls: count,
  points: z.number().describe('points this trace charged in the window'),
  pointsPerHour: nullableNumber.describe('points / covered hours'),
  limit: nullableNumber,
  usedMax: nullableNumber.describe('highest x-ratelimit-used seen (includes other clients of the token)'),
  remainingMin: nullableNumber,
  headroomPct: nullableNumber.describe('100 × (limit − points) / limit'),
});

const snapshotResourceSchema = z.object({
  limit: z.number(),
  remaining: z.number(),
  used: z.number(),
  reset: z.number(),
});

const bracketResourceSchema = z.object({
  before: snapshotResourceSchema.nullable(),
  after: snapshotResourceSchema.nullable(),
  sameWindow: z.boolean().describe('both snapshots name the same reset'),
  deltaBasis: z
    .enum(['same-window', 'window-opened'])
    .nullable()
    .describe(
      'why deltaUsed is comparable: the same reset window, or a window not yet started at "before" (used 0) with the snapshots at most one window apart; null: not comparable',
    ),
  deltaUsed: nullableNumber.describe(
    'after.used − before.used; null when the window reset in between (see deltaBasis)',
  ),
  tracePoints: z.number().describe('points the trace charged between the snapshots (1 s granularity)'),
  unseenPoints: nullableNumber.describe('deltaUsed − tracePoints: calls the trace did not see'),
});

const windowMaxSchema = z.object({
  calls: count,
  perSecond: z.number(),
  atMs: nullableNumber.describe('run time the busiest window opens'),
});

const scorecardRowSchema = z.object({
  id: z.string(),
  title: z.string(),
  measured: nullableNumber,
  limit: z.number(),
  comparison: z.enum(['>=', '<', '<=', '==']),
  unit: z.string(),
  verdict: z.enum(['pass', 'fail', 'unknown']),
  basis: z.string().describe('how `measured` was obtained (measured, or projected to 50 sessions)'),
  projected: z
    .boolean()
    .optional()
    .describe('`measured` is a projection to the scorecard’s sessions, not a measurement (headroom rows)'),
  observed: nullableNumber
    .optional()
    .describe('a projected row: the same figure as measured in the run, at its own sessions (`observedAt`)'),
  observedAt: count.optional().describe('a projected row: the sessions the run had'),
  notJudged: z
    .string()
    .optional()
    .describe(
      'a projection the run cannot support (no steady window, or one shorter than a poll interval): why, and what would judge it; `measured` is null',
    ),
  runLimit: z
    .number()
    .optional()
    .describe(
      'headroom rows: the hourly limit the run itself had (x-ratelimit-limit) when it is not the 5,000/h token the row is judged on',
    ),
  runLimitHeadroom: nullableNumber
    .optional()
    .describe('headroom rows: the same figure against `runLimit` (shown, never judged)'),
});

const seriesSchema = z.object({
  binMs: z.number(),
  values: z.array(z.number()),
});

// ── Turnover (docs/analysis.md#turnover): park/wake actors, from the turnover finisher (turnover.ts) ──────────
const turnoverOperations = ['create', 'park_register', 'park', 'wake', 'wake_first_touch', 'step'] as const;
const missReasons = z.object({ 'no-idle-awake': count, 'no-parked': count, 'no-parked-ready': count });
const failureKinds = z.object({ busy: count, crashed: count, not_found: count });

const turnoverOperationSchema = z.object({
  operation: z.enum(turnoverOperations),
  span: z.string().describe('the span name it is computed from'),
  count: count.describe('operations (spans) started in the scope'),
  errors: count.describe('operations that failed in the end (outcome error)'),
  failures: count.describe('failed attempts (actor.failure events), whatever the reaction'),
  perSecond: nullableNumber.describe('count ÷ the scope duration'),
  latency: percentilesSchema.nullable(),
});

const stateStatsSchema = z.object({ min: z.number(), max: z.number(), mean: z.number(), last: z.number() });

const swapsSchema = z.object({
  asked: count.describe('target-rps × seconds, from turnover.tick events'),
  done: count.describe('swaps started on schedule'),
  missed: count,
  missedByReason: missReasons,
  donePct: nullableNumber,
});

export const turnoverAnalysisSchema = z.object({
  lifecycleMode: z.string().nullable(),
  resumeMode: z.string().nullable(),
  registered: count.describe('sessions registered: the largest sum of the actors gauge'),
  markers: z.object({
    registrationDoneMs: nullableNumber,
    fillStartMs: nullableNumber,
    fillDoneMs: nullableNumber,
    doneMs: nullableNumber.describe('turnover.done (steady phase over), when the scenario set `steady`'),
  }),
  operations: z.array(turnoverOperationSchema).describe('the whole run, every phase'),
  timeToWake: z.object({
    all: percentilesSchema.nullable(),
    implicit: percentilesSchema.nullable(),
    explicit: percentilesSchema.nullable(),
  }),
  failures: z.object({
    total: count,
    byKind: failureKinds,
    byOperation: z.record(z.string(), failureKinds),
    byReaction: z.object({ retry: count, replace: count, give_up: count }),
  }),
  swaps: swapsSchema,
  states: z
    .object({
      binMs: z.number(),
      awake: z.array(z.number()),
      parked: z.array(z.number()),
      waking: z.array(z.number()),
      parking: z.array(z.number()),
    })
    .describe('the actors gauge per bin from t = 0 (last sample in the bin; 0 before the first)'),
  window: z
    .object({
      name: z.literal('turnover_window'),
      startMs: z.number().describe('turnover.fill.done'),
      endMs: z.number().describe('turnover.done, or the end of the run'),
      durationMs: z.number(),
      rows: z
        .array(turnoverOperationSchema)
        .describe('park, wake, wake_first_touch, step: started in the window'),
      swaps: swapsSchema,
      failuresByKind: failureKinds,
      states: z.object({
        awake: stateStatsSchema,
        parked: stateStatsSchema,
        waking: stateStatsSchema,
        parking: stateStatsSchema,
        total: z
          .object({ min: z.number(), max: z.number() })
          .describe('sum of the four: the sessions registered'),
      }),
      judged: z
        .boolean()
        .optional()
        .describe(
          'false: shorter than 5 minutes or fewer than 1,000 swaps asked: a row that holds in it is not judged (one that breaches fails)',
        ),
      notJudged: z
        .string()
        .nullable()
        .optional()
        .describe('why the window is too small to judge a row that holds'),
    })
    .nullable()
    .describe('the steady window, from turnover.fill.done; null without the marker'),
});

export type TurnoverAnalysis = z.infer<typeof turnoverAnalysisSchema>;
export type TurnoverOperation = (typeof turnoverOperations)[number];
// ── Speed (docs/analysis.md#speed; computed by speed.ts) ─────────────────────────────────────────────────────
export const SPEED_METRIC_KEYS = [
  'time_to_first_activity',
  'time_to_first_text',
  'input_wait',
  'agent_boot',
  'agent_launch',
  'restart_recovery',
  'restart_recovery_control_plane',
  'restart_provider_load',
  'controlplane_boot',
  'lost_run_detection',
  'restart_recovery_to_activity',
  'restart_provider_to_activity',
] as const;
export type SpeedMetricName = (typeof SPEED_METRIC_KEYS)[number];

const speedGroupSchema = z.object({
  labels: z
    .record(z.string(), z.string())
    .describe('adapter and start kind (cold|warm|unknown), or restart kind'),
  latency: percentilesSchema,
  values: z.array(z.number()).describe('every sample (ms, time order): aggregates pool them'),
});

const speedMetricSchema = z.object({
  role: z
    .enum(['judged', 'report'])
    .describe('the metric’s role (docs/analysis.md#speed): judged against budgets, or reported only'),
  labels: z.array(z.string()).describe('the labels its groups carry (budget scopes)'),
  description: z.string(),
  span: z
    .string()
    .optional()
    .describe('where each sample starts and ends (from → to); absent in documents written before it'),
  samples: count,
  groups: z.array(speedGroupSchema),
});

/** Metrics added after schemaVersion 1 was published: optional, so older documents still read. */
const SPEED_METRICS_ADDED: ReadonlySet<SpeedMetricName> = new Set([
  'agent_launch',
  'controlplane_boot',
  'lost_run_detection',
  'restart_recovery_to_activity',
  'restart_provider_to_activity',
]);

/** Which run a restart cut: its session, run id, adapter and the restart's kind. */
const cutRunFields = {
  session: z.string(),
  run: z.string().nullable(),
  adapter: z.string(),
  kind: z.string(),
};

export const speedSchema = z.object({
  metrics: z.object(
    Object.fromEntries(
      SPEED_METRIC_KEYS.map((k) => [
        k,
        SPEED_METRICS_ADDED.has(k) ? speedMetricSchema.optional() : speedMetricSchema,
      ]),
    ) as Record<SpeedMetricName, typeof speedMetricSchema>,
  ),
  runs: z.object({
    created: count,
    withActivity: count,
    interrupted: count.describe('a restart came before the first activity: not a first-activity sample'),
    noActivity: count,
    skipped: count
      .default(0)
      .describe(
        'inputs the control plane answered without making a run (`run.skipped`): never a run, never a sample',
      ),
  }),
  restarts: z.array(
    z.object({
      kind: z.string(),
      killAtMs: z.number(),
      readyAtMs: nullableNumber,
      outageMs: nullableNumber.describe('kill → controlplane.ready'),
      runs: z
        .object({ cut: count, recovered: count, finished: count, unrecovered: count, open: count })
        .optional()
        .describe('the runs this restart cut, accounted for as in recoveryCounts'),
    }),
  ),
  recoveries: z
    .array(
      z.object({
        ...cutRunFields,
        readyAtMs: z.number().describe('the ready the recovery is measured from'),
        eventAtMs: z.number().describe('the next provider event'),
        eventType: z.string(),
        fullMs: z.number().describe('restart_recovery sample'),
        controlPlaneMs: z.number().describe('restart_recovery_control_plane sample'),
        providerLoadMs: nullableNumber.describe('restart_provider_load sample; null when nothing reloaded'),
        loadStartMs: nullableNumber.describe('write time − duration of the load span'),
        outageRemovedMs: z.number(),
        absorbedRestarts: count.describe('restarts that landed while this run was still recovering'),
        killAtMs: z.number().optional().describe('the restart that cut the run'),
        lostAtMs: nullableNumber
          .optional()
          .describe(
            'the control plane marked the run lost (the end of its `run.lost` span); null: no such span',
          ),
        retryFromAtMs: nullableNumber
          .optional()
          .describe(
            'the end of the attempt that retry follows (found lost, interrupted): its delay runs from here',
          ),
        retryAtMs: nullableNumber
          .optional()
          .describe("the control plane's retry of the run started its agent (`paperclip.retry`); null: none"),
        retryDueAtMs: nullableNumber.optional().describe('when that retry was due (its delay)'),
        activityAtMs: nullableNumber
          .optional()
          .describe(
            "the recovered agent's first activity after ready (streamed model output or a tool call); null: none before the run ended",
          ),
        toActivityMs: nullableNumber
          .optional()
          .describe('restart_recovery_to_activity sample: ready → that activity, outage removed'),
        providerToActivityMs: nullableNumber
          .optional()
          .describe(
            "restart_provider_to_activity sample: the agent's (re)start (the load's start, else the next provider event) → that activity",
          ),
        modelRequests: z
          .object({
            count: count.describe(
              'provider.request records of the session between the agent’s (re)start and its first activity',
            ),
            retries: count.describe('of them, retries (attempt > 1)'),
            faults: z
              .record(z.string(), count)
              .describe('injected provider faults they were answered with, by kind'),
            waitMs: z.number().describe('their time in all (each request’s arrival → last byte, or its cut)'),
          })
          .optional()
          .describe("the model requests inside the provider's part: prefill, retries of a provider fault"),
      }),
    )
    .describe('one row per recovered run and restart'),
  unrecovered: z
    .array(
      z.object({
        ...cutRunFields,
        readyAtMs: nullableNumber.describe(
          'null: the control plane was not ready again before the trace ends',
        ),
        killAtMs: z.number().optional(),
        status: z
          .string()
          .optional()
          .describe(
            "the run's last status (`run.ended`'s `status`, the target's own word: `failed`, `interrupted`), `running` when it had not ended when the trace did, `replaced` when the session's next run came first",
          ),
        errorCode: z
          .string()
          .nullable()
          .optional()
          .describe("the control plane's error code for it, when it gave one"),
        open: z
          .boolean()
          .optional()
          .describe('the run had not ended when the trace did: its recovery may still have come'),
        atLeastMs: nullableNumber
          .optional()
          .describe(
            'open: the recovery is at least this long (ready → the end of the trace, outages removed)',
          ),
        lostAtMs: nullableNumber.optional(),
      }),
    )
    .describe('every run a restart cut that shows no provider event after it'),
  recoveryCounts: z
    .array(
      z.object({
        adapter: z.string(),
        kind: z.string(),
        cut: count.describe(
          'runs this kind of restart cut (a run still recovering from an earlier restart counts once)',
        ),
        recovered: count,
        finished: count
          .default(0)
          .describe(
            'cut runs that went on working after the kill (a graceful drain, a surviving runner) and ended before the control plane was ready: nothing to recover',
          ),
        unrecovered: count.describe('cut runs that never showed a provider event again (open ones included)'),
        open: count.describe('of `unrecovered`: runs still going when the trace ended'),
      }),
    )
    .default([])
    .describe(
      'every run a restart cut, accounted for: cut = recovered + finished + unrecovered, by adapter and restart kind',
    ),
  timeline: z
    .object({
      runs: z.array(
        z.object({
          session: z.string(),
          run: z.string().nullable(),
          adapter: z.string(),
          createdAtMs: z.number(),
          firstActivityAtMs: nullableNumber,
          endedAtMs: nullableNumber.describe('null: still going when the trace ended'),
          status: z.string().nullable(),
        }),
      ),
      skipped: z
        .array(z.object({ session: z.string().nullable(), adapter: z.string(), tMs: z.number() }))
        .describe('inputs answered without a run'),
      leftOut: count.describe(`runs past the first ${MAX_TIMELINE_RUNS} not listed (counted in runs)`),
    })
    .optional()
    .describe("each run's creation, first activity and end, for the report's runs-over-time chart"),
  notes: z.array(z.string()),
});
export type SpeedAnalysis = z.infer<typeof speedSchema>;
// ── end of speed ────────────────────────────────────────────────────────────────────────────

export const analysisSchema = z.object({
  schemaVersion: z.literal(ANALYSIS_SCHEMA_VERSION),
  generator: z.object({ name: z.string(), version: z.string() }),
  run: z.object({
    runId: z.string().nullable(),
    clock: z.enum(['virtual', 'real']).nullable(),
    scenario: z.string().nullable(),
    cell: z.string().nullable(),
    seed: z.number().nullable(),
    source: z.string().nullable().describe('what produced the trace when imported'),
    target: z
      .string()
      .nullable()
      .describe(
        'the system under test: reference, ao, ao:DIR, paperclip, paperclip:DIR, an http URL or module:PATH (trace header)',
      ),
    epochMs: nullableNumber,
    startedAt: z.string().nullable(),
    startMs: z.number().describe('run time of the first record (0 at most)'),
    endMs: z.number().describe('run time of the last record end, or the footer'),
    durationMs: z.number(),
    sessions: count.describe('sessions used for per-session figures (distinct api sessions unless given)'),
    repos: count,
  }),
  input: z.object({
    file: z.string().nullable(),
    lines: count,
    records: z.object({ api: count, span: count, event: count, gauge: count }),
    skipped: count,
    skippedReasons: z.array(z.string()),
    truncated: z.boolean(),
    footer: z.enum(['completed', 'interrupted', 'failed']).nullable(),
    warnings: z.array(z.string()),
  }),
  api: z.object({
    totals: z.object({
      calls: count,
      points: z.number(),
      secondaryPoints: z.number(),
      bytes: z.number(),
      errors: count.describe('status ≥ 400'),
      failed: count
        .default(0)
        .describe(
          'failed calls: answered ≥ 400, or no answer and the client reported an error (non-zero exit, killed by a signal)',
        ),
      killed: count.default(0).describe('calls whose client was killed by a signal (of `failed`)'),
      writes: count.describe('REST POST/PATCH/PUT/DELETE'),
      conditional: count,
      notModified: count,
      opaque: count,
    }),
    counts: z.object({
      byOperation: countsBySchema,
      byRoute: countsBySchema,
      byStatus: countsBySchema,
      bySource: countsBySchema,
      bySession: countsBySchema,
      byRepo: countsBySchema,
      byPhase: countsBySchema,
      byResource: countsBySchema,
      byMethod: countsBySchema,
      byProtocol: countsBySchema,
    }),
    conditional: z.object({
      requests: count,
      notModified: count,
      notModifiedPct: nullableNumber.describe('304s / conditional requests'),
    }),
    opaque: z.object({
      calls: count,
      sharePct: nullableNumber,
      byResource: z.record(z.string(), count),
    }),
    pollingFloor: z.object({
      attributedCalls: count.describe('calls with both session and cycle'),
      sessions: count,
      cycles: count,
      perSessionCycle: z.record(z.string(), distributionSchema).describe("by resource, plus 'all'"),
      sharedPerCycle: z.record(z.string(), distributionSchema).describe('calls with a cycle but no session'),
      steady: z
        .object({
          sinceMs: z.number().describe('run time of the steady.start marker (the earliest one)'),
          attributedCalls: count.describe('calls with both session and cycle, in steady cycles'),
          sessions: count,
          cycles: count,
          perSessionCycle: z.record(z.string(), distributionSchema).describe("by resource, plus 'all'"),
          sharedPerCycle: z.record(z.string(), distributionSchema),
        })
        .nullable()
        .describe(
          'the same over the poll cycles that start at or after the steady.start marker (a cycle starts at the earliest t of the records with its id); null without a marker',
        ),
    }),
    burn: z.object({
      windows: z.array(burnWindowSchema),
      straddles: z.array(z.string()).describe('resources whose calls fall in more than one reset window'),
      warnings: z.array(z.string()),
    }),
    bracket: z
      .object({
        beforeAtMs: z.number(),
        afterAtMs: z.number(),
        byResource: z.record(z.string(), bracketResourceSchema),
        warnings: z.array(z.string()),
      })
      .nullable(),
    burst: z.object({
      method: z.literal('sliding').describe('windows slide one bin at a time'),
      stepMs: z.number(),
      max1s: windowMaxSchema.nullable(),
      max10s: windowMaxSchema.nullable(),
      first60s: z.array(count).describe('calls started in each of the first 60 seconds'),
    }),
    concurrency: z.object({
      peak: count,
      atMs: nullableNumber,
      resolutionMs: z.number(),
    }),
    writes: z.object({
      total: count,
      maxPerMinute: count.describe('most writes in any 60 s window, sliding 1 s at a time'),
      atMs: nullableNumber,
    }),
    limited: z.object({
      answers: count.describe('403 or 429 or retry-after'),
      status403: count,
      status429: count,
      retryAfter: count,
      primary: count,
      secondary: count,
    }),
    latency: z.object({
      all: percentilesSchema.nullable(),
      rest: percentilesSchema.nullable(),
      graphql: percentilesSchema.nullable(),
    }),
    projection: z.object({
      sessions: count,
      model: z.string(),
      window: z
        .object({
          basis: z
            .enum(['steady', 'all-active', 'whole-run'])
            .describe(
              'the per-hour figures come from the steady window (steady: from the steady.start marker; all-active: from the first poll cycle after every session was polling), or (not judged) from the whole run',
            ),
          fromMs: z.number(),
          toMs: z.number(),
          neededMs: z
            .number()
            .describe(
              'the shortest steady window judged: one poll interval, the median gap between poll cycle starts (30 s when fewer than two cycles)',
            ),
          judged: z
            .boolean()
            .describe('false: the projections (headroom at N sessions, per-hour burn) are not judged'),
          reason: z.string().nullable().describe('why not judged'),
          advice: z.string().nullable().describe('what would judge them'),
          note: z
            .string()
            .nullable()
            .optional()
            .describe('why the window is not the one the steady.start marker opens, when there is one'),
        })
        .optional()
        .describe(
          'the window the per-hour figures are read from (docs/analysis.md#the-track-b-scorecard); absent in documents written before it (their figures are whole-run)',
        ),
      byResource: z.record(
        z.string(),
        z.object({
          limit: z.number(),
          limitSource: z.enum(['response', 'default']),
          pointsPerHour: nullableNumber,
          sharedPointsPerHour: nullableNumber.describe('points of calls without a session, per hour'),
          perSessionPointsPerHour: nullableNumber,
          sessionsThatFit: nullableNumber,
          busiestHourPoints: z
            .number()
            .optional()
            .describe(
              'points charged in the busiest hour of the run, sliding a second at a time (all of them in a shorter run): measured, not projected',
            ),
        }),
      ),
    }),
  }),
  controlPlane: z.object({
    pollCycles: z
      .object({
        count: count.describe('poll.cycle spans'),
        durationMs: percentilesSchema.nullable(),
        intervalMs: nullableNumber.describe(
          'the interval the cycles declared (data.intervalMs); the longest if they differ',
        ),
        intervalKnown: count.describe('cycles that declared their interval: overruns are judged over these'),
        overruns: count.describe('cycles that took longer than their interval'),
        overrunPct: nullableNumber.describe('overruns / intervalKnown'),
        lagMs: percentilesSchema
          .nullable()
          .describe('how late cycles started against their schedule (data.lagMs)'),
        skipped: count.describe('cycles missed entirely: the sum of poll.cycle.skipped labels.count'),
      })
      .nullable()
      .describe(
        'the poll loop, from poll.cycle spans and poll.cycle.skipped events; null when there are none',
      ),
  }),
  scorecard: z.object({
    name: z.literal('track-b'),
    sessions: count,
    at: count,
    projected: z.boolean(),
    verdict: z.enum(['pass', 'fail', 'unknown']),
    rows: z.array(scorecardRowSchema),
  }),
  spans: z.object({
    byName: z.array(
      z.object({
        name: z.string(),
        count,
        outcomes: z.object({ ok: count, error: count, cancelled: count }),
        latency: percentilesSchema.nullable(),
      }),
    ),
    byLabels: z.array(
      z.object({
        name: z.string(),
        labels: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
        count,
        outcomes: z.object({ ok: count, error: count, cancelled: count }),
        latency: percentilesSchema.nullable(),
      }),
    ),
  }),
  events: z.object({ byName: z.record(z.string(), count) }),
  gauges: z.array(
    z.object({
      name: z.string(),
      labels: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      count,
      last: z.number(),
      lastAtMs: z.number(),
      min: z.number(),
      max: z.number(),
    }),
  ),
  series: z.object({
    calls: seriesSchema.describe('calls started per bin (1 s bins up to 2 h runs, wider after)'),
    calls10s: seriesSchema,
    writes: seriesSchema.describe('writes (REST, GraphQL mutations) per minute'),
    points: z.object({ binMs: z.number(), byResource: z.record(z.string(), z.array(z.number())) }),
    gauges: z
      .array(
        z.object({
          name: z.string(),
          labels: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
          binMs: z.number(),
          t: z.array(z.number()).describe('run time of each point (the sample’s own time)'),
          v: z.array(z.number()),
        }),
      )
      .optional()
      .describe('each gauge label set over time: the last sample in each bin (bins as in `calls`)'),
  }),
  schedule: z
    .object({
      operations: count.describe('scheduled starts: `*.start` spans with an `executor` label'),
      missed: count.describe('starts that could not happen (`executor.dropped` events)'),
      lag: percentilesSchema.nullable().describe('actual − intended start, run ms'),
      byExecutor: z.record(z.string(), z.object({ operations: count, lagP99Ms: nullableNumber })),
      toleranceMs: z.number().describe('largest lag p99 (real ms) a kept schedule may have'),
      timeScale: z.number().describe('run ms per real ms of the run (lag is compared in real ms)'),
      kept: z.boolean().describe('false: not a valid ceiling (the offered load fell short)'),
      reasons: z.array(z.string()),
    })
    .nullable()
    .optional()
    .describe('open-model schedule accuracy; null when nothing was scheduled: see docs/analysis.md'),
  speed: speedSchema
    .optional()
    .describe('speed metrics (time to first activity, boot, restart recovery): see docs/analysis.md'),
  turnover: turnoverAnalysisSchema
    .optional()
    .describe('turnover metrics (wake, park, steady window): see docs/analysis.md'),
  faults: faultsSchema.optional(),
  provider: providerSchema
    .optional()
    .describe(
      'the model provider as the agents saw it (provider.request records): see docs/analysis.md#provider',
    ),
  model: modelCoverageSchema.optional(),
  edges: edgesSchema.optional(),
  harness: harnessSchema.optional(),
  warnings: z.array(z.string()),
});

export type Analysis = z.infer<typeof analysisSchema>;
export type AnalysisPercentiles = z.infer<typeof percentilesSchema>;
export type ScorecardRow = z.infer<typeof scorecardRowSchema>;
export type BurnWindow = z.infer<typeof burnWindowSchema>;
export type KeyCount = z.infer<typeof keyCountSchema>;
export type BracketResource = z.infer<typeof bracketResourceSchema>;
export type FaultMarks = z.infer<typeof faultsSchema>;
export type ProviderAnalysis = z.infer<typeof providerSchema>;
export type HarnessAnalysis = z.infer<typeof harnessSchema>;
export type ModelCoverageFigures = z.infer<typeof modelCoverageSchema>;
export type { EdgesAnalysis } from './edges-schema.ts';

export function analysisJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(analysisSchema, {
    id: 'analysis-1',
    title: `fleetbench analysis (schemaVersion ${ANALYSIS_SCHEMA_VERSION})`,
    description: 'The output of `fleetbench analyze --json`. See docs/analysis.md.',
  });
}
