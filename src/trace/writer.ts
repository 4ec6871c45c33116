/**
 * Streaming trace writer. Records are serialised when accepted and buffered; the buffer goes to
 * disk when it grows past `bufferBytes`, on a timer, on close, and synchronously when the process
 * exits or is interrupted, so an accepted record is never lost. A process killed with SIGKILL
 * loses at most the last timer interval, and what it leaves is still line-readable: the reader
 * reports the missing footer.
 */
import { fsyncSync } from 'node:fs';
import type { FleetbenchError } from '../base/errors.ts';
import { type OutputFile, openOutputFile, outputError, writeOutput } from '../base/safe-write.ts';
import {
  type BodyRecord,
  type EndFooter,
  type RecordCounts,
  type RunHeader,
  type SpanInput,
  TRACE_FORMAT,
  timeProblem,
} from './schema.ts';

/** Where producers (emulator, control plane, engine) put records. */
export interface TraceSink {
  write(record: BodyRecord | (SpanInput & { kind: 'span' })): void;
}

export type RunHeaderInput = Omit<RunHeader, 'kind' | 'format'>;

/**
 * The header of a trace a server writes on its own (`github serve`, `provider serve`): the real
 * clock, no scenario (its name says which server), the server's seed and time scale.
 */
export function servedTraceHeader(options: {
  runId: string;
  toolVersion: string;
  name: string;
  target: string;
  seed: number;
  timeScale: number;
  epochMs: number;
}): RunHeaderInput {
  return {
    runId: options.runId,
    tool: { name: 'fleetbench', version: options.toolVersion },
    clock: 'real',
    timeScale: options.timeScale,
    seed: options.seed,
    scenario: { name: options.name, hash: null },
    target: options.target,
    epochMs: options.epochMs,
    startedAt: new Date(options.epochMs).toISOString(),
  };
}

export interface TraceWriterOptions {
  /** Flush when this many bytes are buffered. */
  bufferBytes?: number;
  /** Flush at least this often (real time). 0 disables the timer (virtual-time batch runs). */
  flushIntervalMs?: number;
  /**
   * Told when a flush on the timer cannot write (a full disk): a served emulator stops on it.
   * Without it the error is thrown at the next write or close, in the producer's own flow.
   */
  onWriteError?: (error: FleetbenchError) => void;
}

const openWriters = new Set<TraceWriter>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: that is why every write here is writeSync.
  process.on('exit', () => {
    for (const writer of openWriters) {
      try {
        writer.close('interrupted');
      } catch (error) {
        process.stderr.write(`fleetbench: ${(error as Error).message}\n`);
      }
    }
  });
}

export class TraceWriter implements TraceSink {
  readonly path: string;
  header: RunHeader;
  private out: OutputFile | undefined;
  /** A flush on the timer that failed: thrown at the next write or close. */
  private failure: FleetbenchError | undefined;
  /**
   * Lines are encoded straight into one reused buffer: joining thousands of small strings and
   * encoding the result at each flush cost more than serialising the records (about 1.4 µs a
   * record, more than JSON.stringify itself), on every api record of a served emulator.
   */
  private buffer: Buffer;
  private bufferedBytes = 0;
  private readonly bufferBytes: number;
  private timer: NodeJS.Timeout | undefined;
  private lastT = 0;
  private readonly recordCounts: RecordCounts = { api: 0, span: 0, event: 0, gauge: 0 };
  private readonly taps: Array<(record: BodyRecord | (SpanInput & { kind: 'span' })) => void> = [];

  constructor(path: string, header: RunHeaderInput, options: TraceWriterOptions = {}) {
    this.path = path;
    this.bufferBytes = options.bufferBytes ?? 256 * 1024;
    this.buffer = Buffer.allocUnsafe(Math.max(64 * 1024, this.bufferBytes + 16 * 1024));
    // Never through a link, never a FIFO; a path that cannot be written is named (safe-write.ts).
    this.out = openOutputFile(path);
    const full: RunHeader = { kind: 'run', format: TRACE_FORMAT, ...header };
    this.header = full;
    this.append(JSON.stringify(full));
    try {
      this.flush();
    } catch (error) {
      this.out.close();
      throw error;
    }
    const interval = options.flushIntervalMs ?? 250;
    if (interval > 0) {
      this.timer = setInterval(() => {
        try {
          this.flush();
        } catch (error) {
          clearInterval(this.timer);
          this.failure = outputError(path, error);
          options.onWriteError?.(this.failure);
        }
      }, interval);
      this.timer.unref();
    }
    openWriters.add(this);
    installExitHook();
  }

  get counts(): Readonly<RecordCounts> {
    return this.recordCounts;
  }

  get closed(): boolean {
    return this.out === undefined;
  }

