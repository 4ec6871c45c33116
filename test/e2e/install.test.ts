/**
 * `fleetbench targets install` as a process, with a real npm against a loopback registry
 * (test/helpers/npm-registry.ts: tiny stand-ins for the pinned packages, or a registry that
 * never answers so npm waits mid-install):
 *
 * - SIGTERM or SIGINT mid-install stops npm's whole process group and removes the staging
 *   directory (`D.installing-PID`): nothing is left running or on disk, exit 130;
 * - nothing outside `--dir` changes mode (a root-owned 0700 ancestor stayed 0705 before);
 * - only a directory holding fleetbench's own marker counts as an earlier install: one that
 *   merely has a `package.json` named like an install is refused, untouched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AGENT_CLIS, AGENT_PACKAGES } from '../../src/agents/catalog.ts';
import { AGENTS_MARKER } from '../../src/agents/install.ts';
import { BIN } from '../helpers/cli.ts';
import { type NpmRegistryStub, type StubPackage, startNpmRegistryStub } from '../helpers/npm-registry.ts';
import { alive } from '../helpers/serve.ts';
import { scratchDir } from '../helpers/tmp.ts';
import { waitUntil } from '../helpers/wait.ts';

// Open to others, as /tmp is (mkdtemp makes it 0700): the 0700 directories below are the tests'.
const root = scratchDir('fleetbench-install-');
chmodSync(root, 0o755);
const stubs: NpmRegistryStub[] = [];
afterAll(async () => {
  await Promise.all(stubs.map((stub) => stub.close()));
});

/** Stand-ins for the agent CLIs: each prints its pinned version, as the real ones do. */
const AGENT_STANDINS: StubPackage[] = AGENT_CLIS.map((cli) => {
  const pkg = AGENT_PACKAGES[cli];
  const script = pkg.node
    ? `console.log('${cli} ${pkg.version}');\n`
    : `#!/bin/sh\necho '${pkg.version} (${pkg.title})'\n`;
  return { name: pkg.name, version: pkg.version, files: { [pkg.bin]: script }, executable: [pkg.bin] };
});

async function registry(options: { hold?: boolean } = {}): Promise<NpmRegistryStub> {
  const stub = await startNpmRegistryStub(AGENT_STANDINS, options);
  stubs.push(stub);
  return stub;
}

interface Install {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function install(args: string[], env: NodeJS.ProcessEnv): Install {
  const child = spawn(process.execPath, [BIN, 'targets', 'install', ...args], {
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  void exited.then(() => clearTimeout(timer));
  return { child, stderr: () => stderr, exited };
}

/** Processes whose working directory is `dir` (npm runs in the staging directory). */
function processesIn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Every live process of a process group. */
function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields[0] is the state, fields[2] the process group; a zombie has already exited.
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') members.push(Number(entry));
    } catch {
      // gone
    }
  }
  return members;
}

function pgidOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

const isRoot = process.getuid?.() === 0;
const linux = process.platform === 'linux';

describe.skipIf(!linux)('an interrupted install (a real npm, held mid-install by the registry)', () => {
  for (const [target, signal] of [
    ['agents', 'SIGTERM'],
    ['paperclip', 'SIGINT'],
  ] as const) {
    it(`${signal} to targets install ${target}: npm's process group is stopped, D.installing-PID removed, exit 130`, async () => {
      const stub = await registry({ hold: true });
      const dir = join(root, `interrupted-${target}`);
      const run = install([target, '--dir', dir], stub.env);
      const staging = `${dir}.installing-${run.child.pid}`;
      // npm is running in the staging directory and has asked the registry for a package.
      let npm: number[] = [];
      await waitUntil(
        `npm running in ${staging}`,
        () => {
          npm = processesIn(staging);
          return npm.length > 0 && stub.requests.length > 0;
        },
        { timeoutMs: 60_000 },
      );
      const groups = [...new Set(npm.map(pgidOf))];
      run.child.kill(signal);
      const { code } = await run.exited;
      expect(code, run.stderr()).toBe(130);
      expect(run.stderr()).toMatch(/stopping npm/);
      // Nothing of npm is left running, and nothing of the install on disk.
      await waitUntil(
        `npm (${npm.join(', ')}) gone`,
        () => npm.every((pid) => !alive(pid)) && groups.every((g) => groupMembers(g).length === 0),
        { timeoutMs: 10_000 },
      );
      expect(existsSync(staging)).toBe(false);
      expect(existsSync(dir)).toBe(false);
      expect(readdirSync(root).filter((name) => name.startsWith(`interrupted-${target}`))).toEqual([]);
    });
  }
});

describe('an install into --dir (a real npm against a loopback registry of stand-ins)', () => {
  it('completes and writes its marker; a root-owned 0700 ancestor keeps its mode; a second install replaces the first', async () => {
    const stub = await registry();
    const privateDir = join(root, 'PRIVATE');
    mkdirSync(privateDir, { mode: 0o700 });
    chmodSync(privateDir, 0o700);
    const dir = join(privateDir, 'inner', 'D');
    const first = install(['agents', '--dir', dir], stub.env);
    const done = await first.exited;
    expect(done.code, first.stderr()).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, AGENTS_MARKER.file), 'utf8')).kind).toBe('agents');
    // Nothing outside --dir changed mode (as root, every root-owned ancestor got o+rx).
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);
    if (isRoot)
      expect(first.stderr()).toMatch(/PRIVATE \(0700\) keeps other users out: Paperclip's real agents/);
    // The marker makes it an earlier install of fleetbench's: installed over, whole.
    writeFileSync(join(dir, 'left-by-the-first.txt'), 'x');
    const second = install(['agents', '--dir', dir], stub.env);
    expect((await second.exited).code, second.stderr()).toBe(0);
    expect(existsSync(join(dir, 'left-by-the-first.txt'))).toBe(false);
    expect(existsSync(join(dir, AGENTS_MARKER.file))).toBe(true);
  });

  it('a directory that only looks like an install (package.json named fleetbench-agents, notes.txt) is refused, untouched', async () => {
    const stub = await registry();
    const dir = join(root, 'looks-like-one');
    mkdirSync(dir);
    const manifest = '{"name":"fleetbench-agents"}\n';
    writeFileSync(join(dir, 'package.json'), manifest);
    writeFileSync(join(dir, 'notes.txt'), 'my notes\n');
    const run = install(['agents', '--dir', dir], stub.env);
    expect((await run.exited).code, run.stderr()).toBe(2);
    expect(run.stderr()).toMatch(/holds no install of fleetbench's/);
    expect(readFileSync(join(dir, 'package.json'), 'utf8')).toBe(manifest);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('my notes\n');
    expect(stub.requests).toEqual([]);
  });

  it.skipIf(!isRoot)(
    'as root, Paperclip into a directory its server’s user cannot reach is refused before npm runs, naming the ancestor, modes unchanged',
    async () => {
      const stub = await registry();
      const privateDir = join(root, 'PRIVATE-pc');
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const dir = join(privateDir, 'inner', 'P');
      const run = install(['paperclip', '--dir', dir], stub.env);
      expect((await run.exited).code, run.stderr()).toBe(2);
      expect(run.stderr()).toContain(`${privateDir} (0700)`);
      expect(statSync(privateDir).mode & 0o777).toBe(0o700);
      expect(existsSync(dirname(dir))).toBe(false);
      expect(stub.requests).toEqual([]);
    },
  );
});
