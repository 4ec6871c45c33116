/**
 * The learned model's file format (docs/model.md): what `fleetbench model learn` writes and the
 * reference control plane's `learned` polling strategy replays. One zod schema validates the file,
 * gives the types and renders the published JSON Schema (docs/model.schema.json).
 *
 * A model describes a control plane as data, by what its traces showed: per poll cycle the calls a
 * session makes, keyed by what the cycle did to it (its state at the start and at the end), the
 * calls of a cycle that belong to no session (per project and per repository), what a spawn costs,
 * what moves a session from state to state and after how many of its cycles, the extra calls of the
 * cycles after an event, what the agent does after a review, how long a cycle takes as its calls
 * grow, the traces it came from and how well it fits them.
 */
import { z } from 'zod';
import { InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { publishedJsonSchema } from '../base/json-schema.ts';
import { MODEL_BOUNDS, MODEL_FILE_MAX_BYTES } from '../base/limits.ts';
import { describeZodIssues } from '../base/validation.ts';
import { parseYamlInput, yamlLineOf } from '../base/yaml-input.ts';
import { MODEL_FORMAT, modelStates, modelTriggers, overrunRules } from './words.ts';

export {
  defaultOverrunRule,
  MODEL_FORMAT,
  type ModelState,
  type ModelTrigger,
  modelOverrunRule,
  modelProvenanceLine,
  modelStates,
  modelToYaml,
  modelTriggers,
  type OverrunRule,
  overrunRules,
} from './words.ts';

const count = z.number().int().nonnegative();
const nonneg = z.number().nonnegative();
const state = z.enum(modelStates);
const trigger = z.enum(modelTriggers);

const percentiles = z
  .object({ p50: nonneg, p95: nonneg })
  .strict()
  .describe('milliseconds, from the calls the traces saw');

/** One kind of call, as the traces recorded it; profiles name it by its key. */
const operationSchema = z
  .object({
    op: z.string().optional().describe("the trace's operation name; absent when the calls carried none"),
    protocol: z.enum(['rest', 'graphql']),
    method: z.string(),
    route: z.string().describe('the templated route the calls were recorded with'),
    resource: z.string().describe('the rate-limit resource they were charged to'),
    points: nonneg.describe('mean primary points per call'),
    latencyMs: percentiles.nullable(),
    calls: count.describe('calls of this kind in the traces'),
  })
  .strict();

/** Mean calls per unit (a session-cycle, a cycle, a spawn...), in the order the traces made them. */
const callsSchema = z
  .array(
    z
      .object({
        operation: z.string().describe('a key of `operations`'),
        mean: z.number().describe('calls per unit (negative in `events`: fewer than the profile)'),
      })
      .strict(),
  )
  .describe('calls per unit, by operation, in the order they were first seen');

const histogramSchema = z
  .record(z.string().regex(/^\d+$/), count)
  .describe('how often each value was seen: { "1": 10, "2": 3 }');

const cycleProfileSchema = z
  .object({
    from: state.describe('the session state when the cycle started'),
    to: state.describe('its state when the cycle ended'),
    samples: count.describe('session-cycles it was learned from'),
    calls: callsSchema,
  })
  .strict();

const transitionSchema = z
  .object({
    from: state,
    on: trigger,
    to: state,
    samples: count,
    afterCycles: histogramSchema.describe(
      "the session's poll cycles, from the trigger to the one that made the change (0: not in a cycle; see afterMs)",
    ),
    afterMs: percentiles
      .nullable()
      .describe('for changes made outside a poll cycle: the time from the trigger'),
  })
  .strict();

const eventProfileSchema = z
  .object({
    on: trigger,
    afterCycle: z.number().int().positive().describe('1: the first cycle of the session after the event'),
    samples: count,
    perSession: callsSchema.describe('per affected session, beyond its cycle profile'),
    perProject: callsSchema.describe('per project loop (restarts only), beyond its shared calls'),
  })
  .strict();

const loadSchema = z
  .object({
    start: z.array(nonneg).describe('1, 5 and 15 minute load averages when the run started'),
    end: z.array(nonneg).nullable(),
    cpus: z.number().int().positive(),
  })
  .strict();

const traceProvenanceSchema = z
  .object({
    file: z.string().describe('the file as given to `model learn`'),
    sha256: z.string(),
    runId: z.string(),
    target: z.string().nullable(),
    controlPlane: z
      .string()
      .nullable()
      .describe('what the trace says ran (agent-orchestrator and gh versions)'),
    scenario: z.string(),
    cell: z.string().nullable(),
    clock: z.enum(['virtual', 'real']),
    startedAt: z.string(),
    durationMs: nonneg,
    sessions: count,
    cycles: count,
    calls: count,
    load: loadSchema.nullable(),
  })
  .strict();

const speedLatencySchema = z
  .object({ p50: nonneg, p95: nonneg, samples: count })
  .strict()
  .describe('milliseconds');
const maybeLatency = speedLatencySchema.nullable();

/** docs/model.md#speed: what native runs took, per adapter and for the control plane's stages. */
const speedSchema = z
  .object({
    adapters: z.record(
      z.string(),
      z
        .object({
          bootCold: maybeLatency.describe('provider.boot, start cold'),
          bootWarmProcess: maybeLatency.describe('provider.boot, start warm, without its session load'),
          load: maybeLatency.describe('provider.session.load of a 1 MB session, alone'),
          loadContention: nonneg
            .nullable()
            .describe('each other load in progress makes a load slower by this share'),
          replay: maybeLatency.describe('what a load after a hard restart or a crash adds'),
          firstActivity: z
            .object({ cold: maybeLatency, warm: maybeLatency })
            .strict()
            .describe("a run's first turn submitted (or started) → its first activity"),
          warmBootHoldsLoad: z
            .boolean()
            .describe('warm boots had no session load of their own inside: the boot loads the session'),
        })
        .strict(),
    ),
    controlPlane: z
      .object({
        claim: maybeLatency,
        prepare: maybeLatency,
        runtime: maybeLatency,
        launch: maybeLatency,
        dispatch: maybeLatency.describe('input received → run created'),
        reattach: maybeLatency,
        toBoot: maybeLatency.describe("run created → its provider's boot: all the control plane's stages"),
        toBootCold: maybeLatency
          .optional()
          .describe(
            "the same, cold starts only (an agent's first run, which a control plane may prepare longer)",
          ),
      })
      .strict(),
  })
  .strict();

/** docs/model.md#coverage: the events and scales the traces showed, with how many of each. */
const coverageSchema = z
  .object({
    events: z
      .partialRecord(trigger, count)
      .describe(
        'each kind of event, how many times the traces showed it (per session it happened to; a restart once)',
      ),
    restarts: z
      .partialRecord(z.enum(['hard', 'graceful', 'hot']), count)
      .describe('restarts by kind (controlplane.ready after one)'),
    scale: z
      .object({
        sessions: count.describe('the most sessions one poll cycle polled'),
        callsPerCycle: count.describe('the most calls one poll cycle made'),
      })
      .strict(),
    repos: count
      .optional()
      .describe('the most repositories one trace’s sessions were spread over (absent in older models)'),
    intervalMs: z
      .object({ min: nonneg, max: nonneg })
      .strict()
      .optional()
      .describe(
        'the poll intervals the traces’ cycles ran at, declared or inferred (absent in older models)',
      ),
  })
  .strict();

const fitFigureSchema = z
  .object({ trace: z.number().nullable(), model: z.number().nullable(), errorPct: z.number().nullable() })
  .strict();

export const modelSchema = z
  .object({
    format: z.literal(MODEL_FORMAT),
    name: z.string().describe('what the model is of'),
    provenance: z
      .object({
        tool: z.object({ name: z.string(), version: z.string() }).strict(),
        traces: z.array(traceProvenanceSchema).min(1),
      })
      .strict(),
    loop: z
      .object({
        scope: z
          .enum(['project', 'global'])
          .describe('project: one poll loop per project (repository), each with its own cycles'),
        parallel: z.number().int().nonnegative().describe('sessions a cycle polls at once (0: all of them)'),
        intervalMs: nonneg.nullable().describe('the interval the traces ran at (a run sets its own)'),
        overrun: z
          .enum(overrunRules)
          .optional()
          .describe(
            "a tick that comes while a cycle still runs: skip (the next cycle starts on the interval's grid) or immediate (right when the overrunning cycle ends); absent in older models: skip for agent-orchestrator's traces, else immediate",
          ),
      })
      .strict(),
    cycleTime: z
      .object({
        cores: z.number().int().positive().describe('cores of the machine the traces ran on'),
        load: nonneg
          .optional()
          .describe(
            "the machine's other work while the traces ran, as runnable tasks sharing the cores with the client's (its 1-minute load average when the run started); the fit counted it, and a replay runs at it unless told another (host.load). Absent in older models: 0",
          ),
        cpuMsPerCall: nonneg.describe(
          "each call's client CPU time, shared fairly on the cores with every other call in flight",
        ),
        waitMsPerCall: nonneg.describe("each call's other client time (TLS, the network): not queued"),
        launchMsPerCall: nonneg.describe(
          "starting each call (a process fork): the control plane's CPU, one at a time in the order asked, shared on the cores",
        ),
        spawnCpuMs: nonneg.describe("a spawn's own work beyond its calls, as CPU shared on the cores"),
        cycleSpread: z
          .number()
          .min(1)
          .describe(
            "how a cycle's length varies around the model's: the p95 over the p50 of recorded ÷ modelled",
          ),
        cycles: count.describe('cycles fitted'),
      })
      .strict(),
    operations: z.record(z.string(), operationSchema),
    sessions: z
      .object({
        spawn: z
          .object({ samples: count, calls: callsSchema })
          .strict()
          .describe('calls per session at spawn, outside any poll cycle'),
        cycles: z.array(cycleProfileSchema),
        transitions: z.array(transitionSchema),
        review: z
          .object({
            samples: count.describe('review bursts on a session'),
            toldAfterCycles: histogramSchema.describe(
              "the session's cycles from the review to the control plane telling the agent",
            ),
            perReaction: callsSchema.describe("the agent's calls per review it is told of"),
            perComment: callsSchema.describe("the agent's calls per review comment"),
          })
          .strict()
          .nullable(),
      })
      .strict(),
    shared: z
      .object({
        perProject: callsSchema.describe('per cycle with sessions, per project loop'),
        perRepo: callsSchema.describe('per cycle, per repository with active sessions'),
      })
      .strict(),
    events: z.array(eventProfileSchema),
    tasks: z
      .object({
        samples: count.describe('tasks (sessions with calls of their own) in the traces without poll cycles'),
        calls: callsSchema.describe('per task: the calls attributed to it'),
        points: nonneg.describe('primary points per task'),
        durationMs: percentiles.nullable().describe("a task's first call to the end of its last"),
        unattributed: callsSchema.describe("per task: calls of no session (the control plane's own)"),
      })
      .strict()
      .optional()
      .describe(
        'work done one task after another (traces with no poll cycles, declared or inferred: docs/model.md#cycles-from-traffic): its cost per task. Absent when every trace polled',
      ),
    speed: speedSchema
      .nullable()
      .describe('native runs: provider and control-plane latencies, when the traces have them'),
    restartOutageMs: z
      .partialRecord(z.enum(['hard', 'graceful', 'hot']), percentiles.extend({ samples: count }).strict())
      .describe('kill → ready, per restart kind'),
    coverage: coverageSchema
      .optional()
      .describe(
        'what the traces showed (with the profiles and transitions, which carry their own samples): a replay that needs what they never showed is refused, or runs as extrapolated (docs/model.md#coverage). Absent in older models: told from their profiles',
      ),
    fit: z
      .object({
        calls: fitFigureSchema.describe(
          'calls the model accounts for over the traces, against the calls they made',
        ),
        callsPerSessionCycle: fitFigureSchema,
        cycleP50Ms: fitFigureSchema,
        cycleP95Ms: fitFigureSchema,
        cycleMeanErrorPct: z
          .number()
          .nullable()
          .describe("each recorded cycle's modelled duration against its own, the mean of |error|"),
        unmodelledCalls: count.describe('calls of no cycle, spawn or agent reaction: left out'),
        notes: z.array(z.string()),
      })
      .strict(),
  })
  .strict();

export type Model = z.infer<typeof modelSchema>;
export type ModelCalls = z.infer<typeof callsSchema>;
export type ModelOperation = z.infer<typeof operationSchema>;
export type ModelTransition = z.infer<typeof transitionSchema>;
export type ModelEventProfile = z.infer<typeof eventProfileSchema>;
export type ModelTraceProvenance = z.infer<typeof traceProvenanceSchema>;
export type ModelHistogram = z.infer<typeof histogramSchema>;
export type ModelSpeed = z.infer<typeof speedSchema>;
export type ModelCoverage = z.infer<typeof coverageSchema>;
export type SpeedLatency = z.infer<typeof speedLatencySchema>;

export function modelJsonSchema(): Record<string, unknown> {
  return publishedJsonSchema(modelSchema, {
    id: 'model-1',
    title: 'fleetbench learned model',
    description:
      'A control plane learned from real runs’ traces (`fleetbench model learn`), replayed by `polling.strategy: learned`. See docs/model.md.',
  });
}

const HINT = 'the model format is documented in docs/model.md';

/** Parses model YAML text; `file` names it in errors (`file:line: field: reason`). */
export function parseModelText(text: string, file: string): Model {
  const { doc, lineCounter, error } = parseYamlInput(text);
  if (error) throw new InputFileError('E_MODEL', file, error.line, `YAML: ${error.message}`, { hint: HINT });
  const raw = doc.toJS() as unknown;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new InputFileError('E_MODEL', file, undefined, `expected a model (format: ${MODEL_FORMAT}, ...)`, {
      hint: HINT,
    });
  const format = (raw as { format?: unknown }).format;
  if (format !== MODEL_FORMAT)
    throw new InputFileError(
      'E_MODEL',
      file,
      yamlLineOf(doc, lineCounter)(['format']),
      `format: expected ${MODEL_FORMAT}, found ${JSON.stringify(format ?? null)} (this fleetbench reads ${MODEL_FORMAT})`,
      { hint: HINT },
    );
  const parsed = modelSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.code === 'unrecognized_keys' ? [...issue.path, issue.keys[0]!] : issue.path;
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more)` : '';
    throw new InputFileError(
      'E_MODEL',
      file,
      yamlLineOf(doc, lineCounter)(path),
      `${describeZodIssues([issue])[0]}${more}`,
      { hint: HINT },
    );
  }
  checkReferences(parsed.data, file);
  checkSense(parsed.data, file, yamlLineOf(doc, lineCounter));
  return parsed.data;
}

type Path = ReadonlyArray<string | number>;

/**
 * Every number a replay acts on, bounded by what a trace could show (MODEL_BOUNDS,
 * docs/limits.md): a hand-edited `cpuMsPerCall: 1e12` or `mean: 1e9` is refused here, naming its
 * line, instead of a replay that makes no call and passes, or one that runs out of memory.
 */
function checkSense(model: Model, file: string, lineOf: (path: Path) => number | undefined): void {
  const traces = model.provenance.traces;
  const horizon = Math.max(MODEL_BOUNDS.minHorizonMs, ...traces.map((t) => t.durationMs));
  const calls = traces.reduce((a, t) => a + t.calls, 0);
  const cycles = Math.max(
    1,
    traces.reduce((a, t) => a + t.cycles, 0),
  );
  const refuse = (path: Path, reason: string): never => {
    throw new InputFileError('E_MODEL', file, lineOf(path), `${path.join('.')}: ${reason} (docs/limits.md)`, {
      hint: HINT,
    });
  };
  const longest = `longer than its longest trace could show (${Math.round(horizon / 1000)} s, at least an hour)`;
  const time = (path: Path, value: number) => {
    if (value > horizon) refuse(path, `${value} ms is ${longest}`);
  };
  const range = (path: Path, p: { p50: number; p95: number } | null | undefined) => {
    if (!p) return;
    time([...path, 'p95'], p.p95);
    if (p.p50 > p.p95) refuse([...path, 'p50'], `p50 ${p.p50} is above p95 ${p.p95}`);
  };
  const cap = (path: Path, value: number, max: number, what: string) => {
    if (value > max) refuse(path, `${value} is more than ${what} (${max})`);
  };
  const ct = model.cycleTime;
  for (const key of ['cpuMsPerCall', 'waitMsPerCall', 'launchMsPerCall', 'spawnCpuMs'] as const)
    time(['cycleTime', key], ct[key]);
  cap(['cycleTime', 'cycleSpread'], ct.cycleSpread, MODEL_BOUNDS.maxCycleSpread, 'a cycle’s spread can be');
  cap(['cycleTime', 'cores'], ct.cores, MODEL_BOUNDS.maxCores, 'the cores a model may name');
  if (ct.load !== undefined)
    cap(['cycleTime', 'load'], ct.load, MODEL_BOUNDS.maxLoad, 'the load a model may name');
  for (const [key, op] of Object.entries(model.operations)) {
    range(['operations', key, 'latencyMs'], op.latencyMs);
    cap(['operations', key, 'points'], op.points, MODEL_BOUNDS.maxPoints, 'GitHub charges for one query');
  }
  const means = (path: Path, list: ModelCalls, samples: number | undefined, signed = false) => {
    const most = (2 * Math.max(1, calls)) / Math.max(1, samples ?? 1);
    list.forEach((c, i) => {
      if (c.mean < 0 && !signed)
        refuse([...path, i, 'mean'], `${c.mean}: a profile’s calls are never fewer than none`);
      if (Math.abs(c.mean) > most)
        refuse(
          [...path, i, 'mean'],
          `${c.mean} calls per unit over ${samples ?? 1} samples is more than its traces’ ${calls} calls could show`,
        );
    });
  };
  means(['sessions', 'spawn', 'calls'], model.sessions.spawn.calls, model.sessions.spawn.samples);
  model.sessions.cycles.forEach((c, i) => {
    means(['sessions', 'cycles', i, 'calls'], c.calls, c.samples);
  });
  means(['shared', 'perProject'], model.shared.perProject, undefined);
  means(['shared', 'perRepo'], model.shared.perRepo, undefined);
  model.events.forEach((e, i) => {
    means(['events', i, 'perSession'], e.perSession, e.samples, true);
    means(['events', i, 'perProject'], e.perProject, e.samples, true);
  });
  const review = model.sessions.review;
  if (review) {
    means(['sessions', 'review', 'perReaction'], review.perReaction, review.samples);
    means(['sessions', 'review', 'perComment'], review.perComment, review.samples);
  }
  const lags = (path: Path, histogram: ModelHistogram) => {
    for (const key of Object.keys(histogram))
      if (Number(key) > cycles)
        refuse([...path, key], `a lag of ${key} cycles is more than its traces’ ${cycles} cycles`);
  };
  model.sessions.transitions.forEach((t, i) => {
    lags(['sessions', 'transitions', i, 'afterCycles'], t.afterCycles);
    range(['sessions', 'transitions', i, 'afterMs'], t.afterMs);
  });
  if (review) lags(['sessions', 'review', 'toldAfterCycles'], review.toldAfterCycles);
  for (const [kind, outage] of Object.entries(model.restartOutageMs))
    range(['restartOutageMs', kind], outage);
  if (model.speed) {
    for (const [name, a] of Object.entries(model.speed.adapters)) {
      const path = ['speed', 'adapters', name];
      for (const key of ['bootCold', 'bootWarmProcess', 'load', 'replay'] as const)
        range([...path, key], a[key]);
      range([...path, 'firstActivity', 'cold'], a.firstActivity.cold);
      range([...path, 'firstActivity', 'warm'], a.firstActivity.warm);
      if (a.loadContention !== null)
        cap(
          [...path, 'loadContention'],
          a.loadContention,
          MODEL_BOUNDS.maxLoadContention,
          'the learner fits',
        );
    }
    for (const [stage, latency] of Object.entries(model.speed.controlPlane))
      range(['speed', 'controlPlane', stage], latency);
  }
}

/** Every operation a profile names must be in `operations`. */
function checkReferences(model: Model, file: string): void {
  const lists: Array<[string, ModelCalls]> = [
    ['sessions.spawn.calls', model.sessions.spawn.calls],
    ...model.sessions.cycles.map((c, i) => [`sessions.cycles[${i}].calls`, c.calls] as [string, ModelCalls]),
    ['shared.perProject', model.shared.perProject],
    ['shared.perRepo', model.shared.perRepo],
    ...model.events.flatMap((e, i) => [
      [`events[${i}].perSession`, e.perSession] as [string, ModelCalls],
      [`events[${i}].perProject`, e.perProject] as [string, ModelCalls],
    ]),
    ...(model.sessions.review
      ? ([
          ['sessions.review.perReaction', model.sessions.review.perReaction],
          ['sessions.review.perComment', model.sessions.review.perComment],
        ] as Array<[string, ModelCalls]>)
      : []),
  ];
  for (const [where, calls] of lists)
    for (const [i, call] of calls.entries())
      if (!Object.hasOwn(model.operations, call.operation))
        throw new InputFileError(
          'E_MODEL',
          file,
          undefined,
          `${where}[${i}].operation: '${call.operation}' is not one of the model's operations`,
          { hint: HINT },
        );
}

export function loadModelFile(file: string): Model {
  // Bounded as it is read: a device or FIFO given as the model says 0 bytes to stat.
  const text = readInputText(file, { maxBytes: MODEL_FILE_MAX_BYTES, code: 'E_MODEL', what: 'a model file' });
  return parseModelText(text, file);
}
