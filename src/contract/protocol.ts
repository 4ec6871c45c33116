/**
 * The `http` target protocol, version 1 (docs/http-target.md): a small JSON protocol a real
 * orchestrator can implement in a shim, and that the reference control plane serves
 * (`fleetbench reference serve`). This file is its one definition: the request and response
 * shapes, the event shape and how an event becomes a trace record. The client is
 * src/targets/http.ts, the reference implementation src/reference/server.ts and supervisor.ts.
 */
import { z } from 'zod';
import { ID_LIMITS, MAX_SEGMENTS } from '../base/limits.ts';
import { type BodyRecord, bodyRecordSchema } from '../trace/schema.ts';
import { restartKinds } from './types.ts';

export const TARGET_PROTOCOL = 'fleetbench-target/1';

// ── Ids and names (docs/limits.md#ids) ─────────────────────────────────────────────────────
// Checked at the door: a session id goes into GitHub request headers and paths, the journal
// and every reload of it; one that breaks a header later would break the server for good.

const LIMITS = '(docs/limits.md)';
/** Session and actor ids, adapters: a path segment and a header value as they are. */
export const ID_PATTERN = /^[A-Za-z0-9._:@+=-]+$/;
export const idField = (what: string) =>
  z
    .string()
    .min(1, `expected a ${what}`)
    .max(ID_LIMITS.id, `expected at most ${ID_LIMITS.id} characters ${LIMITS}`)
    .regex(ID_PATTERN, `expected letters, digits and ._:@+=- only ${LIMITS}`);
/** Free text that names something (a run, a scenario): any characters but control ones. */
export const textField = (max: number = ID_LIMITS.text) =>
  z
    .string()
    .min(1, 'expected some text')
    .max(max, `expected at most ${max} characters ${LIMITS}`)
    .regex(/^\P{Cc}*$/u, `expected no control characters (newline, NUL, ...) ${LIMITS}`);
const repoPart = (max: number) => `[A-Za-z0-9_.-]{1,${max}}`;
const REPO_PATTERN = new RegExp(`^${repoPart(ID_LIMITS.repoOwner)}/${repoPart(ID_LIMITS.repoName)}$`);
export const repoField = z
  .string()
  .regex(
    REPO_PATTERN,
    `expected owner/name: letters, digits and _.- (owner at most ${ID_LIMITS.repoOwner}, name at most ${ID_LIMITS.repoName}) ${LIMITS}`,
  )
  .refine((repo) => !repo.split('/').some((part) => part === '.' || part === '..'), {
    message: `expected owner/name, not . or .. ${LIMITS}`,
  });
export const branchField = z
  .string()
  .min(1, 'expected a branch name')
  .max(ID_LIMITS.branch, `expected at most ${ID_LIMITS.branch} characters ${LIMITS}`)
  .regex(/^[A-Za-z0-9._/+@=-]+$/, `expected letters, digits and ._/+@=- only ${LIMITS}`);
/** A GitHub the run offers: an http(s) URL and a token of visible ASCII (an Authorization header). */
export const githubOfferSchema = z.object({
  url: z
    .string()
    .max(ID_LIMITS.url, `expected at most ${ID_LIMITS.url} characters ${LIMITS}`)
    .refine((url) => URL.canParse(url) && /^https?:$/.test(new URL(url).protocol) && !/\s/.test(url), {
      message: 'expected an http(s) URL',
    }),
  token: z
    .string()
    .min(1, 'expected a token')
    .max(ID_LIMITS.token, `expected at most ${ID_LIMITS.token} characters ${LIMITS}`)
    .regex(/^[!-~]+$/, `expected visible ASCII only ${LIMITS}`),
});

/** Optional capabilities; a target lists the ones it implements in GET /v1/info. */
export const capabilities = [
  'restart',
  'flushCaches',
  'setDashboard',
  'events',
  /** Native runs: start a run on a session, send its next input, end it (needs `events`). */
  'runs',
  /** Provider faults (slowdown, crash) for the chaos wave. */
  'providerFaults',
  /** Park/wake actors for the turnover executor. */
  'actors',
] as const;
export type ProtocolCapability = (typeof capabilities)[number];

export const infoSchema = z.object({
  protocol: z.string(),
  name: z.string(),
  version: z.string().optional(),
  capabilities: z.array(z.string()),
  pid: z.number().int().optional().describe('the process answering (the control plane, not a supervisor)'),
  github: z.object({ url: z.string(), own: z.boolean() }).optional(),
});
export type InfoResponse = z.infer<typeof infoSchema>;

/** Which generator of a run with several (0-based index, count of generators). */
export const runSegmentSchema = z
  .object({
    index: z.number().int().nonnegative(),
    count: z
      .number()
      .int()
      .positive()
      .max(MAX_SEGMENTS, `expected at most ${MAX_SEGMENTS} segments ${LIMITS}`),
  })
  .refine((s) => s.index < s.count, { message: 'expected index below count', path: ['index'] });

