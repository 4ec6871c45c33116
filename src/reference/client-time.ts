/**
 * The client's own time per call, for control planes whose calls are processes (agent-orchestrator
 * shells out to `gh`): each call first spends `cpuMs` of CPU, queued first-come first-served on
 * `cores` shared by every call in flight, then `waitMs` that is not queued (process start, TLS),
 * then makes its request. This is what makes such a cycle grow with its calls: on 2 cores, 50
 * sessions of 4 gh calls outlast a 30 s interval (docs/calibration.md). The `ao-0.2` strategy and
 * the `learned` one (docs/model.md#cycle-time) both use it; model learn fits the same model
 * (src/learn/cycle-time.ts).
 */
import type { Clock } from '../clock/clock.ts';
import { Limiter } from './limiter.ts';

export interface ClientTimeSettings {
  cores: number;
  cpuMs: number;
  waitMs: number;
}

export class ClientTime {
  private readonly cores: Limiter;

  constructor(
    private readonly clock: Clock,
    private readonly settings: ClientTimeSettings,
  ) {
    this.cores = new Limiter(Math.max(1, settings.cores));
  }

  /** Waits out one call's client time before its request goes out. */
  async beforeCall(): Promise<void> {
    const { cpuMs, waitMs } = this.settings;
    if (cpuMs > 0) await this.cores.run(() => this.clock.sleep(cpuMs));
    if (waitMs > 0) await this.clock.sleep(waitMs);
  }
}
