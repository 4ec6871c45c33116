/**
 * A control plane that is given work and does none of it (here: every model request it makes
 * names a model the provider emulator does not serve, as a user's SDK code pinned to a model
 * fleetbench lacks would). Its GitHub traffic alone passes the scorecard, so the run's warnings
 * must say that no work was done and why the model requests failed (docs/command-target.md,
 * "When nothing was done"). It runs `fleetbench run` as a process on the real clock in the
 * world's sandbox, which needs bwrap (Debian package bubblewrap): off CI its absence skips the
 * suite with one line.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

// The control plane: ready at once, then asks the model host for a plan every 300 ms with a
// model no vendor serves, and never opens a pull request.
const PLANE = `
console.log('cp ready');
for (let i = 0; i < 200; i++) {
  try {
    const res = await fetch('https://api.openai.com/v1/chat/completions', {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'no-such-model-1', messages: [{ role: 'user', content: 'plan' }] }),
    });
    console.log('model answered', res.status);
    await res.text();
  } catch (error) {
    console.log('model request failed', String(error));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
}
`;

describe.skipIf(bwrap.skip)('the command target: a control plane that does no work', () => {
  it('needs bwrap', () => bwrap.require());

  it('says that no work was done and that its model requests were refused (404), beside a scorecard its GitHub traffic passes', () => {
    const dir = scratchDir('fleetbench-command-idle-');
    writeFileSync(join(dir, 'plane.mjs'), PLANE);
    writeFileSync(
      join(dir, 'scenario.yaml'),
      `name: idle
duration: 5s
seed: 4
topology: { owner: fleetbench }
sessions: { count: 2 }
executors:
  - type: fixed
    count: 2
target:
  kind: command
  start: node {{here}}/plane.mjs
  ready: { log: cp ready }
  work: { issue: { labels: [agent] } }
  done: pr_open
  agents: none
  world: { mode: sandbox }
`,
    );
    const out = join(dir, 'out');
    const run = spawnSync(
      process.execPath,
      [BIN, 'run', join(dir, 'scenario.yaml'), '--clock', 'real', '--out', out, '--no-report'],
      { cwd: dir, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 180_000 },
    );
    const said = run.stdout + run.stderr;
    // The control plane did reach the emulator: its requests were answered, 404.
    expect(readFileSync(join(out, 'command.log'), 'utf8')).toContain('model answered 404');
    expect(said).toMatch(/no piece of work was done: 2 given, none reached its done state/);
    expect(said).toMatch(/(\d+) of \1 model requests were refused by the provider emulator: \1 × 404 /);
    const analysis = JSON.parse(
      spawnSync(process.execPath, [BIN, 'analyze', '--json', join(out, 'trace.jsonl')], { encoding: 'utf8' })
        .stdout,
    ) as { edges: { attribution: { model: { refused?: Record<string, number> } } }; warnings: string[] };
    expect(Object.keys(analysis.edges.attribution.model.refused ?? {})).toEqual([
      expect.stringMatching(/^404 /),
    ]);
    expect(analysis.warnings.some((w) => w.startsWith('no piece of work was done'))).toBe(true);
  }, 240_000);
});
