/**
 * The self-contained HTML page: our styles and uPlot's inline, the report data as a JSON blob,
 * and the page script (client/main.ts bundled with uPlot by esbuild, in memory) inline. Nothing
 * is fetched: no fonts, no icons, no scripts; a Content-Security-Policy says so to the browser.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';
import { prebuiltFile } from '../base/prebuilt.ts';
import { makeDirectories } from '../base/safe-write.ts';
import type { ReportData } from './types.ts';

const require = createRequire(import.meta.url);

let cachedScript: string | undefined;

const CLIENT_ENTRY = fileURLToPath(new URL('./client/main.ts', import.meta.url));
const CACHE_DIR = fileURLToPath(new URL('../../node_modules/.cache/fleetbench/', import.meta.url));

/**
 * client/main.ts and uPlot as one minified IIFE. Building it takes about a second, which every
 * `fleetbench run` would pay for its report.html: so it is cached on disk, keyed by the client's
 * sources and uPlot's version (best effort: any problem with the cache just builds again).
 */
export function clientScript(): string {
  if (cachedScript !== undefined) return cachedScript;
  const prebuilt = prebuiltFile(CLIENT_FILE);
  if (prebuilt !== undefined) {
    cachedScript = readFileSync(prebuilt, 'utf8');
    return cachedScript;
  }
  const hash = createHash('sha256');
  // Every source of the client (main.ts and the files beside it) and the data's shape.
  const clientDir = dirname(CLIENT_ENTRY);
  const sources = readdirSync(clientDir)
    .filter((name) => name.endsWith('.ts'))
    .sort()
    .map((name) => join(clientDir, name));
  for (const file of [...sources, fileURLToPath(new URL('./types.ts', import.meta.url))])
    hash.update(readFileSync(file));
  hash.update(readFileSync(require.resolve('uplot/package.json')));
  const cacheFile = join(CACHE_DIR, `report-client-${hash.digest('hex').slice(0, 20)}.js`);
  try {
    cachedScript = readFileSync(cacheFile, 'utf8');
    return cachedScript;
  } catch {
    // not cached yet
  }
  cachedScript = buildClientScript();
  try {
    makeDirectories(CACHE_DIR, 0o700);
    writeFileSync(`${cacheFile}.${process.pid}`, cachedScript);
    renameSync(`${cacheFile}.${process.pid}`, cacheFile);
  } catch {
    // a read-only install: build every time
  }
  return cachedScript;
}

/** Where an installed package keeps the prebuilt client and uPlot's styles (prebuilt.ts). */
export const CLIENT_FILE = 'report-client.js';
export const UPLOT_CSS_FILE = 'uplot.min.css';

/** esbuild's options for the client (also used by scripts/build.ts for the package). */
export const CLIENT_BUILD_OPTIONS: BuildOptions = {
  entryPoints: [CLIENT_ENTRY],
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  minify: true,
  logLevel: 'silent',
  legalComments: 'inline',
};

function buildClientScript(): string {
  const { buildSync } = require('esbuild') as typeof import('esbuild');
  return buildSync({ ...CLIENT_BUILD_OPTIONS, write: false }).outputFiles[0]!.text;
}

/** uPlot's stylesheet (from the package in a checkout, from dist/ in an installed package). */
export function uplotCssPath(): string {
  return prebuiltFile(UPLOT_CSS_FILE) ?? require.resolve('uplot/dist/uPlot.min.css');
}

function uplotCss(): string {
  return readFileSync(uplotCssPath(), 'utf8');
}

const STYLE = `
:root { color-scheme: light; --fg: #111827; --muted: #4b5563; --line: #e5e7eb; --pass: #15803d; --fail: #b91c1c; --unknown: #6b7280; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--fg); background: #f9fafb; }
#app { max-width: 1180px; margin: 0 auto; padding: 24px; }
header h1 { margin: 0 0 8px; font-size: 26px; }
h2 { margin: 32px 0 8px; font-size: 21px; }
h3 { margin: 0 0 8px; font-size: 18px; }
h4 { margin: 16px 0 4px; font-size: 15px; }
.lead { color: var(--muted); max-width: 70em; }
.source { color: var(--muted); font-size: 13px; }
.explain { color: var(--muted); margin: 0 0 8px; max-width: 70em; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; margin: 16px 0; }
figure { margin: 12px 0 20px; }
.chart { width: 100%; min-height: 120px; }
figure[data-picture] svg { display: block; max-width: 1100px; font-family: inherit; }
.legend { font-size: 12px; color: #374151; }
.legend-item { white-space: nowrap; margin-right: 12px; display: inline-block; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-left: 6px; vertical-align: -1px; }
table { border-collapse: collapse; margin: 8px 0; font-size: 14px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td:first-child { white-space: nowrap; }
table.numbers td:not(:first-child), table.verdicts td:not(:first-child) { text-align: right; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 700; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); } .badge.unknown { background: var(--unknown); }
.verdict { font-weight: 600; }
.verdict.big { font-size: 17px; padding: 10px 14px; border-radius: 8px; background: #fff; border: 1px solid var(--line); }
.verdict.big.fail { border-color: var(--fail); } .verdict.big.pass { border-color: var(--pass); }
.cell { padding: 0 6px; border-radius: 4px; }
.cell.pass { background: #dcfce7; } .cell.fail { background: #fee2e2; font-weight: 700; } .cell.unknown { background: #f3f4f6; }
.callout { padding: 8px 12px; border-left: 4px solid #93c5fd; background: #eff6ff; margin: 8px 0; }
.callout.warn { border-color: #f59e0b; background: #fffbeb; }
.scale-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 8px 24px; }
select { font: inherit; padding: 2px 6px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dt { font-weight: 600; } dd { margin: 0; color: var(--muted); }
.note { color: var(--muted); font-size: 13px; }
`;

/** JSON that cannot end the script element it sits in. */
function embedJson(data: unknown): string {
  return JSON.stringify(data)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}

export function renderReportHtml(data: ReportData): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<link rel="icon" href="data:,">
<title>${escapeHtml(data.title)}</title>
<style>${uplotCss()}</style>
<style>${STYLE}</style>
</head>
<body>
<div id="app"><noscript>This report draws its charts with JavaScript; the data is in the fleetbench-data block of this file.</noscript></div>
<script type="application/json" id="fleetbench-data">${embedJson(data)}</script>
<script>${clientScript().replace(/<\/script/gi, '<\\/script')}</script>
</body>
</html>
`;
}
