/**
 * Scenario files: what to run, against what, for how long, with which faults. Users write YAML
 * in kebab-case (`target-rps`, `ci-after`); the schema validates it and resolves it into a
 * `Scenario` (camelCase, every default filled, durations in ms). `UserScenario` is the file's
 * shape, `Scenario` the resolved one: the defaults live here and in docs/scenarios.md.
 */
import { dirname, resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import { type Distribution, distributionField, fixed } from '../base/distribution.ts';
import { durationField } from '../base/duration.ts';
import { FleetbenchError } from '../base/errors.ts';
import { publishedJsonSchema } from '../base/json-schema.ts';
import { MODEL_BOUNDS, PROVIDER_LIMITS, SCENARIO_LIMITS } from '../base/limits.ts';
import { parseTarget, TARGET_KINDS, TARGET_SYNTAX, targetInfo } from '../contract/target-ref.ts';
import { ADAPTERS, type Adapter, type RestartKind, restartKinds } from '../contract/types.ts';
// The two small files of the provider emulator a scenario needs (not its index: the tokenizer
// it loads costs every scenario read ~0.3 s).
import { type FaultRule, faultRuleSchema } from '../provider/faults.ts';
import { LIMIT_KEYS, type LimitKey, type ProviderLimits } from '../provider/limits.ts';
import { type ExtraModel, parseModelSpecs } from '../provider/models.ts';
import {
  type CommandTargetConfig,
  commandTargetSchema,
  loadCommandTargetFile,
  resolveCommandTarget,
} from './command-target.ts';
import { type BoundedScenario, refineScenarioBounds } from './scenario-bounds.ts';
import {
  type ResolveContext,
  resolveTurnover,
  type TurnoverConfig,
  turnoverSection,
} from './turnover-scenario.ts';

const positiveInt = (what = 'a positive integer') =>
  z
    .number({ error: `expected ${what}` })
    .int({ error: `expected ${what}` })
    .positive({ error: `expected ${what}` });
const share = z.number({ error: 'expected a share between 0 and 1' }).min(0).max(1);

export interface CountRange {
  min: number;
  max: number;
}

/** A count: `7`, or a seeded uniform pick in `{ min: 5, max: 10 }`. */
const countRange = z.union([
  positiveInt().transform((n): CountRange => ({ min: n, max: n })),
  z
    .object({ min: positiveInt(), max: positiveInt() })
    .strict()
    .refine((v) => v.max >= v.min, { message: 'max must not be below min' }),
]);

export interface LatencySpec {
  medianMs: number;
  p95Ms: number;
}
export interface GitHubLatency {
  rest: LatencySpec | null;
  graphql: LatencySpec | null;
}

const medianP95 = z
  .object({ median: durationField, p95: durationField })
  .strict()
  .refine((v) => v.p95 >= v.median, { message: 'p95 must not be below median' })
  .transform((v): LatencySpec | null => (v.median > 0 ? { medianMs: v.median, p95Ms: v.p95 } : null));

/** GitHub's per-call latency: 0 (none), one { median, p95 } for both protocols, or one each. */
const latencyField = z.union([
  z.literal(0).transform((): GitHubLatency => ({ rest: null, graphql: null })),
  medianP95.transform((spec): GitHubLatency => ({ rest: spec, graphql: spec })),
  z
    .object({ rest: medianP95.optional(), graphql: medianP95.optional() })
    .strict()
    .transform(
      (v): GitHubLatency => ({
        rest: v.rest ?? { medianMs: 60, p95Ms: 250 },
        graphql: v.graphql ?? { medianMs: 120, p95Ms: 500 },
      }),
    ),
]);

/** When something happens: at a run time, or some time after a phase marker. */
const triggerFields = {
  at: durationField.optional().describe('run time at which it starts'),
  after: z.string().optional().describe('a marker name (e.g. turnover.fill.done); starts when it is emitted'),
  delay: durationField.default(0).describe('extra wait after `after`'),
};

// ── Native runs, chaos waves, providers (docs/scenarios.md#native-runs-and-chaos-waves) ─────────────────────────────
const adapterField = z.enum(ADAPTERS).describe('provider adapter: claude, codex or opencode');
const restartKind = z.enum(restartKinds);

const providerFaultSchemas = [
  z
    .object({
      type: z.literal('provider-slowdown'),
      adapter: adapterField.optional().describe('default: every provider'),
      factor: z.number().positive().describe('multiplies boot, session load and first-activity latency'),
      duration: durationField.optional(),
      ...triggerFields,
    })
    .strict(),
  z
    .object({
      type: z.literal('provider-crash'),
      adapter: adapterField.optional().describe('default: any provider'),
      count: positiveInt().default(1).describe('provider processes killed (seeded pick among live runners)'),
      ...triggerFields,
    })
    .strict(),
] as const;

const nativeRunExecutorSchemas = [
  z
    .object({
      type: z.literal('native-runs'),
      adapter: adapterField.default('claude'),
      count: positiveInt().optional().describe('sessions (default: sessions.count)'),
      'runs-per-session': positiveInt()
        .default(2)
        .describe('runs one after another on each session: the first starts cold, the rest warm'),
      turns: countRange.default({ min: 1, max: 1 }).describe('turns per run'),
      think: distributionField
        .default({ kind: 'uniform', min: 2_000, max: 8_000 })
        .describe('a turn ends → the next input (and a run ends → the next run)'),
      stagger: distributionField
        .default({ kind: 'uniform', min: 0, max: 5_000 })
        .describe('when each session starts its first run'),
      ...triggerFields,
    })
    .strict(),
  z
    .object({
      type: z.literal('chaos-wave'),
      adapter: adapterField.default('claude'),
      concurrency: positiveInt().optional().describe('C concurrent long runs (default: sessions.count)'),
      turns: countRange
        .default({ min: 3, max: 6 })
        .describe('turns per run; a finished run is followed by a warm one'),
      think: distributionField.default({ kind: 'uniform', min: 3_000, max: 12_000 }),
      restarts: positiveInt().default(6).describe('control-plane restarts in the seeded sequence'),
      kinds: z
        .array(restartKind)
        .min(1)
        .default([...restartKinds])
        .describe('restart kinds the sequence mixes'),
      'provider-faults': z
        .number()
        .int()
        .nonnegative()
        .default(2)
        .describe('provider crashes and slowdowns mixed into the sequence'),
      'first-fault': durationField.default(60_000).describe('after the wave starts'),
      gap: distributionField
        .default({ kind: 'uniform', min: 20_000, max: 50_000 })
        .describe('from one fault (its ready, for a restart) to the next'),
      ...triggerFields,
    })
    .strict(),
] as const;

const providersSection = z
  .object(
    Object.fromEntries(
      ADAPTERS.map((a) => [
        a,
        z
          .object({
            slowdown: z
              .number()
              .positive()
              .default(1)
              .describe('factor on boot, session load and first-activity latency'),
          })
          .strict()
          .default({ slowdown: 1 }),
      ]),
    ) as Record<Adapter, z.ZodDefault<z.ZodObject<{ slowdown: z.ZodDefault<z.ZodNumber> }>>>,
  )
  .strict()
  .default({ claude: { slowdown: 1 }, codex: { slowdown: 1 }, opencode: { slowdown: 1 } })
  .describe('provider knobs for native runs');

/** A delay drawn uniformly from `{ min, max }` (durations), as the stand-in agents draw theirs. */
const delayRange = z
  .object({ min: durationField, max: durationField })
  .strict()
  .refine((v) => v.max >= v.min, { message: 'max must not be below min' });

/** The paperclip target's stand-in agents (docs/paperclip.md#the-stand-in-agents): their delays. */
export interface StandinDelays {
  bootMs: [number, number];
  sessionLoadMs: [number, number];
  firstEventMs: [number, number];
  itemGapMs: [number, number];
  items: [number, number];
}

const standinSection = z
  .object({
    boot: delayRange.optional().describe('process start → its first event (default 300ms-900ms)'),
    'session-load': delayRange
      .optional()
      .describe('a resumed session is loaded before the first event (default 800ms-2.5s)'),
    'first-event': delayRange.optional().describe('turn started → the first item (default 200ms-800ms)'),
    'item-gap': delayRange.optional().describe('between items (default 1.5s-4s)'),
    items: countRange.optional().describe('tool calls a turn makes (default 3-6)'),
  })
  .strict()
  .describe(
    "the paperclip target's stand-in agents: the provider's share of every figure (docs/paperclip.md#the-stand-in-agents); unset fields keep their defaults",
  );

const controlPlaneSection = z
  .object({
    'recovery-delay': distributionField
      .default(fixed(0))
      .describe("extra control-plane work per recovered run: slows the control plane's own share"),
    'recovery-concurrency': positiveInt().default(3).describe('runs recovered at once after a restart'),
    'drain-timeout': durationField
      .default(10_000)
      .describe('graceful restart: runners get this long to drain'),
    model: z
      .string()
      .min(1)
      .optional()
      .describe(
        "native runs: a learned model (docs/model.md#speed) whose providers' boot, load and first-activity latencies and control-plane stage times replace the reference's",
      ),
  })
  .strict()
  .default({ 'recovery-delay': fixed(0), 'recovery-concurrency': 3, 'drain-timeout': 10_000 })
  .describe('reference control plane knobs for native runs and recovery');
/**
 * Real agent CLIs (docs/agents.md): `agents: real` runs the real codex or Claude Code under a
 * control plane that starts agents (Paperclip), each pointed at a provider emulator of the
 * run's own that this section configures (docs/provider-emulator.md).
 */
const providerSection = z
  .object({
    latency: z
      .enum(['none', 'fast', 'realistic'])
      .default('realistic')
      .describe("the emulated model's latency profile"),
    script: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe(
        "the agent script every session follows (default: the scripts file's `default`, else coding)",
      ),
    scripts: z
      .string()
      .min(1)
      .optional()
      .describe('a scripts file (YAML) of your own: docs/provider-emulator.md#scripts'),
    limits: z
      .object(
        Object.fromEntries(LIMIT_KEYS.map((key) => [key, positiveInt().optional()])) as Record<
          LimitKey,
          z.ZodOptional<z.ZodNumber>
        >,
      )
      .strict()
      .default({})
      .describe('per-key limits: rpm, itpm, otpm, tpm, concurrent'),
    faults: z
      .array(faultRuleSchema)
      .max(PROVIDER_LIMITS.maxFaultRules)
      .default([])
      .describe('provider faults: docs/provider-emulator.md#faults'),
    models: z
      .array(z.string())
      .max(PROVIDER_LIMITS.maxAddedModels)
      .optional()
      .superRefine((specs, ctx) => {
        const parsed = parseModelSpecs(specs ?? []);
        if (!Array.isArray(parsed))
          ctx.addIssue({ code: 'custom', path: [parsed.index], message: parsed.reason });
      })
      .describe(
        'models the table lacks, served beside it: NAME[=WINDOW[/CAP]] (docs/provider-emulator.md#a-model-the-table-lacks)',
      ),
  })
  .strict()
  .default({ latency: 'realistic', limits: {}, faults: [] });

// ── end of native runs ──────────────────────────────────────────────────────────────────────

const faultSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('restart'),
      kind: restartKind.default('hard'),
      ...triggerFields,
    })
    .strict(),
  z.object({ type: z.literal('cache-flush'), ...triggerFields }).strict(),
  z
    .object({
      type: z.literal('review-burst'),
      prs: positiveInt().optional().describe('how many PRs get comments (default: min(sessions, 10))'),
      comments: countRange
        .default({ min: 5, max: 10 })
        .describe('review comments per PR: a number or { min, max }'),
      ...triggerFields,
    })
    .strict(),
  z
    .object({ type: z.literal('dashboard'), duration: durationField.default(300_000), ...triggerFields })
    .strict(),
  z
    .object({
      type: z.literal('github-latency'),
      extra: durationField,
      duration: durationField.optional(),
      ...triggerFields,
    })
    .strict(),
  z
    .object({ type: z.literal('github-5xx'), share, duration: durationField.optional(), ...triggerFields })
    .strict(),
  z
    .object({
      type: z.literal('github-secondary'),
      share: share.default(1),
      duration: durationField.optional(),
      ...triggerFields,
    })
    .strict(),
  ...providerFaultSchemas,
]);

