/**
 * Durable state on disk, for the served control plane (`fleetbench reference serve --state
 * DIR`): what survives a real SIGKILL. Two files:
 *
 * - `sessions.jsonl`: a journal, one JSON SessionRecord per save, appended with a synchronous
 *   write. A write that returned is in the kernel's page cache, so a killed process loses
 *   nothing it saved (a machine crash may: there is no fsync per save, as in most orchestrators'
 *   metadata files). `load()` replays it (the last save of a session wins), skips a torn last
 *   line and any record that is not a session the protocol would accept (reported, never
 *   loaded: a record that breaks a request would break every process that reloads it), and
 *   compacts the journal to one line per session (write + rename, atomic). A poll cycle saves
 *   every session it looks at, so the journal is compacted again whenever it holds several
 *   times more lines than sessions.
 * - `runs.json`: the native runs' durable state (runs.ts RunsSnapshot: active runs, queued
 *   inputs, turn progress, the providers' saved sessions), rewritten atomically on each change.
 * - `run.json`: the current run (id, epoch, time scale, GitHub, settings), written atomically,
 *   so a control plane started again after a kill knows which run it serves.
 */
import {
  closeSync,
  constants,
  existsSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { MAX_LINE_BYTES } from '../base/limits.ts';
import { makeDirectories, writeFileReplacing } from '../base/safe-write.ts';
import { sessionSpecSchema } from '../contract/protocol.ts';
import { sessionStates } from '../contract/types.ts';
import type { RunStore, RunsSnapshot } from './runs/durable-state.ts';
import type { DurableStore, SessionRecord } from './sessions.ts';

/** The state files of a served control plane, by name in its state directory. */
export const STATE_FILES = ['run.json', 'runs.json', 'sessions.jsonl'] as const;

/**
 * The biggest journal a process reloads: the sessions of a run are bounded (docs/limits.md) and
 * the journal is compacted as it grows, so a bigger one was not written by this code.
 */
export const MAX_JOURNAL_BYTES = 1024 * 1024 * 1024;

/** A journal line: a session the protocol would accept, with the state the control plane keeps. */
const journalRecordSchema = sessionSpecSchema.extend({
  state: z.enum(sessionStates),
  createdAt: z.number(),
});

/** Compaction is due when the journal has this many times more lines than sessions (and at least 10,000). */
const COMPACT_FACTOR = 4;
const COMPACT_MIN_LINES = 10_000;

export class FileStore implements DurableStore, RunStore {
  readonly dir: string;
  private readonly journalPath: string;
  private fd: number | undefined;
  /** Lines skipped by the last load (a torn write at the end of a killed process's journal). */
  tornLines = 0;
  /** Records refused by the last load (not a session the protocol accepts): reported, not loaded. */
  rejectedLines = 0;
  /** The last save of every session (the live records), for compaction. */
  private readonly latest = new Map<string, SessionRecord>();
  private journalLines = 0;

  private readonly onCorrupt: CorruptStateHandler;

  constructor(dir: string, options: { onCorrupt?: CorruptStateHandler } = {}) {
    this.dir = dir;
    this.onCorrupt = options.onCorrupt ?? (() => undefined);
    // Private: run.json holds the GitHub token the run gave the control plane.
    makeDirectories(dir, 0o700);
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
    this.latest.clear();
    this.tornLines = 0;
    this.rejectedLines = 0;
    let firstRejected: string | undefined;
    for (const line of this.readJournal()) {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        this.tornLines++;
        continue;
      }
      const parsed = journalRecordSchema.safeParse(value);
      if (!parsed.success) {
        this.rejectedLines++;
        const issue = parsed.error.issues[0];
        firstRejected ??= `${issue?.path.join('.') || 'record'}: ${issue?.message}`;
        continue;
      }
      const record = value as SessionRecord;
      this.latest.set(record.id, record);
    }
    if (this.rejectedLines > 0)
      this.onCorrupt(
        this.journalPath,
        `${this.rejectedLines} session record(s)`,
        `records a request would be refused with (the first: ${firstRejected})`,
        `nowhere: the journal is compacted without them`,
      );
    this.compact();
    return [...this.latest.values()];
  }

  /**
   * Whether the journal's path holds a file the store can use: anything else there (a
   * directory, a FIFO, a link) is moved aside to `.corrupt` and reported, once, and the journal
   * starts afresh; left in place it failed every run (EISDIR) for ever.
   */
  private journalUsable(): boolean {
    let stat: Stats;
    try {
      stat = lstatSync(this.journalPath);
    } catch {
      return false;
    }
    if (stat.isFile()) return true;
    const movedTo = moveAside(this.journalPath, 'corrupt');
    this.onCorrupt(this.journalPath, 'every session of the run', 'not a regular file', movedTo);
    return false;
  }

  /** The journal's lines, read as bytes (a line over the limit counts as torn, never as a string too long). */
  private *readJournal(): Generator<string> {
    if (!this.journalUsable()) return;
    const size = statSync(this.journalPath).size;
    if (size > MAX_JOURNAL_BYTES) {
      const movedTo = `${this.journalPath}.corrupt`;
      renameSync(this.journalPath, movedTo);
      this.onCorrupt(
        this.journalPath,
        'every session of the run',
        `${size} bytes: over the ${MAX_JOURNAL_BYTES} a journal of a bounded run reaches (docs/limits.md)`,
        movedTo,
      );
      return;
    }
    const bytes = readFileSync(this.journalPath);
    let start = 0;
    while (start < bytes.length) {
      let end = bytes.indexOf(0x0a, start);
      if (end < 0) end = bytes.length;
      if (end - start > MAX_LINE_BYTES) this.tornLines++;
      else if (end > start) yield bytes.toString('utf8', start, end);
      start = end + 1;
    }
  }

  save(record: SessionRecord): void {
    this.latest.set(record.id, record);
    // Appended through no link: the journal is this directory's own file.
    this.fd ??= openSync(this.journalPath, APPEND_NOFOLLOW, 0o600);
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
    if (++this.journalLines > Math.max(COMPACT_MIN_LINES, COMPACT_FACTOR * this.latest.size)) this.compact();
  }

  /** The journal rewritten to one line per session (write + rename: a kill leaves the old or the new). */
  private compact(): void {
    this.closeJournal();
    let text = '';
    for (const record of this.latest.values()) text += `${JSON.stringify(record)}\n`;
    writeAtomic(this.journalPath, text);
    this.journalLines = this.latest.size;
  }

  /** A new run: forget every session. */
  clear(): void {
    this.closeJournal();
    this.latest.clear();
    this.journalLines = 0;
    if (this.journalUsable()) rmSync(this.journalPath, { force: true });
    if (existsSync(this.runsPath)) moveAsideUnlessFile(this.runsPath, this.onCorrupt);
  }

  close(): void {
    this.closeJournal();
  }

  private closeJournal(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

const APPEND_NOFOLLOW = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/** Writes a state file whole, 0600, never through a link (see base/safe-write.ts). */
export function writeAtomic(path: string, text: string): void {
  writeFileReplacing(path, text, 0o600);
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
  try {
    // A state file is small JSON; one that is not a file, or too big to be ours, is corrupt too.
    const stat = statSync(path);
    if (!stat.isFile()) throw new Error('not a regular file');
    if (stat.size > MAX_STATE_FILE_BYTES) throw new Error(`${stat.size} bytes, over ${MAX_STATE_FILE_BYTES}`);
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (error) {
    if (!onCorrupt) throw error;
    const movedTo = moveAside(path, 'corrupt');
    onCorrupt((error as Error).message, movedTo);
    return undefined;
  }
}

/** A state file that is not a regular file (a directory, a link) moved aside and reported; a file removed. */
function moveAsideUnlessFile(path: string, onCorrupt: CorruptStateHandler): void {
  if (lstatSync(path).isFile()) {
    rmSync(path, { force: true });
    return;
  }
  onCorrupt(path, 'nothing (a new run starts)', 'not a regular file', moveAside(path, 'corrupt'));
}

/** The biggest run.json or runs.json read back (each a few KB per active run). */
const MAX_STATE_FILE_BYTES = 256 * 1024 * 1024;

/**
 * Moves a state file (or whatever is at its path) to `<path>.<suffix>`, replacing the one moved
 * there before: one copy per file and reason, so repeated trouble never fills the disk.
 */
export function moveAside(path: string, suffix: string): string {
  const movedTo = `${path}.${suffix}`;
  rmSync(movedTo, { recursive: true, force: true });
  renameSync(path, movedTo);
  return movedTo;
}

/**
 * Every state file of a state directory moved aside (`<file>.quarantined`): a control plane that
 * keeps dying on what it reloads starts empty instead. Returns the paths it moved.
 */
export function quarantineState(dir: string): string[] {
  const moved: string[] = [];
  for (const name of STATE_FILES) {
    const path = join(dir, name);
    if (existsSync(path)) moved.push(moveAside(path, 'quarantined'));
  }
  return moved;
}
