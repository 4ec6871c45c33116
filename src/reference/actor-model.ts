/**
 * How long actor operations take in the reference control plane (docs/reference-control-plane.md#actors-parkwake): a documented
 * model, not a measurement. Parking snapshots a session and waking restores it, so both grow with
 * the session's memory and disk; a step's operations cost what moving their bytes or burning
 * their CPU costs. Every number here is in docs/reference-control-plane.md ("Actors").
 *
 * Sizes are bytes, rates bytes per millisecond (1 MB/s = 1,000 bytes/ms), times milliseconds.
 */

import type { Rng } from '../base/rng.ts';
import type { ActorFootprint, ActorOp, FailureRates } from '../contract/types.ts';

/** A log-normal time stated the usual way (median and p95, ms). */
export interface MedianP95 {
  median: number;
  p95: number;
}

const MBps = 1_000; // bytes per ms in one MB/s

export interface SnapshotModel {
  /** Fixed part of a park (stop, quiesce, write the manifest). */
  parkFixed: MedianP95;
  /** Memory written out on park. */
  parkMemoryRate: number;
  /** Disk bytes written since the last snapshot, uploaded on park (0: the disk stays put). */
  parkDirtyDiskRate: number;
  wakeFixed: MedianP95;
  /** Memory read back on wake. */
  wakeMemoryRate: number;
  /** The disk's block map, restored on wake (its blocks come lazily). 0: nothing to restore. */
  wakeDiskRate: number;
  /** The first request after a wake faults in this share of memory at `firstTouchRate`. */
  firstTouchShare: number;
  firstTouchRate: number;
}

export interface ActorModel {
  suspend: SnapshotModel;
  pause: SnapshotModel;
  /** Boot a fresh session (registration, and replacing a lost one): fixed part + image pull. */
  createFixed: MedianP95;
  createDiskRate: number;
  /** Noise on the size-dependent part of park, wake and create, and on a step: a log-normal factor. */
  transferNoiseP95: number;
  stepNoiseP95: number;
  /** Routing a request through the control plane to the session. */
  hopMs: number;
  ops: {
    ingestLatencyMs: number;
    ingestRate: number;
    diskWriteRate: number;
    diskReadRate: number;
    memoryFillRate: number;
    memoryTouchRate: number;
    pingMs: number;
  };
  failure: {
    /** A busy answer comes back after this long. */
    busyAnswerMs: number;
    /** Looking up a session that is not there. */
    notFoundMs: number;
    /** A crash happens somewhere in the attempt: uniform share of its duration in [min, 1]. */
    crashShareMin: number;
    /** Busy: retry after backoff × 2^(attempt−1), ±20 % seeded jitter, up to `attempts` attempts. */
    backoffMs: number;
    attempts: number;
  };
}

export const defaultActorModel: ActorModel = {
  // Durable snapshots to object storage: slow, survive the node.
  suspend: {
    parkFixed: { median: 300, p95: 800 },
    parkMemoryRate: 800 * MBps,
    parkDirtyDiskRate: 200 * MBps,
    wakeFixed: { median: 500, p95: 1_200 },
    wakeMemoryRate: 1_000 * MBps,
    wakeDiskRate: 20_000 * MBps,
    firstTouchShare: 0.25,
    firstTouchRate: 400 * MBps,
  },
  // Node-local pause: memory to local disk, the disk stays in place.
  pause: {
    parkFixed: { median: 40, p95: 120 },
    parkMemoryRate: 4_000 * MBps,
    parkDirtyDiskRate: 0,
    wakeFixed: { median: 60, p95: 150 },
    wakeMemoryRate: 6_000 * MBps,
    wakeDiskRate: 0,
    firstTouchShare: 0.25,
    firstTouchRate: 2_000 * MBps,
  },
  createFixed: { median: 1_200, p95: 3_000 },
  createDiskRate: 1_000 * MBps,
  transferNoiseP95: 1.25,
  stepNoiseP95: 1.2,
  hopMs: 2,
  ops: {
    ingestLatencyMs: 20,
    ingestRate: 100 * MBps,
    diskWriteRate: 200 * MBps,
    diskReadRate: 500 * MBps,
    memoryFillRate: 2_000 * MBps,
    memoryTouchRate: 8_000 * MBps,
    pingMs: 1,
  },
  failure: {
    busyAnswerMs: 20,
    notFoundMs: 50,
    crashShareMin: 0.2,
    backoffMs: 250,
    attempts: 4,
  },
};

