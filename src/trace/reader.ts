/**
 * Streaming trace reader: bounded memory whatever the file size, gzip accepted (detected by its
 * magic bytes). Every problem is reported as `file:line: reason`. In strict mode the first
 * problem throws; with `lenient` bad lines are skipped and counted, and a missing footer becomes
 * a warning instead of an error.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createGunzip } from 'node:zlib';
import { InputFileError } from '../errors.ts';
import { describeZodError } from '../validation.ts';
import {
  type BodyRecord,
  bodyRecordSchema,
  type EndFooter,
  endFooterSchema,
  type RecordCounts,
  type RunHeader,
  runHeaderSchema,
  TRACE_FORMAT,
} from './schema.ts';

export interface ReadOptions {
  /** Skip bad lines (counted in `stats.skipped`) and accept a missing footer. */
  lenient?: boolean;
}

export interface ReadStats {
  header?: RunHeader;
  footer?: EndFooter;
  lines: number;
  counts: RecordCounts;
  /** Lines skipped in lenient mode, with the first few reasons. */
  skipped: number;
  skippedReasons: string[];
  /** The file ended without an `end` footer (the run was killed, or the file was cut). */
  truncated: boolean;
  warnings: string[];
}

function emptyStats(): ReadStats {
  return {
    lines: 0,
    counts: { api: 0, span: 0, event: 0, gauge: 0 },
    skipped: 0,
    skippedReasons: [],
    truncated: false,
    warnings: [],
  };
}

async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await handle.read(buf, 0, 2, 0);
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** Raw lines with their 1-based numbers; splits on \n itself (faster than readline). */
export async function* readLines(path: string): AsyncGenerator<[string, number]> {
  if (!existsSync(path)) throw new InputFileError('E_FILE', path, undefined, 'no such file');
  if (statSync(path).isDirectory())
    throw new InputFileError('E_FILE', path, undefined, 'is a directory, not a trace file');
  const raw = createReadStream(path, { highWaterMark: 1024 * 1024 });
  const stream = (await isGzip(path)) ? raw.pipe(createGunzip()) : raw;
  let carry = '';
  let lineNo = 0;
  try {
    for await (const chunk of stream) {
      const text = carry + (chunk as Buffer).toString('utf8');
      let start = 0;
      let nl = text.indexOf('\n', start);
      while (nl !== -1) {
        lineNo++;
        yield [text.slice(start, nl), lineNo];
        start = nl + 1;
        nl = text.indexOf('\n', start);
      }
      carry = text.slice(start);
    }
  } catch (error) {
    throw new InputFileError('E_FILE', path, lineNo + 1, `cannot read: ${(error as Error).message}`);
  }
  if (carry.length > 0) {
    lineNo++;
    yield [carry, lineNo];
  }
}

export class TraceReader {
  readonly path: string;
  readonly stats: ReadStats = emptyStats();
  private readonly lenient: boolean;

  constructor(path: string, options: ReadOptions = {}) {
    this.path = path;
    this.lenient = options.lenient ?? false;
  }

  /** Body records (api, span, event, gauge) in file order. Header and footer land in `stats`. */
  async *records(): AsyncGenerator<BodyRecord> {
    const stats = this.stats;
    for await (const [line, lineNo] of readLines(this.path)) {
      stats.lines = lineNo;
      if (line.trim() === '') continue;
      if (stats.footer) {
        this.problem(lineNo, 'record after the end footer');
        continue;
      }
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        this.problem(lineNo, describeBadJson(line));
        continue;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        this.problem(lineNo, 'expected a JSON object');
        continue;
      }
      const kind = (value as { kind?: unknown }).kind;
      if (stats.header === undefined) {
        if (kind !== 'run') {
          this.fail(lineNo, `expected a 'run' header as the first record, found ${describeKind(kind)}`);
        }
        const parsed = runHeaderSchema.safeParse(value);
        if (!parsed.success) {
          const format = (value as { format?: unknown }).format;
          if (format !== TRACE_FORMAT)
            this.fail(
              lineNo,
              `unsupported trace format ${JSON.stringify(format)} (this fleetbench reads ${TRACE_FORMAT})`,
            );
          this.fail(lineNo, `run header: ${describeZodError(parsed.error)}`);
        }
        stats.header = parsed.data;
        continue;
      }
      if (kind === 'end') {
        const parsed = endFooterSchema.safeParse(value);
        if (!parsed.success) {
          this.problem(lineNo, `end footer: ${describeZodError(parsed.error)}`);
          continue;
        }
        stats.footer = parsed.data;
        continue;
      }
      if (kind === 'run') {
        this.problem(lineNo, 'a second run header');
        continue;
      }
      const parsed = bodyRecordSchema.safeParse(value);
      if (!parsed.success) {
        const prefix =
          typeof kind === 'string' && ['api', 'span', 'event', 'gauge'].includes(kind)
            ? `${kind} record: `
            : '';
        this.problem(
          lineNo,
          prefix + (prefix ? describeZodError(parsed.error) : `unknown record kind ${describeKind(kind)}`),
        );
        continue;
      }
      stats.counts[parsed.data.kind]++;
      yield parsed.data;
    }
    this.finish();
  }

  private finish(): void {
    const stats = this.stats;
    if (stats.header === undefined) this.fail(undefined, 'empty trace: no run header');
    if (stats.footer === undefined) {
      stats.truncated = true;
      const reason = `truncated: no end footer after line ${stats.lines} (the run was killed or the file was cut)`;
      if (!this.lenient) {
        throw new InputFileError('E_TRACE', this.path, undefined, reason, {
          hint: 'pass --lenient to analyse the records it has',
        });
      }
      stats.warnings.push(reason);
      return;
    }
    if (stats.skipped === 0) {
      for (const kind of ['api', 'span', 'event', 'gauge'] as const) {
        if (stats.footer.counts[kind] !== stats.counts[kind]) {
          this.problem(
            undefined,
            `footer counts ${stats.footer.counts[kind]} ${kind} records, the file has ${stats.counts[kind]}`,
          );
        }
      }
    }
  }

  private problem(line: number | undefined, reason: string): void {
    if (!this.lenient) this.fail(line, reason);
    this.stats.skipped++;
    if (this.stats.skippedReasons.length < 10) {
      this.stats.skippedReasons.push(line === undefined ? reason : `line ${line}: ${reason}`);
    }
  }

  private fail(line: number | undefined, reason: string): never {
    throw new InputFileError('E_TRACE', this.path, line, reason);
  }
}

function describeKind(kind: unknown): string {
  return kind === undefined ? 'a record without a kind' : JSON.stringify(kind);
}

function describeBadJson(line: string): string {
  // Binary garbage and half-written lines are the usual causes; say which it looks like.
  if (/[\u0000-\u0008\u000e-\u001f]/.test(line)) return 'not JSON (binary data?)';
  return `malformed JSON: ${line.length > 60 ? `${line.slice(0, 60)}…` : line}`;
}

/** Read a whole trace into memory (tests and small files). */
export async function readTrace(
  path: string,
  options: ReadOptions = {},
): Promise<{ records: BodyRecord[]; stats: ReadStats }> {
  const reader = new TraceReader(path, options);
  const records: BodyRecord[] = [];
  for await (const record of reader.records()) records.push(record);
  return { records, stats: reader.stats };
}
