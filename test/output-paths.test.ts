/**
 * Every output path of every command (docs/limits.md#output-paths): a symbolic link or a file
 * with other hard links is refused by name, its target left as it was (as `run --out` always
 * did); a path that cannot be written (a directory, /dev/full, a FIFO, a parent that is a file)
 * is a clear message naming it and exit 2, never "internal error" with a stack, and never a
 * command that blocks before printing anything. One mechanism, src/base/safe-write.ts, held to
 * that by a property test over every kind of thing a path can be, then by each command.
 */
import { spawnSync } from 'node:child_process';
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { isFleetbenchError } from '../src/base/errors.ts';
import { makeDirectories, openOutputFile, writeOutput, writeOutputFile } from '../src/base/safe-write.ts';
import { cli, runCli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { agentClisPresent } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-outputs-');
const AO_SAMPLE = new URL('../examples/ao-gh-trace.jsonl', import.meta.url).pathname;
const OTLP_SAMPLE = new URL('../examples/otlp-trace.json', import.meta.url).pathname;
const LEARN = new URL('./fixtures/ao/learn.trace.jsonl.gz', import.meta.url).pathname;
const SECRET = 'a file the output path points to\n';
const hasMkfifo = spawnSync('mkfifo', ['--version'], { stdio: 'ignore' }).status === 0;

/** What a path can be when a command is told to write there. */
const KINDS = [
  'missing',
  'regular',
  'symlink-to-file',
  'symlink-to-missing',
  'symlink-to-dir',
  'hardlink',
  'directory',
  'fifo',
  'parent-is-file',
  'dev-full',
  'dev-null',
] as const;
type Kind = (typeof KINDS)[number];

/** Lays out `kind` at a fresh path; returns it and the file a link there points to (if any). */
function lay(kind: Kind, base: string): { path: string; victim?: string } {
  mkdirSync(base, { recursive: true });
  const victim = join(base, 'victim.txt');
  const path = join(base, 'out.file');
  switch (kind) {
    case 'missing':
      return { path };
    case 'regular':
      writeFileSync(path, 'old contents\n');
      return { path };
    case 'symlink-to-file':
      writeFileSync(victim, SECRET);
      symlinkSync(victim, path);
      return { path, victim };
    case 'symlink-to-missing':
      symlinkSync(victim, path);
      return { path, victim };
    case 'symlink-to-dir':
      mkdirSync(join(base, 'victim-dir'));
      symlinkSync(join(base, 'victim-dir'), path);
      return { path, victim: join(base, 'victim-dir') };
    case 'hardlink':
      writeFileSync(victim, SECRET);
      linkSync(victim, path);
      return { path, victim };
    case 'directory':
      mkdirSync(path);
      return { path };
    case 'fifo':
      spawnSync('mkfifo', [path]);
      return { path };
    case 'parent-is-file':
      writeFileSync(join(base, 'a-file'), 'x');
      return { path: join(base, 'a-file', 'out.file') };
    case 'dev-full':
      return { path: '/dev/full' };
    case 'dev-null':
      return { path: '/dev/null' };
  }
}

/** Whether a write to this kind of path must succeed. */
const WRITABLE: ReadonlySet<Kind> = new Set(['missing', 'regular', 'dev-null']);

describe('the mechanism (src/base/safe-write.ts): written to the path itself, or refused naming it', () => {
  it('property: whatever the path is, the bytes land in it as a regular file or a FleetbenchError names it, and a link’s target is never written', () => {
    let case_ = 0;
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS.filter((k) => k !== 'fifo' || hasMkfifo)),
        fc.constantFrom('whole', 'opened', 'append'),
        fc.string({ maxLength: 64 }),
        (kind, how, text) => {
          const { path, victim } = lay(kind, join(dir, 'property', String(case_++)));
          const victimBefore =
            victim !== undefined && existsSync(victim) && lstatSync(victim).isFile()
              ? readFileSync(victim, 'utf8')
              : undefined;
          let error: unknown;
          try {
            if (how === 'whole') writeOutputFile(path, text);
            else {
              const out = openOutputFile(path, { append: how === 'append' });
              try {
                writeOutput(out, text);
              } finally {
                out.close();
              }
            }
          } catch (caught) {
            error = caught;
          }
          // Writing nothing to /dev/full is no error.
          if (WRITABLE.has(kind) || (kind === 'dev-full' && text === '')) {
            expect(error).toBeUndefined();
            if (kind !== 'dev-null' && kind !== 'dev-full') {
              expect(lstatSync(path).isFile()).toBe(true);
              expect(readFileSync(path, 'utf8')).toBe(
                how === 'append' && kind === 'regular' ? `old contents\n${text}` : text,
              );
            }
          } else {
            expect(isFleetbenchError(error), String(error)).toBe(true);
            expect((error as Error).message).toContain(path);
            expect((error as { exitCode: number }).exitCode).toBe(2);
          }
          // A link's target is never written, created or truncated.
          if (victim !== undefined && kind !== 'symlink-to-dir') {
            if (victimBefore === undefined) expect(existsSync(victim)).toBe(false);
            else expect(readFileSync(victim, 'utf8')).toBe(victimBefore);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** The run and inputs the commands below read. */
let runDir: string;

beforeAll(async () => {
  runDir = join(dir, 'chaos');
  const run = await cli(['run', 'chaos-codex-c4', '--out', runDir, '--no-report']);
  expect(run.code, run.stderr).toBe(0);
}, 120_000);

/** Each command with an output file, and the arguments that write `path`. */
const COMMANDS: Array<[string, (path: string) => string[]]> = [
  ['model learn -o', (path) => ['model', 'learn', LEARN, '-o', path]],
  ['budgets derive -o', (path) => ['budgets', 'derive', runDir, '-o', path]],
  ['check --junit', (path) => ['check', runDir, '--budgets', 'native-speed', '--junit', path]],
  ['report -o', (path) => ['report', runDir, '-o', path]],
  ['import ao-gh -o', (path) => ['import', 'ao-gh', AO_SAMPLE, '-o', path]],
  ['import otlp -o', (path) => ['import', 'otlp', OTLP_SAMPLE, '-o', path]],
  ['k8s manifest run -o', (path) => ['k8s', 'manifest', 'run', 'S2-T1-50', '--segments', '2', '-o', path]],
  [
    'k8s manifest matrix -o',
    (path) => ['k8s', 'manifest', 'matrix', '--cells', 'S2-T1-1,S2-T1-5', '--segments', '2', '-o', path],
  ],
];

describe('directories made for a path (makeDirectories, every mkdir -p of src/)', () => {
  // Node 20's recursive mkdirSync spins for ever at full CPU on a path whose parent exists but
  // answers ENOENT to mkdir (/proc/x): every directory fleetbench makes goes through this one.
  it('property: the path ends a directory, or an errno error names why, at once; /proc is never a spin', () => {
    const root = join(dir, 'mkdir-property');
    mkdirSync(root, { recursive: true });
    let n = 0;
    fc.assert(
      fc.property(
        fc.constantFrom('scratch', 'under-a-file', 'proc'),
        fc.array(fc.stringMatching(/^[a-z0-9]{1,8}$/), { minLength: 1, maxLength: 5 }),
        (base, parts) => {
          const at = join(root, String(n++));
          mkdirSync(at);
          let start = at;
          if (base === 'under-a-file') {
            start = join(at, 'file');
            writeFileSync(start, 'x');
          } else if (base === 'proc') start = `/proc/fleetbench-nope-${process.pid}`;
          const path = join(start, ...parts);
          try {
            const first = makeDirectories(path, 0o755);
            expect(base).toBe('scratch');
            expect(lstatSync(path).isDirectory()).toBe(true);
            expect(first).toBe(join(at, parts[0]!));
            // Made already: nothing made the second time.
            expect(makeDirectories(path)).toBeUndefined();
          } catch (error) {
            expect(base).not.toBe('scratch');
            expect((error as NodeJS.ErrnoException).code).toMatch(/^(ENOENT|ENOTDIR)$/);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('targets install --dir under /proc or under a file: exit 2 naming the path, before any npm (it spun for ever, deaf to SIGTERM; then an internal error)', async () => {
    const file = join(dir, 'install-file');
    writeFileSync(file, 'x');
    for (const path of [`/proc/fleetbench-nope-${process.pid}/agents`, join(file, 'sub', 'agents')]) {
      const started = performance.now();
      const result = await runCli(['targets', 'install', 'agents', '--dir', path], { timeoutMs: 30_000 });
      expect(result.stderr, path).not.toMatch(/internal error| {4}at /);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/cannot write \/(proc|.*install-file)/);
      expect(performance.now() - started).toBeLessThan(25_000);
    }
  });
});

describe('every command: an output through a link is refused, a write error is named (exit 2)', () => {
  for (const [name, args] of COMMANDS) {
    it(`${name}`, async () => {
      const base = join(dir, name.replace(/\W+/g, '-'));
      for (const kind of [
        'symlink-to-file',
        'hardlink',
        'directory',
        'parent-is-file',
        'dev-full',
      ] as const) {
        const { path, victim } = lay(kind, join(base, kind));
        const result = await cli(args(path));
        expect(result.stderr, `${kind}: ${result.stderr}`).not.toMatch(/internal error| {4}at /);
        expect(result.code, `${kind}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toContain(path);
        if (victim !== undefined) expect(readFileSync(victim, 'utf8')).toBe(SECRET);
      }
      // And a plain path still works.
      const ok = lay('missing', join(base, 'ok'));
      const result = await cli(args(ok.path));
      expect([0, 99], result.stderr).toContain(result.code);
      expect(lstatSync(ok.path).size).toBeGreaterThan(0);
    });
  }

  it.skipIf(!(agentClisPresent(['codex']) || Boolean(process.env.CI)))(
    'agents try --out: a link in the directory is refused before any agent runs',
    async () => {
      const out = join(dir, 'agents-out');
      mkdirSync(out, { recursive: true });
      const victim = join(dir, 'agents-victim.jsonl');
      writeFileSync(victim, SECRET);
      symlinkSync(victim, join(out, 'trace.jsonl'));
      const result = await cli(['agents', 'try', 'codex', '--out', out]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/trace\.jsonl is a symbolic link/);
      expect(readFileSync(victim, 'utf8')).toBe(SECRET);
    },
  );

  it('matrix --out: a link in the directory is not written through (baseline.json)', async () => {
    const out = join(dir, 'matrix-out');
    mkdirSync(out, { recursive: true });
    const victim = join(dir, 'matrix-victim.json');
    writeFileSync(victim, SECRET);
    symlinkSync(victim, join(out, 'baseline.json'));
    const result = await cli(['matrix', '--cells', 'S2-T1-1', '--out', out, '--jobs', '1']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/baseline\.json is a symbolic link/);
    expect(readFileSync(victim, 'utf8')).toBe(SECRET);
  });
});

describe('the servers’ --trace (the real CLI as a process): refused at once, never blocking', () => {
  const SERVERS: Array<[string, string[]]> = [
    ['github serve', ['github', 'serve', '--port', '0']],
    ['provider serve', ['provider', 'serve', '--port', '0']],
  ];
  for (const [name, args] of SERVERS) {
    it(`${name} --trace: a link, a directory, /dev/full and a FIFO with no reader are each exit 2 naming the path`, async () => {
      const base = join(dir, name.replace(/\W+/g, '-'));
      const kinds = [
        'symlink-to-file',
        'directory',
        'dev-full',
        ...(hasMkfifo ? (['fifo'] as const) : []),
      ] as const;
      const laid = kinds.map((kind) => ({ kind, ...lay(kind, join(base, kind)) }));
      // A server that took its --trace would serve until stopped: the timeout tells that apart.
      const results = await Promise.all(
        laid.map(({ path }) => runCli([...args, '--trace', path], { timeoutMs: 60_000 })),
      );
      for (const [i, result] of results.entries()) {
        const { kind, path, victim } = laid[i]!;
        expect(result.signal, `${kind}: still running (${result.stderr})`).toBeNull();
        expect(result.code, `${kind}: ${result.stderr}`).toBe(2);
        expect(result.stderr).toContain(path);
        expect(result.stderr).not.toMatch(/internal error| {4}at /);
        if (victim !== undefined) expect(readFileSync(victim, 'utf8')).toBe(SECRET);
      }
      rmSync(base, { recursive: true, force: true });
    });
  }
});