export type FailureKind = 'busy' | 'crashed' | 'not_found';

const div = (bytes: number, rate: number) => (rate > 0 ? bytes / rate : 0);

export function lognormal(rng: Rng, spec: MedianP95): number {
  return spec.p95 > spec.median ? rng.lognormal(spec.median, spec.p95) : spec.median;
}

/**
 * The actor timing model with its random streams. Failures draw from their own stream, one draw
 * per attempt, so changing a failure rate changes which attempts fail and nothing else.
 */
export class ActorTimer {
  private readonly rng: Rng;
  private readonly failures: Rng;

  constructor(
    readonly model: ActorModel,
    rng: Rng,
  ) {
    this.rng = rng.fork('timing');
    this.failures = rng.fork('failures');
  }

  private noise(p95: number): number {
    return p95 > 1 ? this.rng.lognormal(1, p95) : 1;
  }

  parkMs(mode: SnapshotModel, memory: number, dirtyDisk: number): number {
    const transfer = div(memory, mode.parkMemoryRate) + div(dirtyDisk, mode.parkDirtyDiskRate);
    return lognormal(this.rng, mode.parkFixed) + transfer * this.noise(this.model.transferNoiseP95);
  }

  wakeMs(mode: SnapshotModel, memory: number, disk: number): number {
    const transfer = div(memory, mode.wakeMemoryRate) + div(disk, mode.wakeDiskRate);
    return lognormal(this.rng, mode.wakeFixed) + transfer * this.noise(this.model.transferNoiseP95);
  }

  createMs(base: ActorFootprint): number {
    return (
      lognormal(this.rng, this.model.createFixed) +
      div(base.diskBytes, this.model.createDiskRate) * this.noise(this.model.transferNoiseP95)
    );
  }

  firstTouchPenaltyMs(mode: SnapshotModel, memory: number): number {
    return div(memory * mode.firstTouchShare, mode.firstTouchRate);
  }

  /** Busy: backoff before attempt `attempt + 1`. */
  backoffMs(attempt: number): number {
    return this.rng.jitter(this.model.failure.backoffMs * 2 ** (attempt - 1), 0.2);
  }

  crashAfterMs(fullMs: number): number {
    return fullMs * this.rng.uniform(this.model.failure.crashShareMin, 1);
  }

  failure(rates: FailureRates, allowNotFound: boolean): FailureKind | undefined {
    const r = this.failures.next();
    if (r < rates.busy) return 'busy';
    if (r < rates.busy + rates.crashed) return 'crashed';
    if (allowNotFound && r < rates.busy + rates.crashed + rates.notFound) return 'not_found';
    return undefined;
  }

  stepNoise(): number {
    return this.noise(this.model.stepNoiseP95);
  }
}

/** Time one operation takes, without the hop (ms). */
export function opMs(model: ActorModel, op: ActorOp): number {
  const o = model.ops;
  switch (op.op) {
    case 'ingest':
      return o.ingestLatencyMs + div(op.bytes, o.ingestRate);
    case 'cpu':
      return op.ms;
    case 'disk-write':
      return div(op.bytes, o.diskWriteRate);
    case 'disk-read':
      return div(op.bytes, o.diskReadRate);
    case 'memory-fill':
      return div(op.bytes, o.memoryFillRate);
    case 'memory-touch':
      return div(op.bytes, o.memoryTouchRate);
    case 'ping':
      return op.count * o.pingMs;
  }
}
