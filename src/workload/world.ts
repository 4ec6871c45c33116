/**
 * The world around the control plane: what agents, CI and reviewers do on GitHub, scripted by
 * the scenario and applied through the emulator's admin API (free: it is the world changing,
 * not the control plane spending quota). The control plane under test only finds out by
 * polling, which is exactly what the cost scenarios measure.
 */

import { type Distribution, sample } from '../base/distribution.ts';
import type { Rng } from '../base/rng.ts';
import type { Clock } from '../clock/clock.ts';
import type { SessionSpec } from '../contract/types.ts';
import type { TraceSink } from '../trace/writer.ts';
import type { CountRange } from './scenario.ts';

/** The admin operations the world needs; in-process and over HTTP. */
export interface WorldAdmin {
  openPullRequest(
    repo: string,
    input: { head: string; title: string; issue: number },
  ): Promise<{ number: number; headSha: string }>;
  /** New head commit on the PR; returns its SHA. */
  pushCommit(repo: string, number: number): Promise<string>;
  /** Create or update the named check runs on a commit. */
  setChecks(
    repo: string,
    sha: string,
    names: readonly string[],
    state: 'pending' | 'success' | 'failure',
  ): Promise<void>;
  /** K review comments from a reviewer, as one review. Returns the comment ids. */
  postReviewComments(repo: string, number: number, count: number): Promise<number[]>;
  mergePullRequest(repo: string, number: number): Promise<void>;
}

export interface SessionScript {
  /**
   * False: the control plane's own agents open the pull requests (a real control plane's real
   * agents, docs/command-target.md); the world runs CI on them and merges them once told of them
   * (`adoptPullRequest`), as a repository's CI and reviewers would.
   */
  opensPrs?: boolean;
  prAfter: Distribution;
  ciAfter: Distribution;
  checks: number;
  mergeAfter?: Distribution;
}

interface WorldSession {
  spec: SessionSpec;
  pr?: { number: number; headSha: string };
}

/**
 * What the world did to one session's PR, as it happens. Each is also a `world.*` trace event,
 * which is how a learned model (docs/model.md) finds what a control plane was reacting to.
 */
export type WorldEvent =
  | { kind: 'pr-opened'; session: string; number: number; headSha: string }
  | { kind: 'ci-completed'; session: string }
  | { kind: 'review-posted'; session: string; commentIds: number[] }
  | { kind: 'pushed'; session: string; headSha: string }
  | { kind: 'merged'; session: string };
export type WorldListener = (event: WorldEvent) => void;

export class World {
  private readonly sessions = new Map<string, WorldSession>();
  private readonly checkNames: string[];
  private readonly rng: { pr: Rng; ci: Rng; merge: Rng; burst: Rng };
  private readonly listeners: WorldListener[] = [];

  constructor(
    private readonly admin: WorldAdmin,
    private readonly clock: Clock,
    rng: Rng,
    private readonly trace: TraceSink,
    private readonly script: SessionScript,
  ) {
    this.checkNames = Array.from(
      { length: script.checks },
      (_, i) => ['build', 'test', 'lint', 'typecheck', 'e2e'][i] ?? `check-${i + 1}`,
    );
    this.rng = {
      pr: rng.fork('pr-after'),
      ci: rng.fork('ci-after'),
      merge: rng.fork('merge-after'),
      burst: rng.fork('review-burst'),
    };
  }

  /** Called with every world event, after its trace event is written. */
  onEvent(listener: WorldListener): void {
    this.listeners.push(listener);
  }

  private emit(event: WorldEvent): void {
    for (const listener of this.listeners) listener(event);
  }

  /** Sessions whose PR is open, in creation order. */
  sessionsWithPr(): Array<{ id: string; repo: string; number: number }> {
    return [...this.sessions.values()]
      .filter((s) => s.pr)
      .map((s) => ({ id: s.spec.id, repo: s.spec.repo, number: s.pr!.number }));
  }

  /** A session was created: schedule its agent's PR (now, if prAfter is 0: the PR already exists). */
  async sessionCreated(spec: SessionSpec): Promise<void> {
    const session: WorldSession = { spec };
    this.sessions.set(spec.id, session);
    if (this.script.opensPrs === false) return;
    const prAfter = sample(this.script.prAfter, this.rng.pr);
    if (prAfter <= 0) await this.openPr(session);
    else this.clock.setTimeout(() => void this.openPr(session), prAfter);
  }

