/**
 * The world's certificate authority: a CA made for one world (one run), and one server
 * certificate it signs for every host the world serves (github.com, api.openai.com, …). A command
 * inside the world trusts the CA through the environment (NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, …)
 * and, in the sandbox, through the system bundle bound over the distribution's own
 * (docs/world.md, "Trust"). Made with the `openssl` binary, as the emulator's self-signed
 * certificate is (src/github/tls.ts): no npm dependency for what openssl does in two calls.
 *
 * The CA lives two days and exists only in the world's directory: a leaked key can vouch for
 * github.com only to a process that was told to trust this CA, and only until the run is over.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetbenchError } from '../base/errors.ts';
import { writeFileReplacing } from '../base/safe-write.ts';
import { javaTrustStore, pemCertificates } from './java-trust.ts';

export interface WorldCa {
  /** The CA certificate (PEM): what a client is told to trust. */
  caPem: string;
  caPath: string;
  /** The server certificate for every world host, and its key. */
  cert: string;
  key: string;
  /** The distribution's trusted roots with the world's CA appended (what the sandbox binds). */
  bundlePath: string;
  /** The same certificates as a Java trust store (JKS, password `changeit`): java-trust.ts. */
  javaTrustStorePath: string;
}

/** Where Debian, Fedora/RHEL, Alpine and SUSE keep the system's trusted roots, first found wins. */
export const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/cert.pem',
  '/etc/ssl/ca-bundle.pem',
];

export function systemBundlePaths(): string[] {
  return SYSTEM_BUNDLES.filter((path) => existsSync(path));
}

/**
 * Makes the CA and the server certificate for `hosts` (DNS names) in `dir`, which must be the
 * world's own private directory.
 */
export function makeWorldCa(dir: string, hosts: readonly string[], name: string): WorldCa {
  const work = mkdtempSync(join(tmpdir(), 'fleetbench-world-ca-'));
  try {
    const caKey = join(work, 'ca.key');
    const caCert = join(work, 'ca.pem');
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      caKey,
      '-out',
      caCert,
      '-days',
      '2',
      // The run's id in the name: a CA left behind is recognisable as this run's.
      '-subj',
      `/O=fleetbench/CN=fleetbench world CA ${name.slice(0, 40)}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    const leafKey = join(work, 'leaf.key');
    const csr = join(work, 'leaf.csr');
    openssl([
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      leafKey,
      '-out',
      csr,
      '-subj',
      '/O=fleetbench/CN=fleetbench world',
    ]);
    const ext = join(work, 'leaf.ext');
    const san = [...hosts.map((host) => `DNS:${host}`), 'DNS:localhost', 'IP:127.0.0.1'].join(',');
    writeFileSync(
      ext,
      [
        'basicConstraints=critical,CA:FALSE',
        'keyUsage=critical,digitalSignature,keyEncipherment',
        'extendedKeyUsage=serverAuth',
        `subjectAltName=${san}`,
        'subjectKeyIdentifier=hash',
        'authorityKeyIdentifier=keyid',
        '',
      ].join('\n'),
    );
    const leafCert = join(work, 'leaf.pem');
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      caCert,
      '-CAkey',
      caKey,
      '-CAcreateserial',
      '-out',
      leafCert,
      '-days',
      '2',
      '-sha256',
      '-extfile',
      ext,
    ]);
    const caPem = readFileSync(caCert, 'utf8');
    const cert = readFileSync(leafCert, 'utf8');
    const key = readFileSync(leafKey, 'utf8');
    const caPath = join(dir, 'ca.pem');
    writeFileReplacing(caPath, caPem, 0o644);
    writeFileReplacing(join(dir, 'server.pem'), cert, 0o644);
    writeFileReplacing(join(dir, 'server.key'), key, 0o600);
    const system = systemBundlePaths()[0];
    const roots = system ? readFileSync(system, 'utf8') : '';
    const bundlePath = join(dir, 'ca-bundle.crt');
    const bundle = `${roots}${roots.endsWith('\n') || roots === '' ? '' : '\n'}# fleetbench world CA\n${caPem}`;
    writeFileReplacing(bundlePath, bundle, 0o644);
    const javaTrustStorePath = join(dir, 'ca-bundle.jks');
    writeFileReplacing(javaTrustStorePath, javaTrustStore(pemCertificates(bundle), Date.now()), 0o644);
    return { caPem, caPath, cert, key, bundlePath, javaTrustStorePath };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new FleetbenchError(
      'E_USAGE',
      missing
        ? 'the world needs the openssl binary to make its certificate authority, and it is not on PATH'
        : `openssl could not make the world's certificates: ${String((error as { stderr?: Buffer }).stderr ?? error).trim()}`,
      { hint: missing ? 'install openssl (Debian: apt-get install openssl)' : undefined },
    );
  }
}
