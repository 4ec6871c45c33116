/**
 * What a run's `target` names, parsed once: the scenario's text (`reference`, `ao:../ao`,
 * `http://127.0.0.1:7070`, `module:./shim.ts`) becomes a `TargetRef`, and what each kind implies
 * for the rest of fleetbench (its clock, how many runs share the machine, whether segments can
 * share it, what its directory is called) is one row of `TARGET_KINDS`. Nothing else looks at
 * the text: adding a target kind is a row here, an opener in src/targets/index.ts and its own
 * module (docs/architecture.md, "Adding a target kind").
 */
import { FleetbenchError } from '../base/errors.ts';
import { SCENARIO_LIMITS } from '../base/limits.ts';

export type TargetRef =
  | { kind: 'reference'; text: string }
  /** agent-orchestrator: its pinned packages, or a built checkout at `dir`. */
  | { kind: 'ao'; text: string; dir?: string }
  /** A control plane speaking the http target protocol (docs/http-target.md). */
  | { kind: 'http'; text: string; url: string }
  /** A user's module implementing the Target interface. */
  | { kind: 'module'; text: string; path: string }
  /**
   * The real Paperclip server (docs/paperclip.md): fleetbench's installed copy, or the install at
   * `dir`; `adapter` forces the Paperclip adapter its agents use (default: the local adapter of
   * each run's provider).
   */
  | { kind: 'paperclip'; text: string; adapter?: PaperclipAdapter; dir?: string }
  /**
   * Any control plane, run unchanged in the world and measured from its traffic
   * (docs/command-target.md): configured by the scenario's `target: {kind: command, …}`, or by
   * the file of `command:FILE`.
   */
  | { kind: 'command'; text: string; file?: string };

/** The Paperclip adapters the paperclip target drives (each runs a fleetbench stand-in). */
export const PAPERCLIP_ADAPTERS = ['codex_local', 'process'] as const;
export type PaperclipAdapter = (typeof PAPERCLIP_ADAPTERS)[number];

export type TargetKind = TargetRef['kind'];

export type DemoPart = 'cells' | 'chaos-wave' | 'turnover';
const ALL_DEMO: readonly DemoPart[] = ['cells', 'chaos-wave', 'turnover'];

export interface TargetKindInfo {
  /** How the kind is written, for messages and --help. */
  syntax: string;
  /** Parses `text` when it is of this kind (undefined otherwise); throws when it is malformed. */
  parse(text: string): TargetRef | undefined;
  /**
   * `implied`: the kind runs on the real clock only, and a scenario naming it gets the real clock
   * (agent-orchestrator's loop is setInterval and its calls are real processes). `required`: a
   * real system the user must ask the real clock for (a virtual run of it is refused, with the
   * hint). `any`: either clock.
   */
  realClock: 'implied' | 'required' | 'any';
  /**
   * The system under test runs as real processes on this machine, which is what is measured:
   * its runs go one at a time unless --jobs says otherwise.
   */
  localProcesses: boolean;
  /** The segments of a live run can share it (a server they all reach, docs/distributed.md). */
  shareable: boolean;
  /** A real control plane making its own calls: `run` shows its calls by operation and session. */
  ownCalls: boolean;
  /**
   * What `fleetbench demo` runs on it: the A2 priority cells (GitHub polling cost), the chaos
   * wave (native runs and restarts), the turnover run (park/wake actors). A kind that cannot
   * say before it is reached (http, module) is given all three; a run it cannot do fails with
   * the missing capability named.
   */
  demo: readonly DemoPart[];
  /** At most this many sessions (a real system's processes on one machine), and why. */
  maxSessions?: { limit: number; why: string };
  /**
   * `agents: real` (docs/agents.md): the kind starts agent processes itself, and can start the
   * real CLIs pointed at the run's provider emulator instead of its stand-ins.
   */
  realAgents: boolean;
  /** A short, path-safe name for directory names (`http-127.0.0.1-7070`, `module-shim`). */
  tag(ref: TargetRef): string;
}

