/**
 * A control plane measured from its traffic across the world's edges, from analysis.edges
 * (docs/analysis.md#edges-any-control-plane-from-its-traffic): attribution, cost per task, the
 * active window, sessions and agents, orphaned agents, duplicated work and blocked attempts.
 * The speed samples are in the Speed section; here each one says where it starts and ends.
 */
import type { Analysis } from '../../analyze/schema.ts';
import {
  type Column,
  fmtInt,
  fmtMs,
  fmtNum,
  fmtPct,
  numericColumn,
  type Section,
  textColumn,
} from '../table.ts';
import { notesIf, type Pair, pairs, table } from './build.ts';

type Edges = NonNullable<Analysis['edges']>;
type Cost = Edges['costPerTask']['calls'];
type Tokens = Edges['attribution']['model']['sessions'];

const tokens = (t: Tokens) => t.tokensIn + t.tokensOut;
const at = (ms: number | null) => (ms === null ? '–' : fmtMs(ms));
/** Right-aligned figure columns (after text columns of their own). */
const numeric = (...headers: string[]): Column[] => headers.map(numericColumn);
const plural = (n: number, word: string) => `${fmtInt(n)} ${word}${n === 1 ? '' : 's'}`;

function costText(cost: Cost, unit: string): string {
  if (cost === null) return '–';
  return `${fmtNum(cost.allIn)} ${unit} (own mean ${fmtNum(cost.mean)} · p50 ${fmtNum(cost.p50)} · overhead ${fmtNum(cost.overheadPerTask)} per task)`;
}

/** The attribution lines: what the summary of a run shows too. */
export function attributionPairs(e: Edges): Pair[] {
  const g = e.attribution.github;
  const m = e.attribution.model;
  return [
    [
      'GitHub calls',
      `${fmtInt(g.calls)} · ${fmtInt(g.attributed)} attributed to sessions (${fmtPct(g.attributedPct)}) · ${fmtInt(g.overhead)} the control plane's own · points ${fmtNum(g.points)} (${fmtNum(g.overheadPoints)} overhead)`,
    ],
    [
      'model requests',
      `${fmtInt(m.requests)} · sessions ${fmtInt(m.sessions.requests)} (${fmtPct(m.attributedPct)}) · control plane's agents ${fmtInt(m.controlPlane.requests)} · outside the launchers ${fmtInt(m.outside.requests)}${m.unidentified.requests > 0 ? ` · unidentified ${fmtInt(m.unidentified.requests)}` : ''}${
        m.refused
          ? ` · refused ${Object.entries(m.refused)
              .map(([reason, n]) => `${fmtInt(n)} × ${reason}`)
              .join(', ')}`
          : ''
      }`,
    ],
    [
      'model tokens',
      `sessions ${fmtInt(tokens(m.sessions))} · control plane's agents ${fmtInt(tokens(m.controlPlane))} · outside the launchers ${fmtInt(tokens(m.outside))}`,
    ],
    ...firstPartyPairs(e),
  ];
}

/** Paths of requests to the vendor's own endpoints named on the line; the rest are counted. */
const SHOWN_PATHS = 5;

/** Requests to the vendor's own endpoints (not model requests), when there were any. */
function firstPartyPairs(e: Edges): Pair[] {
  const f = e.attribution.firstParty;
  if (!f || f.requests === 0) return [];
  const byPath = Object.entries(f.byPath);
  const named = byPath
    .slice(0, SHOWN_PATHS)
    .map(([path, n]) => `${path} ${fmtInt(n)}`)
    .join(', ');
  const paths = byPath.length > SHOWN_PATHS ? `${named} … ${byPath.length - SHOWN_PATHS} more paths` : named;
  return [
    [
      'vendor endpoints',
      `${fmtInt(f.requests)} (not model requests) · agents ${fmtInt(f.agents)} · outside the launchers ${fmtInt(f.outside)} · ${paths}`,
    ],
  ];
}

/** Cost per completed task and the active window's rates. */
export function costPairs(e: Edges): Pair[] {
  const c = e.costPerTask;
  const w = e.activeWindow;
  return [
    [
      'cost per task',
      c.completed === 0
        ? '– (no session reached its done state)'
        : `over ${plural(c.completed, 'completed session')}: ${costText(c.calls, 'calls')}; ${costText(c.points, 'points')}; ${costText(c.tokens, 'tokens')}`,
    ],
    [
      'active window',
      w === null
        ? '– (no work.created)'
        : `${fmtMs(w.startMs)} → ${fmtMs(w.endMs)} (${fmtInt(w.seconds)} s counted): ${fmtNum(w.callsPerHour, 0)} calls/h · ${fmtNum(w.pointsPerHour, 0)} points/h · ${fmtNum(w.tokensPerHour, 0)} tokens/h`,
    ],
  ];
}