/** POST /v1/run: a run begins. The target forgets the previous run's sessions. */
export const runStartSchema = z.object({
  runId: textField(),
  /** Unix ms of run time 0, and run ms per real ms: how `t` in events is read. */
  epochMs: z.number(),
  timeScale: z.number().positive(),
  seed: z.number().int(),
  scenario: textField(),
  /** GitHub the run provides (the emulator, served by fleetbench); a target may use its own. */
  github: githubOfferSchema.optional(),
  /** Target-specific settings from the scenario (the reference server reads polling, ...). */
  config: z.record(z.string(), z.unknown()).optional(),
  /**
   * Several generators in one run (live-run segments, docs/distributed.md): every segment sends
   * the same `runId` (it names the shared start time) with its own index. The first POST of a
   * run id starts the run (reset); the others join it: no reset, the same `since`.
   */
  segment: runSegmentSchema.optional(),
});
export type RunStartRequest = z.infer<typeof runStartSchema>;

export const runStartResponseSchema = z.object({
  /** Stream events from this sequence number (GET /v1/events?since=...). */
  since: z.number().int().nonnegative(),
  github: z.object({ url: z.string(), own: z.boolean() }).optional(),
  /** A segment that joined a run another segment started (no reset). */
  joined: z.boolean().optional(),
});
export type RunStartResponse = z.infer<typeof runStartResponseSchema>;

/** POST /v1/run/stop: the run ends; `events` is how many events the target emitted for it. */
export const runStopResponseSchema = z.object({
  events: z.number().int().nonnegative(),
  /** Segments of the run still running: the run goes on for them (only the last stop ends it). */
  running: z.number().int().nonnegative().optional(),
});

/** POST /v1/run/stop from one segment of a run with several (an empty body stops the run). */
export const runStopSchema = z.object({
  runId: textField().optional(),
  segment: runSegmentSchema.optional(),
});

export const sessionSpecSchema = z.object({
  id: idField('session id'),
  repo: repoField,
  issue: z.number().int().positive().max(ID_LIMITS.issue),
  branch: branchField,
});

export const countsResponseSchema = z.object({ counts: z.record(z.string(), z.number().int()) });

export const restartRequestSchema = z.object({ kind: z.enum(restartKinds) });
export const restartResponseSchema = z.object({
  outageMs: z.number().nonnegative().describe('real ms from kill (or drain start) to ready'),
  pid: z.object({ before: z.number().int().optional(), after: z.number().int().optional() }).optional(),
});
export type RestartResponse = z.infer<typeof restartResponseSchema>;

export const dashboardRequestSchema = z.object({ open: z.boolean() });

// ── Native runs (capability `runs`) ───────────────────────────────────────────────────────
// POST /v1/sessions/{id}/run: an input opens a run; answered when the run exists.
// POST /v1/sessions/{id}/turns: the next input of the session's run.
// DELETE /v1/sessions/{id}/run: the run ends. `key` makes a retried request idempotent.
// Notices come from the event stream: a `run.turn` span is a completed turn, a `run.ended`
// event an ended run (both carry `session`, `data.run` and `data.turn`/`data.turns`).

/** A request key: a retry after a lost answer (a restart) with the same key is not done twice. */
const requestKey = textField(ID_LIMITS.key).optional();
const runInput = z.string().max(ID_LIMITS.input, `expected at most ${ID_LIMITS.input} characters ${LIMITS}`);

export const runOpenRequestSchema = z.object({
  adapter: idField('provider adapter'),
  input: runInput,
  key: requestKey,
});
export const runOpenResponseSchema = z.object({ run: z.string(), start: z.enum(['cold', 'warm']) });
export const turnRequestSchema = z.object({ input: runInput, key: requestKey });

/** POST /v1/providers/faults (capability `providerFaults`). `durationMs` is run time. */
export const providerFaultSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('slowdown'),
    adapter: idField('provider adapter').optional(),
    factor: z.number().positive(),
    durationMs: z.number().positive().optional(),
  }),
  z.object({
    type: z.literal('crash'),
    adapter: idField('provider adapter').optional(),
    count: z.number().int().positive(),
  }),
]);

// ── Actors (capability `actors`) ──────────────────────────────────────────────────────────
// POST /v1/actors {id, base, phase}, POST /v1/actors/{id}/park|wake {phase},
// POST /v1/actors/{id}/steps {step, phase}: each answers an ActorReply {ok, state}.
// GET /v1/actors: {counts: {awake, parked, waking, parking}}.

