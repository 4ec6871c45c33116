/**
 * What a terminal user expects of the CLI, through the real CLI: colour only on a terminal
 * (a real pseudo-terminal from util-linux `script`), never with NO_COLOR or --no-color; --quiet;
 * `fleetbench scenarios`; live runs in a directory of their own.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/main.ts';
import { CommandIo } from '../src/cli/output.ts';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const dir = scratchDir('fleetbench-habits-');
const SAMPLE = new URL('../examples/sample-trace.jsonl', import.meta.url).pathname;
const ESC = '\u001b[';

/** Runs the CLI with stdout on a pseudo-terminal; returns what the terminal showed. */
function onTerminal(args: string[], env: Record<string, string | undefined> = {}): string {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a}'`).join(' ');
  const r = spawnSync('script', ['-qefc', command, '/dev/null'], {
    encoding: 'utf8',
    env: {
      ...process.env,
      NO_COLOR: undefined,
      FORCE_COLOR: undefined,
      CI: undefined,
      TERM: 'xterm',
      ...env,
    },
    timeout: 60_000,
  });
  return r.stdout;
}

const script = systemTool('/usr/bin/script', ['--version'], 'util-linux');

describe('CLI habits', () => {
  describe.skipIf(script.skip)('colour', () => {
    beforeAll(() => script.require());
    const check = ['check', SAMPLE, '--budgets', 'track-b'];
    it('colours verdicts on a terminal', () => {
      const shown = onTerminal(check);
      expect(shown).toContain('✓ pass');
      expect(shown).toContain(`${ESC}32m✓ pass`);
    });
    it('not with NO_COLOR, not with --no-color, not into a pipe', async () => {
      expect(onTerminal(check, { NO_COLOR: '1' })).not.toContain(ESC);
      const plain = onTerminal([...check, '--no-color']);
      expect(plain).toContain('✓ pass');
      expect(plain).not.toContain(ESC);
      const piped = await cli(check, { env: { NO_COLOR: undefined } });
      expect(piped.stdout).toContain('✓ pass');
      expect(piped.stdout).not.toContain(ESC);
    });
  });

  it('--quiet: no progress on stderr, the results still on stdout', async () => {
    const loud = await cli(['matrix', '--cells', 'S2-T1-1', '--out', join(dir, 'loud')]);
    expect(loud.code, loud.stderr).toBe(0);
    expect(loud.stderr).toMatch(/S2-T1-1 done in/);
    const quiet = await cli(['matrix', '--cells', 'S2-T1-1', '--out', join(dir, 'quiet'), '--quiet']);
    expect(quiet.code, quiet.stderr).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout).toContain('S2-T1-1');
  });

  it('a mistyped command: refused with the nearest name, exit 2, no command loaded for it', async () => {
    const typo = await cli(['-q', 'rnu', 'S2-T1-1']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("unknown command 'rnu'");
    expect(typo.stderr).toContain('Did you mean run?');
    expect((await cli(['zzzz'])).stderr).toContain("unknown command 'zzzz'");
    // The program built for a word that is no command holds the names alone: `run` with none of
    // its options or its description (registering them means loading every command's module).
    const io = new CommandIo({ stdout: process.stdout, stderr: process.stderr, env: {} });
    const forTypo = await buildProgram(io, ['rnu']);
    const run = forTypo.commands.find((c) => c.name() === 'run');
    expect(run).toBeDefined();
    expect(run!.options).toHaveLength(0);
    expect(run!.description()).toBe('');
    // A real command is still built whole.
    const forRun = await buildProgram(io, ['run']);
    expect(forRun.commands.find((c) => c.name() === 'run')!.options.length).toBeGreaterThan(5);
  });

  it('fleetbench scenarios: every built-in and cell, one line each', async () => {
    const r = await cli(['scenarios']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}chaos-codex-c4 +Chaos wave, codex, 4 concurrent runs$/m);
    expect(r.stdout).toMatch(/^ {2}S2 {2}Quiet steady state: S2-T1-1 S2-T1-5 .* S2-T2-50$/m);
    const json = JSON.parse((await cli(['scenarios', '--json'])).stdout) as { cells: unknown[] };
    expect(json.cells).toHaveLength(54);
  });

  it('a live run gets a directory naming its clock and target', async () => {
    const r = await cli(
      [
        'run',
        'S2-T1-1',
        '--clock',
        'real',
        '--set',
        'duration=1s',
        '--no-progress',
        '--no-report',
        '--metrics-linger',
        '0',
      ],
      { cwd: dir },
    );
    expect(r.code, r.stderr).not.toBe(2);
    const runs = readdirSync(join(dir, 'fleetbench-out', 'runs'));
    expect(runs).toContain('S2-T1-1--real-reference--duration=1s');
    expect(existsSync(join(dir, 'fleetbench-out', 'runs', 'S2-T1-1'))).toBe(false);
  });
});
