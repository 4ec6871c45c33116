/**
 * What crosses the world's edge is fleetbench's to attribute, never the command's to claim
 * (docs/command-target.md, "Attribution with no adapter"):
 * - a control plane that sends fleetbench's own attribution headers (`x-fleetbench-session`,
 *   `-source`) on its calls does not move them out of its overhead (a session that never
 *   completes, or the harness's share, would have taken them out of cost per task);
 * - a work command's GitHub calls are the handover's (its token of its own, `source: harness`):
 *   neither a session's, nor the control plane's overhead, nor the control plane's first call
 *   for `ready: {github: true}` while it is down after a restart.
 * `fleetbench run` as a process, the real clock, the world's sandbox (bwrap: Debian package
 * bubblewrap; off CI its absence skips the suite with one line).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveAgentsInstall } from '../src/agents/index.ts';
import { type CliProcessRun, runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

/** The agent CLIs (the launchers' test needs a spawn list); required under CI, as .ci/run installs them. */
function agentsInstalled(): boolean {
  try {
    resolveAgentsInstall(undefined, undefined, process.env, { quick: true });
    return true;
  } catch (error) {
    if (process.env.CI) throw error;
    process.stderr.write(
      `skipped: needs the agent CLIs (fleetbench targets install agents): ${(error as Error).message}\n`,
    );
    return false;
  }
}

type Run = CliProcessRun & { out: string };

async function run(dir: string, files: Record<string, string>): Promise<Run> {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const out = join(dir, 'out');
  const result = await runCliProcess(['run', 'scenario.yaml', '--out', 'out'], {
    cwd: dir,
    traceDir: out,
    timeoutMs: 180_000,
  });
  return { ...result, out };
}

type Edges = {
  attribution: {
    github: {
      calls: number;
      overhead: number;
      attributed: number;
      handover?: { calls: number; points: number; writes: number };
      unserved?: { calls: number; byPath: Record<string, number> };
    };
  };
};
const warningsOf = (r: Run): string[] =>
  (JSON.parse(readFileSync(join(r.out, 'summary.json'), 'utf8')) as { analysis: { warnings: string[] } })
    .analysis.warnings;
const edgesOf = (r: Run): Edges =>
  (JSON.parse(readFileSync(join(r.out, 'summary.json'), 'utf8')) as { analysis: { edges: Edges } }).analysis
    .edges;

/** GitHub calls from inside the world with node's fetch: `call(path, headers)`. */
const CALL = `
const call = (path, extra = {}) =>
  fetch('https://api.github.com' + path, {
    headers: { authorization: 'token ' + process.env.GH_TOKEN, 'user-agent': 'edge-trust', ...extra },
  }).then((r) => r.text());
`;

