import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Files that spend most of their time waiting on real clocks (real AO runs, live chaos waves,
 * a segmented live run, a served control plane's restart). Run side by side they left the CPU
 * idle for ~25 s of the suite; spread out, each waits next to files that compute.
 */
const WAITING = [
  'ao-target',
  'ao-real-agents',
  'live-chaos',
  'distributed-run',
  'live-serve',
  'servers-sigterm',
].map((name) => `/test/${name}.test.ts`);

/**
 * Files that start the run, before every project's own order: the static checks (two tsc
 * processes and biome, ~5 s warm, ~13 s on a fresh clone) and the longest waiting file (~40 s
 * of real-clock waves), so neither ends up in the tail.
 */
const FIRST = ['/test/static-checks.test.ts', '/test/live-chaos.test.ts'];

/**
 * vitest's order (longest first from its cache, else largest; each project's files together,
 * so a non-isolated worker is reused from file to file), with the waiting files of a project
 * spread out: one, then two of the others, and so on; FIRST before all of them.
 */
export class WaitingApartSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const out: TestSpecification[] = [];
    for (const project of [...new Set(sorted.map((f) => f.project.name))]) {
      const mine = sorted.filter((f) => f.project.name === project);
      const first = mine.filter((f) => FIRST.some((suffix) => f.moduleId.endsWith(suffix)));
      out.unshift(...first);
      const waiting = mine.filter(
        (f) => WAITING.some((suffix) => f.moduleId.endsWith(suffix)) && !first.includes(f),
      );
      const busy = mine.filter((f) => !waiting.includes(f) && !first.includes(f));
      while (waiting.length > 0 || busy.length > 0) {
        const next = waiting.shift();
        if (next) out.push(next);
        out.push(...busy.splice(0, 2));
      }
    }
    return out;
  }
}
