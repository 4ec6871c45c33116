/**
 * `fleetbench world -- COMMAND` against commands that misbehave: one that handles Ctrl-C and takes
 * its time, one that cannot be started, one started from a directory that is gone. Each runs the
 * CLI as a process, as a user does; the sandbox suites need bwrap (Debian package bubblewrap) and
 * are skipped with one line without it off CI.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../src/base/rng.ts';
import { RealClock } from '../src/clock/index.ts';
import { GitHubEmulator, generateFixtures } from '../src/github/index.ts';
import { LATENCY_PROFILES, ProviderEmulator } from '../src/provider/index.ts';
import { openWorld, type World, type WorldModeOption } from '../src/world/index.ts';
import { BIN } from './helpers/cli.ts';
import { type CliProcessRun, runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { proxyWorldTool, systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const proxyWorld = proxyWorldTool();
const root = process.getuid?.() === 0;

/**
 * `fleetbench world ARGS -- COMMAND` as a process in a process group of its own, as a terminal's
 * foreground job is: `interrupt` sends SIGINT to the whole group once the marker file exists, as
 * Ctrl-C does.
 */
function world(
  args: string[],
  command: string[],
  options: { cwd?: string; interruptWhen?: string; timeoutMs?: number } = {},
): Promise<CliProcessRun> {
  const out = scratchDir('fleetbench-world-hostile-');
  return runCliProcess(['world', '--out', out, ...args, '--', ...command], {
    timeoutMs: 60_000,
    ...options,
    traceDir: out,
  });
}

/** A command that, on SIGINT, takes a second to clean up, writes that it did, and exits 5. */
function graceful(dir: string): { script: string; started: string; cleaned: string } {
  const script = join(dir, 'graceful.sh');
  const started = join(dir, 'started');
  const cleaned = join(dir, 'cleaned');
  writeFileSync(
    script,
    `trap 'sleep 1; echo cleaned > ${cleaned}; exit 5' INT\necho > ${started}\nwhile true; do sleep 0.1; done\n`,
  );
  return { script, started, cleaned };
}

describe.skipIf(bwrap.skip)('fleetbench world: a hostile command in the sandbox', () => {
  it('Ctrl-C reaches the command and the world waits for it (it was killed at once, exit 137)', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-int-');
    const { script, started, cleaned } = graceful(dir);
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['sh', script], {
      interruptWhen: started,
    });
    expect(run.code, run.stderr).toBe(5);
    expect(existsSync(cleaned)).toBe(true);
    expect(run.records.at(-1)).toMatchObject({ kind: 'end', reason: 'interrupted' });
  });
});

