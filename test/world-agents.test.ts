/**
 * The real codex, Claude Code and opencode launched by name inside `fleetbench world` (the CLI as
 * a process, the sandbox): each spawn is recorded with its command line, every model request is
 * attributed to the spawn that made it, Claude Code's `--dangerously-skip-permissions` works when
 * fleetbench is root (the command runs as a mapped non-root user), and none of them dials
 * anything but the world: the world records no refused attempt. Off CI, skipped with one line
 * when the CLIs or bwrap are missing; under CI both are required (.ci/run installs them).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAgentsInstall } from '../src/agents/index.ts';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const ci = Boolean(process.env.CI);
const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

function installed(): boolean {
  try {
    resolveAgentsInstall(undefined, undefined, process.env, { quick: true });
    return true;
  } catch (error) {
    if (!ci)
      process.stderr.write(
        `skipped: needs the agent CLIs (fleetbench targets install agents): ${(error as Error).message}\n`,
      );
    return false;
  }
}

type Line = {
  kind: string;
  name?: string;
  t: number;
  labels?: Record<string, unknown>;
  data?: Record<string, unknown>;
};

function world(
  args: string[],
  script: string,
  cwd: string,
): Promise<{ code: number | null; out: string; records: Line[] }> {
  const out = join(cwd, 'out');
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, 'world', '--mode', 'sandbox', '--out', out, ...args, '--', 'sh', '-c', script],
      {
        cwd,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
    });
    child.stderr.on('data', (chunk) => {
      text += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const records = readFileSync(join(out, 'trace.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Line);
      resolve({ code, out: text, records });
    });
  });
}

describe.skipIf((!installed() || bwrap.skip) && !ci)('the real agent CLIs in the world', () => {
  it('run by name: spawns recorded, every model request its spawn’s, nothing dialled outside', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-agents-');
    const work = join(dir, 'ws');
    mkdirSync(work);
    // Each CLI as a control plane would start it; Claude Code with the flag it refuses as root.
    const script = [
      'git init -q . && id -u > uid.txt',
      'codex exec --json --skip-git-repo-check "say hello" > codex.out 2>&1; echo codex=$?',
      'claude -p "say hello" --output-format json --dangerously-skip-permissions > claude.out 2>&1; echo claude=$?',
      'opencode run "say hello" > opencode.out 2>&1; echo opencode=$?',
    ].join('; ');
    const r = await world(['--script', 'hello'], script, work);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/codex=0/);
    expect(r.out).toMatch(/claude=0/);
    expect(r.out).toMatch(/opencode=0/);
    if (process.getuid?.() === 0) expect(Number(readFileSync(join(work, 'uid.txt'), 'utf8'))).not.toBe(0);
    const spawns = r.records.filter((x) => x.name === 'agent.spawn' && x.data?.probe !== true);
    expect(spawns.map((s) => s.labels?.agent).sort()).toEqual(['claude', 'codex', 'opencode']);
    for (const spawn of spawns)
      expect((spawn.data?.argv as string[] | undefined)?.[0]).toBe(spawn.labels?.agent);
    const models = r.records.filter((x) => x.kind === 'span' && x.name === 'provider.request');
    expect(models.length).toBeGreaterThanOrEqual(3);
    const ids = new Set(spawns.map((s) => s.labels?.spawn));
    for (const model of models) expect(ids.has(model.labels?.spawn), JSON.stringify(model.labels)).toBe(true);
    // Every CLI spoke to the emulator: each spawn made at least one model request.
    for (const id of ids)
      expect(
        models.some((m) => m.labels?.spawn === id && m.labels?.api !== 'first-party'),
        `${id}`,
      ).toBe(true);
    // Claude Code asks Anthropic's own endpoints at start (its settings, its policy) with its
    // key: its spawn's too, recorded apart from the model requests (docs/provider-emulator.md).
    const claude = spawns.find((s) => s.labels?.agent === 'claude')?.labels?.spawn;
    const firstParty = models.filter((m) => m.labels?.api === 'first-party');
    expect(firstParty.map((m) => [m.data?.path, m.labels?.spawn, m.labels?.status]).sort()).toEqual([
      ['/api/claude_code/policy_limits', claude, '200'],
      ['/api/claude_code/settings', claude, '404'],
    ]);
    // Nothing outward: opencode 1.18's npm install at its first turn, which no OPENCODE_DISABLE_*
    // switch stops, goes to the loopback registry its environment names (docs/world.md, "What
    // the CLIs try"), so the world has nothing to refuse.
    expect(r.records.filter((x) => x.name === 'world.blocked')).toEqual([]);
  }, 900_000);

  it('a CLI run from a control plane’s own copy (not through a launcher) is a spawn too, found by its requests', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-adopted-');
    const work = join(dir, 'ws');
    mkdirSync(work);
    // As an agent SDK runs the CLI it bundles: by its path, with the control plane's own key.
    const claude = resolveAgentsInstall(undefined, undefined, process.env, { quick: true }).clis.claude;
    expect(claude, 'Claude Code installed').toBeDefined();
    const command = (claude?.command ?? []).map((word) => `'${word}'`).join(' ');
    const script = `git init -q . && ${command} -p "say hello" --output-format json > claude.out 2>&1; echo claude=$?`;
    const r = await world(['--script', 'hello'], script, work);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/claude=0/);
    const spawns = r.records.filter((x) => x.name === 'agent.spawn');
    expect(spawns.map((s) => [s.labels?.agent, s.data?.adopted])).toEqual([['claude', true]]);
    const id = spawns[0]?.labels?.spawn;
    const models = r.records.filter(
      (x) => x.kind === 'span' && x.name === 'provider.request' && x.labels?.api !== 'first-party',
    );
    expect(models.length).toBeGreaterThanOrEqual(1);
    for (const model of models) expect(model.labels?.spawn, JSON.stringify(model.labels)).toBe(id);
    // Its start is the process's own, before its first request.
    expect(spawns[0]?.t).toBeLessThanOrEqual(Math.min(...models.map((m) => m.t)));
  }, 600_000);

  it('agents try in the world: fleetbench’s own homes reach nothing but its emulator', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-try-');
    const r = await world(
      ['--no-agents'],
      `${process.execPath} ${BIN} agents try --turns 1 --out ${join(dir, 'try')}`,
      dir,
    );
    expect(r.code, r.out).toBe(0);
    expect(r.records.filter((x) => x.name === 'world.blocked')).toEqual([]);
  }, 900_000);
});
