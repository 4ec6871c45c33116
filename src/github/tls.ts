/**
 * A self-signed certificate for 127.0.0.1 (subjectAltName IP:127.0.0.1, DNS:localhost), made
 * with the `openssl` binary: `gh` insists on HTTPS for any host but github.com, and trusts the
 * certificate through SSL_CERT_FILE. No npm dependency for something openssl does in one call.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';

export interface SelfSignedCert {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

export function generateSelfSignedCert(dir: string, days = 30): SelfSignedCert {
  mkdirSync(dir, { recursive: true });
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
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
  return { certPath, keyPath, cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
}
