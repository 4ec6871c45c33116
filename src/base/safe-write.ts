/**
 * A file written whole and never through a link: a fresh `<path>.tmp` (whatever was at that name
 * removed first, then created exclusively with O_NOFOLLOW, in the mode asked for), renamed over
 * the path. A rename replaces a symbolic link planted at the path instead of writing through it
 * (a private key written through `key.pem -> /somewhere` would land there with that file's mode),
 * and a kill leaves the old file or the new one, never half of one.
 */
import { closeSync, constants, openSync, renameSync, rmSync, writeFileSync } from 'node:fs';

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
