/**
 * The edges section of the Analysis (`analysis.edges`, docs/analysis.md#edges-any-control-plane-from-its-traffic):
 * a control plane measured from what crossed its world's edges, computed by edges.ts. Part of
 * the Analysis contract (schema.ts puts it in); present only for a trace with world or
 * command-target records.
 */
import { z } from 'zod';
import {
  MAX_BLOCKED_HOSTS,
  MAX_BLOCKED_PROCESSES,
  MAX_EDGE_ROWS,
  MAX_FIRST_PARTY_PATHS,
} from './schema-constants.ts';

const count = z.number().int().nonnegative();
const amount = z.number().nonnegative();
const atMs = z.number().nullable();

const tokens = z.object({ requests: count, tokensIn: count, tokensOut: count });

const costFigure = z
  .object({
    mean: z.number().describe("the completed sessions' own cost, mean"),
    p50: z.number().describe('nearest-rank median of the same'),
    overheadPerTask: z
      .number()
      .describe("the control plane's own cost (never attributed) ÷ completed sessions"),
    allIn: z.number().describe('mean + overheadPerTask: the figure budgets judge (cost_per_task_*)'),
  })
  .nullable();

const sessionRow = z.object({
  session: z.string(),
  kind: z.string().nullable().describe("work.created's labels.kind (issue, http, command)"),
  repo: z.string().nullable(),
  issue: z.number().nullable(),
  createdAtMs: atMs.describe('work.created; null: the trace never said'),
  doneAtMs: atMs.describe('the first session.state into its done state (or past it)'),
  closedAtMs: atMs,
  firstOutputAtMs: atMs.describe("the first streamed model output of the session's agents after createdAtMs"),
  github: z.object({
    calls: count,
    points: amount,
    pointsByResource: z.record(z.string(), amount),
    writes: count.describe('REST POST, PATCH, PUT, DELETE'),
  }),
  model: tokens,
  spawns: count,
});

const spawnRow = z.object({
  spawn: z.string(),
  agent: z.string(),
  session: z.string().nullable().describe("null: the control plane's own agent (no agent.session names it)"),
  how: z.string().nullable().describe('how it was attributed (argv, branch, cwd, pr)'),
  pid: z.number().nullable(),
  cwd: z.string().nullable(),
  command: z.string().describe('its argv, joined, at most 300 characters'),
  startedAtMs: z.number().describe('agent.spawn: the process started'),
  firstRequestAtMs: atMs.describe('its first provider.request arrival'),
  bootMs: z.number().nullable().describe('startedAtMs → firstRequestAtMs (agent_boot)'),
  exitedAtMs: atMs.describe('agent.exit; null: still running when the trace ended'),
  model: tokens,
  firstParty: count
    .optional()
    .describe(
      "its requests to the vendor's own endpoints (not model requests; absent before they were told apart)",
    ),
});

const orphanRow = z.object({
  spawn: z.string(),
  agent: z.string(),
  session: z.string().nullable(),
  cause: z.string().describe('the restart kind that orphaned it, or `exited` (controlplane.exited)'),
  killAtMs: z.number(),
  goneAtMs: z.number().describe('when its control plane was gone (the kill; a graceful one: the next boot)'),
  startedAtMs: z.number(),
  exitedAtMs: atMs,
  open: z.boolean().describe('never exited before the trace ended: ranAfterMs is a least'),
  ranAfterMs: z.number().describe('goneAtMs → its exit (or the end of the trace)'),
  requestsAfter: count,
  tokensAfter: count.describe('tokens (in + out) of its requests from goneAtMs on'),
});

const duplicateRow = z.object({
  session: z.string(),
  cutSpawns: z.array(z.string()).describe('its agents started before the kill (and after the previous kill)'),
  newSpawn: z
    .string()
    .nullable()
    .describe('its first agent spawned once the old process was gone (before the next kill); null: none'),
  tokensBeforeKill: count,
  tokensAfterKill: count.describe('of the cut agents, from the kill on (orphans)'),
  tokens: count.describe('spent again: both, when the session got a new agent; else 0'),
  writes: count.describe(
    'writes from then whose method and route (a GraphQL mutation: its operation) the session had made before the kill',
  ),
  writesAgain: z.array(z.object({ write: z.string(), count })).describe('`METHOD route` → writes again'),
});

