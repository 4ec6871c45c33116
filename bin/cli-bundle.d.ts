// Types of cli-bundle.js (plain JavaScript: it runs before TypeScript can be loaded).
export interface BundlePaths {
  root: string;
  entries: Record<string, string>;
  cacheDir: string;
  manifest: string;
}
export function bundlePaths(root?: string): BundlePaths;
export function freshBundle(paths?: BundlePaths): string | undefined;
export function buildBundle(paths?: BundlePaths): Promise<string | undefined>;
export function loadCli(paths?: BundlePaths): Promise<{ main(argv: string[]): Promise<number> }>;
export function loadEntry(name: string, paths?: BundlePaths): Promise<Record<string, unknown>>;
export function runEntry(name: string, paths?: BundlePaths): Promise<unknown>;
export const ENTRIES: Record<string, string>;
export function packagedEntry(name: string, root?: string): string | undefined;
export function sourceLocations(
  root: string,
  loaded: Map<string, Buffer>,
  locate?: (field: 'url' | 'filename' | 'dirname', path: string) => string,
): import('esbuild').Plugin;
export function esmYaml(root: string): import('esbuild').Plugin;
export const ENTRY_BUNDLE: import('esbuild').BuildOptions;