const stageSchema = z
  .object({
    duration: durationField,
    rate: z.number().nonnegative().describe('sessions per minute at the end of the stage'),
  })
  .strict();

const executorSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('fixed'),
      count: positiveInt().optional().describe('default: sessions.count'),
      'spawn-rate': z.number().positive().optional().describe('sessions per second; default all at once'),
      ...triggerFields,
    })
    .strict(),
  z
    .object({
      type: z.literal('batch-spawn'),
      count: positiveInt().optional(),
      until: z.enum(['working', 'pr_open', 'review', 'merged']).default('pr_open'),
      ...triggerFields,
    })
    .strict(),
  z
    .object({
      type: z.literal('arrival-rate'),
      'start-rate': z.number().nonnegative().default(0).describe('sessions per minute at t=0'),
      stages: z.array(stageSchema).min(1),
      'max-sessions': positiveInt()
        .optional()
        .describe('cap on sessions alive at once; default sessions.count'),
      ...triggerFields,
    })
    .strict(),
  // Turnover: configured by the scenario's `turnover:` section (turnover-scenario.ts).
  z.object({ type: z.literal('turnover'), ...triggerFields }).strict(),
  ...nativeRunExecutorSchemas,
]);

export const userScenarioSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(
        SCENARIO_LIMITS.maxNameLength,
        `expected at most ${SCENARIO_LIMITS.maxNameLength} characters (docs/limits.md)`,
      )
      .regex(
        /^\P{Cc}*$/u,
        'expected no control characters (newline, tab, NUL, ...): it names the run (docs/limits.md)',
      ),
    description: z.string().optional(),
    'what-it-tells': z.string().optional().describe('one line: what this scenario tells us'),
    target: z
      .union([
        z.string().describe(TARGET_SYNTAX.replace(/,? or |, /g, ' | ')),
        commandTargetSchema
          .extend({ kind: z.literal('command') })
          .describe('a control plane of your own (docs/command-target.md)'),
      ])
      .default('reference'),
    clock: z.enum(['virtual', 'real']).default('virtual'),
    'time-scale': z.number().positive().default(1).describe('real clock: run-ms per real ms'),
    seed: z.number().int().default(1),
    duration: durationField.default(1_200_000),
    github: z
      .object({
        latency: latencyField
          .default({ rest: { medianMs: 60, p95Ms: 250 }, graphql: { medianMs: 120, p95Ms: 500 } })
          .describe(
            'per-call latency of the emulated GitHub: 0, { median, p95 }, or { rest: {...}, graphql: {...} }',
          ),
        limits: z
          .object({
            core: positiveInt().default(5_000),
            graphql: positiveInt().default(5_000),
            secondary: z
              .boolean()
              .default(true)
              .describe('false switches the secondary limits off (capacity tests)'),
          })
          .strict()
          .default({ core: 5_000, graphql: 5_000, secondary: true }),
      })
      .strict()
      .default({
        latency: { rest: { medianMs: 60, p95Ms: 250 }, graphql: { medianMs: 120, p95Ms: 500 } },
        limits: { core: 5_000, graphql: 5_000, secondary: true },
      }),
    topology: z
      .object({
        layout: z
          .enum(['concentrated', 'spread'])
          .default('concentrated')
          .describe('T1 all on one repo; T2 N/5 repos (≥ 2)'),
        repos: positiveInt().optional().describe('overrides the layout'),
        owner: z.string().default('acme'),
      })
      .strict()
      .default({ layout: 'concentrated', owner: 'acme' }),
    sessions: z
      .object({
        count: positiveInt().optional().describe('required, except in turnover scenarios (default 0 there)'),
        'pr-after': distributionField
          .default(fixed(0))
          .describe('spawn → agent opens its PR; 0: the PR exists at start'),
        'ci-after': distributionField
          .default(fixed(0))
          .describe('push → checks complete; 0: already complete'),
        checks: positiveInt().default(3).describe('check runs per commit'),
        'fix-after': distributionField
          .default({ kind: 'uniform', min: 60_000, max: 180_000 })
          .describe('review comments seen → agent pushes a fix and replies'),
        'merge-after': distributionField.optional().describe('CI green → PR merged; default never'),
        'spawn-time': distributionField
          .default({ kind: 'uniform', min: 2_000, max: 6_000 })
          .describe('spawning → working'),
      })
      .strict()
      .prefault({}),
    polling: z
      .object({
        strategy: z
          .enum(['guarded', 'naive', 'ao-0.2', 'learned'])
          .default('guarded')
          .describe(
            'ao-0.2: a model of agent-orchestrator 0.2.0 (docs/calibration.md); learned: a model learned from traces (polling.model, docs/model.md)',
          ),
        model: z
          .string()
          .min(1)
          .optional()
          .describe(
            'learned only: the model file `fleetbench model learn` wrote (relative to the current directory)',
          ),
        'model-cores': positiveInt()
          .optional()
          .describe('learned only: the older spelling of host.cores (give one of the two)'),
        'allow-extrapolation': z
          .boolean()
          .optional()
          .describe(
            'learned only: replay a scenario that needs states or events the model never saw (from its nearest profiles), saying so, instead of refusing (docs/model.md#coverage)',
          ),
        'ao-gh': z
          .enum(['auto', 'current', 'legacy'])
          .default('auto')
          .describe(
            'ao-0.2 only: the gh it shells out to; legacy = without `gh pr checks --json` (Debian 12 gh 2.23); auto = the gh on this machine, as a real run here would use',
          ),
        'ao-gh-process': durationField
          .default(0)
          .describe(
            'ao-0.2 only: CPU time of one gh process (start, TLS, JSON) before its request; 0: not modelled',
          ),
        'ao-cpus': positiveInt()
          .default(2)
          .describe('ao-0.2 only: cores the gh processes share (their CPU time queues on these)'),
        interval: durationField.default(30_000),
        overrun: z
          .enum(['skip', 'immediate'])
          .optional()
          .describe(
            "a tick that comes while a cycle still runs: skip it and start on the interval's next tick, or start the next cycle immediately when the overrun ends; default: the strategy's (skip for ao-0.2, the model's for learned, immediate otherwise)",
          ),
        concurrency: positiveInt().default(8).describe('calls a poll cycle runs at once'),
        'review-throttle': durationField
          .default(120_000)
          .describe('guard 3: review comments checked at most this often per PR'),
        'max-rps': z
          .number()
          .nonnegative()
          .default(10)
          .describe('the control plane sends at most this many requests a second (all sources); 0: unpaced'),
      })
      .strict()
      .default({
        strategy: 'guarded',
        'ao-gh': 'auto',
        'ao-gh-process': 0,
        'ao-cpus': 2,
        interval: 30_000,
        concurrency: 8,
        'review-throttle': 120_000,
        'max-rps': 10,
      }),
    host: z
      .object({
        load: z
          .number()
          .nonnegative()
          .max(MODEL_BOUNDS.maxLoad)
          .optional()
          .describe(
            "the machine's other work: runnable tasks sharing the cores with the client's calls (its load average before the run); default: the model's (learned), 0 (ao-0.2)",
          ),
        cores: positiveInt()
          .max(MODEL_BOUNDS.maxCores)
          .optional()
          .describe(
            "the cores the client's calls share; default: the model's (learned), polling.ao-cpus (ao-0.2)",
          ),
      })
      .strict()
      .optional()
      .describe(
        "the machine a modelled control plane's client runs on (polling.strategy learned or ao-0.2): its calls' CPU time queues on these cores beside this load (docs/model.md#the-machine)",
      ),
    caches: z
      .object({
        repos: positiveInt().default(100).describe('guard 1 ETag LRU entries'),
        commits: positiveInt().default(500).describe('guard 2 ETag LRU entries'),
        prs: positiveInt().default(500).describe('guard 3 ETag LRU entries'),
      })
      .strict()
      .default({ repos: 100, commits: 500, prs: 500 })
      .describe('the reference control plane ETag caches (default sizes: docs/reference-control-plane.md)'),
    dashboard: z
      .object({
        mode: z
          .enum(['enrich', 'saved'])
          .default('enrich')
          .describe('enrich: its own calls; saved: reads lifecycle data'),
        refresh: durationField.default(15_000),
        'cache-ttl': durationField.default(300_000),
      })
      .strict()
      .default({ mode: 'enrich', refresh: 15_000, 'cache-ttl': 300_000 }),
    providers: providersSection,
    agents: z
      .enum(['standin', 'real'])
      .default('standin')
      .describe('real: the real codex / Claude Code CLIs against a provider emulator (docs/agents.md)'),
    provider: providerSection,
    'control-plane': controlPlaneSection,
    standin: standinSection.optional(),
    executors: z.array(executorSchema).default([]),
    faults: z.array(faultSchema).default([]),
    markers: z
      .object({ 'steady-start': durationField.optional().describe('emit steady.start at this time') })
      .strict()
      .default({}),
    budgets: z.array(z.string()).default([]).describe('budget sets or files to judge the run against'),
    turnover: turnoverSection
      .optional()
      .describe('the turnover executor: park/wake swaps (docs/scenarios.md)'),
  })
  .strict()
  .superRefine((s, ctx) => {
    refineScenarioBounds(s as unknown as BoundedScenario, ctx);
    if (s.sessions.count === undefined && s.turnover === undefined)
      ctx.addIssue({ code: 'custom', path: ['sessions', 'count'], message: 'expected a positive integer' });
    if (s.polling.strategy === 'learned' && s.polling.model === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['polling', 'model'],
        message:
          'polling.strategy learned replays a model file: give it (fleetbench model learn TRACE -o FILE)',
      });
    if (s.polling.strategy !== 'learned' && s.polling.model !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['polling', 'strategy'],
        message: `polling.model is replayed by polling.strategy learned only, not ${s.polling.strategy}`,
      });
    if (s.agents === 'real') {
      let realAgents = false;
      try {
        realAgents = targetInfo(parseTarget(targetText(s.target))).realAgents;
      } catch {
        // A target that does not parse is refused on its own.
      }
      if (!realAgents)
        ctx.addIssue({
          code: 'custom',
          path: ['agents'],
          message: `real agents run under a control plane that starts agent processes (${realAgentTargets()}); target ${targetText(s.target)} starts none (docs/agents.md)`,
        });
    }
    if (s.polling.strategy !== 'learned' && s.polling['allow-extrapolation'] !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['polling', 'allow-extrapolation'],
        message: `a learned model's extrapolation is allowed for polling.strategy learned only, not ${s.polling.strategy}`,
      });
    if (s.host !== undefined && s.polling.strategy !== 'learned' && s.polling.strategy !== 'ao-0.2')
      ctx.addIssue({
        code: 'custom',
        path: ['host'],
        message: `host is the machine of a modelled control plane's client (polling.strategy learned or ao-0.2); ${s.polling.strategy}'s calls take no client time`,
      });
    if (s.host?.cores !== undefined && s.polling['model-cores'] !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['polling', 'model-cores'],
        message: 'polling.model-cores is the older spelling of host.cores: give one of the two',
      });
    const i = s.executors.findIndex((e) => e.type === 'turnover');
    if (i >= 0 && s.turnover === undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['executors', i],
        message: 'a turnover executor needs a `turnover:` section',
      });
  });