  write(record: BodyRecord | (SpanInput & { kind: 'span' })): void {
    if (this.out === undefined) throw new Error(`trace ${this.path} is closed`);
    if (this.failure) throw this.failure;
    const problem = timeProblem(record);
    if (problem !== undefined) {
      this.refuse(record, problem);
      return;
    }
    this.recordCounts[record.kind]++;
    const end = record.kind === 'api' || record.kind === 'span' ? record.t + record.dur : record.t;
    if (end > this.lastT) this.lastT = end;
    this.append(JSON.stringify(record));
    if (this.bufferedBytes >= this.bufferBytes) this.flush();
    for (const tap of this.taps) tap(record);
  }

  /**
   * A record whose times no trace can hold (a module target's `t: 1e13`) is left out, so the
   * trace stays readable to the end: counted, and reported as `target.bad_record` events (the
   * first 20, then every 1,000th with the running total).
   */
  private refuse(record: { kind: string; name?: string }, problem: string): void {
    this.badRecords++;
    if (this.badRecords > 20 && this.badRecords % 1_000 !== 0) return;
    this.write({
      kind: 'event',
      name: 'target.bad_record',
      t: this.lastT,
      labels: { source: 'trace' },
      data: {
        // Left out since the previous report.
        count: this.badRecords <= 20 ? 1 : this.badRecords === 1_000 ? 980 : 1_000,
        total: this.badRecords,
        record: record.name ?? record.kind,
        reason: problem,
      },
    });
  }

  /** Records left out for their times (see refuse). */
  badRecords = 0;

  /** Also hands every accepted record to `sink` (a live analyzer judging the run, say). */
  observe(sink: TraceSink): () => void {
    return this.tap((record) => sink.write(record));
  }

  /** Sees every accepted record after it is buffered (live telemetry); returns an unsubscribe. */
  tap(listener: (record: BodyRecord | (SpanInput & { kind: 'span' })) => void): () => void {
    this.taps.push(listener);
    return () => {
      const i = this.taps.indexOf(listener);
      if (i >= 0) this.taps.splice(i, 1);
    };
  }

  flush(): void {
    if (this.out === undefined || this.bufferedBytes === 0) return;
    const length = this.bufferedBytes;
    this.bufferedBytes = 0;
    writeOutput(this.out, this.buffer, 0, length);
  }

  /**
   * The run's time starts over at `epochMs` (a target booted before the run: engine.ts): the
   * header is written again with it, which only a trace of nothing but its header can be.
   */
  restartAt(epochMs: number): void {
    const written = Object.values(this.recordCounts).reduce((n, c) => n + c, 0);
    if (this.out === undefined || written > 0)
      throw new Error(`trace ${this.path}: run time can only start over before any record`);
    this.header = { ...this.header, epochMs, startedAt: new Date(epochMs).toISOString() };
    this.bufferedBytes = 0;
    this.out.close();
    this.out = openOutputFile(this.path);
    this.append(JSON.stringify(this.header));
    this.flush();
  }

  /** Write the footer and close. Idempotent: a second close does nothing. */
  close(reason: EndFooter['reason'] = 'completed', t?: number): void {
    const out = this.out;
    if (out === undefined) return;
    if (this.timer) clearInterval(this.timer);
    openWriters.delete(this);
    try {
      if (this.failure) throw this.failure;
      const footer: EndFooter = { kind: 'end', t: t ?? this.lastT, reason, counts: { ...this.recordCounts } };
      this.append(JSON.stringify(footer));
      this.flush();
      syncIfFile(out);
    } finally {
      this.out = undefined;
      out.close();
    }
  }

  private append(line: string): void {
    // At most 3 UTF-8 bytes per UTF-16 unit: a line that might not fit goes after a flush, and
    // one longer than the whole buffer straight to the file.
    const room = line.length * 3 + 1;
    if (this.bufferedBytes + room > this.buffer.length) {
      this.flush();
      if (room > this.buffer.length && this.out !== undefined) {
        writeOutput(this.out, `${line}\n`);
        return;
      }
    }
    this.bufferedBytes += this.buffer.write(line, this.bufferedBytes, 'utf8');
    this.buffer[this.bufferedBytes++] = 10;
  }
}

/** The trace on disk before the process goes (a device, /dev/null say, has nothing to sync). */
function syncIfFile(out: OutputFile): void {
  try {
    fsyncSync(out.fd);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'ENOTSUP') throw outputError(out.path, error);
  }
}

/** Keeps records in memory: for in-process analysis and tests. */
export class MemorySink implements TraceSink {
  readonly records: BodyRecord[] = [];
  write(record: BodyRecord | (SpanInput & { kind: 'span' })): void {
    this.records.push(record.kind === 'span' ? { outcome: 'ok', ...record } : record);
  }
}