const actorPhase = z.enum(['register', 'fill', 'turnover']);
const footprint = z.object({ memoryBytes: z.number().nonnegative(), diskBytes: z.number().nonnegative() });
export const actorCreateSchema = z.object({ id: idField('actor id'), base: footprint, phase: actorPhase });
export const actorPhaseSchema = z.object({ phase: actorPhase });
const actorOp = z.discriminatedUnion('op', [
  z.object({ op: z.literal('ingest'), bytes: z.number().nonnegative() }),
  z.object({ op: z.literal('cpu'), ms: z.number().nonnegative() }),
  z.object({ op: z.literal('disk-write'), bytes: z.number().nonnegative() }),
  z.object({ op: z.literal('disk-read'), bytes: z.number().nonnegative() }),
  z.object({ op: z.literal('memory-fill'), bytes: z.number().nonnegative() }),
  z.object({ op: z.literal('memory-touch'), bytes: z.number().nonnegative() }),
  z.object({ op: z.literal('ping'), count: z.number().int().nonnegative() }),
]);
export const actorStepSchema = z.object({
  step: z.object({
    name: textField(ID_LIMITS.id),
    index: z.number().int().nonnegative(),
    ops: z.array(actorOp),
    max: footprint,
  }),
  phase: actorPhase,
});
export const actorReplySchema = z.object({
  ok: z.boolean(),
  state: z.enum(['awake', 'parked', 'waking', 'parking']),
});
export const actorCountsSchema = z.object({
  counts: z.object({
    awake: z.number().int(),
    parked: z.number().int(),
    waking: z.number().int(),
    parking: z.number().int(),
  }),
});

/** Every error answer: `{ "error": { "code": "...", "message": "..." } }`. */
export type ProtocolErrorCode =
  | 'bad_request'
  | 'too_large'
  | 'not_found'
  | 'conflict'
  | 'not_supported'
  | 'unavailable'
  /** The run cannot start: the GitHub it offered cannot be reached (502). */
  | 'bad_gateway'
  | 'no_run'
  | 'internal';
export interface ErrorBody {
  error: { code: ProtocolErrorCode; message: string };
}
export const errorBodySchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/**
 * One event on the stream (one NDJSON line, or one SSE `data:`). `type` is the trace record
 * kind; the other fields are the record's. Time: `t` (run ms: Unix ms − epochMs, × timeScale)
 * or `ts` (Unix ms; then `dur` is in real ms). Without either, fleetbench stamps the arrival.
 * A late span's write time is `writtenAt` (run ms) or `writtenTs` (Unix ms).
 * `seq` numbers events from 1 within a run.
 */
export interface TargetEvent {
  seq?: number;
  type: 'span' | 'event' | 'gauge' | 'api';
  name?: string;
  t?: number;
  ts?: number;
  dur?: number;
  [field: string]: unknown;
}

/** Stream control lines, not records: `hello` opens a stream, `end` closes the run's stream. */
export interface StreamControl {
  type: 'hello' | 'end';
  since?: number;
  events?: number;
}

export interface TimeBase {
  epochMs: number;
  timeScale: number;
  /** Run time now, for events that carry no time. */
  now(): number;
}

export type EventConversion = { ok: true; record: BodyRecord } | { ok: false; reason: string };

/** Turns one stream event into a trace record, validated by the trace schema. */
export function eventToRecord(event: TargetEvent, base: TimeBase): EventConversion {
  const { seq: _seq, type, ts, t, dur, writtenTs, ...rest } = event;
  let time: number;
  let duration = typeof dur === 'number' ? dur : undefined;
  const toRun = (unixMs: number) => (unixMs - base.epochMs) * base.timeScale;
  if (typeof t === 'number') time = t;
  else if (typeof ts === 'number') {
    time = toRun(ts);
    if (duration !== undefined) duration *= base.timeScale;
  } else time = base.now();
  // A span written after it ended (docs/analysis.md#speed: late spans still count) says when: `writtenAt` in
  // run ms, or `writtenTs` in Unix ms.
  if (typeof writtenTs === 'number') rest.writtenAt = toRun(writtenTs);
  const candidate: Record<string, unknown> = { kind: type, t: time, ...rest };
  if (type === 'span' || type === 'api') candidate.dur = duration ?? 0;
  const parsed = bodyRecordSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      reason: `${issue?.path.join('.') || '(event)'}: ${issue?.message ?? 'invalid'}`,
    };
  }
  return { ok: true, record: parsed.data };
}

/** The other way round: what a served control plane sends for a record it would have traced. */
export function recordToEvent(
  record: BodyRecord | (Omit<BodyRecord, 'outcome'> & { kind: string }),
): TargetEvent {
  const { kind, ...rest } = record as { kind: TargetEvent['type'] } & Record<string, unknown>;
  return { type: kind, ...rest } as TargetEvent;
}