export type UserScenario = z.input<typeof userScenarioSchema>;
type Parsed = z.output<typeof userScenarioSchema>;
type ParsedFault = Parsed['faults'][number];
type ParsedExecutor = Parsed['executors'][number];

export interface Trigger {
  atMs?: number;
  afterMarker?: string;
  delayMs: number;
}

export type Fault =
  | ({ type: 'restart'; kind: RestartKind } & Trigger)
  | ({ type: 'cache-flush' } & Trigger)
  | ({ type: 'review-burst'; prs?: number; comments: CountRange } & Trigger)
  | ({ type: 'dashboard'; durationMs: number } & Trigger)
  | ({ type: 'github-latency'; extraMs: number; durationMs?: number } & Trigger)
  | ({ type: 'github-5xx'; share: number; durationMs?: number } & Trigger)
  | ({ type: 'github-secondary'; share: number; durationMs?: number } & Trigger)
  | ({ type: 'provider-slowdown'; adapter?: Adapter; factor: number; durationMs?: number } & Trigger)
  | ({ type: 'provider-crash'; adapter?: Adapter; count: number } & Trigger);

export type Executor =
  | ({ type: 'fixed'; count: number; spawnRate?: number } & Trigger)
  | ({ type: 'batch-spawn'; count: number; until: 'working' | 'pr_open' | 'review' | 'merged' } & Trigger)
  | ({
      type: 'arrival-rate';
      startRate: number;
      stages: Array<{ durationMs: number; rate: number }>;
      maxSessions: number;
    } & Trigger)
  | ({ type: 'turnover'; turnover: TurnoverConfig } & Trigger)
  | ({
      type: 'native-runs';
      adapter: Adapter;
      count: number;
      runsPerSession: number;
      turns: CountRange;
      think: Distribution;
      stagger: Distribution;
    } & Trigger)
  | ({
      type: 'chaos-wave';
      adapter: Adapter;
      concurrency: number;
      turns: CountRange;
      think: Distribution;
      restarts: number;
      kinds: RestartKind[];
      providerFaults: number;
      firstFaultMs: number;
      gap: Distribution;
    } & Trigger);

