/**
 * The dashboard (docs/reference-control-plane.md#dashboard). While it is open it refreshes every 15 s. In `enrich` mode it fetches
 * each PR's details itself (six calls per PR, kept for the cache TTL, 5 min by default); in
 * `saved` mode it reads what the lifecycle loop already saved and makes no calls. Its calls carry
 * source `dashboard`, so reports can separate them from lifecycle polling.
 */
import type { Clock } from '../clock/clock.ts';
import type { TraceSink } from '../trace/writer.ts';
import { TtlCache } from './cache.ts';
import type { CallAttribution, GitHubClient } from './github-client.ts';
import { Limiter } from './limiter.ts';
import type { SessionRecord } from './sessions.ts';

export const dashboardModes = ['enrich', 'saved'] as const;
export type DashboardMode = (typeof dashboardModes)[number];

export interface DashboardConfig {
  mode: DashboardMode;
  refreshMs: number;
  cacheTtlMs: number;
  concurrency: number;
}

export class Dashboard {
  private open = false;
  private abort?: AbortController;
  private readonly cache: TtlCache<string, true>;
  private readonly limiter: Limiter;

  constructor(
    private readonly clock: Clock,
    private readonly client: GitHubClient,
    private readonly trace: TraceSink,
    private readonly config: DashboardConfig,
    private readonly sessions: () => SessionRecord[],
  ) {
    this.cache = new TtlCache(clock, config.cacheTtlMs);
    this.limiter = new Limiter(config.concurrency);
  }

  get isOpen(): boolean {
    return this.open;
  }

  setOpen(open: boolean): void {
    if (open === this.open) return;
    this.open = open;
    this.trace.write({
      kind: 'event',
      name: open ? 'dashboard.open' : 'dashboard.close',
      t: this.clock.now(),
      labels: { mode: this.config.mode },
    });
    if (open) {
      this.abort = new AbortController();
      void this.loop(this.abort.signal);
    } else {
      this.abort?.abort();
    }
  }

  /** A restart closes it and loses its cache (it lives in the process). */
  reset(): void {
    this.setOpen(false);
    this.cache.clear();
  }

  private async loop(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        const started = this.clock.now();
        const calls = await this.refresh(signal);
        this.trace.write({
          kind: 'span',
          name: 'dashboard.refresh',
          t: started,
          dur: this.clock.now() - started,
          labels: { mode: this.config.mode },
          data: { calls },
        });
        await this.clock.sleep(Math.max(0, started + this.config.refreshMs - this.clock.now()), signal);
      }
    } catch (error) {
      if (!signal.aborted) throw error;
    }
  }

  private async refresh(signal: AbortSignal): Promise<number> {
    if (this.config.mode === 'saved') return 0;
    let calls = 0;
    const stale = this.sessions().filter((s) => s.pr && this.cache.get(s.id) === undefined);
    await this.limiter.all(
      stale.map((s) => async () => {
        const base = `/repos/${s.repo}`;
        const { number, headSha } = s.pr!;
        const attr = (op: string): CallAttribution => ({
          source: 'dashboard',
          op,
          session: s.id,
          phase: s.state,
        });
        for (const [op, path] of [
          ['dashboard-pr', `${base}/pulls/${number}`],
          ['dashboard-checks', `${base}/commits/${headSha}/check-runs`],
          ['dashboard-status', `${base}/commits/${headSha}/status`],
          ['dashboard-reviews', `${base}/pulls/${number}/reviews`],
          ['dashboard-review-comments', `${base}/pulls/${number}/comments`],
          ['dashboard-issue-comments', `${base}/issues/${number}/comments`],
        ] as const) {
          if (signal.aborted) return;
          calls++;
          await this.client.get(path, attr(op));
        }
        this.cache.set(s.id, true);
      }),
    );
    return calls;
  }
}