describe.skipIf(bwrap.skip)('fleetbench world: a command that cannot start, in the sandbox', () => {
  it.skipIf(!root)(
    'as a host user: exit 127 and why, at once (it was an internal error and a 10 s hang)',
    async () => {
      bwrap.require();
      const started = performance.now();
      const run = await world(['--mode', 'sandbox', '--no-agents', '--user', '1000'], ['/nonexistent/cmd']);
      expect(run.code, run.stderr).toBe(127);
      expect(run.stderr).toContain('cannot start "/nonexistent/cmd"');
      expect(run.stderr).not.toContain('internal error');
      expect(performance.now() - started).toBeLessThan(9_000);
      expect(run.records.at(-1)).toMatchObject({ kind: 'end', reason: 'completed' });
    },
  );

  it('from a directory removed after the shell entered it: exit 2 naming it (it was an internal error and a 10 s hang)', async () => {
    bwrap.require();
    const gone = join(scratchDir('fleetbench-world-cwd-'), 'gone');
    mkdirSync(gone);
    // A shell enters the directory, removes it, then runs fleetbench there.
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(
        'sh',
        [
          '-c',
          'cd "$1" && rmdir "$1" && exec "$2" "$3" world --no-agents -- true',
          'sh',
          gone,
          process.execPath,
          BIN,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
      );
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.once('error', reject);
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('the current directory no longer exists');
    expect(run.stderr).not.toContain('internal error');
  });
});

/** A world in this process (no CLI), for properties that need many commands in one world. */
async function worldHere(
  mode: WorldModeOption,
  user?: string,
): Promise<{ world: World; close(): Promise<void> }> {
  const clock = new RealClock({ timeScale: 1 });
  const rng = new Rng(1);
  const trace = { write() {} };
  const github = new GitHubEmulator({
    clock,
    rng: rng.fork('github'),
    trace,
    fixtures: generateFixtures({ repos: 1, issuesPerRepo: 0 }, rng.fork('fixtures')),
    acceptUnknownTokens: true,
  });
  const opened = await openWorld({
    dir: join(scratchDir('fleetbench-world-here-'), 'world'),
    mode,
    clock,
    trace,
    github,
    provider: (resolveKey) =>
      new ProviderEmulator({
        clock,
        rng: rng.fork('provider'),
        trace,
        scripts: { scripts: {}, default: 'hello' },
        latency: LATENCY_PROFILES.none,
        resolveKey,
      }),
    token: github.defaultToken,
    user,
  });
  return {
    world: opened,
    async close() {
      await opened.close();
      github.close();
    },
  };
}

/** What a command's first word can be that cannot be run: missing, a directory, not executable. */
function unstartable(dir: string) {
  const plain = join(dir, 'plain.txt');
  writeFileSync(plain, 'not a program\n');
  chmodSync(plain, 0o644);
  return fc.oneof(
    fc.stringMatching(/^[a-z]{1,12}$/).map((name) => ({ argv0: join(dir, 'missing', name), code: 127 })),
    fc.constant({ argv0: dir, code: 126 }),
    fc.constant({ argv0: plain, code: 126 }),
    fc.stringMatching(/^[a-z]{1,12}$/).map((name) => ({ argv0: `fbw-no-such-${name}`, code: 127 })),
  );
}

describe.skipIf(bwrap.skip)('the world layer: any command that cannot start', () => {
  it.each([
    ['sandbox', undefined],
    ['sandbox', root ? '1000' : undefined],
    ['proxy', root ? '1000' : undefined],
  ] as Array<[WorldModeOption, string | undefined]>)(
    '%s (user %s): exits 126 or 127, and the world goes on',
    async (mode, user) => {
      bwrap.require();
      const dir = scratchDir('fleetbench-world-unstartable-');
      // A host user (--user 1000) must be able to look in it: a missing file is then not found
      // (127), not a directory it may not search (126).
      chmodSync(dir, 0o755);
      const here = await worldHere(mode, user);
      try {
        await fc.assert(
          fc.asyncProperty(unstartable(dir), async ({ argv0, code }) => {
            const child = await here.world.spawn({
              argv: [argv0, 'an argument'],
              cwd: dir,
              env: here.world.env({ PATH: '/usr/bin:/bin' }),
              detached: true,
              stdout: 'ignore',
              stderr: 'ignore',
            });
            const status = await child.exited;
            expect(status.code).toBe(code);
            // After it, the world still starts a command.
            const next = await here.world.spawn({
              argv: ['true'],
              cwd: dir,
              env: here.world.env({ PATH: '/usr/bin:/bin' }),
              detached: true,
              stdout: 'ignore',
              stderr: 'ignore',
            });
            expect((await next.exited).code).toBe(0);
          }),
          { numRuns: 12 },
        );
      } finally {
        await here.close();
      }
    },
  );
});

describe.skipIf(proxyWorld.skip)(
  'fleetbench world: what the command leaves running, outside a sandbox',
  () => {
    it('needs what a proxy world needs', () => proxyWorld.require());

    it('is ended with the world and counted: a setsid daemon and a child that ignores SIGTERM (they ran on)', async () => {
      // A duration no other process has: how the two are found by their command line.
      const marker = `.${process.pid}${Date.now() % 100_000}`;
      const run = await world(
        ['--mode', 'proxy', '--no-agents'],
        [
          'sh',
          '-c',
          `setsid sleep 1000${marker} & (trap "" TERM HUP; exec sleep 1001${marker}) & echo started`,
        ],
      );
      expect(run.code, run.stderr).toBe(0);
      const survivors = readdirSync('/proc')
        .filter((name) => /^\d+$/.test(name))
        .map(Number)
        .filter((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false;
          }
        });
      for (const pid of survivors) process.kill(pid, 'SIGKILL');
      expect(survivors).toEqual([]);
      const stopped = run.records.find((r) => r.name === 'world.stopped') as {
        data?: { leftoversKilled?: number };
      };
      expect(stopped?.data?.leftoversKilled).toBe(2);
    });
  },
);

describe('fleetbench world: an --out it cannot make', () => {
  it('under /proc: exit 2 naming it, at once (it spun at full CPU for ever, deaf to SIGTERM)', async () => {
    const started = performance.now();
    const out = `/proc/fleetbench-nope-${process.pid}`;
    const run = await runCliProcess(['world', '--mode', 'env', '--no-agents', '--out', out, '--', 'true'], {
      timeoutMs: 30_000,
    });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`cannot write ${out}`);
    expect(performance.now() - started).toBeLessThan(25_000);
  });
});