/** A resolved scenario: every default filled, camelCase, durations in ms. */
export interface Scenario {
  name: string;
  description: string;
  whatItTells?: string;
  target: string;
  clock: 'virtual' | 'real';
  timeScale: number;
  seed: number;
  durationMs: number;
  github: { latency: GitHubLatency; limits: { core: number; graphql: number; secondary: boolean } };
  topology: { layout: 'concentrated' | 'spread'; repos: number; owner: string };
  sessions: {
    count: number;
    prAfter: Distribution;
    ciAfter: Distribution;
    checks: number;
    fixAfter: Distribution;
    mergeAfter?: Distribution;
    spawnTime: Distribution;
  };
  polling: {
    strategy: 'guarded' | 'naive' | 'ao-0.2' | 'learned';
    /** learned only: the model file. */
    model?: string;
    modelCores?: number;
    /** learned only: run a replay that needs what the model never saw (docs/model.md#coverage). */
    allowExtrapolation?: boolean;
    aoGh: 'auto' | 'current' | 'legacy';
    aoGhProcessMs: number;
    aoCpus: number;
    intervalMs: number;
    /** Absent: the strategy's own rule. */
    overrun?: 'skip' | 'immediate';
    concurrency: number;
    reviewThrottleMs: number;
    maxRps: number;
  };
  /** The machine of a modelled control plane's client (learned, ao-0.2); absent: the strategy's own. */
  host?: { load?: number; cores?: number };
  caches: { repos: number; commits: number; prs: number };
  dashboard: { mode: 'enrich' | 'saved'; refreshMs: number; cacheTtlMs: number };
  /** Native runs: per-adapter provider knobs. */
  providers: Record<Adapter, { slowdown: number }>;
  /**
   * Real agent CLIs and their provider emulator (absent: the target's stand-ins). Kept out of
   * the resolved scenario when not asked for, so every other scenario's hash is unchanged.
   */
  agents?: { kind: 'real'; provider: ProviderSettings };
  /** Native runs: the reference control plane's recovery knobs. */
  controlPlane: {
    recoveryDelay: Distribution;
    recoveryConcurrency: number;
    drainTimeoutMs: number;
    /** A learned model file whose speed profile native runs replay. */
    model?: string;
  };
  executors: Executor[];
  faults: Fault[];
  markers: { steadyStartMs?: number };
  budgets: string[];
  /** The turnover section, when the scenario has one. */
  turnover?: TurnoverConfig;
  /** The paperclip target's stand-in delays the scenario sets (the rest keep their defaults). */
  standin?: Partial<StandinDelays>;
  /** A command target's configuration (docs/command-target.md). */
  command?: CommandTargetConfig;
}

