/**
 * `ready: {github: true}` after a restart is the new start's first GitHub call, not an agent's
 * (docs/command-target.md, "The configuration"). The control plane here (a shell script) starts
 * the real codex detached (setsid), so it outlives a hard restart, and codex's script calls
 * `gh api rate_limit` again and again with the token its launcher gave it; the new start takes
 * 4 s before its own first call. The agent's calls during the outage made fleetbench call the new
 * start ready at once. `fleetbench run` as a process, the world's sandbox and the real codex:
 * off CI, skipped with one line when either is missing.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { agentClisPresent, systemTool } from './helpers/tools.ts';

const ci = Boolean(process.env.CI);
const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

type Line = {
  kind: string;
  name?: string;
  t: number;
  dur?: number;
  route?: string;
  labels?: Record<string, unknown>;
};

const CONTROL_PLANE = `
if [ ! -f "$CP_STATE/first" ]; then
  touch "$CP_STATE/first"
  # Its agent, in a session of its own: a kill of the control plane's group leaves it running.
  # A home of its own: its login shell reads nothing of the user's.
  HOME="$CP_STATE" setsid codex exec --json --skip-git-repo-check --sandbox danger-full-access "keep calling" </dev/null >"$CP_STATE/agent.log" 2>&1 &
  sleep 1
else
  sleep 4
fi
gh api user >/dev/null
while true; do sleep 1; done
`;

const SCRIPTS = `
default: caller
scripts:
  caller:
    turns:
      - commands: ["for i in $(seq 1 40); do gh api rate_limit >/dev/null; sleep 0.4; done"]
        final: done
`;

const SCENARIO = `
name: ready-github-under-test
duration: 20s
topology: { owner: fleetbench }
sessions: { count: 1 }
provider: { scripts: scripts.yaml }
target:
  kind: command
  start: sh {{here}}/cp.sh
  env: { CP_STATE: '{{state}}' }
  ready: { github: true }
  work: { issue: { labels: [agent] } }
faults:
  - { type: restart, kind: hard, at: 6s }
`;

function run(dir: string): Promise<{ code: number | null; stderr: string; records: Line[] }> {
  writeFileSync(join(dir, 'cp.sh'), CONTROL_PLANE);
  writeFileSync(join(dir, 'scripts.yaml'), SCRIPTS);
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'run', 'scenario.yaml', '--out', 'out'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, NO_COLOR: '1' },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      const records = readFileSync(join(dir, 'out', 'trace.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Line);
      resolve({ code, stderr, records });
    });
  });
}

describe.skipIf((!agentClisPresent(undefined, { quick: true }) || bwrap.skip) && !ci)(
  'the command target: ready by its first GitHub call',
  () => {
    it('after a restart, waits for the new start’s own call: an orphaned agent’s calls during the outage do not make it ready', {
      timeout: 200_000,
    }, async () => {
      bwrap.require();
      const dir = scratchDir('fleetbench-ready-github-');
      const result = await run(dir);
      expect(result.code, result.stderr).toBe(0);
      const restart = result.records.find((r) => r.name === 'controlplane.restart')!;
      const boot = result.records.find((r) => r.name === 'controlplane.boot' && r.labels?.reason === 'hard')!;
      const readyAt = boot.t + boot.dur!;
      // The agent did call GitHub while the control plane was down (the case under test).
      const agentCalls = result.records.filter(
        (r) => r.kind === 'api' && r.route === '/rate_limit' && r.t > restart.t && r.t < readyAt,
      );
      expect(agentCalls.length, 'an orphaned agent’s call during the outage').toBeGreaterThan(0);
      // The new start sleeps 4 s before its first call: its boot cannot be shorter.
      expect(boot.dur).toBeGreaterThanOrEqual(4_000);
    });
  },
);
