/**
 * How `bin/fleetbench.js` starts the program. From an installed package: the compiled modules in
 * dist/ (built by `npm pack`'s prepack step, scripts/build.ts; the package ships no sources).
 * From a checkout: the sources, with no build step for the developer, and without
 * paying for the tsx loader at every start. tsx compiles TypeScript on the fly through loader
 * hooks that run on a thread of their own: about 0.3-0.5 s and 60 MB of every start, a tenth
 * of an `analyze` of 2 million records. So the CLI's sources are bundled with esbuild (already
 * installed: tsx runs on it) into plain ES modules cached in node_modules/.cache/fleetbench,
 * and later starts import that bundle directly.
 *
 * - The cache is keyed by a hash of the contents of every source file in the bundle (and of this
 *   file): a changed, added or removed source is noticed at the next start, which rebuilds (a few
 *   hundred ms, once). Checking compares each source's size and modification time with those
 *   recorded when its contents were last found unchanged, and hashes the contents again only
 *   when one differs (freshBundle).
 * - Only fleetbench's own sources are bundled; packages stay ordinary imports, resolved from
 *   node_modules as before (that is why the cache lives inside the package, not in /tmp).
 * - Dynamic imports stay lazy (code splitting): what a command loads on use is still loaded only
 *   then.
 * - `import.meta.url` (and `.filename`, `.dirname`) in a source is replaced by that source's own
 *   location, so files found relative to a module (package.json, the published schemas, the
 *   worker's entry) are found as under tsx.
 * - Stack traces point at the TypeScript sources (linked source maps).
 * - Anything wrong (esbuild missing, an unwritable or foreign cache directory, a failed build)
 *   falls back to tsx, as before. `FLEETBENCH_BUNDLE=0` forces tsx.
 *
 * Plain JavaScript on purpose: it runs before any TypeScript can be loaded.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SELF = fileURLToPath(import.meta.url);
/** A bundle directory no longer current is removed once it is this old (a process may still use it). */
const KEEP_OLD_MS = 60 * 60 * 1000;

/**
 * The modules a process starts from, bundled together (shared code in shared chunks): the CLI,
 * and the child processes it starts. Through tsx a child paid ~0.6-0.9 s and up to 1.6 s of CPU
 * before it could work (a matrix slot, a control-plane restart, AO's process); from the bundle
 * ~0.3-0.4 s and 0.7 s.
 */
export const ENTRIES = {
  main: 'src/cli/main.ts',
  'matrix-child': 'src/matrix/child.ts',
  'reference-worker': 'src/reference/worker-main.ts',
  'ao-child': 'src/targets/ao/child.ts',
  // The public API (package.json "exports", through bin/index.js).
  index: 'src/index.ts',
};

/**
 * esbuild's options for the entries, here and in the package's build (scripts/build.ts): ES
 * modules sharing chunks, for Node 20, with linked source maps (stack traces name the sources).
 */
export const ENTRY_BUNDLE = {
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.mjs' },
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
};

/**
 * `yaml` compiled in from its ES module build: the package's Node entry is ~80 CommonJS files,
 * whose resolving and loading took ~80 ms of CPU at every start that reads or writes YAML (a
 * scenario, a model, a budget); its ES module build is the same code in one chunk of the bundle
 * (~10 ms). The one difference: a warning of `YAML.parse` is printed with `console.warn`, not
 * `process.emitWarning` (docs/performance.md, "Start-up").
 */
export function esmYaml(root) {
  return {
    name: 'fleetbench-esm-yaml',
    setup(build) {
      build.onResolve({ filter: /^yaml$/ }, () => {
        let entry;
        try {
          const yamlPackage = createRequire(join(root, 'package.json')).resolve('yaml/package.json');
          entry = join(dirname(yamlPackage), 'browser', 'index.js');
        } catch {
          return undefined; // not installed here: an ordinary import, as any package's
        }
        return existsSync(entry) ? { path: entry } : undefined;
      });
    },
  };
}

/** Where the sources and the cache of a fleetbench checkout are. */
export function bundlePaths(root = fileURLToPath(new URL('..', import.meta.url))) {
  const cacheDir = join(root, 'node_modules', '.cache', 'fleetbench');
  const entries = {};
  for (const [name, path] of Object.entries(ENTRIES)) entries[name] = join(root, ...path.split('/'));
  return {
    root,
    entries,
    cacheDir,
    manifest: join(cacheDir, 'cli.json'),
  };
}