/** The target kinds that can start the real agent CLIs (their TARGET_KINDS row says so). */
function realAgentTargets(): string {
  return Object.entries(TARGET_KINDS)
    .filter(([, info]) => info.realAgents)
    .map(([kind]) => kind)
    .join(', ');
}

/** The provider emulator of a run whose agents are real (docs/provider-emulator.md). */
export interface ProviderSettings {
  latency: 'none' | 'fast' | 'realistic';
  /** Unset: the scripts file's `default`, else the target's own default (docs/provider-emulator.md#scripts). */
  script?: string;
  /** A scripts file of the user's. */
  scripts?: string;
  limits: ProviderLimits;
  faults: FaultRule[];
  /** Models served beside the table (absent unless the scenario adds some). */
  models?: ExtraModel[];
}

function trigger(t: { at?: number; after?: string; delay: number }): Trigger {
  return { atMs: t.at, afterMarker: t.after, delayMs: t.delay };
}

function resolveFault(f: ParsedFault): Fault {
  switch (f.type) {
    case 'restart':
      return { type: 'restart', kind: f.kind, ...trigger(f) };
    case 'cache-flush':
      return { type: 'cache-flush', ...trigger(f) };
    case 'review-burst':
      return { type: 'review-burst', prs: f.prs, comments: f.comments, ...trigger(f) };
    case 'dashboard':
      return { type: 'dashboard', durationMs: f.duration, ...trigger(f) };
    case 'github-latency':
      return { type: 'github-latency', extraMs: f.extra, durationMs: f.duration, ...trigger(f) };
    case 'github-5xx':
      return { type: 'github-5xx', share: f.share, durationMs: f.duration, ...trigger(f) };
    case 'github-secondary':
      return { type: 'github-secondary', share: f.share, durationMs: f.duration, ...trigger(f) };
    case 'provider-slowdown':
      return {
        type: 'provider-slowdown',
        adapter: f.adapter,
        factor: f.factor,
        durationMs: f.duration,
        ...trigger(f),
      };
    case 'provider-crash':
      return { type: 'provider-crash', adapter: f.adapter, count: f.count, ...trigger(f) };
  }
}

