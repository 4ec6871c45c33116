/**
 * Files fleetbench writes, never through a link. Two policies, one module:
 *
 * - **Outputs** (`openOutputFile`, `writeOutputFile`): every file a command writes where the user
 *   pointed it (`--trace`, `-o`, `--junit`, report.html, a run's or a matrix's files under
 *   `--out`). The path itself is written: a symbolic link there, or a file with other hard links,
 *   is refused by name (writing would change what it points to: `--trace LINK` truncated the
 *   link's target), and so are a FIFO or socket (opening one for writing blocks until a reader
 *   comes, before the command printed anything). Anything the system refuses (a directory, a
 *   full disk, /dev/full, a parent that is a file, no permission) is a `FleetbenchError` naming
 *   the path, exit 2: never "internal error" with a stack. A device (/dev/null) is written as is.
 * - **State files** (`writeFileReplacing`): files fleetbench owns and rewrites (the served
 *   control plane's state, TLS keys). A fresh `<path>.tmp` (whatever was at that name removed
 *   first, then created exclusively with O_NOFOLLOW, in the mode asked for), renamed over the
 *   path: a rename replaces a symbolic link planted at the path instead of writing through it (a
 *   private key written through `key.pem -> /somewhere` would land there with that file's mode),
 *   and a kill leaves the old file or the new one, never half of one.
 */
import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  readlinkSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import { FleetbenchError } from './errors.ts';

/**
 * `mkdir -p` made one directory at a time. Node 20's own recursive mkdir spins for ever, at full
 * CPU, on a path whose parent exists but answers ENOENT to mkdir (`--out /proc/x`, `state:
 * /proc/x`): here the first part that cannot be made throws its own error (ENOENT, EACCES, or
 * ENOTDIR for a file in the way), which outputError names.
 */
export function makeDirectories(path: string, mode?: number): string | undefined {
  const missing: string[] = [];
  for (let at = resolve(path); ; at = dirname(at)) {
    let stats: Stats | undefined;
    try {
      stats = statSync(at);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw error;
    }
    if (stats) {
      if (!stats.isDirectory())
        throw Object.assign(new Error(`not a directory: ${at}`), { code: 'ENOTDIR', path: at });
      break;
    }
    missing.push(at);
    if (dirname(at) === at) break;
  }
  // Like mkdirSync's recursive form: the first directory this made, if any.
  let first: string | undefined;
  for (const dir of missing.reverse()) {
    try {
      mkdirSync(dir, mode === undefined ? {} : { mode });
      first ??= dir;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  return first;
}

export function writeFileReplacing(path: string, data: string | Uint8Array, mode: number): void {
  const tmp = `${path}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  const fd = openSync(
    tmp,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    writeFileSync(fd, data);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/**
 * Why writing at `path` (its lstat: `stats`) would change something else, or undefined: a
 * symbolic link, or a regular file with other hard links. The one rule of outputs and of a
 * run's `--out` (output-dir.ts).
 */
export function linkProblem(path: string, stats: Stats): string | undefined {
  if (stats.isSymbolicLink()) return `is a symbolic link (to ${readlinkSync(path)})`;
  if (stats.isFile() && stats.nlink > 1) return `has ${stats.nlink - 1} other hard link(s)`;
  return undefined;
}

/** An output file open for writing (openOutputFile). */
export interface OutputFile {
  readonly path: string;
  readonly fd: number;
  close(): void;
}

/** What the system said, in words, for the errors an output path meets. */
const WRITE_ERRORS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EFBIG: 'file too large',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENOENT: 'no such directory',
  EEXIST: 'exists and is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  EIO: 'input/output error',
  ENAMETOOLONG: 'name too long',
  ENXIO: 'no reader on the other side',
  EPIPE: 'the reader went away',
  EAGAIN: 'it would block',
  ELOOP: 'too many symbolic links',
};

/**
 * A write error at an output path as the user reads it: `cannot write PATH: no space left on
 * the device (ENOSPC)`, exit 2. A FleetbenchError passes unchanged; an error with no errno code
 * is a bug and is rethrown as it is.
 */
export function outputError(path: string, error: unknown): FleetbenchError {
  if (error instanceof FleetbenchError) return error;
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (typeof code !== 'string') throw error;
  return new FleetbenchError(
    'E_OUTPUT',
    `cannot write ${path}: ${WRITE_ERRORS[code] ?? (error as Error).message} (${code})`,
    { cause: error, hint: code === 'ENOSPC' || code === 'EDQUOT' ? 'free some space' : undefined },
  );
}

function refused(path: string, why: string): FleetbenchError {
  const pipe = why.startsWith('is a FIFO') || why.startsWith('is a socket');
  return new FleetbenchError(
    'E_OUTPUT',
    `${path} ${why}: fleetbench writes an output to the path itself, never through a link${pipe ? ' or into a pipe (it would wait for a reader)' : ''}`,
    {
      hint: pipe
        ? 'give a regular file (to read it while it is written: tail -f FILE)'
        : 'remove the link, or give another path',
    },
  );
}

/**
 * Opens an output file for writing (truncated, or appended to with `append`), its parent
 * directories created. Refused by name, before anything is written or truncated: a symbolic
 * link (also a dangling one: the link would create its target), a file with other hard links,
 * a FIFO or a socket. Every other failure is `outputError`.
 */
export function openOutputFile(path: string, options: { append?: boolean } = {}): OutputFile {
  let stats: Stats | undefined;
  try {
    stats = lstatSync(path, { throwIfNoEntry: false });
    const problem =
      stats === undefined
        ? undefined
        : (linkProblem(path, stats) ??
          (stats.isFIFO() ? 'is a FIFO (named pipe)' : stats.isSocket() ? 'is a socket' : undefined));
    if (problem) throw refused(path, problem);
    if (stats === undefined) makeDirectories(dirname(path));
  } catch (error) {
    throw outputError(path, error);
  }
  let fd: number;
  try {
    // O_NOFOLLOW: a link planted between the check and the open is refused too (ELOOP), and
    // nothing is truncated before the open file is checked below.
    fd = openSync(
      path,
      constants.O_WRONLY |
        constants.O_CREAT |
        constants.O_NOFOLLOW |
        (options.append ? constants.O_APPEND : 0),
      0o666,
    );
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw code === 'ELOOP' ? refused(path, 'is a symbolic link') : outputError(path, error);
  }
  try {
    const opened = fstatSync(fd);
    const problem = linkProblem(path, opened) ?? (opened.isFIFO() ? 'is a FIFO (named pipe)' : undefined);
    if (problem) throw refused(path, problem);
    if (!options.append && opened.isFile()) ftruncateSync(fd, 0);
  } catch (error) {
    closeSync(fd);
    throw outputError(path, error);
  }
  return {
    path,
    fd,
    close() {
      try {
        closeSync(fd);
      } catch (error) {
        throw outputError(path, error);
      }
    },
  };
}

/** Writes all of `data` to an open output file; a failure names the path. */
export function writeOutput(out: OutputFile, data: string | Uint8Array, offset = 0, length?: number): void {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const end = length === undefined ? bytes.length : offset + length;
  try {
    for (let at = offset; at < end; ) at += writeSync(out.fd, bytes, at, end - at);
  } catch (error) {
    throw outputError(out.path, error);
  }
}

/** An output file written whole: `openOutputFile`, all of `data`, closed. */
export function writeOutputFile(path: string, data: string | Uint8Array): void {
  const out = openOutputFile(path);
  try {
    writeOutput(out, data);
  } catch (error) {
    closeSync(out.fd);
    throw error;
  }
  out.close();
}