/** Orphans, duplicated work, blocked attempts: one line each. */
export function troublePairs(e: Edges): Pair[] {
  const o = e.orphans;
  const d = e.duplicated;
  const b = e.blocked;
  const exited = e.controlPlane.exited;
  return [
    [
      'control plane',
      `${plural(e.controlPlane.restarts, 'restart')}${exited.length > 0 ? ` · DIED outside a restart ${exited.map((x) => `at ${fmtMs(x.atMs)} (${x.signal ?? `code ${x.code ?? '?'}`})`).join(', ')}` : ''}`,
    ],
    [
      'orphaned agents',
      o.count === 0
        ? '0'
        : `${fmtInt(o.count)} · ran up to ${fmtMs(o.ranAfterMs)} after their control plane was gone · ${fmtInt(o.tokensAfter)} tokens after it`,
    ],
    ['duplicated work', `${fmtInt(d.tokens)} model tokens · ${plural(d.writes, 'GitHub write')} made again`],
    [
      'blocked attempts',
      b.attempts === 0
        ? '0'
        : `${fmtInt(b.attempts)} (${b.byHost
            .slice(0, 3)
            .map((h) => `${h.via} ${h.host}`)
            .join(', ')}${b.byHost.length > 3 ? ', …' : ''})`,
    ],
  ];
}

/** Where each speed metric measured from the traffic starts and ends (the samples are in Speed). */
function speedRows(a: Analysis, e: Edges): string[][] {
  const fromTraffic = (a.speed?.recoveries ?? []).filter((r) => r.eventType === 'provider.request');
  const boots = e.spawns.list.filter((s) => s.bootMs !== null).length;
  return [
    [
      'time_to_first_activity',
      'work.created',
      "the first streamed model output of the session's agents",
      `${fmtInt(e.firstActivity.withActivity)} of ${fmtInt(e.firstActivity.created)} (${fmtInt(e.firstActivity.interrupted)} interrupted by a restart)`,
    ],
    ['agent_boot', 'agent.spawn (process start)', "the spawn's first model request", fmtInt(boots)],
    [
      'restart_recovery',
      'controlplane.ready',
      'the first model request of an agent spawned after the kill on a session in progress at it',
      fmtInt(fromTraffic.length),
    ],
    [
      'restart_recovery_control_plane',
      'controlplane.ready',
      "that agent's spawn",
      fmtInt(fromTraffic.length),
    ],
    ['restart_provider_load', "that agent's spawn", 'its first model request', fmtInt(fromTraffic.length)],
  ];
}

