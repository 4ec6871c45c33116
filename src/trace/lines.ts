/**
 * Line splitting for trace files, at the byte level: a chunk is cut after its last newline
 * (0x0A never occurs inside a multi-byte UTF-8 sequence), so a character split across two
 * reads is never mangled. Used by the streaming reader and by the parallel analysis workers.
 */

import { closeSync, createReadStream, existsSync, openSync, readSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { InputFileError } from '../base/errors.ts';
import { MAX_LINE_BYTES } from '../base/limits.ts';
import { decode } from './decode.ts';
import { LineProblemError } from './parser.ts';

const NEWLINE = 0x0a;
/**
 * Read size. 64 KB keeps each decoded chunk string in V8's young generation (strings above
 * ~128 KB go straight to the large-object space and linger until a full GC): measured faster
 * and about 30 MB smaller than 256 KB or 1 MB reads.
 */
export const CHUNK = 64 * 1024;
/**
 * Read size when lines are handed over as bytes (spans): no chunk string is made, so nothing
 * above holds; 16 times fewer reads (each a system call) and lines cut across reads: measured
 * 1.7 % less CPU for `analyze` on the 2M file than 64 KB reads.
 */
export const SPAN_CHUNK = 1024 * 1024;

/** A line over the limit (a LineProblemError, so trace readers word it as `file:line: reason`). */
export class LineTooLongError extends LineProblemError {}

export type LineHandler = (text: string, lineNo: number) => void;
/**
 * A line as bytes[start, end) of a chunk (no newline), not yet decoded: the scanner reads it in
 * place. The chunk is reused after the handler returns.
 */
export type SpanHandler = (bytes: Buffer, start: number, end: number, lineNo: number) => void;

/** Throws the user-facing error for a path that cannot be a trace (missing, a directory). */
export function checkReadable(path: string): void {
  if (!existsSync(path)) throw new InputFileError('E_FILE', path, undefined, 'no such file');
  const stat = statSync(path);
  if (stat.isDirectory())
    throw new InputFileError('E_FILE', path, undefined, 'is a directory, not a trace file');
  // A trace is read by position (its first bytes sniffed, byte ranges on worker threads): a
  // pipe or a device has no positions, and a device like /dev/zero no end.
  if (!stat.isFile())
    throw new InputFileError(
      'E_FILE',
      path,
      undefined,
      `is ${stat.isFIFO() ? 'a pipe (FIFO)' : stat.isSocket() ? 'a socket' : 'a device'}, not a file: a trace is read from a file (save the stream to one first)`,
    );
}

export async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await handle.read(buf, 0, 2, 0);
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * Splits byte chunks into lines; keeps the unfinished tail between chunks as a list of pieces,
 * joined once when its line ends (linear time however long the line), and refuses a line longer
 * than `maxLineBytes` (MAX_LINE_BYTES by default) as soon as it gets there, with the line's
 * number: a file with no newline is not read into memory whole.
 */
export class LineSplitter {
  private carry: Buffer[] = [];
  private carryBytes = 0;
  lineNo: number;
  private readonly onLine: LineHandler;
  private onSpan: SpanHandler | undefined;
  /** The buffer forEachLineInRange reads into, if the handler wants one (see spans()). */
  readBuffer: Buffer | undefined;
  private readonly maxLineBytes: number;

  constructor(onLine: LineHandler, firstLineNo = 1, maxLineBytes = MAX_LINE_BYTES) {
    this.onLine = onLine;
    this.lineNo = firstLineNo - 1;
    this.maxLineBytes = maxLineBytes;
  }

  /**
   * A splitter that hands each line over as bytes of the chunk, undecoded (see SpanHandler);
   * `readBuffer`: what forEachLineInRange reads into (the api scanner's memory, where it reads
   * lines in place).
   */
  static spans(
    onSpan: SpanHandler,
    options: { firstLineNo?: number; maxLineBytes?: number; readBuffer?: Buffer } = {},
  ): LineSplitter {
    const splitter = new LineSplitter(() => {}, options.firstLineNo, options.maxLineBytes);
    splitter.onSpan = onSpan;
    splitter.readBuffer = options.readBuffer;
    return splitter;
  }

  push(chunk: Buffer): void {
    let from = 0;
    if (this.carryBytes > 0) {
      // Finish the line left over from earlier chunks without copying the whole chunk.
      const first = chunk.indexOf(NEWLINE);
      if (first === -1) {
        this.keep(chunk, 0);
        return;
      }
      this.checkLength(this.carryBytes + first);
      const joined = Buffer.concat([...this.carry, chunk.subarray(0, first)]);
      this.carry = [];
      this.carryBytes = 0;
      if (this.onSpan) this.onSpan(joined, 0, joined.length, ++this.lineNo);
      else this.onLine(decode(joined, 0, joined.length), ++this.lineNo);
      from = first + 1;
    }
    if (this.onSpan) {
      this.pushSpans(chunk, from, this.onSpan);
      return;
    }
    const last = chunk.lastIndexOf(NEWLINE);
    if (last < from) {
      if (from < chunk.length) this.keep(chunk, from);
      return;
    }
    const text = decode(chunk, from, last);
    let start = 0;
    let nl = text.indexOf('\n');
    while (nl !== -1) {
      this.checkLength(nl - start);
      this.onLine(text.slice(start, nl), ++this.lineNo);
      start = nl + 1;
      nl = text.indexOf('\n', start);
    }
    this.checkLength(text.length - start);
    this.onLine(text.slice(start), ++this.lineNo);
    if (last + 1 < chunk.length) this.keep(chunk, last + 1);
  }

  /** How much to read at a time for this splitter (CHUNK, or SPAN_CHUNK for spans). */
  get readSize(): number {
    return this.onSpan ? SPAN_CHUNK : CHUNK;
  }

  /** push() for a span handler: lines cut on the bytes (memchr), none decoded here. */
  private pushSpans(chunk: Buffer, from: number, onSpan: SpanHandler): void {
    let start = from;
    let nl = chunk.indexOf(NEWLINE, start);
    while (nl !== -1) {
      this.checkLength(nl - start);
      onSpan(chunk, start, nl, ++this.lineNo);
      start = nl + 1;
      nl = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) this.keep(chunk, start);
  }

  /** The last line when the file does not end with a newline. */
  end(): void {
    if (this.carryBytes > 0) {
      const joined = Buffer.concat(this.carry);
      this.carry = [];
      this.carryBytes = 0;
      if (this.onSpan) this.onSpan(joined, 0, joined.length, ++this.lineNo);
      else this.onLine(decode(joined, 0, joined.length), ++this.lineNo);
    }
  }

  /** Keeps chunk[from..] for the line in progress (a copy: readers reuse their buffer). */
  private keep(chunk: Buffer, from: number): void {
    this.checkLength(this.carryBytes + chunk.length - from);
    this.carry.push(Buffer.from(chunk.subarray(from)));
    this.carryBytes += chunk.length - from;
  }

  private checkLength(bytes: number): void {
    if (bytes > this.maxLineBytes)
      throw new LineTooLongError({
        line: this.lineNo + 1,
        reason: `line longer than ${this.maxLineBytes} bytes, the longest line read (docs/limits.md): not a record`,
      });
  }
}

/**
 * The file's bytes as they are read, in order (compressed bytes for gzip): what hashes a file in
 * the same pass that reads it. The buffer may be reused once the handler returns.
 */
export type RawBytesHandler = (bytes: Buffer) => void;

/**
 * Every line of a file (plain or gzip), in order, to a synchronous handler (or a splitter of
 * the caller's, for spans).
 */
export async function forEachLine(
  path: string,
  onLine: LineHandler | LineSplitter,
  onBytes?: (bytesRead: number) => void,
  onRaw?: RawBytesHandler,
): Promise<number> {
  checkReadable(path);
  const splitter = onLine instanceof LineSplitter ? onLine : new LineSplitter(onLine);
  try {
    if (await isGzip(path)) {
      const raw = createReadStream(path, { highWaterMark: CHUNK });
      if (onBytes) raw.on('data', () => onBytes(raw.bytesRead));
      if (onRaw) raw.on('data', (chunk) => onRaw(chunk as Buffer));
      const stream = raw.pipe(createGunzip());
      try {
        for await (const chunk of stream) splitter.push(chunk as Buffer);
      } catch (error) {
        if (error instanceof InputFileError || error instanceof LineProblemError) throw error;
        throw new InputFileError(
          'E_FILE',
          path,
          splitter.lineNo + 1,
          `cannot read: ${(error as Error).message}`,
        );
      }
      splitter.end();
    } else forEachLineInRange(path, 0, statSync(path).size, splitter, onBytes, onRaw);
  } catch (error) {
    // A line over the limit, for callers that do not word parser problems themselves.
    if (error instanceof LineTooLongError)
      throw new InputFileError('E_FILE', path, error.problem.line, error.problem.reason);
    throw error;
  }
  return splitter.lineNo;
}

/**
 * Lines of the byte range [start, end) of a plain file, read synchronously (the fastest path,
 * and what a worker thread does). `end` should sit just after a newline or at the file's end.
 */
export function forEachLineInRange(
  path: string,
  start: number,
  end: number,
  splitter: LineSplitter,
  onBytes?: (bytesRead: number) => void,
  onRaw?: RawBytesHandler,
): void {
  const fd = openSync(path, 'r');
  try {
    const buffer = splitter.readBuffer ?? Buffer.allocUnsafe(splitter.readSize);
    const size = buffer.length;
    let position = start;
    while (position < end) {
      const want = Math.min(size, end - position);
      const read = readSync(fd, buffer, 0, want, position);
      if (read === 0) break;
      position += read;
      // The buffer is reused: push() copies whatever tail it keeps, onRaw uses it at once.
      const chunk = buffer.subarray(0, read);
      onRaw?.(chunk);
      splitter.push(chunk);
      onBytes?.(position - start);
    }
  } finally {
    closeSync(fd);
  }
  splitter.end();
}

/**
 * Byte offsets that cut [from, size) into `parts` ranges, each starting just after a newline;
 * the first range gets `headStart` more bytes than the others share. Returns the start offsets
 * followed by `size`.
 */
export function splitAtNewlines(
  path: string,
  from: number,
  size: number,
  parts: number,
  headStart = 0,
): number[] {
  const cuts = [from];
  const fd = openSync(path, 'r');
  try {
    const probe = Buffer.allocUnsafe(64 * 1024);
    for (let i = 1; i < parts; i++) {
      const head = Math.min(headStart, size - from);
      let position = Math.max(
        from + head + Math.floor(((size - from - head) * i) / parts),
        cuts[cuts.length - 1]!,
      );
      let cut = size;
      while (position < size) {
        const read = readSync(fd, probe, 0, probe.length, position);
        if (read === 0) break;
        const nl = probe.subarray(0, read).indexOf(NEWLINE);
        if (nl !== -1) {
          cut = position + nl + 1;
          break;
        }
        position += read;
      }
      if (cut > cuts[cuts.length - 1]! && cut < size) cuts.push(cut);
    }
  } finally {
    closeSync(fd);
  }
  cuts.push(size);
  return cuts;
}