describe.skipIf(bwrap.skip)(
  'the command target: what crosses the edge is attributed by fleetbench',
  {
    timeout: 200_000,
  },
  () => {
    it('a control plane’s own x-fleetbench-session and -source headers do not take its calls out of its overhead', async () => {
      bwrap.require();
      const dir = scratchDir('fleetbench-edge-trust-');
      const r = await run(dir, {
        'cp.mjs': `${CALL}
console.log('cp ready');
for (let i = 0; i < 6; i++) {
  await call('/rate_limit', { 'x-fleetbench-session': 'ghost', 'x-fleetbench-source': 'harness' });
  await call('/user', { 'x-fleetbench-session': 's-0001' });
}
// A route the emulator does not serve: said beside the verdict.
for (let i = 1; i <= 3; i++) await call('/repos/fleetbench/repo-1/issues/' + i + '/reactions/x');
// Nor a GraphQL field its schema lacks.
await fetch('https://api.github.com/graphql', {
  method: 'POST',
  headers: { authorization: 'token ' + process.env.GH_TOKEN, 'user-agent': 'edge-trust' },
  body: JSON.stringify({ query: 'mutation { pinIssue(input: {issueId: "x"}) { issue { id } } }' }),
}).then((r) => r.text());
setInterval(() => {}, 1000);
`,
        'scenario.yaml': `
name: edge-trust-headers
duration: 5s
seed: 3
topology: { owner: fleetbench }
sessions: { count: 1 }
target:
  kind: command
  start: node {{here}}/cp.mjs
  ready: { log: cp ready }
  work: { issue: { labels: [agent] } }
  agents: none
`,
      });
      expect(r.code, r.stderr).toBe(0);
      const claimed = r.records.filter(
        (x) => x.kind === 'api' && (x.route === '/rate_limit' || x.route === '/user'),
      );
      expect(claimed.length).toBe(12);
      for (const call of claimed) {
        expect(call.session, `${call.route}: the session it claimed`).toBeUndefined();
        expect(call.source, `${call.route}: the source it claimed`).toBeUndefined();
      }
      expect(edgesOf(r).attribution.github.overhead).toBeGreaterThanOrEqual(12);
      // Calls to a path no route serves: counted by route shape, and a warning names them.
      expect(edgesOf(r).attribution.github.unserved).toEqual({
        calls: 4,
        byPath: { 'GET /repos/fleetbench/repo-1/issues/{n}/reactions/x': 3, 'GraphQL Mutation.pinIssue': 1 },
      });
      expect(warningsOf(r)).toContainEqual(
        expect.stringMatching(
          /^4 GitHub call\(s\) to paths the emulator serves no route for \(answered 404\) or GraphQL fields its schema lacks: GET \/repos\/fleetbench\/repo-1\/issues\/\{n\}\/reactions\/x × 3, GraphQL Mutation\.pinIssue × 1\./,
        ),
      );
    });

    it('a work command’s GitHub calls are the handover’s: not ready for the control plane after a restart, not its overhead', async () => {
      bwrap.require();
      const dir = scratchDir('fleetbench-edge-trust-');
      const r = await run(dir, {
        // The second start takes 4 s before its own first GitHub call.
        'cp.mjs': `${CALL}
import { existsSync, writeFileSync } from 'node:fs';
const mark = process.env.CP_STATE + '/started';
if (existsSync(mark)) await new Promise((ok) => setTimeout(ok, 4000));
writeFileSync(mark, '');
await call('/user');
setInterval(() => {}, 1000);
`,
        // Each piece of work is handed over by a command that calls GitHub as the user would.
        'work.mjs': `${CALL}
await call('/rate_limit');
await call('/repos/fleetbench/repo-1/issues?per_page=1');
`,
        'scenario.yaml': `
name: edge-trust-work
duration: 12s
seed: 3
topology: { owner: fleetbench }
sessions: { count: 10 }
executors:
  - type: fixed
    count: 10
    spawn-rate: 1
target:
  kind: command
  start: node {{here}}/cp.mjs
  env: { CP_STATE: '{{state}}' }
  ready: { github: true }
  work: { command: [node, '{{here}}/work.mjs'] }
  agents: none
faults:
  - { type: restart, kind: hard, at: 3s }
`,
      });
      expect(r.code, r.stderr).toBe(0);
      const restart = r.records.find((x) => x.name === 'controlplane.restart');
      const boot = r.records.find((x) => x.name === 'controlplane.boot' && x.labels?.reason === 'hard');
      expect(restart && boot, 'a restart and its boot').toBeTruthy();
      const readyAt = (boot?.t as number) + (boot?.dur as number);
      const handover = r.records.filter((x) => x.kind === 'api' && x.route === '/rate_limit');
      // Work was handed over while the control plane was down (the case under test).
      expect(
        handover.filter((x) => (x.t as number) > (restart?.t as number) && (x.t as number) < readyAt).length,
        'a work command’s call during the outage',
      ).toBeGreaterThan(0);
      // The new start waits 4 s before its first call: its boot cannot be shorter.
      expect(boot?.dur).toBeGreaterThanOrEqual(4_000);
      for (const call of handover) expect(call.source).toBe('harness');
      const github = edgesOf(r).attribution.github;
      expect(github.handover?.calls).toBe(
        r.records.filter((x) => x.kind === 'api' && x.source === 'harness').length,
      );
      expect(github.handover?.calls).toBeGreaterThanOrEqual(2 * handover.length);
      // The control plane's own calls: its two starts' /user, and nothing of the handover.
      expect(github.overhead).toBe(r.records.filter((x) => x.kind === 'api' && x.route === '/user').length);
    });

    it.skipIf(!bwrap.skip && !agentsInstalled())(
      'a credential the control plane was not given (the handover’s, a spawn’s, its own pid written into the spawn list) leaves its calls its own',
      async () => {
        bwrap.require();
        const dir = scratchDir('fleetbench-edge-trust-');
        const r = await run(dir, {
          'cp.mjs': `
import { appendFileSync, readFileSync } from 'node:fs';
import { execSync, spawn } from 'node:child_process';
const tag = process.env.FLEETBENCH_WORLD;
const worldToken = process.env.FLEETBENCH_WORLD_TOKEN;
const as = (token, path) =>
  fetch('https://api.github.com' + path, { headers: { authorization: 'token ' + token, 'user-agent': 'forger' } })
    .then((r) => r.text());
const model = (key) =>
  fetch('https://api.openai.com/v1/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-5', messages: [{ role: 'user', content: 'hi' }] }),
  }).then((r) => r.text());
// A real agent, spawned through its launcher and gone: its pid names a spawn.
const probe = spawn('codex', ['--version'], { stdio: 'ignore' });
const agentPid = probe.pid;
await new Promise((ok) => probe.once('exit', ok));
console.log('cp ready');
// 1. the handover's token; 2. a spawn's token no spawn holds; 3. the probe's own token and key.
for (let i = 0; i < 3; i++) await as(worldToken + '_work', '/user');
for (let i = 0; i < 3; i++) await as('fbwgh-' + tag + '-1', '/user');
for (let i = 0; i < 3; i++) await as('fbwgh-' + tag + '-' + agentPid, '/user');
for (let i = 0; i < 2; i++) await model('fbw-' + tag + '-' + agentPid);
// 4. itself written into the spawn list (its path is in the launcher on PATH), then its own token.
const launcher = readFileSync(execSync('command -v codex', { shell: '/bin/sh' }).toString().trim(), 'utf8');
const spool = launcher.split("'").find((word) => word.endsWith('/spawns'));
appendFileSync(spool, process.pid + ' codex' + String.fromCharCode(10));
for (let i = 0; i < 3; i++) await as('fbwgh-' + tag + '-' + process.pid, '/user');
// 5. an agent CLI's User-Agent on its own model request: that does not make it an agent.
await fetch('https://api.anthropic.com/v1/messages', {
  method: 'POST',
  headers: {
    'x-api-key': process.env.ANTHROPIC_API_KEY,
    'anthropic-version': '2023-06-01',
    'content-type': 'application/json',
    'user-agent': 'claude-cli/9.9.9 (external, cli)',
  },
  body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }),
}).then((r) => r.text());
for (let i = 0; i < 2; i++) await as('fbwgh-' + tag + '-' + process.pid, '/user');
console.log('cp forged');
setInterval(() => {}, 1000);
`,
          'scenario.yaml': `
name: edge-trust-claims
# Long enough for the control plane's calls on a busy machine: the run ends at its duration.
duration: 20s
seed: 3
topology: { owner: fleetbench }
sessions: { count: 1 }
target:
  kind: command
  start: node {{here}}/cp.mjs
  ready: { log: cp ready }
  work: { issue: { labels: [agent] } }
  agents: real
`,
        });
        expect(r.code, r.stderr).toBe(0);
        expect(readFileSync(join(r.out, 'command.log'), 'utf8')).toContain('cp forged');
        const forged = r.records.filter((x) => x.kind === 'api' && x.route === '/user');
        expect(forged.length).toBe(14);
        for (const call of forged) {
          expect(call.source, 'a claimed source').toBeUndefined();
          expect(call.session, 'a claimed session').toBeUndefined();
        }
        const github = edgesOf(r).attribution.github;
        expect(github.overhead).toBeGreaterThanOrEqual(14);
        expect(github.handover?.calls ?? 0).toBe(0);
        // The model requests made with the probe's key are the control plane's, not the probe's.
        const requests = r.records.filter((x) => x.name === 'provider.request');
        expect(requests.length).toBeGreaterThanOrEqual(3);
        for (const request of requests) expect(request.labels?.spawn, 'a claimed spawn').toBeUndefined();
        // The probe is a spawn; the control plane's own line in the spawn list is not.
        const spawned = r.records.filter((x) => x.name === 'agent.spawn');
        expect(spawned.length).toBe(1);
        expect((spawned[0]?.data as { argv?: string[] } | undefined)?.argv?.[0]).toBe('codex');
        const stopped = r.records.find((x) => x.name === 'world.stopped')?.data as Record<string, number>;
        expect(stopped.spawnsRefused).toBe(1);
        expect(stopped.claimsRefused).toBe(16);
        const refused = r.records.filter((x) => x.name === 'world.claim-refused');
        expect(new Set(refused.map((x) => `${x.labels?.service} ${x.labels?.claim}`))).toEqual(
          new Set(['github work', 'github agent', 'provider agent']),
        );
        for (const record of refused)
          expect((record.data as { argv: string[] }).argv.join(' '), 'the process named').toContain('cp.mjs');
        expect(warningsOf(r)).toContainEqual(expect.stringMatching(/^16 call\(s\) named a credential/));
      },
    );
  },
);
