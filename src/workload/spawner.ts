/**
 * Creates sessions for executors: gives each an id, a repo (round-robin over the topology) and
 * an open issue, tells the target and the world, and records intended vs actual start (a
 * `session.start` span from the intended time, its duration the lag), like k6 does for
 * iterations. The lag is measured when the start is issued (before the target answers), so it
 * is the generator's own delay, not the target's latency. Starts that cannot happen are counted
 * as `executor.dropped` events.
 */
import type { Clock } from '../clock/clock.ts';
import type { SessionSpec, Target } from '../contract/types.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { World } from './world.ts';

export interface RepoIssues {
  /** owner/name */
  repo: string;
  issues: number[];
}

/**
 * A live-run segment's spawner (docs/distributed.md): session ids and repos come from the
 * session's global index (its executor's offset + its place in the executor's schedule), so the
 * segments of one run never collide and a session has the id, repo and issue it would have had
 * in one process; `own` collects the ids this segment created.
 */
export interface GlobalSessions {
  own: Set<string>;
}

export class SessionSpawner {
  private created = 0;
  private dropped = 0;
  private failed = 0;
  private readonly nextIssue: number[];

  constructor(
    private readonly clock: Clock,
    private readonly trace: TraceSink,
    private readonly target: Target,
    private readonly world: World,
    private readonly repos: RepoIssues[],
    private readonly global?: GlobalSessions,
  ) {
    if (repos.length === 0) throw new Error('SessionSpawner needs at least one repo');
    this.nextIssue = repos.map(() => 0);
  }

  get count(): number {
    return this.created;
  }

  get droppedCount(): number {
    return this.dropped;
  }

  /** Starts the target refused or could not be reached for (`executor.failed` events). */
  get failedCount(): number {
    return this.failed;
  }

  /**
   * `onId` hears the session id before the target is asked (state changes may come first).
   * `globalIndex` (segments only): the session's 0-based place in the whole run.
   */
  async spawn(
    executor: string,
    intendedAt: number,
    onId?: (id: string) => void,
    globalIndex?: number,
  ): Promise<string> {
    const issuedAt = this.clock.now();
    const local = this.created++;
    const n = this.global ? globalIndex : local;
    if (n === undefined) throw new Error('SessionSpawner: a segment spawns by global index');
    const slot = n % this.repos.length;
    const { repo, issues } = this.repos[slot]!;
    // More sessions than issues: sessions share issues (the emulator does not mind). A segment
    // picks by global index what one process picks by counting (the same for one executor).
    // No open issue (a command target makes each session's work itself): issue 0.
    const issue =
      issues.length === 0
        ? 0
        : this.global
          ? issues[Math.floor(n / this.repos.length) % issues.length]!
          : issues[this.nextIssue[slot]! % issues.length]!;
    this.nextIssue[slot]!++;
    const id = `s-${String(n + 1).padStart(4, '0')}`;
    this.global?.own.add(id);
    const spec: SessionSpec = { id, repo, issue, branch: `fleet/${id}` };
    onId?.(id);
    let failure: string | undefined;
    try {
      await this.target.createSession(spec);
    } catch (error) {
      // A real target can refuse or be unreachable: count it, never crash the run over it.
      failure = (error as Error)?.message ?? String(error);
    }
    if (failure === undefined) await this.world.sessionCreated(spec);
    this.trace.write({
      kind: 'span',
      name: 'session.start',
      t: intendedAt,
      dur: Math.max(0, issuedAt - intendedAt),
      session: id,
      ...(failure === undefined ? {} : { outcome: 'error' as const }),
      labels: { executor },
    });
    if (failure !== undefined) {
      this.failed++;
      this.trace.write({
        kind: 'event',
        name: 'executor.failed',
        t: this.clock.now(),
        session: id,
        labels: { executor },
        data: { message: failure },
      });
    }
    return id;
  }

  drop(executor: string, reason: string): void {
    this.dropped++;
    this.trace.write({
      kind: 'event',
      name: 'executor.dropped',
      t: this.clock.now(),
      labels: { executor, reason },
    });
  }
}
