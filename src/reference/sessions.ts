/**
 * Sessions and the control plane's durable state. A session works on one issue in one repo:
 * spawning → working → pr_open → review → merged | closed. Everything in a SessionRecord is
 * durable (survives a restart, like an orchestrator's metadata files); caches are not.
 */
import type { Clock } from '../clock/clock.ts';
import { type SessionState, sessionStates } from '../contract/types.ts';
import type { TraceSink } from '../trace/writer.ts';

export interface SessionRecord {
  id: string;
  /** owner/name */
  repo: string;
  issue: number;
  branch: string;
  state: SessionState;
  createdAt: number;
  pr?: { number: number; headSha: string };
  /** Last CI rollup seen: drives how much the naive strategy fetches. */
  ci?: 'pending' | 'success' | 'failure';
  reviewDecision?: string;
  /** Newest review comment already handed to the agent (guard 3 compares against it). */
  lastCommentId?: number;
}

function emptyCounts(): Record<SessionState, number> {
  return Object.fromEntries(sessionStates.map((s) => [s, 0])) as Record<SessionState, number>;
}

/** Where durable state lives: memory in virtual time, a directory for a real server. */
export interface DurableStore {
  load(): SessionRecord[];
  save(record: SessionRecord): void;
}

/**
 * Durable state in memory (virtual-time runs). It keeps the saved objects and hands out copies
 * on load: every mutation of a session is followed by a save, so what a restart reloads is what
 * was last saved, without paying for a copy on every save.
 */
export class MemoryStore implements DurableStore {
  private readonly records = new Map<string, SessionRecord>();
  load(): SessionRecord[] {
    return [...this.records.values()].map((r) => structuredClone(r));
  }
  save(record: SessionRecord): void {
    this.records.set(record.id, record);
  }
}

/** The live session table; every state change is saved and traced as a `session.state` event. */
export type StateChangeListener = (
  record: SessionRecord,
  from: SessionState | 'none',
  to: SessionState,
) => void;

export class SessionTable {
  private readonly byId = new Map<string, SessionRecord>();
  /** Kept up to date on every change: gauges read it every few seconds with thousands of sessions. */
  private readonly stateCounts = emptyCounts();
  private readonly listeners: StateChangeListener[] = [];

  constructor(
    private readonly store: DurableStore,
    private readonly clock: Clock,
    private readonly trace: TraceSink,
  ) {}

  onChange(listener: StateChangeListener): void {
    this.listeners.push(listener);
  }

  /** Rebuild from durable state (start and restart). */
  reload(): void {
    this.byId.clear();
    for (const state of sessionStates) this.stateCounts[state] = 0;
    for (const record of this.store.load()) {
      this.byId.set(record.id, record);
      this.stateCounts[record.state]++;
    }
  }

  add(record: SessionRecord): void {
    const previous = this.byId.get(record.id);
    if (previous) this.stateCounts[previous.state]--;
    this.byId.set(record.id, record);
    this.stateCounts[record.state]++;
    this.recordTransition(record, 'none', record.state);
  }

  get(id: string): SessionRecord | undefined {
    return this.byId.get(id);
  }

  get size(): number {
    return this.byId.size;
  }

  all(): SessionRecord[] {
    return [...this.byId.values()];
  }

  /** Sessions the lifecycle loop polls for. */
  active(): SessionRecord[] {
    return this.all().filter((s) => s.state === 'working' || s.state === 'pr_open' || s.state === 'review');
  }

  setState(record: SessionRecord, to: SessionState): void {
    if (record.state === to) return;
    const from = record.state;
    record.state = to;
    this.stateCounts[from]--;
    this.stateCounts[to]++;
    this.recordTransition(record, from, to);
  }

  /** A session entered `to`: saved, traced as `session.state`, and told to the listeners. */
  private recordTransition(record: SessionRecord, from: SessionState | 'none', to: SessionState): void {
    this.store.save(record);
    this.trace.write({
      kind: 'event',
      name: 'session.state',
      t: this.clock.now(),
      session: record.id,
      labels: { from, to },
    });
    for (const listener of this.listeners) listener(record, from, to);
  }

  /** Persist a field change that is not a state change. */
  save(record: SessionRecord): void {
    this.store.save(record);
  }

  counts(): Record<SessionState, number> {
    return { ...this.stateCounts };
  }
}