export const edgesSchema = z
  .object({
    world: z.object({
      mode: z.string().nullable().describe('world.started labels.mode (sandbox, proxy, env)'),
      startedAtMs: atMs,
      stoppedAtMs: atMs,
    }),
    attribution: z.object({
      github: z.object({
        calls: count,
        attributed: count.describe('calls that carry a session'),
        overhead: count.describe("calls that carry none: the control plane's own"),
        attributedPct: z.number().nullable(),
        points: amount,
        attributedPoints: amount,
        overheadPoints: amount,
        writes: count,
        overheadWrites: count,
        handover: z
          .object({ calls: count, points: amount, writes: count })
          .optional()
          .describe(
            'calls made handing work over (work and setup commands, source harness): not in calls, points or writes above, neither a session’s nor the overhead (absent before 2026-12-07)',
          ),
        unserved: z
          .object({
            calls: count,
            byPath: z
              .record(z.string(), count)
              .describe(
                'by `METHOD path` (numbers as {n}, SHAs as {sha}) or `GraphQL Type.field`; at most 50, the rest as (other)',
              ),
          })
          .optional()
          .describe(
            'calls (in calls above) to paths the emulator serves no route for (answered 404) or GraphQL fields its schema lacks; absent when none',
          ),
      }),
      model: z.object({
        requests: count,
        sessions: tokens.describe('requests of agents attributed to a session (spawn → agent.session)'),
        controlPlane: tokens.describe('requests of agents no session was attributed to'),
        outside: tokens.describe(
          'requests without a spawn label: clients outside the launchers (an SDK in the control plane)',
        ),
        unidentified: tokens.describe('requests whose spawn label names no agent.spawn of the trace'),
        attributedPct: z.number().nullable().describe('sessions ÷ requests'),
        refused: z
          .record(z.string(), count)
          .optional()
          .describe(
            "model requests the provider emulator refused as bad (a 4xx other than 429), by status and error code (`404 not_found`: a model it does not serve), whoever made them; absent when none was (429s and 5xx are the provider's limits and faults: the provider section)",
          ),
      }),
      refusedClaims: z
        .object({
          calls: count.describe(
            "calls counted as the control plane's own although their credential named a spawn or a work command (the process behind the connection was neither, nor one of its descendants)",
          ),
          spawns: count.describe(
            'spawn-list lines naming a process that was neither a launcher nor an agent CLI',
          ),
        })
        .optional()
        .describe(
          'credentials the world did not take from the process that sent them (docs/world.md, "Whose call it is"); absent when none',
        ),
      firstParty: z
        .object({
          requests: count,
          agents: count.describe("made by the launchers' agents (a spawn label)"),
          outside: count.describe('without a spawn label'),
          byPath: z
            .record(z.string(), count)
            .describe(`path → requests, at most ${MAX_FIRST_PARTY_PATHS} paths (the rest as (other))`),
        })
        .optional()
        .describe(
          "requests to the vendor's own endpoints (provider.request with labels.api first-party: Claude Code's settings and policy at start), not model requests: never in `model` (absent before they were told apart)",
        ),
    }),
    sessions: z.object({
      count,
      created: count.describe('sessions with a work.created'),
      completed: count.describe('sessions that reached their done state'),
      reached: z
        .record(z.string(), count)
        .optional()
        .describe('sessions by the last state they reached (absent when none moved; before 2026-12-07)'),
      list: z.array(sessionRow).describe(`at most ${MAX_EDGE_ROWS}, by creation`),
      leftOut: count,
    }),
    spawns: z.object({
      count,
      ofSessions: count,
      ofControlPlane: count,
      list: z.array(spawnRow).describe(`at most ${MAX_EDGE_ROWS}, by start`),
      leftOut: count,
    }),
    firstActivity: z
      .object({ created: count, withActivity: count, interrupted: count, noActivity: count })
      .describe('sessions created and what became of their first model output (time_to_first_activity)'),
    costPerTask: z.object({
      completed: count,
      calls: costFigure,
      points: costFigure,
      tokens: costFigure,
    }),
    activeWindow: z
      .object({
        startMs: z.number().describe('the first work.created'),
        endMs: z.number().describe('the last attributed activity or session done'),
        seconds: count.describe(
          'whole seconds counted: from the second of startMs to that of endMs, both in',
        ),
        calls: count,
        points: amount,
        tokens: count,
        callsPerHour: z.number(),
        pointsPerHour: z.number(),
        tokensPerHour: z.number(),
      })
      .nullable()
      .describe('null: no work.created in the trace'),
    orphans: z.object({
      count,
      ranAfterMs: z.number().nullable().describe('the longest ranAfterMs'),
      tokensAfter: count,
      list: z.array(orphanRow).describe(`at most ${MAX_EDGE_ROWS}`),
    }),
    duplicated: z.object({
      tokens: count,
      writes: count,
      restarts: z.array(
        z.object({
          kind: z.string(),
          killAtMs: z.number(),
          readyAtMs: atMs,
          sessions: z.array(duplicateRow).describe('the sessions in progress at the kill'),
        }),
      ),
    }),
    blocked: z.object({
      attempts: count.describe("every refused attempt (world.stopped's count), else the records"),
      recorded: count.describe('world.blocked records (repeats within a short time are coalesced)'),
      byHost: z
        .array(
          z.object({
            via: z.string().describe('dns, tcp, connect, http'),
            host: z.string(),
            ports: z.array(z.number()),
            attempts: count,
            processes: z
              .array(z.string())
              .describe(`the processes that tried (argv, joined), at most ${MAX_BLOCKED_PROCESSES}`),
            firstAtMs: z.number(),
            lastAtMs: z.number(),
          }),
        )
        .describe(`most attempts first, at most ${MAX_BLOCKED_HOSTS}`),
    }),
    controlPlane: z.object({
      restarts: count,
      exited: z
        .array(z.object({ atMs: z.number(), code: z.number().nullable(), signal: z.string().nullable() }))
        .describe('controlplane.exited: it died outside a restart'),
    }),
    notes: z.array(z.string()),
  })
  .describe(
    'a control plane measured from its traffic across the world’s edges: see docs/analysis.md#edges-any-control-plane-from-its-traffic',
  );

export type EdgesAnalysis = z.infer<typeof edgesSchema>;