export function edgesSections(a: Analysis, top: number): Section[] {
  const e = a.edges;
  if (!e) return [];
  const sections: Section[] = [
    {
      title: `Edges: the control plane from its traffic${e.world.mode ? ` (world: ${e.world.mode})` : ''}`,
      blocks: [
        pairs([
          ...attributionPairs(e),
          [
            'agents',
            `${fmtInt(e.spawns.count)} spawned · ${fmtInt(e.spawns.ofSessions)} on sessions · ${fmtInt(e.spawns.ofControlPlane)} the control plane's own`,
          ],
          [
            'sessions',
            `${fmtInt(e.sessions.count)} · ${fmtInt(e.sessions.created)} created · ${fmtInt(e.sessions.completed)} completed`,
          ],
          ...costPairs(e),
          ...troublePairs(e),
        ]),
        ...notesIf(e.notes, 'info'),
      ],
    },
    {
      title: 'Speed from the traffic (samples in Speed)',
      blocks: [
        table(
          [textColumn('metric'), textColumn('starts'), textColumn('ends'), textColumn('samples')],
          speedRows(a, e),
        ),
      ],
    },
  ];
  if (e.sessions.list.length > 0) {
    const list = e.sessions.list;
    sections.push({
      title: 'Sessions from the traffic',
      blocks: [
        table(
          [
            textColumn('session'),
            ...numeric(
              'created',
              'first output',
              'done',
              'calls',
              'points',
              'writes',
              'model req',
              'tokens in',
              'tokens out',
              'agents',
            ),
          ],
          list
            .slice(0, top)
            .map((s) => [
              s.session,
              at(s.createdAtMs),
              at(s.firstOutputAtMs),
              s.doneAtMs === null ? (s.closedAtMs === null ? 'no' : 'closed') : fmtMs(s.doneAtMs),
              fmtInt(s.github.calls),
              fmtNum(s.github.points),
              fmtInt(s.github.writes),
              fmtInt(s.model.requests),
              fmtInt(s.model.tokensIn),
              fmtInt(s.model.tokensOut),
              fmtInt(s.spawns),
            ]),
          Math.max(0, list.length - top) + e.sessions.leftOut,
        ),
      ],
    });
  }
  if (e.spawns.list.length > 0) {
    const list = e.spawns.list;
    sections.push({
      title: 'Agents the control plane started',
      blocks: [
        table(
          [
            textColumn('spawn'),
            textColumn('agent'),
            textColumn('session'),
            ...numeric('started', 'boot', 'exited', 'requests', 'tokens'),
          ],
          list
            .slice(0, top)
            .map((s) => [
              s.spawn,
              s.agent,
              s.session === null ? '(control plane)' : `${s.session}${s.how ? ` (${s.how})` : ''}`,
              fmtMs(s.startedAtMs),
              at(s.bootMs),
              s.exitedAtMs === null ? 'running' : fmtMs(s.exitedAtMs),
              fmtInt(s.model.requests),
              fmtInt(tokens(s.model)),
            ]),
          Math.max(0, list.length - top) + e.spawns.leftOut,
        ),
      ],
    });
  }
  if (e.orphans.list.length > 0) {
    sections.push({
      title: 'Orphaned agents (alive after their control plane was gone)',
      blocks: [
        table(
          [
            textColumn('spawn'),
            textColumn('agent'),
            textColumn('session'),
            textColumn('death'),
            ...numeric('gone at', 'ran after', 'requests after', 'tokens after'),
          ],
          e.orphans.list
            .slice(0, top)
            .map((o) => [
              o.spawn,
              o.agent,
              o.session ?? '(control plane)',
              o.cause,
              fmtMs(o.goneAtMs),
              `${o.open ? '≥ ' : ''}${fmtMs(o.ranAfterMs)}`,
              fmtInt(o.requestsAfter),
              fmtInt(o.tokensAfter),
            ]),
          Math.max(0, e.orphans.list.length - top),
        ),
      ],
    });
  }
  const cut = e.duplicated.restarts.flatMap((r) => r.sessions.map((s) => ({ r, s })));
  if (cut.length > 0) {
    sections.push({
      title: 'Duplicated work (sessions in progress at a kill)',
      blocks: [
        table(
          [
            textColumn('restart'),
            textColumn('session'),
            textColumn('cut agents'),
            textColumn('new agent'),
            ...numeric('tokens before', 'after kill', 'spent again', 'writes again'),
          ],
          cut
            .slice(0, top)
            .map(({ r, s }) => [
              `${r.kind} at ${fmtMs(r.killAtMs)}`,
              s.session,
              s.cutSpawns.join(' ') || '–',
              s.newSpawn ?? '–',
              fmtInt(s.tokensBeforeKill),
              fmtInt(s.tokensAfterKill),
              fmtInt(s.tokens),
              s.writesAgain.length === 0
                ? '0'
                : `${fmtInt(s.writes)} (${s.writesAgain.map((w) => `${w.write} ×${w.count}`).join(', ')})`,
            ]),
          Math.max(0, cut.length - top),
        ),
      ],
    });
  }
  if (e.blocked.byHost.length > 0) {
    const b = e.blocked;
    sections.push({
      title: 'Blocked attempts (refused by the world)',
      blocks: [
        table(
          [
            textColumn('via'),
            textColumn('host'),
            textColumn('ports'),
            ...numeric('attempts'),
            textColumn('processes that tried'),
          ],
          b.byHost
            .slice(0, top)
            .map((h) => [
              h.via,
              h.host,
              h.ports.join(' ') || '–',
              fmtInt(h.attempts),
              h.processes.join(' | '),
            ]),
          Math.max(0, b.byHost.length - top),
        ),
        ...notesIf(
          b.attempts > b.recorded
            ? [
                `${fmtInt(b.attempts)} attempts in all, ${fmtInt(b.recorded)} recorded: repeats of one (process, host) within a moment are coalesced`,
              ]
            : [],
          'info',
        ),
      ],
    });
  }
  return sections;
}
