/**
 * Every bound fleetbench puts on its input, in one place (docs/limits.md lists them with the
 * reasons). An input outside these is refused in seconds with a message naming the file, line
 * or field, never left to grow until the process runs out of memory or time.
 */

const MIB = 1024 * 1024;
const DAY_MS = 86_400_000;

/**
 * How far ahead a live run's segments may agree to start (`--start-at`): pods start within
 * minutes; a start further out is a typo (seconds for milliseconds), not a plan (24 hours).
 */
export const MAX_START_AT_LEAD_MS = DAY_MS;

/**
 * Segments of one distributed matrix or live run (`--segment i/n`, `k8s manifest --segments`):
 * far beyond any Indexed Job a benchmark needs, small enough to list.
 */
export const MAX_SEGMENTS = 1000;

/** The longest run a trace can describe: every `t` and `dur` lies in [0, this] (30 days). */
export const MAX_RUN_MS = 30 * DAY_MS;

/**
 * Threads one trace analysis may use (`--threads`): each is a V8 isolate of tens of MB, and a
 * thread beyond the cores only competes for them.
 */
export const MAX_ANALYSIS_THREADS = 64;

/** The longest trace (or imported file) line, in bytes: far above any real record (a few KB). */
export const MAX_LINE_BYTES = 16 * MIB;

/** An OTLP/JSON export file (read whole: an export is one document). */
export const MAX_OTLP_FILE_BYTES = 256 * MIB;

/**
 * A file a person writes (scenario, budgets, session profile, fixtures, a rate-limit bracket, a
 * segment's record): read whole, so bounded far above any real one (the largest built-in
 * scenario is a few KB).
 */
export const MAX_CONFIG_FILE_BYTES = 4 * MIB;

/**
 * A results file read whole (summary.json, baseline.json, `analyze --json`, segment records):
 * under the 512 MiB a JavaScript string can hold, and far above a large matrix's baseline.
 */
export const MAX_RESULTS_FILE_BYTES = 512 * MIB;

/**
 * How many directories below a directory of runs `compare` and `report` look for summary.json
 * files (docs/limits.md); a directory deeper than that with directories of its own is refused,
 * never left out.
 */
export const MAX_RESULTS_DEPTH = 16;

/**
 * A learned model file (docs/model.md): a few KB to a few hundred KB for any real control plane
 * (its size grows with operations and states, not with the traces); read whole, then validated.
 */
export const MODEL_FILE_MAX_BYTES = 8 * MIB;

/** Traces one `model learn` reads, and api records over all of them (each is kept in memory). */
export const MODEL_LEARN_LIMITS = { maxTraces: 32, maxApiRecords: 5_000_000 } as const;

/**
 * What a model's numbers may be, beyond their types (docs/limits.md, "Learned models"): each is
 * bounded by what a trace could show. A time is at most the longest of the model's traces (at
 * least an hour: a call or a restart cannot outlast the run it was recorded in); a profile's mean
 * times its samples at most twice the calls of its traces (an event's row may be below its
 * profile); a lag at most the traces' cycles. The rest are caps no learned model comes near:
 * GitHub's costliest GraphQL query (5,000 points), a cycle's spread, the cores and load of a machine.
 */
export const MODEL_BOUNDS = {
  minHorizonMs: 3_600_000,
  maxPoints: 5_000,
  maxCycleSpread: 100,
  maxCores: 4_096,
  maxLoad: 1_000,
  /** A session load's slowdown per other load in flight: the learner fits it on 0 to 3. */
  maxLoadContention: 3,
} as const;

/**
 * The accept queue a server listens with (the kernel caps it at net.core.somaxconn, 4,096 on
 * Linux since 5.4). Node's default, 511, overflowed when 1,000 clients connected at once: the
 * kernel dropped the rest, their kernels retried 1 s and 3 s later, and another client's probe
 * waited that long behind them (docs/limits.md#servers).
 */
export const LISTEN_BACKLOG = 4_096;