/** A directory of this user's own that nobody else can write: code found there may be run. */
function privateDir(dir) {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stats = statSync(dir);
    const uid = process.getuid?.();
    return stats.isDirectory() && (uid === undefined || stats.uid === uid) && (stats.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** The cache key: this file and each input's path and contents. */
function keyOf(root, inputs, read = (input) => readFileSync(join(root, input))) {
  const hash = createHash('sha256');
  hash.update(readFileSync(SELF));
  for (const input of inputs) {
    hash.update(`\0${input}\0`);
    hash.update(read(input));
  }
  return hash.digest('hex').slice(0, 24);
}

/** A source modified this recently may change again within its timestamp's resolution. */
const SETTLED_MS = 2000;

/**
 * Each input's size and modification time, and this file's (null for one modified in the last SETTLED_MS: too
 * recent to vouch for its contents). Taken before its contents are read.
 */
function stampsOf(root, inputs) {
  const now = Date.now();
  const stamp = (path) => {
    const stats = statSync(path);
    return now - stats.mtimeMs < SETTLED_MS ? null : `${stats.size}:${stats.mtimeMs}`;
  };
  // This file's too: the key hashes it (keyOf), so a change to how the bundle is built rebuilds it.
  return [...inputs.map((input) => stamp(join(root, input))), stamp(SELF)];
}

const sameStamps = (now, recorded) =>
  Array.isArray(recorded) &&
  recorded.length === now.length &&
  now.every((stamp, i) => stamp !== null && stamp === recorded[i]);

/**
 * The bundle's entry module if one was built from the sources as they are now, else undefined.
 * Hashing every source's contents costs ~40 ms of CPU at each start (~360 files), so once the
 * contents are found unchanged their sizes and modification times are kept in the manifest, and
 * later starts compare those (a few ms), hashing again only when one differs: as `make` does,
 * and the analysis worker's bundle (src/analyze/worker-source.ts).
 */
export function freshBundle(paths = bundlePaths()) {
  try {
    if (!privateDir(paths.cacheDir)) return undefined;
    const manifest = JSON.parse(readFileSync(paths.manifest, 'utf8'));
    const main = join(paths.cacheDir, manifest.dir, 'main.mjs');
    const stamps = stampsOf(paths.root, manifest.inputs);
    if (!sameStamps(stamps, manifest.stamps)) {
      if (keyOf(paths.root, manifest.inputs) !== manifest.key) return undefined;
      statSync(main);
      if (stamps.every((stamp) => stamp !== null)) writeManifest(paths, { ...manifest, stamps });
      return main;
    }
    statSync(main);
    return main;
  } catch {
    return undefined;
  }
}

/** Replaces the manifest whole (another process reads either the old one or the new one). */
function writeManifest(paths, manifest) {
  const staging = `${paths.manifest}.${process.pid}.tmp`;
  writeFileSync(staging, JSON.stringify(manifest));
  renameSync(staging, paths.manifest);
}

/** import.meta.url, .filename or .dirname of the source at `path`, as an absolute literal. */
function absoluteLocation(field, path) {
  return JSON.stringify(
    field === 'url' ? pathToFileURL(path).href : field === 'filename' ? path : dirname(path),
  );
}

/**
 * An esbuild plugin: replaces import.meta.url/filename/dirname in each source under src/ with
 * that source's own location (`locate(field, path)` gives the expression; absolute by default),
 * so files found relative to a module (package.json, the published schemas, the workers'
 * entries) are found as they are from the sources. Records what was read in `loaded`.
 */
export function sourceLocations(root, loaded, locate = absoluteLocation) {
  const src = join(root, 'src') + sep;
  return {
    name: 'fleetbench-source-locations',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?ts$/ }, (args) => {
        if (!args.path.startsWith(src)) return undefined;
        const text = readFileSync(args.path);
        loaded.set(args.path, text);
        // Not inside a string ('import.meta.url' as a define key stays as it is).
        const meta = /(?<![\w$.'"`])import\.meta\.(url|filename|dirname)\b/g;
        const contents = text.toString('utf8').replace(meta, (_, field) => locate(field, args.path));
        return { contents, loader: 'ts' };
      });
    },
  };
}

/** Builds the bundle into the cache and returns its entry module, or undefined when it cannot. */
export async function buildBundle(paths = bundlePaths()) {
  if (!privateDir(paths.cacheDir)) return undefined;
  const esbuild = createRequire(import.meta.url)('esbuild');
  const staging = join(paths.cacheDir, `.build-${process.pid}-${Date.now()}`);
  const loaded = new Map();
  try {
    // Entries missing from this checkout are left out (a project with only a main bundles it).
    const entryPoints = Object.fromEntries(
      Object.entries(paths.entries).filter(([, path]) => existsSync(path)),
    );
    const result = await esbuild.build({
      ...ENTRY_BUNDLE,
      entryPoints,
      packages: 'external',
      outdir: staging,
      logLevel: 'silent',
      absWorkingDir: paths.root,
      plugins: [esmYaml(paths.root), sourceLocations(paths.root, loaded)],
    });
    const inputs = Object.keys(result.metafile.inputs).sort();
    // The key of what was bundled: the contents esbuild was given, not a later read.
    const key = keyOf(
      paths.root,
      inputs,
      (input) => loaded.get(join(paths.root, input)) ?? readFileSync(join(paths.root, input)),
    );
    const dir = `cli-${key}`;
    try {
      renameSync(staging, join(paths.cacheDir, dir));
    } catch {
      // Another process built the same sources first: use theirs.
      rmSync(staging, { recursive: true, force: true });
    }
    writeManifest(paths, { key, dir, inputs });
    removeOld(paths.cacheDir, dir);
    return join(paths.cacheDir, dir, 'main.mjs');
  } catch {
    rmSync(staging, { recursive: true, force: true });
    return undefined;
  }
}

function removeOld(cacheDir, current) {
  const now = Date.now();
  for (const name of readdirSync(cacheDir)) {
    if (name === current || !(name.startsWith('cli-') || name.startsWith('.build-'))) continue;
    const path = join(cacheDir, name);
    try {
      if (now - statSync(path).mtimeMs > KEEP_OLD_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to remove.
    }
  }
}

/** The bundle's module for `name` (a key of ENTRIES), built if needed; undefined when it cannot be. */
async function bundledEntry(name, paths) {
  // No source, no bundled module: not worth a rebuild at every start (tsx then says what is missing).
  if (process.env.FLEETBENCH_BUNDLE === '0' || !existsSync(paths.entries[name] ?? '')) return undefined;
  const entryOf = (main) => {
    if (main === undefined) return undefined;
    const path = join(dirname(main), `${name}.mjs`);
    return existsSync(path) ? path : undefined;
  };
  try {
    return entryOf(freshBundle(paths)) ?? entryOf(await buildBundle(paths));
  } catch {
    return undefined;
  }
}

/** The entry `name` from the sources, through tsx's loader. */
async function fromSources(name, paths) {
  const { register } = await import('tsx/esm/api');
  register();
  return import(pathToFileURL(paths.entries[name]).href);
}

/**
 * The compiled module of entry `name` in an installed package (dist/<name>.mjs), or undefined in
 * a checkout: a directory with sources runs them, so a dist/ left behind by `npm pack` (prepack
 * builds it) is never taken for the current code.
 */
export function packagedEntry(name, root = bundlePaths().root) {
  if (existsSync(join(root, 'src'))) return undefined;
  const path = join(root, 'dist', `${name}.mjs`);
  return existsSync(path) ? path : undefined;
}

/** The CLI's main module: the package's compiled one, the cached bundle, else the sources through tsx. */
export function loadCli(paths = bundlePaths()) {
  return loadEntry('main', paths);
}

/** The module of entry `name` (a key of ENTRIES), loaded as loadCli loads the CLI's. */
export async function loadEntry(name, paths = bundlePaths()) {
  const packaged = packagedEntry(name, paths.root);
  if (packaged !== undefined) {
    process.setSourceMapsEnabled(true);
    return import(pathToFileURL(packaged).href);
  }
  const main = await bundledEntry(name, paths);
  if (main !== undefined) {
    process.setSourceMapsEnabled(true);
    try {
      return await import(pathToFileURL(main).href);
    } catch {
      // Fall back to tsx, which reports a broken source in its own words.
    }
  }
  return fromSources(name, paths);
}

/**
 * Runs the entry of a child process (a key of ENTRIES other than main): the package's compiled
 * module, else from the bundle, else from the sources through tsx. Its module does its work when
 * imported, so once the bundled module has been started there is no falling back: an error is
 * its own, not the bundle's.
 */
export async function runEntry(name, paths = bundlePaths()) {
  const packaged = packagedEntry(name, paths.root);
  if (packaged !== undefined) {
    process.setSourceMapsEnabled(true);
    return import(pathToFileURL(packaged).href);
  }
  const bundled = await bundledEntry(name, paths);
  if (bundled === undefined) return fromSources(name, paths);
  process.setSourceMapsEnabled(true);
  return import(pathToFileURL(bundled).href);
}