function resolveExecutor(e: ParsedExecutor, sessions: number, turnover?: TurnoverConfig): Executor {
  switch (e.type) {
    case 'fixed':
      return { type: 'fixed', count: e.count ?? sessions, spawnRate: e['spawn-rate'], ...trigger(e) };
    case 'batch-spawn':
      return { type: 'batch-spawn', count: e.count ?? sessions, until: e.until, ...trigger(e) };
    case 'arrival-rate':
      return {
        type: 'arrival-rate',
        startRate: e['start-rate'],
        stages: e.stages.map((s) => ({ durationMs: s.duration, rate: s.rate })),
        maxSessions: e['max-sessions'] ?? sessions,
        ...trigger(e),
      };
    case 'turnover':
      return { type: 'turnover', turnover: turnover!, ...trigger(e) };
    case 'native-runs':
      return {
        type: 'native-runs',
        adapter: e.adapter,
        count: e.count ?? sessions,
        runsPerSession: e['runs-per-session'],
        turns: e.turns,
        think: e.think,
        stagger: e.stagger,
        ...trigger(e),
      };
    case 'chaos-wave':
      return {
        type: 'chaos-wave',
        adapter: e.adapter,
        concurrency: e.concurrency ?? sessions,
        turns: e.turns,
        think: e.think,
        restarts: e.restarts,
        kinds: e.kinds,
        providerFaults: e['provider-faults'],
        firstFaultMs: e['first-fault'],
        gap: e.gap,
        ...trigger(e),
      };
  }
}