/** Request bodies each server accepts (bytes). */
export const BODY_LIMITS = {
  /** The GitHub emulator's REST and GraphQL bodies (GitHub itself refuses far smaller JSON). */
  github: 5 * MIB,
  /** The emulator's admin API (fixture mutations, token minting). */
  githubAdmin: 5 * MIB,
  /** `fleetbench reference serve` (the http target protocol: small JSON requests). */
  reference: 1 * MIB,
  /** A live run's OTLP/HTTP receiver (an exporter's batch). */
  otlp: 16 * MIB,
  /**
   * The provider emulator's model requests: a CLI resends its whole history every turn, and a
   * 1M-token context is about 4 MB of text as JSON; far above that is not a real request.
   */
  provider: 16 * MIB,
  /** The provider emulator's admin API (keys, fault rules: small JSON). */
  providerAdmin: 1 * MIB,
} as const;

/**
 * git's smart HTTP on `github serve` (src/github/git/): each request runs one `git http-backend`
 * process, so their number is bounded and the rest wait in a bounded queue (503 past it); a push's
 * pack is bounded in bytes as sent (GitHub's own push limit is 2 GB, its largest file 100 MB: the
 * world's repositories are small) and a request in time.
 */
export const GIT_HTTP_LIMITS = {
  /** Request body (a push's pack, a fetch's wants and haves), compressed bytes as sent. */
  maxBodyBytes: 128 * MIB,
  /** `git http-backend` processes at once. */
  maxBackends: 8,
  /** Requests waiting for one; past this a request is answered 503 with `Retry-After`. */
  maxQueued: 64,
  /** A request's backend process is stopped after this long (a stalled client). */
  maxRequestMs: 120_000,
} as const;

/**
 * What one OTLP/HTTP export a live run's receiver takes may hold, beyond its bytes: 16 MiB of
 * 2-byte empty spans is eight million objects, whose decoding alone held a run's process for
 * seconds. Counted on the wire (protobuf) or in the text (JSON) before anything is decoded, so a
 * refusal costs one pass over the bytes; within these, a request is decoded, checked and written
 * in slices that let the run's other requests through (docs/limits.md).
 */
export const OTLP_RECEIVER_LIMITS = {
  /** Spans in one request: twice the Collector's default batch (8,192), far above an SDK's (512). */
  maxSpans: 16_384,
  /** Span events in one request (each becomes a trace record, as a span does). */
  maxEvents: 16_384,
  /**
   * Values in one request: JSON objects, arrays and the values commas separate, or protobuf
   * fields. A span with its attributes is a few dozen; this bounds the decoding's work.
   */
  maxValues: 2_000_000,
  /** Nesting of objects and arrays (an attribute's array of arrays of …): a request's own shape is a dozen deep. */
  maxDepth: 64,
} as const;

/**
 * Ids and names the http target protocol takes (docs/limits.md#ids): each has a charset and a
 * length, checked when the request arrives, so nothing a server saves can later break a header,
 * a path or a reload of its state.
 */
export const ID_LIMITS = {
  /** Session and actor ids, adapters: letters, digits and `._:@+=-`. */
  id: 128,
  /** Run ids and scenario names: any text without control characters. */
  text: 256,
  /** A repo's owner and name (GitHub's own lengths: 39 and 100). */
  repoOwner: 39,
  repoName: 100,
  /** A branch name (git's ref names in practice stay far below). */
  branch: 255,
  /** A GitHub token and URL a run offers. */
  token: 1024,
  url: 2048,
  /** An idempotency key of a run request. */
  key: 512,
  /** One input to a native run (the simulated agent only counts it). */
  input: 64 * 1024,
  /** An issue number (GitHub's are 32-bit). */
  issue: 2_147_483_647,
} as const;

/**
 * Sessions one run may create on the served control plane (`reference serve`): each is a line
 * of its journal and an entry of every poll cycle; beyond this a create is refused (409).
 */
export const MAX_SERVED_SESSIONS = 100_000;

