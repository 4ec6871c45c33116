/**
 * Durable state on disk, for the served control plane (`fleetbench reference serve --state
 * DIR`): what survives a real SIGKILL. Two files:
 *
 * - `sessions.jsonl`: a journal, one JSON SessionRecord per save, appended with a synchronous
 *   write. A write that returned is in the kernel's page cache, so a killed process loses
 *   nothing it saved (a machine crash may: there is no fsync per save, as in most orchestrators'
 *   metadata files). `load()` replays it (the last save of a session wins), skips a torn last
 *   line, and compacts the journal to one line per session (write + rename, atomic).
 * - `runs.json`: the native runs' durable state (runs.ts RunsSnapshot: active runs, queued
 *   inputs, turn progress, the providers' saved sessions), rewritten atomically on each change.
 * - `run.json`: the current run (id, epoch, time scale, GitHub, settings), written atomically,
 *   so a control plane started again after a kill knows which run it serves.
 */
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { RunStore, RunsSnapshot } from './runs/durable-state.ts';
import type { DurableStore, SessionRecord } from './sessions.ts';

export class FileStore implements DurableStore, RunStore {
  readonly dir: string;
  private readonly journalPath: string;
  private fd: number | undefined;
  /** Lines skipped by the last load (a torn write at the end of a killed process's journal). */
  tornLines = 0;

  private readonly onCorrupt: CorruptStateHandler;

  constructor(dir: string, options: { onCorrupt?: CorruptStateHandler } = {}) {
    this.dir = dir;
    this.onCorrupt = options.onCorrupt ?? (() => undefined);
    // Private: run.json holds the GitHub token the run gave the control plane.
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.journalPath = join(dir, 'sessions.jsonl');
    this.runsPath = join(dir, 'runs.json');
  }

  private readonly runsPath: string;

  loadRuns(): RunsSnapshot | undefined {
    return readJson<RunsSnapshot>(this.runsPath, (reason, movedTo) =>
      this.onCorrupt(
        this.runsPath,
        'the native runs (active runs, queued inputs, saved provider sessions)',
        reason,
        movedTo,
      ),
    );
  }

  saveRuns(snapshot: RunsSnapshot): void {
    writeAtomic(this.runsPath, JSON.stringify(snapshot));
  }

  load(): SessionRecord[] {
    this.closeJournal();
    const byId = new Map<string, SessionRecord>();
    this.tornLines = 0;
    if (existsSync(this.journalPath)) {
      const text = readFileSync(this.journalPath, 'utf8');
      for (const line of text.split('\n')) {
        if (line === '') continue;
        try {
          const record = JSON.parse(line) as SessionRecord;
          byId.set(record.id, record);
        } catch {
          this.tornLines++;
        }
      }
    }
    const records = [...byId.values()];
    writeAtomic(this.journalPath, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    return records;
  }

  save(record: SessionRecord): void {
    this.fd ??= openSync(this.journalPath, 'a', 0o600);
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
  }

  /** A new run: forget every session. */
  clear(): void {
    this.closeJournal();
    rmSync(this.journalPath, { force: true });
    rmSync(this.runsPath, { force: true });
  }

  close(): void {
    this.closeJournal();
  }

  private closeJournal(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

export function writeAtomic(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  writeFileSync(tmp, text, { mode: 0o600 });
  // A leftover .tmp keeps its old mode through writeFileSync: state files are private (0600).
  chmodSync(tmp, 0o600);
  renameSync(tmp, path);
}

/** Called for a state file that cannot be read: its path, what is lost, why, and where it went. */
export type CorruptStateHandler = (path: string, lost: string, reason: string, movedTo: string) => void;

/**
 * A JSON state file, or undefined when there is none. A file that does not parse (a disk
 * problem, a hand edit) is moved aside to `<path>.corrupt` and reported through `onCorrupt`,
 * and undefined is returned: the control plane starts without it instead of crash-looping.
 */
export function readJson<T>(
  path: string,
  onCorrupt?: (reason: string, movedTo: string) => void,
): T | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    if (!onCorrupt) throw error;
    const movedTo = `${path}.corrupt`;
    renameSync(path, movedTo);
    onCorrupt((error as Error).message, movedTo);
    return undefined;
  }
}
