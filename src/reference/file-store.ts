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
import type { RunStore, RunsSnapshot } from './runs.ts';
import type { DurableStore, SessionRecord } from './sessions.ts';

export class FileStore implements DurableStore, RunStore {
  readonly dir: string;
  private readonly journalPath: string;
  private fd: number | undefined;
  /** Lines skipped by the last load (a torn write at the end of a killed process's journal). */
  tornLines = 0;

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
    this.journalPath = join(dir, 'sessions.jsonl');
    this.runsPath = join(dir, 'runs.json');
  }

  private readonly runsPath: string;

  loadRuns(): RunsSnapshot | undefined {
    return readJson<RunsSnapshot>(this.runsPath);
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
    this.fd ??= openSync(this.journalPath, 'a');
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
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

export function readJson<T>(path: string): T | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}