const URL_TAG = (ref: TargetRef) =>
  ref.text
    .replace(/^(https?):\/\//, '$1-')
    .replace(/[:/]+/g, '-')
    .replace(/-+$/, '');

export const TARGET_KINDS: Record<TargetKind, TargetKindInfo> = {
  reference: {
    syntax: 'reference',
    parse: (text) => (text === 'reference' ? { kind: 'reference', text } : undefined),
    realClock: 'any',
    localProcesses: false,
    shareable: false,
    ownCalls: false,
    demo: ALL_DEMO,
    realAgents: false,
    tag: () => 'reference',
  },
  ao: {
    syntax: 'ao, ao:DIR',
    parse(text) {
      if (text === 'ao') return { kind: 'ao', text };
      if (!text.startsWith('ao:')) return undefined;
      if (text === 'ao:') throw new FleetbenchError('E_TARGET', "target 'ao:': expected ao or ao:DIR");
      return { kind: 'ao', text, dir: text.slice('ao:'.length) };
    },
    realClock: 'implied',
    localProcesses: true,
    shareable: false,
    ownCalls: true,
    // agent-orchestrator has no native runs or actors (docs/agent-orchestrator.md).
    demo: ['cells'],
    // AO's own claude-code agent plugin in its tmux runtime (docs/agent-orchestrator.md#real-agents-agents-real).
    realAgents: true,
    maxSessions: {
      limit: SCENARIO_LIMITS.maxAoSessions,
      why: 'with target ao: each is several gh processes a poll cycle; for more, run polling.strategy=ao-0.2 in virtual time (docs/agent-orchestrator.md)',
    },
    tag: URL_TAG,
  },
  http: {
    syntax: 'http://HOST:PORT',
    parse: (text) => (/^https?:\/\//.test(text) ? { kind: 'http', text, url: text } : undefined),
    realClock: 'required',
    localProcesses: false,
    shareable: true,
    ownCalls: false,
    demo: ALL_DEMO,
    realAgents: false,
    tag: URL_TAG,
  },
  module: {
    syntax: 'module:PATH',
    parse(text) {
      if (!text.startsWith('module:')) return undefined;
      if (text === 'module:') throw new FleetbenchError('E_TARGET', "target 'module:': expected module:PATH");
      return { kind: 'module', text, path: text.slice('module:'.length) };
    },
    realClock: 'any',
    localProcesses: false,
    shareable: false,
    ownCalls: false,
    demo: ALL_DEMO,
    realAgents: false,
    tag: (ref) =>
      `module-${ref.text
        .slice('module:'.length)
        .replace(/^.*\//, '')
        .replace(/\.[cm]?[jt]s$/, '')}`,
  },
  paperclip: {
    syntax: 'paperclip[/ADAPTER][:DIR]',
    parse(text) {
      const match = /^paperclip(?:\/([a-z_]+))?(?::(.*))?$/.exec(text);
      if (!match) return undefined;
      const [, adapter, dir] = match;
      if (adapter !== undefined && !(PAPERCLIP_ADAPTERS as readonly string[]).includes(adapter))
        throw new FleetbenchError(
          'E_TARGET',
          `target '${text}': Paperclip adapter '${adapter}' is not driven; expected ${PAPERCLIP_ADAPTERS.join(' or ')}`,
        );
      if (dir === '')
        throw new FleetbenchError('E_TARGET', `target '${text}': expected a directory after 'paperclip:'`);
      return {
        kind: 'paperclip',
        text,
        ...(adapter !== undefined ? { adapter: adapter as PaperclipAdapter } : {}),
        ...(dir !== undefined ? { dir } : {}),
      };
    },
    // Paperclip's leases, reaper and retry delays are wall-clock timers.
    realClock: 'implied',
    localProcesses: true,
    shareable: false,
    ownCalls: false,
    // Paperclip's runs, not GitHub polling nor park/wake actors (docs/paperclip.md).
    demo: ['chaos-wave'],
    realAgents: true,
    maxSessions: {
      limit: SCENARIO_LIMITS.maxPaperclipSessions,
      why: 'with target paperclip: each is a Paperclip agent whose runs are real processes on this machine (docs/paperclip.md)',
    },
    tag: (ref) => (ref.kind === 'paperclip' && ref.adapter ? `paperclip-${ref.adapter}` : 'paperclip'),
  },
  command: {
    syntax: 'command:FILE',
    parse(text) {
      if (text === 'command') return { kind: 'command', text };
      if (!text.startsWith('command:')) return undefined;
      if (text === 'command:')
        throw new FleetbenchError(
          'E_TARGET',
          "target 'command:': expected command:FILE (docs/command-target.md)",
        );
      return { kind: 'command', text, file: text.slice('command:'.length) };
    },
    // Its processes, its agents and the world's clock are real.
    realClock: 'implied',
    localProcesses: true,
    shareable: false,
    ownCalls: true,
    // What it does is what its configuration says: the A2 cells make sense for a control plane
    // that takes issues; anything else is a scenario of the user's (docs/command-target.md).
    demo: [],
    realAgents: true,
    maxSessions: {
      limit: SCENARIO_LIMITS.maxCommandSessions,
      why: 'with target command: each is a piece of work for a real control plane and its real agents on this machine (docs/command-target.md)',
    },
    tag: (ref) =>
      ref.kind === 'command' && ref.file
        ? `command-${ref.file.replace(/^.*\//, '').replace(/\.(ya?ml|json)$/, '')}`
        : 'command',
  },
};

const KIND_ORDER = Object.keys(TARGET_KINDS) as TargetKind[];

/** `reference, ao, ao:DIR, http://HOST:PORT or module:PATH`. */
export const TARGET_SYNTAX = (() => {
  const all = KIND_ORDER.map((k) => TARGET_KINDS[k].syntax);
  return `${all.slice(0, -1).join(', ')} or ${all.at(-1)}`;
})();

/** The one parse of a target's text (E_TARGET naming what is expected when it is none). */
export function parseTarget(text: string): TargetRef {
  for (const kind of KIND_ORDER) {
    const ref = TARGET_KINDS[kind].parse(text);
    if (ref) return ref;
  }
  throw new FleetbenchError('E_TARGET', `target '${text}': expected ${TARGET_SYNTAX}`);
}

export function targetInfo(ref: TargetRef): TargetKindInfo {
  return TARGET_KINDS[ref.kind];
}