/** The target's text: the inline command target (`target: {kind: command, …}`) is `command`. */
function targetText(target: string | { kind?: string }): string {
  return typeof target === 'string' ? target : 'command';
}

/** Where a scenario's relative paths start: its file's directory, else the current one. */
function baseDirOf(context: ResolveContext): string {
  return context.file ? dirname(resolvePath(context.file)) : process.cwd();
}

/**
 * The target and, for a command target, its configuration: inline (paths relative to the
 * scenario file) or from `command:FILE` (FILE relative to the current directory, like every path
 * a flag names).
 */
function resolveTargetField(
  target: Parsed['target'],
  context: ResolveContext,
): { target: string; command?: CommandTargetConfig } {
  if (typeof target !== 'string') {
    const file = context.file ?? 'scenario';
    return {
      target: 'command',
      command: resolveCommandTarget(target, baseDirOf(context), file),
    };
  }
  const ref = parseTarget(target);
  if (ref.kind !== 'command') return { target };
  if (ref.file === undefined)
    throw new FleetbenchError(
      'E_SCENARIO',
      `target command needs its configuration: target: {kind: command, start: …} in the scenario, or command:FILE`,
      {
        hint: 'docs/command-target.md',
      },
    );
  return { target, command: loadCommandTargetFile(ref.file) };
}

/** T1 concentrated: one repo. T2 spread: N/5 repos, at least 2 (docs/scenarios.md#the-a2-cost-matrix). */
export function reposFor(layout: 'concentrated' | 'spread', sessions: number): number {
  return layout === 'concentrated' ? 1 : Math.max(2, Math.floor(sessions / 5));
}

