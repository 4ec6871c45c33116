/**
 * A Java control plane in the world (docs/world.md, "Trust"): the JVM reads none of the
 * variables other clients take a CA from, only the trust store JAVA_TOOL_OPTIONS names. The
 * world's store is read by the JDK's own keytool, and a Java program using the JDK's HTTP clients
 * with no configuration reaches the emulators under the real host names, in the sandbox and
 * through the proxy (which the JVM reads from system properties, not HTTPS_PROXY).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makeWorldCa } from '../src/world/ca.ts';
import { javaToolOptions } from '../src/world/java-trust.ts';
import { type CliProcessRun, runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { proxyWorldTool, systemTool } from './helpers/tools.ts';

// The JDK: keytool, and `java File.java` (the source launcher needs the compiler).
const jdk = systemTool('javac', ['-version'], 'default-jdk-headless');
const openssl = systemTool('openssl', ['version'], 'openssl');
const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const unshare = proxyWorldTool();

/** A control plane's calls as a Java developer writes them: the JDK's clients, no base URL, no TLS setup. */
const PLANE = `
import java.net.*;
import java.net.http.*;
public class Plane {
  public static void main(String[] args) throws Exception {
    var client = HttpClient.newHttpClient();
    var issues = client.send(HttpRequest.newBuilder(URI.create("https://api.github.com/repos/fleetbench/repo-1/issues"))
        .header("Authorization", "Bearer " + System.getenv("GITHUB_TOKEN")).build(), HttpResponse.BodyHandlers.ofString());
    System.out.println("issues " + issues.statusCode());
    var message = client.send(HttpRequest.newBuilder(URI.create("https://api.anthropic.com/v1/messages"))
        .header("x-api-key", System.getenv("ANTHROPIC_API_KEY")).header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString("{\\"model\\":\\"claude-sonnet-4-5\\",\\"max_tokens\\":50,\\"messages\\":[{\\"role\\":\\"user\\",\\"content\\":\\"hi\\"}]}"))
        .build(), HttpResponse.BodyHandlers.ofString());
    System.out.println("message " + message.statusCode());
    var legacy = (HttpURLConnection) new URL("https://api.github.com/user").openConnection();
    legacy.setRequestProperty("Authorization", "Bearer " + System.getenv("GITHUB_TOKEN"));
    System.out.println("user " + legacy.getResponseCode());
  }
}
`;

function world(args: string[], dir: string): Promise<CliProcessRun> {
  const source = join(dir, 'Plane.java');
  writeFileSync(source, PLANE);
  // An --out with a space: the store's path is quoted in JAVA_TOOL_OPTIONS.
  const out = join(dir, 'the run');
  return runCliProcess(['world', '--out', out, ...args, '--', 'java', source], {
    timeoutMs: 120_000,
    traceDir: out,
  });
}

function expectReached(run: CliProcessRun): void {
  expect(run.code, run.stdout + run.stderr).toBe(0);
  expect(run.stdout).toContain('issues 200');
  expect(run.stdout).toContain('message 200');
  expect(run.stdout).toContain('user 200');
  const routes = run.records.filter((r) => r.kind === 'api').map((r) => r.route);
  expect(routes).toEqual(expect.arrayContaining(['/repos/{owner}/{repo}/issues', '/user']));
  expect(run.records.some((r) => r.kind === 'span' && r.name === 'provider.request')).toBe(true);
  expect(run.records.some((r) => r.kind === 'event' && r.name === 'world.blocked')).toBe(false);
}

/**
 * JAVA_TOOL_OPTIONS split as the JVM splits it (HotSpot's options parser, JDK 9 and later): words
 * are separated by whitespace; a ' or " opens a run taken whole up to the same quote, the quotes
 * dropped; runs and bare characters next to each other make one word; there are no escapes.
 */
