/**
 * A user's input file read whole, with a bound on the bytes read, not on what `stat` says: a
 * device (`/dev/zero`), a FIFO (`<(zcat x.gz)`) or a file still growing has no size to trust.
 * Past the bound it is refused with the file, the limit and docs/limits.md, before the rest is
 * read; nothing over the bound is ever held.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { type ErrorCode, InputFileError } from './errors.ts';

const CHUNK_BYTES = 1024 * 1024;

export interface InputFileOptions {
  /** The most bytes read (docs/limits.md). */
  maxBytes: number;
  /** The error code of a refusal (E_SCENARIO, E_IMPORT, ...). */
  code: ErrorCode;
  /** What the file is, for the message: `a scenario`, `an OTLP export`. */
  what: string;
}

export function readInputFile(path: string, options: InputFileOptions): Buffer {
  if (!existsSync(path)) throw new InputFileError('E_FILE', path, undefined, 'no such file');
  if (statSync(path).isDirectory())
    throw new InputFileError('E_FILE', path, undefined, `is a directory, not ${options.what}`);
  const fd = openSync(path, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, options.maxBytes + 1 - total));
      const read = readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      chunks.push(read === chunk.length ? chunk : chunk.subarray(0, read));
      total += read;
      if (total > options.maxBytes)
        throw new InputFileError(
          options.code,
          path,
          undefined,
          `more than ${options.maxBytes} bytes: ${options.what} is read whole, at most ${options.maxBytes} bytes (docs/limits.md)`,
        );
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  } finally {
    closeSync(fd);
  }
}

/** The same, as UTF-8 text. */
export function readInputText(path: string, options: InputFileOptions): string {
  return readInputFile(path, options).toString('utf8');
}

/**
 * A trace is UTF-8 without a byte-order mark (docs/trace-format.md): a file that starts with one
 * went through a tool that re-encoded it (an editor, PowerShell 5's `Set-Content`), which may
 * have changed more than its first bytes, so it is refused with the way to undo it.
 */
export const BOM_REASON =
  'the file starts with a UTF-8 byte-order mark (bytes EF BB BF), which a trace never has: another tool re-encoded it';
export const BOM_HINT =
  "remove the mark (sed -i '1s/^\\xEF\\xBB\\xBF//' FILE) and read it again (docs/trace-format.md)";
