/**
 * The package's build (`npm run build`; `npm pack` runs it as its prepack step): compiles the
 * sources into dist/ so an install runs plain JavaScript, with no TypeScript loader or bundler
 * at run time (docs/contributing.md, "The package"). A checkout never needs it: bin/ runs the
 * sources there (bin/cli-bundle.js), and a dist/ beside src/ is ignored.
 *
 * dist/ holds:
 * - the entries of bin/cli-bundle.js (ENTRIES: the CLI, the matrix child, the reference control
 *   plane's worker, AO's child, the public API behind bin/index.js), as ES modules sharing
 *   chunks; the runtime dependencies of package.json stay imports, everything else they import
 *   (the OTLP protobuf codecs and protobufjs's runtime) is compiled in;
 * - analyze-worker.cjs, the analysis workers' script (src/analyze/worker-source.ts);
 * - report-client.js and uplot.min.css, the HTML report's page script and styles
 *   (src/report-html/page.ts);
 * - paperclip-standin.mjs, the paperclip target's stand-in agent (src/targets/paperclip/standin.mjs);
 * - types/, the declarations of the public API (src/index.ts).
 *
 * A module that finds files relative to itself (package.json, scenarios/, budgets/, docs/*.json)
 * keeps doing so: each `import.meta.url` becomes the URL its source would have in the package,
 * `<package>/src/...`, computed from the compiled file's own.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, buildSync, type Plugin } from 'esbuild';
import { ENTRIES, ENTRY_BUNDLE, esmYaml, sourceLocations } from '../bin/cli-bundle.js';
import { workerBuildOptions } from '../src/analyze/worker-source.ts';
import { CLIENT_BUILD_OPTIONS, CLIENT_FILE, UPLOT_CSS_FILE, uplotCssPath } from '../src/report-html/page.ts';
import { STANDIN_FILE } from '../src/targets/paperclip/server.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = join(ROOT, 'dist');
const PREBUILT_SOURCE = join(ROOT, 'src', 'base', 'prebuilt.ts');

interface PackageJson {
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** What stays an import in dist/: the runtime dependencies, and what is optional at run time. */
function externals(pkg: PackageJson): string[] {
  const names = [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
    // Loaded only when present: tsx for a TypeScript module target (src/targets/module.ts).
    'tsx',
  ];
  return names.flatMap((name) => [name, `${name}/*`]);
}

/** `import.meta.url` of the source at `path`, as its URL in the package, from the compiled file's. */
function packageLocation(field: 'url' | 'filename' | 'dirname', path: string): string {
  if (field !== 'url') throw new Error(`${path}: import.meta.${field} is not compiled; use import.meta.url`);
  const fromDist = relative(DIST, path).split(sep).join('/');
  return `new URL(${JSON.stringify(fromDist)}, import.meta.url).href`;
}

/** src/base/prebuilt.ts with PREBUILT true: the compiled code takes its workers and client from dist/. */
function prebuiltFlag(): Plugin {
  return {
    name: 'fleetbench-prebuilt',
    setup(context) {
      context.onLoad({ filter: /[\\/]src[\\/]base[\\/]prebuilt\.ts$/ }, (args) => {
        if (args.path !== PREBUILT_SOURCE) return undefined;
        const text = readFileSync(args.path, 'utf8');
        const flag = 'export const PREBUILT: boolean = false;';
        if (!text.includes(flag)) throw new Error(`${args.path}: no '${flag}' to set`);
        const contents = text
          .replace(flag, 'export const PREBUILT: boolean = true;')
          .replace(/import\.meta\.url/g, packageLocation('url', args.path));
        return { contents, loader: 'ts' };
      });
    },
  };
}

/**
 * Declarations name their neighbours `./x.js`, as a consumer's TypeScript resolves them (tsc keeps
 * the sources' `./x.ts` in declarations).
 */
function jsSpecifiers(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.replace(/((?:from|import\()\s*['"]\.{1,2}\/[^'"]*?)\.ts(['"])/g, '$1.js$2'));
  }
}

/** Packages compiled into dist/ (not imports): each should be small and have no install script. */
function bundledPackages(inputs: string[]): string[] {
  const names = new Set<string>();
  for (const input of inputs) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) names.add(match[1]!);
  }
  return [...names].sort();
}

export async function buildPackage(): Promise<{ bundled: string[]; seconds: number }> {
  const started = performance.now();
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
  rmSync(DIST, { recursive: true, force: true });
  mkdirSync(DIST, { recursive: true });

  const entryPoints: Record<string, string> = {};
  for (const [name, path] of Object.entries(ENTRIES)) entryPoints[name] = join(ROOT, ...path.split('/'));
  const result = await build({
    // Source maps too: stack traces name the TypeScript sources' files and lines (bin/ turns
    // them on); the sources themselves are not shipped.
    ...ENTRY_BUNDLE,
    metafile: true,
    entryPoints,
    external: externals(pkg),
    outdir: DIST,
    // Every output file directly in dist/: import.meta.url is rewritten relative to that directory.
    chunkNames: 'chunk-[hash]',
    logLevel: 'warning',
    absWorkingDir: ROOT,
    plugins: [prebuiltFlag(), esmYaml(ROOT), sourceLocations(ROOT, new Map(), packageLocation)],
  });

  // The analysis workers' script: CommonJS, so its one import.meta (version.ts) is computed from
  // __dirname at run time.
  const workerFile = join(DIST, 'analyze-worker.cjs');
  const worker = buildSync({
    ...workerBuildOptions('__fleetbenchVersionUrl'),
    banner: {
      js: `const __fleetbenchVersionUrl = require('node:url').pathToFileURL(require('node:path').join(__dirname, '../src/base/version.ts')).href;`,
    },
    outfile: workerFile,
    metafile: true,
  });

  buildSync({ ...CLIENT_BUILD_OPTIONS, outfile: join(DIST, CLIENT_FILE) });
  copyFileSync(uplotCssPath(), join(DIST, UPLOT_CSS_FILE));
  // The paperclip target's stand-in agent: plain JavaScript that Paperclip's own Node runs.
  copyFileSync(join(ROOT, 'src', 'targets', 'paperclip', 'standin.mjs'), join(DIST, STANDIN_FILE));

  // The public API's declarations, for TypeScript module targets (`import type { Target } from 'fleetbench'`).
  const tsc = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.types.json')],
    { cwd: ROOT, encoding: 'utf8' },
  );
  if (tsc.status !== 0) throw new Error(`tsc (declarations) failed:\n${tsc.stdout}${tsc.stderr}`);
  jsSpecifiers(join(DIST, 'types'));

  const bundled = bundledPackages([
    ...Object.keys(result.metafile.inputs),
    ...Object.keys(worker.metafile?.inputs ?? {}),
  ]);
  writeFileSync(
    join(DIST, 'build.json'),
    `${JSON.stringify({ builtWith: process.version, compiledIn: bundled }, null, 2)}\n`,
  );
  return { bundled, seconds: (performance.now() - started) / 1000 };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { bundled, seconds } = await buildPackage();
  process.stdout.write(
    `dist/ built in ${seconds.toFixed(1)} s (${relative(process.cwd(), DIST) || '.'}); packages compiled in: ${bundled.join(', ')}\n`,
  );
}
