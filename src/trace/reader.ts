/**
 * Streaming trace reader: bounded memory whatever the file size, gzip accepted (detected by its
 * magic bytes). Every problem is reported as `file:line: reason`. In strict mode the first
 * problem throws; with `lenient` bad lines are skipped and counted, and a missing footer becomes
 * a warning instead of an error. The rules live in parser.ts; this file only feeds it lines.
 */
import { createReadStream, statSync } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { InputFileError } from '../base/errors.ts';
import {
  CHUNK,
  checkReadable,
  forEachLine,
  forEachLineInRange,
  isGzip,
  LineSplitter,
  type RawBytesHandler,
  SPAN_CHUNK,
} from './lines.ts';
import { type ReadStats, TraceParser } from './parser.ts';
import type { BodyRecord } from './schema.ts';
import { mainScanner, mainValidator, worded, wordParserProblems } from './validate.ts';

export type { ReadStats } from './parser.ts';

export interface ReadOptions {
  /** Skip bad lines (counted in `stats.skipped`) and accept a missing footer. */
  lenient?: boolean;
}

export interface ScanOptions extends ReadOptions {
  /**
   * `onRecord` uses each api record before it returns and keeps none: canonical api lines are
   * then read by the scanner (scanner.ts) into one reused object instead of JSON.parse.
   */
  transientApi?: boolean;
  /** Called as the file is read: bytes of the file read so far (compressed bytes for gzip), of its size. */
  onProgress?: (bytesRead: number, bytesTotal: number) => void;
  /** The file's bytes as read (RawBytesHandler): `model learn` hashes its traces so, without a second read. */
  onRaw?: RawBytesHandler;
  /**
   * No gauge record goes to `onRecord` (`model learn` uses none): each gauge line is still checked
   * and counted, and with `transientApi` one in the usual form is checked in place, never parsed
   * (src/trace/gauge-line.ts).
   */
  skipGauges?: boolean;
}

/** Raw lines with their 1-based numbers (plain or gzip). */
export async function* readLines(path: string): AsyncGenerator<[string, number]> {
  checkReadable(path);
  let batch: Array<[string, number]> = [];
  const splitter = new LineSplitter((text, lineNo) => batch.push([text, lineNo]));
  const raw = createReadStream(path, { highWaterMark: CHUNK });
  const stream = (await isGzip(path)) ? raw.pipe(createGunzip()) : raw;
  try {
    for await (const chunk of stream) {
      splitter.push(chunk as Buffer);
      const lines = batch;
      batch = [];
      yield* lines;
    }
  } catch (error) {
    throw new InputFileError('E_FILE', path, splitter.lineNo + 1, `cannot read: ${(error as Error).message}`);
  }
  splitter.end();
  yield* batch;
}

/**
 * Calls `onRecord` for every body record, synchronously per chunk: the fast path for whole-file
 * analysis (no per-record promise). Returns the read statistics (header, footer, skipped lines).
 */
export async function scanTrace(
  path: string,
  onRecord: (record: BodyRecord) => void,
  options: ScanOptions = {},
): Promise<ReadStats> {
  checkReadable(path);
  const gzip = await isGzip(path);
  const scanner = options.transientApi ? mainScanner()?.scanner : undefined;
  const skipGauges = options.skipGauges ?? false;
  const parser = new TraceParser(path, {
    lenient: options.lenient,
    validator: mainValidator(),
    scanner,
    skipGauges,
  });
  const splitter = scanner
    ? LineSplitter.spans(
        (bytes, start, end, lineNo) => {
          const record = parser.lineAt(bytes, start, end, lineNo);
          if (record !== undefined && !(skipGauges && record.kind === 'gauge')) onRecord(record);
        },
        { readBuffer: scanner.readBuffer(SPAN_CHUNK) },
      )
    : new LineSplitter((text, lineNo) => {
        const record = parser.line(text, lineNo);
        if (record !== undefined && !(skipGauges && record.kind === 'gauge')) onRecord(record);
      });
  const progress = options.onProgress;
  const size = statSync(path).size;
  const onBytes = progress ? (read: number) => progress(read, size) : undefined;
  try {
    if (gzip) await forEachLine(path, splitter, onBytes, options.onRaw);
    else forEachLineInRange(path, 0, size, splitter, onBytes, options.onRaw);
  } catch (error) {
    throw await worded(path, error);
  }
  await wordParserProblems(parser);
  parser.finish();
  return parser.stats;
}

export class TraceReader {
  readonly path: string;
  private readonly parser: TraceParser;

  constructor(path: string, options: ReadOptions = {}) {
    this.path = path;
    this.parser = new TraceParser(path, { lenient: options.lenient, validator: mainValidator() });
  }

  get stats(): ReadStats {
    return this.parser.stats;
  }

  /** Body records (api, span, event, gauge) in file order. Header and footer land in `stats`. */
  async *records(): AsyncGenerator<BodyRecord> {
    for await (const [text, lineNo] of readLines(this.path)) {
      let record: BodyRecord | undefined;
      try {
        record = this.parser.line(text, lineNo);
      } catch (error) {
        throw await worded(this.path, error);
      }
      if (record !== undefined) yield record;
    }
    await wordParserProblems(this.parser);
    this.parser.finish();
  }
}

/** Read a whole trace into memory (tests and small files). */
export async function readTrace(
  path: string,
  options: ReadOptions = {},
): Promise<{ records: BodyRecord[]; stats: ReadStats }> {
  const records: BodyRecord[] = [];
  const stats = await scanTrace(path, (record) => records.push(record), options);
  return { records, stats };
}
