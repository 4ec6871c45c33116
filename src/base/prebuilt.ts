/**
 * What an installed package has built ahead of time (scripts/build.ts, run by `npm pack`'s
 * prepack step): the analysis worker's bundle and the HTML report's client, in dist/ (and the
 * paperclip target's stand-in agent, copied there). From a
 * checkout they are built on first use instead (and cached), so a clone runs with no build step.
 * The build replaces PREBUILT with `true`; this source says `false`.
 */
import { fileURLToPath } from 'node:url';

export const PREBUILT: boolean = false;

/** dist/<name> of the package when it is prebuilt; undefined when running from the sources. */
export function prebuiltFile(name: string): string | undefined {
  return PREBUILT ? fileURLToPath(new URL(`../../dist/${name}`, import.meta.url)) : undefined;
}
