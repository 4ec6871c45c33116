/**
 * The edges of a real world (docs/analysis.md#edges-any-control-plane-from-its-traffic): a command
 * run by `fleetbench world --mode sandbox` (the CLI as a process) that calls GitHub with curl,
 * asks a model through the official OpenAI SDK with no base URL (a client outside the launchers),
 * starts the real codex by name (an agent behind its launcher, no session: the command's own) and
 * tries a host outside the world. Then `fleetbench analyze` of the trace it wrote: every call and
 * request attributed, the agent's boot from its spawn to its first request fed to agent_boot, the
 * blocked attempt listed with the process that tried. Needs bwrap (Debian package bubblewrap),
 * curl and the agent CLIs (`fleetbench targets install agents`): skipped with one line without
 * them, required under CI.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Analysis } from '../src/analyze/schema.ts';
import { BIN, cli } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { agentClisPresent, systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const curl = systemTool('curl', ['--version'], 'curl');
const require = createRequire(import.meta.url);

const skip = (bwrap.skip || curl.skip || !agentClisPresent()) && !process.env.CI;

/** `fleetbench world --mode sandbox --out DIR -- sh -c SCRIPT` as a process: its exit code. */
function world(
  out: string,
  script: string,
  timeoutMs: number,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, 'world', '--mode', 'sandbox', '--out', out, '--', 'sh', '-c', script],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe.skipIf(skip)('edges of a real world: a command, an SDK, a real agent, a refused host', () => {
  it('attributes every call and request, times the agent from its spawn, lists what was refused', async () => {
    bwrap.require();
    curl.require();
    const dir = scratchDir('fleetbench-edges-world-');
    const sdk = join(dir, 'sdk.mjs');
    writeFileSync(
      sdk,
      `import OpenAI from ${JSON.stringify(require.resolve('openai'))};
const r = await new OpenAI({ apiKey: 'sk-anything' }).responses.create({ model: 'gpt-5.5', input: 'hello' });
console.log(r.status);
`,
    );
    const work = join(dir, 'work');
    const script = [
      `curl -sf https://api.github.com/repos/fleetbench/repo-1/issues -o /dev/null`,
      `node ${sdk}`,
      `curl -s -m 5 https://example.com -o /dev/null || true`,
      `mkdir -p ${work} && cd ${work} && codex exec --skip-git-repo-check 'say hello' > /dev/null 2>&1`,
    ].join(' && ');
    const out = join(dir, 'out');
    const run = await world(out, script, 240_000);
    expect(run.code, run.stderr).toBe(0);
    const trace = join(out, 'trace.jsonl');

    const analysed = await cli(['analyze', trace, '--json']);
    expect(analysed.code, analysed.stderr).toBe(0);
    const a = JSON.parse(analysed.stdout) as Analysis;
    const e = a.edges!;
    expect(e.world.mode).toBe('sandbox');
    // curl's call carries no session: the command's own.
    expect(e.attribution.github).toMatchObject({ calls: 1, attributed: 0, overhead: 1 });
    // The SDK outside the launchers, codex behind its launcher with no session: its own agent.
    const m = e.attribution.model;
    expect(m.outside.requests).toBe(1);
    expect(m.controlPlane.requests).toBeGreaterThanOrEqual(1);
    expect(m.sessions.requests + m.unidentified.requests).toBe(0);
    expect(m.requests).toBe(a.provider!.requests);
    expect(e.spawns.count).toBe(1);
    const [codex] = e.spawns.list;
    expect(codex).toMatchObject({ spawn: 'a1', agent: 'codex', session: null, cwd: work });
    expect(codex!.command).toContain('exec --skip-git-repo-check');
    expect(codex!.firstRequestAtMs!).toBeGreaterThanOrEqual(codex!.startedAtMs);
    expect(codex!.bootMs!).toBeCloseTo(codex!.firstRequestAtMs! - codex!.startedAtMs, 2);
    expect(codex!.exitedAtMs).not.toBeNull();
    expect(a.speed!.metrics.agent_boot.groups).toEqual([
      expect.objectContaining({ labels: { adapter: 'codex', start: 'unknown' }, values: [codex!.bootMs] }),
    ]);
    const refused = e.blocked.byHost.find((h) => h.host === 'example.com');
    expect(refused).toMatchObject({ via: 'dns' });
    expect(refused!.processes.some((p) => p.startsWith('curl') && p.includes('https://example.com'))).toBe(
      true,
    );
    expect(e.blocked.attempts).toBeGreaterThanOrEqual(e.blocked.recorded);
    // No work was created (no command target here): nothing per task, no active window.
    expect(e.activeWindow).toBeNull();
    expect(e.costPerTask.completed).toBe(0);

    const shown = await cli(['analyze', trace]);
    expect(shown.stdout).toMatch(
      /▸ Blocked attempts \(refused by the world\)\n.*\n.*\n\s+dns\s+example\.com\s+–\s+\d+\s+curl/,
    );
    expect(shown.stdout).toMatch(
      /agent_boot\s+agent\.spawn \(process start\)\s+the spawn's first model request\s+1/,
    );
  }, 300_000);
});