/** GraphQL documents, as GitHub bounds them (its node limit lives beside its cost, github/graphql/cost.ts). */
export const GRAPHQL_LIMITS = {
  /** Lexical tokens in one query: graphql-js stops parsing there. */
  maxTokens: 50_000,
  /** Nested selection sets (fields and fragments) in one operation. */
  maxDepth: 50,
  /**
   * Fields one operation expands to with its fragments spread: a few fragments that each spread
   * the next twice expand to billions; refused before the cost is charged or anything runs.
   */
  maxExpandedFields: 100_000,
} as const;

/** Scenario bounds: what one machine can simulate or drive (docs/limits.md). */
export const SCENARIO_LIMITS = {
  maxDurationMs: MAX_RUN_MS,
  /** Poll cycles, dashboard refreshes and intervals of that kind: no shorter than this. */
  minIntervalMs: 100,
  /** Control-plane sessions one process simulates (5,000 take ~550 MB: docs/performance.md). */
  maxSessions: 10_000,
  /**
   * Sessions of the real agent-orchestrator (`target: ao`): each one is several `gh` processes a
   * cycle, and on 2 busy cores 50 sessions already outlast a 30 s interval (docs/calibration.md).
   */
  maxAoSessions: 200,
  /**
   * Sessions of the real Paperclip (`target: paperclip`): each is an agent whose every run is a
   * stand-in process spawned by the server on this machine (docs/paperclip.md).
   */
  maxPaperclipSessions: 50,
  /**
   * Sessions of a control plane of the user's (`target: command`): each is a piece of work its
   * real agents do on this machine (docs/command-target.md).
   */
  maxCommandSessions: 200,
  /** Turnover actors (parked sessions cost ~70 bytes each in the executor). */
  maxActors: 1_000_000,
  /** Arrival and swap rates (per second or minute, as the field says). */
  maxRate: 100_000,
  /** Repos in a topology. */
  maxRepos: 10_000,
  /**
   * Executors and faults of one scenario: each executor is a loop of its own and each fault a
   * timer, so thousands of them would cost gigabytes before a session starts.
   */
  maxExecutors: 100,
  maxFaults: 1_000,
  /** Stages of an arrival-rate executor. */
  maxStages: 1_000,
  /** A scenario's name (it names the run directory, the trace's run id, the reports). */
  maxNameLength: 200,
} as const;

/**
 * The progress guard of a virtual-time run: this many clock events, or trace records, at one
 * instant of run time means the run's clock no longer advances (a loop that schedules itself
 * with no delay): the run stops with an error instead of filling the disk.
 */
export const MAX_EVENTS_AT_ONE_INSTANT = 1_000_000;

/**
 * A live run's http target must keep answering (docs/limits.md, "A failed run"): it is probed
 * every `probeEveryMs` (real ms, each probe given `probeTimeoutMs`), and one that gives no answer
 * at all (refused, reset, timed out: a 503 is an answer) for `deadAfterMs` in a row, outside a
 * restart the run asked for, fails the run (exit 3).
 */
export const TARGET_LIVENESS = { probeEveryMs: 1_000, probeTimeoutMs: 2_000, deadAfterMs: 15_000 } as const;

/**
 * How long a run waits for its target to stop (real ms, docs/limits.md, "A failed run"): the
 * bespoke targets' own stops are bounded well inside it (AO's 25 s, a command's signal then
 * SIGKILL), so a stop still going after this is stuck, and the run fails instead of hanging.
 */
export const TARGET_STOP_BOUND_MS = 120_000;

/**
 * The provider emulator (docs/provider-emulator.md): what one scripts file may hold, and what
 * the emulator keeps or works on per request, so that no request or file can take its memory
 * or stall every stream it is serving.
 */