  /**
   * A pull request the control plane's agents opened for a session: from now on the world treats
   * it as its own (CI on its head, a merge after merge-after, review bursts), and a new head
   * (`headSha` changed) runs CI again.
   */
  async adoptPullRequest(sessionId: string, pr: { number: number; headSha: string }): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    const known = session.pr;
    if (known?.number === pr.number && known.headSha === pr.headSha) return;
    session.pr = { ...pr };
    if (!known) {
      this.trace.write({
        kind: 'event',
        name: 'world.pr.adopted',
        t: this.clock.now(),
        session: sessionId,
        labels: { repo: session.spec.repo },
        data: { number: pr.number },
      });
      this.emit({ kind: 'pr-opened', session: sessionId, ...pr });
    } else this.emit({ kind: 'pushed', session: sessionId, headSha: pr.headSha });
    await this.runCi(session);
  }

  /** The agent pushes a fix (reference target's review reaction): new head, CI runs again. */
  async pushFix(sessionId: string): Promise<string | undefined> {
    const session = this.sessions.get(sessionId);
    if (!session?.pr) return undefined;
    const sha = await this.admin.pushCommit(session.spec.repo, session.pr.number);
    session.pr.headSha = sha;
    this.trace.write({ kind: 'event', name: 'world.pushed', t: this.clock.now(), session: sessionId });
    this.emit({ kind: 'pushed', session: sessionId, headSha: sha });
    await this.runCi(session);
    return sha;
  }

  /** Review burst: K comments on each of M PRs at once (seeded choice of PRs and K). */
  async reviewBurst(prs: number, comments: CountRange): Promise<{ prs: number; comments: number }> {
    const open = [...this.sessions.values()].filter((s) => s.pr);
    // Seeded partial shuffle: the first `prs` entries are the chosen ones.
    for (let i = 0; i < Math.min(prs, open.length); i++) {
      const j = i + Math.floor(this.rng.burst.next() * (open.length - i));
      [open[i], open[j]] = [open[j]!, open[i]!];
    }
    let total = 0;
    const chosen = open.slice(0, prs);
    for (const session of chosen) {
      const count = this.rng.burst.int(comments.min, comments.max);
      const commentIds = await this.admin.postReviewComments(session.spec.repo, session.pr!.number, count);
      total += count;
      this.trace.write({
        kind: 'event',
        name: 'world.review.posted',
        t: this.clock.now(),
        session: session.spec.id,
        data: { comments: count },
      });
      this.emit({ kind: 'review-posted', session: session.spec.id, commentIds });
    }
    return { prs: chosen.length, comments: total };
  }

  private async openPr(session: WorldSession): Promise<void> {
    const { spec } = session;
    session.pr = await this.admin.openPullRequest(spec.repo, {
      head: spec.branch,
      title: `Fix #${spec.issue}`,
      issue: spec.issue,
    });
    this.trace.write({
      kind: 'event',
      name: 'world.pr.opened',
      t: this.clock.now(),
      session: spec.id,
      labels: { repo: spec.repo },
      data: { number: session.pr.number },
    });
    this.emit({ kind: 'pr-opened', session: spec.id, ...session.pr });
    await this.runCi(session);
  }

  /** Checks start on the head commit and complete after ciAfter (at once when it is 0). */
  private async runCi(session: WorldSession): Promise<void> {
    const { repo } = session.spec;
    const sha = session.pr!.headSha;
    const ciAfter = sample(this.script.ciAfter, this.rng.ci);
    if (ciAfter <= 0) {
      await this.admin.setChecks(repo, sha, this.checkNames, 'success');
      this.scheduleMerge(session);
      return;
    }
    await this.admin.setChecks(repo, sha, this.checkNames, 'pending');
    this.clock.setTimeout(() => {
      // A newer push supersedes this run: its own CI completes on its own schedule.
      if (session.pr?.headSha !== sha) return;
      void this.admin.setChecks(repo, sha, this.checkNames, 'success').then(() => {
        this.trace.write({
          kind: 'event',
          name: 'world.ci.completed',
          t: this.clock.now(),
          session: session.spec.id,
          data: { sha: sha.slice(0, 7) },
        });
        this.emit({ kind: 'ci-completed', session: session.spec.id });
        this.scheduleMerge(session);
      });
    }, ciAfter);
  }

  private scheduleMerge(session: WorldSession): void {
    if (!this.script.mergeAfter) return;
    const delay = sample(this.script.mergeAfter, this.rng.merge);
    const sha = session.pr!.headSha;
    this.clock.setTimeout(() => {
      if (session.pr?.headSha !== sha) return;
      const id = session.spec.id;
      void this.admin.mergePullRequest(session.spec.repo, session.pr.number).then(() => {
        this.trace.write({ kind: 'event', name: 'world.pr.merged', t: this.clock.now(), session: id });
        this.emit({ kind: 'merged', session: id });
      });
    }, delay);
  }
}
