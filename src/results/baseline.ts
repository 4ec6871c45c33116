/**
 * baseline.json: the machine-readable result of a matrix (docs/matrix.md#the-baseline): every unit (cell) with every
 * run of it (one per repeat) and each run's full Analysis, the pruning decisions, and how long it
 * took. `compare` and `report` read it back. The zod schema is its one definition (validator,
 * types, `fleetbench schema baseline`). Everything but `timing` is deterministic: the same
 * cells, seeds and overrides give the same bytes.
 */
import { z } from 'zod';
import { analysisSchema } from '../analyze/schema.ts';
import { FleetbenchError } from '../base/errors.ts';
import { publishedJsonSchema } from '../base/json-schema.ts';
import { describeZodIssues } from '../base/validation.ts';

export const BASELINE_SCHEMA_VERSION = 1;

export const checkRowSchema = z.object({
  budget: z.string().describe('the budget set the row comes from (native-speed, turnover, a file)'),
  metric: z.string(),
  scope: z.string().describe('labels the row is scoped to, e.g. adapter=codex start=cold'),
  measured: z.string().describe('as displayed, with its unit'),
  limit: z.string(),
  verdict: z.enum(['pass', 'fail', 'unknown']),
  judged: z.boolean().describe('false: reported only, never fails'),
  limits: z
    .record(z.string(), z.number())
    .optional()
    .describe("the row's limits by statistic (p50, p95, ...), in the metric's unit (ms for durations)"),
});

const runSchema = z.object({
  seed: z.number().int(),
  dir: z.string().describe('the run directory (trace.jsonl, summary.json), relative to baseline.json'),
  reason: z.enum(['completed', 'interrupted', 'failed']),
  sessionsStarted: z.number().int().nonnegative(),
  sessionsDropped: z.number().int().nonnegative(),
  analysis: analysisSchema,
  checks: z
    .array(checkRowSchema)
    .nullable()
    .describe(
      'budget checks beyond the Track B scorecard (speed, turnover), when a judge ran; null otherwise',
    ),
});

const pruneDifferenceSchema = z.object({
  metric: z.string(),
  neighbour: z.string(),
  value: z.number().nullable(),
  neighbourValue: z.number().nullable(),
  relative: z
    .number()
    .nullable()
    .describe(
      '|x − n| / max(|x|, |n|), the same from either cell; null stands for infinite (a value against none)',
    ),
});

const unitSchema = z.object({
  id: z.string().describe('cell id (S2-T1-50) or built-in scenario name'),
  ref: z.string(),
  cell: z
    .object({ scenario: z.string(), topology: z.string(), scale: z.number().int().positive() })
    .nullable(),
  heading: z.string().describe('`S2-T1-50: Quiet steady state, concentrated, 50 sessions`'),
  whatItTells: z.string().nullable(),
  scenarioHash: z.string(),
  budgets: z
    .array(z.string())
    .describe(
      "the budget sets the unit's scenario names: its Track B scorecard counts when they include track-b (every A2 cell) or are empty; other sets are judged into each run's checks",
    ),
  runs: z.array(runSchema),
});

export const baselineSchema = z.object({
  kind: z.literal('fleetbench-baseline'),
  schemaVersion: z.literal(BASELINE_SCHEMA_VERSION),
  generator: z.object({ name: z.string(), version: z.string() }),
  selection: z.string().describe('what --cells selected'),
  overrides: z.array(z.string()).describe('--set overrides applied to every unit'),
  repeats: z.number().int().positive(),
  partial: z.boolean().describe('interrupted: some units or repeats did not run'),
  units: z.array(unitSchema),
  pruning: z
    .object({
      threshold: z.number(),
      metrics: z.string(),
      decisions: z.array(
        z.object({
          id: z.string(),
          kept: z.boolean(),
          representative: z.boolean(),
          neighbours: z.array(z.string()),
          largest: pruneDifferenceSchema.nullable(),
          reason: z.string(),
        }),
      ),
    })
    .nullable()
    .describe('null when fewer than two A2 cells ran'),
  timing: z
    .object({
      wallMs: z.number(),
      jobs: z.number().int().positive(),
      runs: z.record(z.string(), z.number()).describe('wall ms of each run (engine + analysis) in its child'),
    })
    .describe('the only part that changes between identical runs'),
});

export type Baseline = z.infer<typeof baselineSchema>;
export type BaselineUnit = z.infer<typeof unitSchema>;
export type BaselineRun = z.infer<typeof runSchema>;
export type CheckRow = z.infer<typeof checkRowSchema>;

export function baselineJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(
    baselineSchema,
    {
      id: 'baseline-1',
      title: `fleetbench baseline (schemaVersion ${BASELINE_SCHEMA_VERSION})`,
      description: 'baseline.json, written by `fleetbench matrix` and `fleetbench demo`. See docs/matrix.md.',
    },
    {},
  );
}

export function parseBaseline(raw: unknown, file: string): Baseline {
  const kind = (raw as { kind?: unknown } | null)?.kind;
  if (kind !== 'fleetbench-baseline') {
    throw new FleetbenchError(
      'E_RESULTS',
      `${file}: not a fleetbench baseline (kind is ${JSON.stringify(kind)})`,
    );
  }
  const parsed = baselineSchema.safeParse(raw);
  if (!parsed.success) {
    throw new FleetbenchError(
      'E_RESULTS',
      `${file}: ${describeZodIssues(parsed.error.issues, 3).join('; ')}`,
    );
  }
  refuseHollowWhole(parsed.data, file);
  return parsed.data;
}

/**
 * A matrix that says it is whole (`partial: false`) ran every unit once per repeat, each with its
 * own seed (src/matrix/run.ts, src/distributed/merge-matrix.ts). One with a unit short of runs, a
 * seed twice, or no unit at all was edited: judged or compared, the runs left out (a breaching
 * one) would never count, and a copy would count twice (docs/matrix.md).
 */
function refuseHollowWhole(baseline: Baseline, file: string): void {
  if (baseline.partial) return;
  const bad = (what: string) =>
    new FleetbenchError(
      'E_RESULTS',
      `${file}: ${what}, yet the matrix says it is whole (partial: false): the file was edited`,
    );
  if (baseline.units.length === 0) throw bad('no unit');
  baseline.units.forEach((unit, i) => {
    if (unit.runs.length !== baseline.repeats)
      throw bad(
        `units[${i}] (${unit.id}) holds ${unit.runs.length} run${unit.runs.length === 1 ? '' : 's'} of its ${baseline.repeats} repeat${baseline.repeats === 1 ? '' : 's'}`,
      );
    const seeds = new Set(unit.runs.map((run) => run.seed));
    if (seeds.size !== unit.runs.length) throw bad(`units[${i}] (${unit.id}) holds a seed twice`);
  });
}