function jvmOptionWords(options: string): string[] {
  const words: string[] = [];
  let i = 0;
  while (i < options.length) {
    while (i < options.length && /\s/.test(options[i] as string)) i++;
    if (i >= options.length) break;
    let word = '';
    while (i < options.length && !/\s/.test(options[i] as string)) {
      const ch = options[i] as string;
      if (ch === "'" || ch === '"') {
        const close = options.indexOf(ch, i + 1);
        if (close < 0) throw new Error(`unmatched quote in ${options}`);
        word += options.slice(i + 1, close);
        i = close + 1;
      } else {
        word += ch;
        i++;
      }
    }
    words.push(word);
  }
  return words;
}

describe('a Java trust store for the world', () => {
  it("keeps the user's own options first and quotes a path with a space", () => {
    expect(javaToolOptions(' -Xmx64m ', '/w/a b/ca.jks', 'http://127.0.0.1:4000')).toBe(
      "-Xmx64m '-Djavax.net.ssl.trustStore=/w/a b/ca.jks' -Djavax.net.ssl.trustStoreType=JKS " +
        '-Djavax.net.ssl.trustStorePassword=changeit -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=4000 ' +
        '-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=4000',
    );
    expect(javaToolOptions(undefined, '/w/ca.jks')).not.toContain('proxy');
  });

  it('names any store path the JVM reads back whole: quotes of both kinds, whitespace (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '/', ' ', '\t', "'", '"', '\\', '$', '=') }),
        (tail) => {
          const path = `/w/${tail}/ca.jks`;
          const words = jvmOptionWords(javaToolOptions('-Xmx64m', path));
          expect(words).toContain(`-Djavax.net.ssl.trustStore=${path}`);
          expect(words[0]).toBe('-Xmx64m');
        },
      ),
      { numRuns: 500 },
    );
  });

  it.skipIf(jdk.skip)('a path with both kinds of quote reaches the JVM whole', () => {
    jdk.require();
    const path = `/w/it's "the" run/ca.jks`;
    const shown = spawnSync('java', ['-XshowSettings:properties', '-version'], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, JAVA_TOOL_OPTIONS: javaToolOptions(undefined, path) },
    });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stderr).toContain(`javax.net.ssl.trustStore = ${path}\n`);
  });

  it.skipIf(jdk.skip || openssl.skip)(
    "is read by the JDK's keytool: every certificate of the bundle, sealed with its password",
    () => {
      jdk.require();
      openssl.require();
      const dir = scratchDir('fleetbench-java-trust-');
      const ca = makeWorldCa(dir, ['api.github.com'], 'java-test');
      const certificates = (readFileSync(ca.bundlePath, 'utf8').match(/BEGIN CERTIFICATE/g) ?? []).length;
      const list = (password: string) =>
        spawnSync('keytool', ['-list', '-keystore', ca.javaTrustStorePath, '-storepass', password], {
          encoding: 'utf8',
          timeout: 60_000,
        });
      const listed = list('changeit');
      expect(listed.status, listed.stderr).toBe(0);
      expect(listed.stdout).toContain('Keystore type: JKS');
      expect(listed.stdout).toContain(`Your keystore contains ${certificates} entr`);
      expect(listed.stdout.match(/trustedCertEntry/g)).toHaveLength(certificates);
      // The seal is checked: the wrong password is refused as a tampered store.
      const tampered = list('not-the-password');
      expect(tampered.status).not.toBe(0);
      expect(tampered.stdout + tampered.stderr).toMatch(/tampered|password was incorrect/i);
    },
  );
});

describe.skipIf(jdk.skip || bwrap.skip)('a Java control plane in the world', { timeout: 150_000 }, () => {
  it('reaches GitHub and the model host unchanged, in the sandbox', async () => {
    jdk.require();
    bwrap.require();
    expectReached(await world(['--mode', 'sandbox', '--no-agents'], scratchDir('fleetbench-world-java-')));
  });
});

describe.skipIf(jdk.skip || unshare.skip)(
  'a Java control plane in the world, by proxy',
  { timeout: 150_000 },
  () => {
    it('reaches them through the proxy the JVM is told of', async () => {
      jdk.require();
      unshare.require();
      expectReached(
        await world(['--mode', 'proxy', '--no-agents'], scratchDir('fleetbench-world-java-proxy-')),
      );
    });
  },
);
