/**
 * The client's own time per call, for control planes whose calls are processes (agent-orchestrator
 * shells out to `gh`): each call is started one at a time (`launchMs` of the control plane's own
 * CPU: node forks its children from its one thread), then needs `cpuMs` of CPU; launches and
 * calls share `cores` fairly (processor sharing, as the OS schedules processes: ten started
 * together on 2 cores all finish together, five times later), then `waitMs` that is not CPU (TLS,
 * the network), then its request. The machine's other work (`load`: runnable tasks that are
 * always there, its load average) shares the same cores. This is what makes such a cycle grow
 * with its calls and spreads its requests: on 2 cores, 50 sessions of 4 gh calls take 19 s of a 30 s interval idle and
 * outlast it on a busy machine (docs/calibration.md). The `ao-0.2`
 * strategy and the `learned` one (docs/model.md#cycle-time) use it; `model learn` fits the same
 * model (src/learn/cycle-time.ts).
 */
import type { Clock, TimerId } from '../clock/clock.ts';
import { Limiter } from './limiter.ts';

export interface ClientTimeSettings {
  cores: number;
  cpuMs: number;
  waitMs: number;
  launchMs?: number;
  /** The machine's other work: runnable tasks beside the client's, sharing the cores (0: none). */
  load?: number;
}

/**
 * Processor sharing on the run's clock: every job in flight gets min(1, cores / (n + load)) of a
 * core, `load` being the machine's other runnable tasks. All jobs receive the same service, so
 * each ends when the service every job has had reaches its own mark (its CPU time on arrival plus
 * what they had then): one timer, for the earliest mark.
 */
class SharedCores {
  private served = 0;
  private servedAt = 0;
  /** Jobs by the service mark they end at; ties in arrival order. */
  private readonly jobs: Array<{ mark: number; seq: number; done: () => void }> = [];
  private seq = 0;
  private timer: TimerId | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly cores: number,
    private readonly load: number,
  ) {}

  private rate(): number {
    return this.jobs.length === 0 ? 0 : Math.min(1, this.cores / (this.jobs.length + this.load));
  }

  private advance(): void {
    const now = this.clock.now();
    this.served += (now - this.servedAt) * this.rate();
    this.servedAt = now;
  }

  run(cpuMs: number): Promise<void> {
    return new Promise((done) => {
      this.advance();
      const job = { mark: this.served + cpuMs, seq: this.seq++, done };
      // Kept sorted by mark (then arrival): the earliest is first.
      let i = this.jobs.length;
      while (
        i > 0 &&
        (this.jobs[i - 1]!.mark > job.mark ||
          (this.jobs[i - 1]!.mark === job.mark && this.jobs[i - 1]!.seq > job.seq))
      )
        i--;
      this.jobs.splice(i, 0, job);
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const first = this.jobs[0];
    if (!first) return;
    const delay = Math.max(0, (first.mark - this.served) / this.rate());
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.advance();
      // The first job (and any that reached its mark with it) is done.
      const finished: Array<() => void> = [];
      while (this.jobs.length > 0 && this.jobs[0]!.mark <= this.served + 1e-6)
        finished.push(this.jobs.shift()!.done);
      if (finished.length === 0 && this.jobs.length > 0) finished.push(this.jobs.shift()!.done);
      this.schedule();
      for (const done of finished) done();
    }, delay);
  }
}

export class ClientTime {
  private readonly cores: SharedCores;
  private readonly launches = new Limiter(1);

  constructor(
    private readonly clock: Clock,
    private readonly settings: ClientTimeSettings,
  ) {
    this.cores = new SharedCores(clock, Math.max(1, settings.cores), Math.max(0, settings.load ?? 0));
  }

  /**
   * Waits out one call's client time before its request goes out; `slowdown` stretches its CPU
   * time (a busier machine: a learned model draws one per cycle).
   */
  async beforeCall(slowdown = 1): Promise<void> {
    const { cpuMs, waitMs, launchMs = 0 } = this.settings;
    if (launchMs > 0) await this.launches.run(() => this.cores.run(launchMs));
    if (cpuMs > 0) await this.cores.run(cpuMs * slowdown);
    if (waitMs > 0) await this.clock.sleep(waitMs);
  }

  /** CPU work of the control plane's own (a spawn's), shared on the cores with the calls. */
  async work(cpuMs: number): Promise<void> {
    if (cpuMs > 0) await this.cores.run(cpuMs);
  }
}
