/**
 * A Java trust store (JKS) of the world's bundle: the JVM reads none of the variables other
 * clients take a CA from (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS, …), only its own `cacerts` or the
 * store `-Djavax.net.ssl.trustStore` names, so a Java control plane in the world is given one
 * through JAVA_TOOL_OPTIONS (docs/world.md, "Trust").
 *
 * Written here rather than with `keytool`: the store must exist before any JVM starts, keytool is
 * there only where a JDK is, and the format a JVM of any version reads (JKS: Java's own, still
 * read by every JDK) is a list of certificates and one SHA-1 over them. PKCS#12, the newer
 * default, marks a trusted certificate with an Oracle attribute that Debian 12's OpenSSL 3.0
 * cannot write.
 *
 * The format (as `sun.security.provider.JavaKeyStore` reads it): magic 0xFEEDFEED, version 2, the
 * entry count; per entry the tag 2 (a trusted certificate), its alias and certificate type as
 * Java's `writeUTF` strings, its creation time (ms), the DER bytes with their length; then
 * SHA-1(password as UTF-16BE, "Mighty Aphrodite", everything before).
 */
import { createHash } from 'node:crypto';

/** The store's password: not a secret (it guards only the store's integrity, as `changeit` does for `cacerts`). */
export const JAVA_TRUST_STORE_PASSWORD = 'changeit';

const MAGIC = 0xfeedfeed;
const VERSION = 2;
const TRUSTED_CERT_TAG = 2;

/** Every certificate's DER bytes in a PEM text, in order (what is not a certificate is skipped). */
export function pemCertificates(pem: string): Buffer[] {
  const found: Buffer[] = [];
  const block = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g;
  for (let match = block.exec(pem); match !== null; match = block.exec(pem)) {
    const der = Buffer.from((match[1] as string).replace(/\s+/g, ''), 'base64');
    if (der.length > 0) found.push(der);
  }
  return found;
}

/** Java's `writeUTF` of an ASCII string: its length on two bytes, then the bytes. */
function javaUtf(text: string): Buffer {
  const bytes = Buffer.from(text, 'utf8');
  const out = Buffer.alloc(2 + bytes.length);
  out.writeUInt16BE(bytes.length, 0);
  bytes.copy(out, 2);
  return out;
}

/**
 * A JKS store trusting each certificate, aliased `fleetbench-0`, `fleetbench-1`, …, created at
 * `createdMs`, sealed with `password`.
 */
export function javaTrustStore(
  certificates: readonly Buffer[],
  createdMs: number,
  password = JAVA_TRUST_STORE_PASSWORD,
): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt32BE(MAGIC, 0);
  head.writeUInt32BE(VERSION, 4);
  head.writeUInt32BE(certificates.length, 8);
  const parts: Buffer[] = [head];
  certificates.forEach((der, i) => {
    const tag = Buffer.alloc(4);
    tag.writeUInt32BE(TRUSTED_CERT_TAG, 0);
    const created = Buffer.alloc(8);
    created.writeBigUInt64BE(BigInt(Math.max(0, Math.trunc(createdMs))), 0);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(der.length, 0);
    parts.push(tag, javaUtf(`fleetbench-${i}`), created, javaUtf('X.509'), length, der);
  });
  const body = Buffer.concat(parts);
  const digest = createHash('sha1')
    .update(Buffer.from(password, 'utf16le').swap16())
    .update('Mighty Aphrodite', 'utf8')
    .update(body)
    .digest();
  return Buffer.concat([body, digest]);
}

/**
 * One JAVA_TOOL_OPTIONS word: quoted when it holds whitespace or a quote. The JVM splits on
 * whitespace, takes a ' or " run whole up to the same quote and joins runs that touch, with no
 * escapes: so the word goes in single quotes, each ' in it as "'" between two runs (a path
 * with both kinds of quote, under an --out of the user's, was cut at the first).
 */
function javaOptionWord(word: string): string {
  if (!/[\s"']/.test(word)) return word;
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

/**
 * JAVA_TOOL_OPTIONS for a command in the world: the user's own first, then the world's trust
 * store, and with a proxy, the proxy (the JVM reads `https.proxyHost`, not HTTPS_PROXY; loopback
 * stays direct by Java's default `http.nonProxyHosts`). Later options win, so the world's do over
 * the user's JAVA_TOOL_OPTIONS; not over a store named on the command line or in _JAVA_OPTIONS,
 * which the JVM reads after this variable.
 */
export function javaToolOptions(user: string | undefined, trustStorePath: string, proxyUrl?: string): string {
  const words = [
    `-Djavax.net.ssl.trustStore=${trustStorePath}`,
    '-Djavax.net.ssl.trustStoreType=JKS',
    `-Djavax.net.ssl.trustStorePassword=${JAVA_TRUST_STORE_PASSWORD}`,
  ];
  if (proxyUrl !== undefined) {
    const proxy = new URL(proxyUrl);
    for (const scheme of ['https', 'http'])
      words.push(`-D${scheme}.proxyHost=${proxy.hostname}`, `-D${scheme}.proxyPort=${proxy.port}`);
  }
  const own = user?.trim();
  return [...(own ? [own] : []), ...words.map(javaOptionWord)].join(' ');
}
