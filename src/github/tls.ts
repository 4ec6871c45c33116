/**
 * A self-signed certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1, DNS:localhost), made
 * with the `openssl` binary: `gh` insists on HTTPS for any host but github.com, and trusts the
 * certificate through SSL_CERT_FILE. No npm dependency for something openssl does in one call.
 *
 * openssl writes its output through whatever is at the path it is given, so it writes into a
 * fresh private directory of its own; the key and certificate are then put into the directory
 * asked for without following a link there (a `key.pem` symlink planted in `--tls-dir` once had
 * the private key written into its target, with the target's mode): key 0600, certificate 0644.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { makeDirectories, writeFileReplacing } from '../base/safe-write.ts';

export interface SelfSignedCert {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

export function generateSelfSignedCert(dir: string, days = 30): SelfSignedCert {
  makeDirectories(dir, 0o700);
  const made = mkdtempSync(join(tmpdir(), 'fleetbench-openssl-'));
  try {
    runOpenssl(join(made, 'key.pem'), join(made, 'cert.pem'), days);
    const key = readFileSync(join(made, 'key.pem'), 'utf8');
    const cert = readFileSync(join(made, 'cert.pem'), 'utf8');
    const keyPath = join(dir, 'key.pem');
    const certPath = join(dir, 'cert.pem');
    writeFileReplacing(keyPath, key, 0o600);
    writeFileReplacing(certPath, cert, 0o644);
    return { certPath, keyPath, cert, key };
  } finally {
    rmSync(made, { recursive: true, force: true });
  }
}

function runOpenssl(keyPath: string, certPath: string, days: number): void {
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        keyPath,
        '-out',
        certPath,
        '-days',
        String(days),
        '-subj',
        '/CN=fleetbench github emulator',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new FleetbenchError(
      'E_USAGE',
      missing
        ? '--tls needs the openssl binary to make a self-signed certificate, and it is not on PATH'
        : `openssl could not make a certificate: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`,
      { hint: missing ? 'install openssl (Debian: apt-get install openssl)' : undefined },
    );
  }
}