export const PROVIDER_LIMITS = {
  /** Scripts in a file, turns in a script, commands in a turn. */
  maxScripts: 1_000,
  maxTurns: 1_000,
  maxCommands: 100,
  /** One command, and a text (a turn's text or final message), in characters. */
  maxCommandBytes: 4_096,
  maxTextBytes: 65_536,
  /** A final message padded to at most this many tokens. */
  maxFinalTokens: 32_000,
  /** Keys minted through the admin API. */
  maxKeys: 100_000,
  /** Conversation places whose attempts are counted (then the count starts again). */
  maxTrackedConversations: 100_000,
  /**
   * The exact tokenisation one request may do, in work units (src/provider/tokens.ts: a piece
   * costs 8 + length²/8; about 400 KiB of English, 20-35 ms of one core here); the rest is
   * estimated at 4 bytes a token, and a pre-token longer than 128 characters is estimated from its
   * first 128, so no text can make a request's count quadratic.
   */
  maxExactTokenWork: 1_000_000,
  /**
   * A model request's body from this size on is parsed by a worker thread, at most `workers` of
   * them (src/provider/json-workers.ts): JSON.parse of 1 MiB is 1-30 ms here, of 16 MiB 90-500 ms.
   */
  jsonWorkers: { fromBytes: 1 * MIB, workers: 2 },
  /**
   * Request-body values remembered so that a CLI's resent system prompt, tools and history are
   * not parsed again (src/provider/recurring-values.ts): values of 1 KiB or more, the least recently
   * used forgotten first, at most this many and this many bytes of them (the parsed values they
   * stand for take about as much again).
   */
  recurringValues: { maxEntries: 4_096, maxBytes: 32 * MIB },
  /** Fault rules at once. */
  maxFaultRules: 1_000,
  /**
   * Models a user adds beside the table (`--model`, a scenario's `provider.models`): how many, a
   * name's characters, the largest window in tokens (ten times the largest any vendor serves).
   */
  maxAddedModels: 256,
  maxModelNameChars: 256,
  maxModelContextWindow: 10_000_000,
  /** A key, a session id (and codex's window id), a CLI version: cut to this many characters. */
  maxKeyChars: 1_024,
  maxSessionChars: 256,
  maxVersionChars: 64,
  /** The path of a request to Anthropic's own endpoints, as recorded. */
  maxFirstPartyPathChars: 256,
  /** Keys whose limit buckets are kept (the least recently used forgotten first). */
  maxLimitKeys: 10_000,
  /** Distinct CLI versions counted in the stats (later ones count as `other`). */
  maxCliVersions: 100,
  /** Prompt-cache entries kept, over every key (the least recently used key's dropped first). */
  maxCacheEntries: 200_000,
  /**
   * Responses API responses kept for `previous_response_id`, `item_reference` and `GET
   * /v1/responses/{id}` (src/provider/stored-responses.ts): at most this many, holding at most
   * `maxChars` (each item once: its characters and ITEM_OVERHEAD, while a kept response reaches
   * it); the least recently used forgotten first.
   */
  storedResponses: { maxResponses: 10_000, maxChars: 64 * MIB },
  /**
   * Time: a first token at most 10 minutes out, output at 1 to 1,000,000 tokens a second, a
   * time scale of 0.001 to 10,000, fault windows within 30 days of run time: what a served
   * emulator can play (a timer past 2^31 ms would fire at once), refused past them, naming the flag.
   */
  maxTtftMs: 600_000,
  minOutputTokensPerSec: 1,
  maxOutputTokensPerSec: 1_000_000,
  minTimeScale: 0.001,
  maxTimeScale: 10_000,
  maxFaultWindowMs: 30 * 24 * 3_600_000,
  /** A stream's chunks: output is sent in at most this many (the chunks grow past it). */
  maxChunks: 4_096,
  /**
   * Writes a second over every stream in flight: past it each stream's chunks after its first
   * token go out further apart, merged (a thousand streams of 20 ms chunks would be 50,000 writes
   * a second, more than the process can do while it still answers anyone else).
   */
  maxStreamWritesPerSec: 5_000,
  /** The load model: sequences generated at once, and the slowdown at that many. */
  maxRunning: 10_000,
  maxLoadFactor: 100,
} as const;
