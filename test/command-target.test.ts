/**
 * `--target command`: a control plane fleetbench has no adapter for (test/fixtures/command-cp/
 * loop.mjs, which knows only api.github.com, github.com and api.openai.com) measured from a
 * scenario file alone, end to end through `fleetbench run` as a process: its work arrives as
 * GitHub issues or through its own HTTP API, a hard restart kills its process group and starts it
 * again with its state, a control plane that dies fails the run (exit 3), and its calls are
 * attributed by what they name. The sandbox needs bwrap (Debian package bubblewrap).
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIN } from './helpers/cli.ts';
import { type CliProcessRun, runCliProcess, traceLines } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { agentClisPresent, systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const LOOP = fileURLToPath(new URL('./fixtures/command-cp/loop.mjs', import.meta.url));
const ci = Boolean(process.env.CI);

type Run = CliProcessRun & { dir: string };

async function run(
  scenario: string,
  args: string[] = [],
  timeoutMs = 240_000,
  dir = scratchDir('fleetbench-command-'),
): Promise<Run> {
  const file = join(dir, 'scenario.yaml');
  writeFileSync(file, scenario);
  const out = join(dir, 'out');
  // `--out out`, relative, as a user types it: the world's paths must not depend on it.
  const result = await runCliProcess(['run', file, '--out', 'out', ...args], {
    cwd: dir,
    timeoutMs,
    traceDir: out,
  });
  return { ...result, dir: out };
}

const events = (r: Run, name: string) => r.records.filter((x) => x.kind === 'event' && x.name === name);

function scenario(options: {
  sessions?: number;
  duration?: string;
  env?: Record<string, string>;
  faults?: string;
  ready?: string;
  work?: string;
  provider?: string;
}): string {
  const env = {
    LOOP_STATE: '{{state}}/loop.json',
    LOOP_AGENT: 'none',
    LOOP_INTERVAL_MS: '300',
    ...options.env,
  };
  return `
name: loop-under-test
duration: ${options.duration ?? '25s'}
seed: 3
topology: { owner: fleetbench }
sessions: { count: ${options.sessions ?? 2} }
executors:
  - type: fixed
    count: ${options.sessions ?? 2}
target:
  kind: command
  start: node ${LOOP}
  env:
${Object.entries(env)
  .map(([k, v]) => `    ${k}: '${v}'`)
  .join('\n')}
  ready: ${options.ready ?? '{ log: loop ready }'}
  work: ${options.work ?? '{ issue: { labels: [agent] } }'}
  agents: none
${options.faults ?? ''}
${options.provider ?? ''}
`;
}

// Real-clock runs of 30 s or more through the CLI: on a busy machine the default minute is short.
describe.skipIf(bwrap.skip)('--target command', { timeout: 240_000 }, () => {
  it('measures a control plane from its traffic: work as issues, a hard restart, calls attributed by content', async () => {
    bwrap.require();
    // A scripts file of the user's whose `default` names the script: no `provider.script` needed.
    const scripts = join(scratchDir('fleetbench-command-scripts-'), 'scripts.yaml');
    writeFileSync(scripts, 'default: short\nscripts:\n  short:\n    turns:\n      - final: Done.\n');
    const r = await run(
      scenario({
        sessions: 2,
        duration: '30s',
        faults: 'faults:\n  - type: restart\n    kind: hard\n    at: 2s',
        provider: `provider: { scripts: ${scripts} }`,
      }),
    );
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(events(r, 'work.created').map((e) => e.data?.issue)).toEqual([1, 2]);
    // Each session's pull request was seen and the session reached its done state.
    const states = events(r, 'session.state');
    for (const session of ['s-0001', 's-0002'])
      expect(states.some((e) => e.session === session && e.labels?.to === 'pr_open')).toBe(true);
    // The restart: a kill, a new process, ready again; the outage is kill → ready.
    const restart = events(r, 'controlplane.restart')[0];
    const ready = events(r, 'controlplane.ready').filter((e) => e.labels?.reason === 'hard')[0];
    expect(restart?.labels?.kind).toBe('hard');
    expect(ready?.t).toBeGreaterThan(restart?.t as number);
    const starts = events(r, 'controlplane.start');
    expect(starts.map((e) => e.labels?.reason)).toEqual(['start', 'hard']);
    expect(starts[0]?.data?.pid).not.toBe(starts[1]?.data?.pid);
    // Attribution: every write on a session's work is that session's; what names no work (the
    // poll of open issues, the repository) is the control plane's own.
    const api = r.records.filter((x) => x.kind === 'api');
    const writes = api.filter((x) => x.method === 'POST');
    expect(writes.length).toBeGreaterThanOrEqual(4);
    for (const write of writes)
      expect(write.session, `${write.method} ${write.route}`).toMatch(/^s-000[12]$/);
    const known = api.filter((x) => x.scope === 'session' || x.scope === 'shared').length;
    expect(known / api.length).toBeGreaterThanOrEqual(0.9);
    expect(
      api.filter((x) => x.route === '/repos/{owner}/{repo}/issues').every((x) => x.scope === 'shared'),
    ).toBe(true);
    // It names no operation, so what it called is shown by route (not "no call carries an operation").
    expect(r.stdout).toMatch(/Calls by route[\s\S]*\/repos\/\{owner\}\/\{repo\}\/issues/);
    expect(r.stdout).not.toContain('no call carries an operation');
    // The model requests the loop made itself (an SDK call, no launcher): outside the launchers.
    const models = r.records.filter((x) => x.kind === 'span' && x.name === 'provider.request');
    expect(models.length).toBeGreaterThanOrEqual(2);
    expect(models.every((x) => x.labels?.spawn === undefined)).toBe(true);
    expect(models.every((x) => x.data?.script === 'short')).toBe(true);
    // Who spent the CPU: the loop's processes (both starts) are the control plane's, not
    // fleetbench's own (the harness share counted them as fleetbench's before).
    const cpu = events(r, 'harness.cpu')[0]?.data?.cpuMs as Record<string, number> | undefined;
    expect(cpu?.controlPlane).toBeGreaterThan(0);
    expect(cpu?.harness).toBeGreaterThan(0);
  });

  it('takes work through the control plane’s own HTTP API inside the world, ready by an HTTP probe, after an untimed setup', async () => {
    bwrap.require();
    const r = await run(
      scenario({
        sessions: 2,
        env: { LOOP_PORT: '3199' },
        ready: '{ http: "http://127.0.0.1:3199/health" }',
        work: `{ setup: "sleep 1.5", http: { url: "http://127.0.0.1:3199/tasks", body: '{"title":"{{title}}"}' } }`,
      }),
    );
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    const created = events(r, 'work.created');
    // Timed at the handover's start, after the setup's 1.5 s (run time starts at ready, the
    // sessions at once): the setup is not in first activity, the request's answer time is data.
    for (const work of created) {
      expect(work.t).toBeGreaterThanOrEqual(1_400);
      expect(work.data?.handoverMs).toEqual(expect.any(Number));
      expect(work.data?.handoverMs as number).toBeGreaterThanOrEqual(0);
    }
    // Both are created at once over HTTP: their records come in the order the answers do.
    expect(created.map((e) => e.data?.alias).sort()).toEqual(['task-1', 'task-2']);
    // The loop filed the issues itself; its pull requests name the task's title: attributed.
    for (const session of ['s-0001', 's-0002'])
      expect(
        events(r, 'session.state').some((e) => e.session === session && e.labels?.to === 'pr_open'),
      ).toBe(true);
  });

  it('fails the run (exit 3) when the control plane dies outside a restart', async () => {
    bwrap.require();
    const r = await run(
      // {{state}} as an argument: the start line shows the directory it was given, not the template.
      scenario({ sessions: 1, duration: '60s', env: { LOOP_EXIT_AFTER_MS: '2500' } }).replace(
        `start: node ${LOOP}`,
        `start: node ${LOOP} {{state}}`,
      ),
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(`command sh -c node ${LOOP} /`);
    expect(r.stderr).not.toContain('{{state}}');
    expect(`${r.stdout}${r.stderr}`).toMatch(/control plane exited during the run \(exit 7\)/);
    expect(events(r, 'controlplane.exited')[0]?.data?.code).toBe(7);
    expect(r.records.at(-1)).toMatchObject({ kind: 'end', reason: 'failed' });
  });

  it("a control plane that dies before it is ready: exit 3 saying so with its exit code and this start's output; a run again in the same --out has a command.log of its own", async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-command-');
    const dies = scenario({
      sessions: 1,
      duration: '20s',
      ready: '{ log: never says this }',
      env: { LOOP_EXIT_AFTER_MS: '300' },
    });
    for (const attempt of [1, 2]) {
      const r = await run(dies, [], 120_000, dir);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(
        'the control plane exited before it was ready (exit 7): loop ready: fleetbench/repo-1, 0 done before',
      );
      expect(r.stderr).not.toContain('during the run (exit');
      expect(events(r, 'controlplane.exited')[0]?.data).toMatchObject({ code: 7, ready: false });
      // One start's output: the first run's is not in the second's log, nor in its message.
      const log = readFileSync(join(r.dir, 'command.log'), 'utf8');
      expect(log.match(/loop ready/g), `run ${attempt}: ${log}`).toHaveLength(1);
    }
  });

  it.each([
    [
      'an unknown template field',
      scenario({ work: '{ issue: { title: "{{nope}}" } }' }),
      'unknown template field {{nope}}',
    ],
    [
      'an unknown template field in the setup',
      scenario({ work: '{ issue: { title: "t" }, setup: "echo {{sesion}}" }' }),
      'unknown template field {{sesion}}',
    ],
    [
      'work sent off the machine',
      scenario({ work: '{ http: { url: "http://example.com/tasks" } }' }),
      'expected http://127.0.0.1',
    ],
    [
      'a ready timeout of 0',
      scenario({}).replace('agents: none', 'agents: none\n  ready-timeout: 0s'),
      'ready-timeout',
    ],
  ])('refuses %s before anything starts (exit 2)', async (_what, text, words) => {
    const r = await run(text, [], 60_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(words);
  });

  it('refuses a command:FILE that is not there, naming it', async () => {
    const r = await run(
      'name: x\nduration: 10s\nsessions: { count: 1 }\n',
      ['--target', 'command:/nonexistent/cp.yaml'],
      60_000,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/nonexistent/cp.yaml');
  });

  it('fails a control plane that never gets ready, within its timeout', async () => {
    bwrap.require();
    const r = await run(
      scenario({ ready: '{ log: "never printed" }' }).replace(
        'agents: none',
        'agents: none\n  ready-timeout: 3s',
      ),
      [],
      120_000,
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('was not ready within 3 s');
  });
});

describe.skipIf((!agentClisPresent(['codex']) || bwrap.skip) && !ci)(
  '--target command with real agents',
  () => {
    it('counts an orphaned agent: the control plane killed from outside, the agent it detached runs on', async () => {
      bwrap.require();
      const text = scenario({
        sessions: 1,
        duration: '90s',
        env: { LOOP_AGENT: 'codex', LOOP_DETACH_AGENTS: '1' },
      })
        .replace('agents: none', 'agents: real')
        .concat('provider: { latency: realistic }\n');
      const dir = scratchDir('fleetbench-command-orphan-');
      const file = join(dir, 'scenario.yaml');
      writeFileSync(file, text);
      const out = join(dir, 'out');
      const child = spawn(process.execPath, [BIN, 'run', file, '--out', out], { stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      // As an operator would: once the agent is at work (its first model request), kill -9 the
      // control plane's process group.
      let killed: number | undefined;
      for (let i = 0; i < 600 && killed === undefined; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const lines = traceLines(out);
        const start = lines.find((x) => x.name === 'controlplane.start');
        if (start && lines.some((x) => x.name === 'provider.request' && x.labels?.spawn !== undefined)) {
          killed = start.data?.pid as number;
          process.kill(-killed, 'SIGKILL');
        }
      }
      expect(killed, 'the agent made a model request in time').toBeDefined();
      expect(await exited).toBe(3);
      const records = traceLines(out);
      const died = records.find((x) => x.name === 'controlplane.exited');
      expect(died?.data?.signal).toBe('SIGKILL');
      const spawn1 = records.find((x) => x.name === 'agent.spawn');
      expect(spawn1?.data?.argv).toEqual(expect.arrayContaining(['codex', 'exec']));
      const exit1 = records.find((x) => x.name === 'agent.exit' && x.labels?.spawn === spawn1?.labels?.spawn);
      // The agent outlived its control plane: still running when it died (its exit came later,
      // at the latest when the run's end took the world down).
      expect(exit1?.t).toBeGreaterThan(died?.t as number);
      const models = records.filter((x) => x.kind === 'span' && x.name === 'provider.request');
      expect(models.length).toBeGreaterThan(0);
      for (const model of models) expect(model.labels?.spawn).toBe(spawn1?.labels?.spawn);
    });
  },
);
