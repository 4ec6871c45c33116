/**
 * A loopback npm registry for install tests: it serves tiny stand-ins for the packages an install
 * asks for (a packument and a tarball each, made here with `tar`), so a real `npm install` runs
 * against it in a second or two with no network. With `hold`, it never answers: npm then waits
 * mid-install for as long as the test likes (to be interrupted there).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { scratchDir } from './tmp.ts';

export interface StubPackage {
  name: string;
  version: string;
  /** Files of the package (path inside it → text), executable when `executable` lists them. */
  files: Record<string, string>;
  executable?: string[];
}

export interface NpmRegistryStub {
  url: string;
  /** Requests received so far (paths). */
  readonly requests: string[];
  /** The environment that points npm at this registry, with a cache of its own. */
  env: NodeJS.ProcessEnv;
  close(): Promise<void>;
}

function tarball(pkg: StubPackage): Buffer {
  const root = scratchDir('fleetbench-npm-pkg-');
  const dir = join(root, 'package');
  for (const [path, text] of Object.entries({
    'package.json': JSON.stringify({ name: pkg.name, version: pkg.version }),
    ...pkg.files,
  })) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
    if (pkg.executable?.includes(path)) chmodSync(join(dir, path), 0o755);
  }
  const file = join(root, 'package.tgz');
  const tar = spawnSync('tar', ['-czf', file, '-C', root, 'package']);
  if (tar.status !== 0) throw new Error(`tar: ${tar.stderr}`);
  return readFileSync(file);
}

export async function startNpmRegistryStub(
  packages: readonly StubPackage[],
  options: { hold?: boolean } = {},
): Promise<NpmRegistryStub> {
  const tarballs = new Map(packages.map((pkg) => [pkg.name, tarball(pkg)]));
  const requests: string[] = [];
  const held = new Set<ServerResponse>();
  const server = createServer((req, res) => {
    const path = decodeURIComponent(req.url ?? '/');
    requests.push(path);
    if (options.hold) {
      held.add(res);
      return;
    }
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const tgz = /^\/-\/tarball\/(.+)\.tgz$/.exec(path);
    const pkg = packages.find((p) => (tgz ? tgz[1] === p.name : path === `/${p.name}`));
    if (!pkg) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
      return;
    }
    const bytes = tarballs.get(pkg.name)!;
    if (tgz) {
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(bytes);
      return;
    }
    const dist = {
      tarball: `${base}/-/tarball/${pkg.name}.tgz`,
      integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`,
      shasum: createHash('sha1').update(bytes).digest('hex'),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        name: pkg.name,
        'dist-tags': { latest: pkg.version },
        versions: { [pkg.version]: { name: pkg.name, version: pkg.version, dist } },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    url,
    requests,
    env: {
      npm_config_registry: url,
      npm_config_cache: scratchDir('fleetbench-npm-cache-'),
      npm_config_fetch_retries: '0',
      npm_config_audit: 'false',
      npm_config_update_notifier: 'false',
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of held) res.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
