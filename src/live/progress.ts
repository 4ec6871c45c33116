/**
 * The progress line of a live run, on stderr (stdout keeps the report): elapsed / planned run
 * time, sessions by state, calls per second over the last interval, quota left per resource,
 * limited answers and budget breaches so far, the schedule (start lag p99, missed starts), native
 * runs (active, started, turns) and restarts (with one under way). On a terminal it redraws in place every second; otherwise (CI, a pipe) it prints a
 * plain line every 10 s, like k6's non-interactive output.
 */
import type { Clock } from '../clock/clock.ts';
import type { Target } from '../contract/types.ts';
import type { LiveStats } from './stats.ts';

export interface ProgressOptions {
  clock: Clock;
  durationMs: number;
  stats: LiveStats;
  target: Target;
  out: NodeJS.WriteStream | { write(text: string): boolean; isTTY?: boolean };
  /** Real ms between lines (default 1 s on a TTY, 10 s otherwise). */
  everyMs?: number;
}

const clockText = (ms: number) => {
  const s = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
};

/**
 * One formatter for the run: `toLocaleString('en-US')` may build ICU's number format again at a
 * call (V8 keeps one, and other formats in the process replace it); a real-agent wave's profile
 * put ~0.35 s in this function over 30 progress lines (docs/performance.md, "Harness share").
 */
const INTEGER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const int = (n: number) => INTEGER.format(Math.round(n));

export class ProgressLine {
  private timer: NodeJS.Timeout | undefined;
  private lastCalls = 0;
  private lastAt: number;
  private readonly tty: boolean;
  private drawn = false;

  constructor(private readonly options: ProgressOptions) {
    this.tty = options.out.isTTY === true;
    this.lastAt = options.clock.now();
  }

  start(): void {
    const every = this.options.everyMs ?? (this.tty ? 1_000 : 10_000);
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
  }

  async line(): Promise<string> {
    const { clock, stats, durationMs } = this.options;
    const now = clock.now();
    const sessions = await this.options.target.sessionCounts();
    const states = Object.entries(sessions)
      .filter(([, n]) => (n ?? 0) > 0)
      .map(([state, n]) => `${state} ${n}`)
      .join(' ');
    const seconds = (now - this.lastAt) / 1000;
    const rate = seconds > 0 ? (stats.calls - this.lastCalls) / seconds : 0;
    this.lastAt = now;
    this.lastCalls = stats.calls;
    const quota = [...stats.quota]
      .map(([resource, q]) => `${resource} ${int(q.remaining)}/${int(q.limit)}`)
      .join(' ');
    const lag = stats.lag.percentiles();
    const parts = [
      `${clockText(now)}/${clockText(durationMs)}`,
      `sessions ${states || '0'}`,
      `calls ${rate.toFixed(1)}/s (${int(stats.calls)})`,
      `quota ${quota || '–'}`,
      `limited ${stats.limited} breaches ${stats.breaches}`,
    ];
    if (stats.scheduled > 0 || stats.missed > 0)
      parts.push(`lag p99 ${lag ? `${lag.p99.toFixed(1)}ms` : '–'} missed ${stats.missed}`);
    if (stats.runsCreated > 0)
      parts.push(
        `runs ${stats.runsCreated - stats.runsEnded} active (${int(stats.runsCreated)} started, ${int(stats.turns)} turns)`,
      );
    if (stats.restarts > 0)
      parts.push(`restarts ${stats.restarts}${stats.restarting ? ' (restarting)' : ''}`);
    return parts.join(' · ');
  }

  private async tick(): Promise<void> {
    const text = await this.line();
    if (this.tty) {
      this.options.out.write(`\r\x1b[2K${text}`);
      this.drawn = true;
    } else this.options.out.write(`${text}\n`);
  }

  /** One last line, then stop. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.tick();
    if (this.tty && this.drawn) this.options.out.write('\n');
  }
}