/** `context` (the scenario file) resolves a turnover profile path relative to the scenario. */
export function resolveScenario(parsed: Parsed, context: ResolveContext = {}): Scenario {
  const count = parsed.sessions.count ?? 0;
  const { target, command } = resolveTargetField(parsed.target, context);
  const turnover = parsed.turnover ? resolveTurnover(parsed.turnover, context) : undefined;
  const defaultExecutor = { type: turnover ? ('turnover' as const) : ('fixed' as const), delay: 0 };
  const executors = parsed.executors.length > 0 ? parsed.executors : [defaultExecutor];
  return {
    name: parsed.name,
    description: parsed.description ?? parsed.name,
    whatItTells: parsed['what-it-tells'],
    target,
    // A target that runs on the real clock only (agent-orchestrator: its loop is setInterval,
    // its calls real processes) gives its scenario the real clock (docs/agent-orchestrator.md).
    clock: targetInfo(parseTarget(target)).realClock === 'implied' ? 'real' : parsed.clock,
    ...(command ? { command } : {}),
    timeScale: parsed['time-scale'],
    seed: parsed.seed,
    durationMs: parsed.duration,
    github: parsed.github,
    topology: {
      layout: parsed.topology.layout,
      repos: parsed.topology.repos ?? reposFor(parsed.topology.layout, count),
      owner: parsed.topology.owner,
    },
    sessions: {
      count,
      prAfter: parsed.sessions['pr-after'],
      ciAfter: parsed.sessions['ci-after'],
      checks: parsed.sessions.checks,
      fixAfter: parsed.sessions['fix-after'],
      mergeAfter: parsed.sessions['merge-after'],
      spawnTime: parsed.sessions['spawn-time'],
    },
    polling: {
      strategy: parsed.polling.strategy,
      ...(parsed.polling.model !== undefined ? { model: parsed.polling.model } : {}),
      ...(parsed.polling['model-cores'] !== undefined ? { modelCores: parsed.polling['model-cores'] } : {}),
      ...(parsed.polling['allow-extrapolation'] !== undefined
        ? { allowExtrapolation: parsed.polling['allow-extrapolation'] }
        : {}),
      aoGh: parsed.polling['ao-gh'],
      aoGhProcessMs: parsed.polling['ao-gh-process'],
      aoCpus: parsed.polling['ao-cpus'],
      intervalMs: parsed.polling.interval,
      ...(parsed.polling.overrun !== undefined ? { overrun: parsed.polling.overrun } : {}),
      concurrency: parsed.polling.concurrency,
      reviewThrottleMs: parsed.polling['review-throttle'],
      maxRps: parsed.polling['max-rps'],
    },
    ...(parsed.host !== undefined ? { host: parsed.host } : {}),
    caches: parsed.caches,
    dashboard: {
      mode: parsed.dashboard.mode,
      refreshMs: parsed.dashboard.refresh,
      cacheTtlMs: parsed.dashboard['cache-ttl'],
    },
    executors: executors.map((e) => resolveExecutor(e as ParsedExecutor, count, turnover)),
    providers: parsed.providers,
    // A command target's agents are whatever its control plane starts, real processes, against
    // the provider emulator the scenario's `provider:` configures (docs/command-target.md).
    ...(parsed.agents === 'real' || command !== undefined
      ? {
          agents: {
            kind: 'real' as const,
            provider: {
              latency: parsed.provider.latency,
              ...(parsed.provider.script !== undefined ? { script: parsed.provider.script } : {}),
              // Relative to the scenario's own file, as a command target's paths are.
              ...(parsed.provider.scripts !== undefined
                ? {
                    scripts: resolvePath(baseDirOf(context), parsed.provider.scripts),
                  }
                : {}),
              limits: parsed.provider.limits,
              faults: parsed.provider.faults,
              // Absent unless set: a scenario without it keeps its hash.
              ...(parsed.provider.models !== undefined
                ? { models: parseModelSpecs(parsed.provider.models) as ExtraModel[] }
                : {}),
            },
          },
        }
      : {}),
    controlPlane: {
      recoveryDelay: parsed['control-plane']['recovery-delay'],
      recoveryConcurrency: parsed['control-plane']['recovery-concurrency'],
      drainTimeoutMs: parsed['control-plane']['drain-timeout'],
      ...(parsed['control-plane'].model !== undefined ? { model: parsed['control-plane'].model } : {}),
    },
    faults: parsed.faults.map(resolveFault),
    markers: { steadyStartMs: parsed.markers['steady-start'] },
    budgets: parsed.budgets,
    ...(turnover ? { turnover } : {}),
    // Absent unless set: a scenario without it keeps its hash (and its trace) as before.
    ...(parsed.standin ? { standin: resolveStandin(parsed.standin) } : {}),
  };
}

function resolveStandin(s: NonNullable<Parsed['standin']>): Partial<StandinDelays> {
  const pair = (r: { min: number; max: number } | undefined): [number, number] | undefined =>
    r === undefined ? undefined : [r.min, r.max];
  const out: Partial<StandinDelays> = {};
  const bootMs = pair(s.boot);
  const sessionLoadMs = pair(s['session-load']);
  const firstEventMs = pair(s['first-event']);
  const itemGapMs = pair(s['item-gap']);
  const items = pair(s.items);
  if (bootMs) out.bootMs = bootMs;
  if (sessionLoadMs) out.sessionLoadMs = sessionLoadMs;
  if (firstEventMs) out.firstEventMs = firstEventMs;
  if (itemGapMs) out.itemGapMs = itemGapMs;
  if (items) out.items = items;
  return out;
}

/** The published JSON Schema of a scenario file (the user-facing, kebab-case shape). */
export function scenarioJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(
    userScenarioSchema,
    {
      id: 'scenario-1',
      title: 'fleetbench scenario',
      description:
        'A fleetbench scenario file (YAML). Durations are strings like 30s, 2m, 1h30m, or numbers of seconds.',
    },
    { io: 'input' },
  );
}
