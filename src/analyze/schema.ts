/**
 * The Analysis: what `fleetbench analyze --json` prints and what budgets, the matrix and the
 * reports read. A public, stable contract: this zod schema is its one definition (types, the
 * validator a results-file reader uses, and docs/analysis.schema.json via
 * `fleetbench schema analysis`). Field names carry their unit (`Ms`, `Pct`, `PerHour`,
 * `perSecond`). Adding a field is compatible; renaming or removing one bumps `schemaVersion`.
 * Every metric is described in docs/analysis.md.
 */
import { z } from 'zod';
import { ANALYSIS_SCHEMA_VERSION } from './schema-version.ts';

export { ANALYSIS_SCHEMA_VERSION };

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
  })
  .describe('milliseconds; from an HDR histogram with 3 significant digits (1 µs unit); min and max exact');

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
  sameWindow: z.boolean(),
  deltaUsed: nullableNumber.describe('after.used − before.used; null when the window reset in between'),
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
});

const seriesSchema = z.object({
  binMs: z.number(),
  values: z.array(z.number()),
});

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
      byResource: z.record(
        z.string(),
        z.object({
          limit: z.number(),
          limitSource: z.enum(['response', 'default']),
          pointsPerHour: nullableNumber,
          sharedPointsPerHour: nullableNumber.describe('points of calls without a session, per hour'),
          perSessionPointsPerHour: nullableNumber,
          sessionsThatFit: nullableNumber,
        }),
      ),
    }),
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
    writes: seriesSchema.describe('REST writes per minute'),
    points: z.object({ binMs: z.number(), byResource: z.record(z.string(), z.array(z.number())) }),
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
  speed: z
    .unknown()
    .optional()
    .describe('speed metrics (time to first activity, boot, restart recovery): see docs/analysis.md'),
  turnover: z
    .unknown()
    .optional()
    .describe('turnover metrics (wake, park, steady window): see docs/analysis.md'),
  warnings: z.array(z.string()),
});

export type Analysis = z.infer<typeof analysisSchema>;
export type AnalysisPercentiles = z.infer<typeof percentilesSchema>;
export type ScorecardRow = z.infer<typeof scorecardRowSchema>;
export type BurnWindow = z.infer<typeof burnWindowSchema>;
export type KeyCount = z.infer<typeof keyCountSchema>;

export function analysisJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(analysisSchema, { target: 'draft-2020-12' }) as Record<string, unknown>;
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://fleetbench.dev/schemas/analysis-1.json',
    title: `fleetbench analysis (schemaVersion ${ANALYSIS_SCHEMA_VERSION})`,
    description: 'The output of `fleetbench analyze --json`. See docs/analysis.md.',
    ...schema,
  };
}
