/**
 * `fleetbench world -- COMMAND` as a user runs it (the CLI as a process): unchanged clients
 * (Octokit with no base URL, the official OpenAI and Anthropic SDKs with none, gh, curl) reach
 * the run's emulators under the real host names, and every other destination fails at once and
 * is recorded as `world.blocked` with the process that tried. The sandbox needs bwrap (Debian
 * package bubblewrap): off CI its absence skips the sandbox suites with one line.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type CliProcessRun, runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { proxyWorldTool, systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');
const gh = systemTool('gh', ['--version'], 'gh');
const curl = systemTool('curl', ['--version'], 'curl');
/** As root, outside the sandbox the command runs through util-linux's unshare --map-user. */
const root = process.getuid?.() === 0;
const unshare = proxyWorldTool();
const require = createRequire(import.meta.url);

type Run = CliProcessRun;

/** `fleetbench world ARGS -- COMMAND` as a process, and the trace it left. */
function world(
  args: string[],
  command: string[],
  timeoutMs = 90_000,
  env: NodeJS.ProcessEnv = {},
): Promise<Run> {
  const out = scratchDir('fleetbench-world-');
  return runCliProcess(['world', '--out', out, ...args, '--', ...command], { timeoutMs, env, traceDir: out });
}

const blockedOf = (run: Run) =>
  run.records.filter((r) => r.kind === 'event' && r.name === 'world.blocked') as unknown as Array<{
    labels: { via: string; host: string; port?: number };
    data: { pid: number | null; argv: string[] };
  }>;

/** A client script that uses Octokit and the vendors' SDKs exactly as their READMEs show: no base URL. */
function clientScript(dir: string): string {
  const path = join(dir, 'clients.mjs');
  const octokit = require.resolve('@octokit/core');
  const openai = require.resolve('openai');
  const anthropic = require.resolve('@anthropic-ai/sdk');
  writeFileSync(
    path,
    `
import { Octokit } from ${JSON.stringify(octokit)};
import OpenAI from ${JSON.stringify(openai)};
import Anthropic from ${JSON.stringify(anthropic)};
const octokit = new Octokit({ auth: process.env.GH_TOKEN });
const user = await octokit.request('GET /user');
const issues = await octokit.request('GET /repos/{owner}/{repo}/issues', { owner: 'fleetbench', repo: 'repo-1' });
const response = await new OpenAI({ apiKey: 'sk-anything' }).responses.create({ model: 'gpt-5.5', input: 'hello' });
const message = await new Anthropic({ apiKey: 'sk-ant-anything' }).messages.create({
  model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'hello' }],
});
console.log(JSON.stringify({
  user: user.data.login, issues: issues.data.length, baseUrl: octokit.request.endpoint.DEFAULTS.baseUrl,
  userUrl: user.data.url, issueUrl: issues.data[0].url,
  openai: response.status, anthropic: message.type,
}));
`,
  );
  return path;
}

describe.skipIf(bwrap.skip)('fleetbench world: the sandbox', () => {
  it('brings unchanged clients to the emulators under the real host names', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-clients-');
    const script = clientScript(dir);
    const ghLine = gh.present ? 'gh api user --jq .login' : 'echo no-gh';
    const run = await world(
      ['--mode', 'sandbox', '--no-agents'],
      ['sh', '-c', `node ${script} && ${ghLine}`],
    );
    expect(run.code, run.stderr).toBe(0);
    const [first, second] = run.stdout.trim().split('\n');
    const seen = JSON.parse(first as string);
    expect(seen.baseUrl).toBe('https://api.github.com');
    expect(seen.user).toMatch(/\S/);
    // Answers name the emulator by the host the client asked: a url followed leads back into it.
    expect(seen.userUrl).toBe(`https://api.github.com/users/${seen.user}`);
    expect(seen.issueUrl).toMatch(/^https:\/\/api\.github\.com\/repos\/fleetbench\/repo-1\/issues\/\d+$/);
    expect(seen.issues).toBeGreaterThan(0);
    expect(seen.openai).toBe('completed');
    expect(seen.anthropic).toBe('message');
    if (gh.present) expect(second).toBe(seen.user);
    const api = run.records.filter((r) => r.kind === 'api');
    expect(api.filter((r) => r.route === '/user').length).toBe(gh.present ? 2 : 1);
    expect(api.some((r) => r.route === '/repos/{owner}/{repo}/issues')).toBe(true);
    const models = run.records.filter((r) => r.kind === 'span' && r.name === 'provider.request');
    expect(models.map((r) => (r.labels as { api: string }).api).sort()).toEqual(['messages', 'responses']);
    expect(blockedOf(run)).toEqual([]);
    expect(run.records.at(-1)).toMatchObject({ kind: 'end', reason: 'completed' });
  });

  it('refuses every other destination at once and records who tried', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-blocked-');
    const probe = join(dir, 'probe.mjs');
    // Each attempt must fail, and fast: a resolver or connect that waits for a timeout is a hang.
    writeFileSync(
      probe,
      `
import { lookup } from 'node:dns/promises';
import { connect } from 'node:net';
const timed = async (name, attempt) => {
  const started = Date.now();
  let outcome;
  try { await attempt(); outcome = 'reached'; } catch (error) { outcome = error.code ?? error.message; }
  return { name, outcome, ms: Date.now() - started };
};
const results = [
  await timed('dns', () => lookup('registry.npmjs.org')),
  await timed('ssh-port', () => new Promise((resolve, reject) => {
    const socket = connect(22, 'github.com', () => { socket.once('data', () => resolve()); });
    socket.once('error', reject); socket.once('close', () => reject(new Error('closed')));
  })),
  // Reached means bytes come back: a connection accepted and reset at once is refused.
  await timed('address', () => new Promise((resolve, reject) => {
    const socket = connect(443, '93.184.215.14', () => { socket.write('hello'); socket.once('data', () => resolve()); });
    socket.once('error', reject); socket.once('close', () => reject(new Error('closed')));
  })),
];
console.log(JSON.stringify(results));
`,
    );
    const curlLine = curl.present ? '; curl -sS -m 20 https://example.com; echo curl=$?' : '';
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['sh', '-c', `node ${probe}${curlLine}`]);
    expect(run.code, run.stderr).toBe(0);
    const results = JSON.parse(run.stdout.split('\n')[0] as string) as Array<{
      name: string;
      outcome: string;
      ms: number;
    }>;
    for (const result of results) {
      expect(result.outcome, result.name).not.toBe('reached');
      expect(result.ms, result.name).toBeLessThan(3_000);
    }
    if (curl.present) expect(run.stdout).toMatch(/curl=6/);
    const blocked = blockedOf(run);
    const dns = blocked.find((b) => b.labels.via === 'dns' && b.labels.host === 'registry.npmjs.org');
    expect(dns?.data.argv.join(' ')).toContain('probe.mjs');
    expect(dns?.data.pid).toBeGreaterThan(1);
    const ssh = blocked.find(
      (b) => b.labels.via === 'tcp' && b.labels.host === 'github.com' && b.labels.port === 22,
    );
    expect(ssh?.data.argv.join(' ')).toContain('probe.mjs');
    expect(blocked.some((b) => b.labels.via === 'tcp' && b.labels.host === '93.184.215.14')).toBe(true);
    if (curl.present)
      expect(blocked.some((b) => b.labels.host === 'example.com' && b.data.argv[0] === 'curl')).toBe(true);
  });

  it('a connection to an IPv6 address is refused at once and recorded with who tried, as an IPv4 one is', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-ipv6-');
    const probe = join(dir, 'probe6.mjs');
    writeFileSync(
      probe,
      `
import { connect } from 'node:net';
const attempt = (host, port) => new Promise((resolve) => {
  const started = Date.now();
  const socket = connect(port, host, () => { socket.write('hello'); socket.once('data', () => resolve({ host, outcome: 'reached' })); });
  socket.once('error', (error) => resolve({ host, outcome: error.code, ms: Date.now() - started }));
  socket.once('close', () => resolve({ host, outcome: 'closed', ms: Date.now() - started }));
});
console.log(JSON.stringify([await attempt('2606:2800:21f:cb07:6820:80da:af6b:c8e1', 443), await attempt('2001:db8::7', 22)]));
`,
    );
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['node', probe]);
    expect(run.code, run.stderr).toBe(0);
    for (const result of JSON.parse(run.stdout.split('\n')[0] as string) as Array<{
      outcome: string;
      ms: number;
    }>) {
      expect(result.outcome).not.toBe('reached');
      expect(result.ms).toBeLessThan(3_000);
    }
    const blocked = blockedOf(run);
    for (const [host, port] of [
      ['2606:2800:21f:cb07:6820:80da:af6b:c8e1', 443],
      ['2001:db8::7', 22],
    ] as const) {
      const record = blocked.find(
        (b) => b.labels.via === 'tcp' && b.labels.host === host && b.labels.port === port,
      );
      expect(record, `${host} port ${port}: ${JSON.stringify(blocked)}`).toBeDefined();
      expect(record?.data.argv.join(' ')).toContain('probe6.mjs');
      expect(record?.data.pid).toBeGreaterThan(1);
    }
  });

  it('git clone and push of https://github.com/…, gh pr create in the clone: the branch and the PR are in the world', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-git-');
    const ghLines = gh.present
      ? ' && gh pr create --title "Say hi" --body "From the world" --head feat/hi --base main && gh api user --jq .login'
      : '';
    const run = await world(
      ['--mode', 'sandbox', '--no-agents'],
      [
        'sh',
        '-c',
        `cd ${dir} && git clone -q https://github.com/fleetbench/repo-1 && cd repo-1 && git checkout -q -b feat/hi && echo hi > hi.txt && git add hi.txt && git -c user.name=a -c user.email=a@example.com commit -qm hi && git push -q origin feat/hi && node -e "fetch('https://api.github.com/repos/fleetbench/repo-1/branches/feat/hi', { headers: { authorization: 'token ' + process.env.GH_TOKEN } }).then((r) => r.json()).then((b) => console.log('branch=' + b.name + ' ' + b.commit.sha))"${ghLines}`,
      ],
      120_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const git = run.records.filter((r) => r.kind === 'span' && r.name === 'github.git');
    expect(git.some((r) => (r.labels as { service?: string }).service === 'git-upload-pack')).toBe(true);
    expect(git.some((r) => (r.labels as { service?: string }).service === 'git-receive-pack')).toBe(true);
    // The push moved the branch in the world: the API serves it at the pushed commit.
    const pushed = spawnSync('git', ['-C', join(dir, 'repo-1'), 'rev-parse', 'HEAD'], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(run.stdout).toContain(`branch=feat/hi ${pushed}`);
    if (gh.present) {
      expect(run.stdout).toMatch(/https:\/\/github\.com\/fleetbench\/repo-1\/pull\/\d+/);
      const api = run.records.filter((r) => r.kind === 'api');
      // gh 2.23 opens it with GraphQL's createPullRequest (its PullRequestCreate operation).
      expect(api.some((r) => JSON.stringify(r).includes('PullRequestCreate'))).toBe(true);
    }
    expect(blockedOf(run)).toEqual([]);
  });

  it("a remote written for ssh (git@github.com:…, ssh://git@github.com/…) is fetched and pushed over the world's HTTPS; ssh itself is still refused and recorded", async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-git-ssh-');
    const run = await world(
      ['--mode', 'sandbox', '--no-agents'],
      [
        'sh',
        '-c',
        `cd ${dir} && git clone -q git@github.com:fleetbench/repo-1.git && cd repo-1 && git checkout -q -b feat/ssh && echo hi > hi.txt && git add hi.txt && git -c user.name=a -c user.email=a@example.com commit -qm hi && git push -q ssh://git@github.com/fleetbench/repo-1.git feat/ssh && git ls-remote git@github.com:fleetbench/repo-1.git refs/heads/feat/ssh && git ls-remote ssh://git@ssh.github.com:443/fleetbench/repo-1 refs/heads/feat/ssh && git ls-remote git+ssh://git@github.com/fleetbench/repo-1.git refs/heads/feat/ssh; ssh -o BatchMode=yes -o ConnectTimeout=5 git@github.com true; echo ssh=$?`,
      ],
      120_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const pushed = spawnSync('git', ['-C', join(dir, 'repo-1'), 'rev-parse', 'HEAD'], {
      encoding: 'utf8',
    }).stdout.trim();
    // Three ls-remotes, each by another ssh spelling, each answered by the world.
    expect(run.stdout.split(`${pushed}\trefs/heads/feat/ssh`)).toHaveLength(4);
    const git = run.records.filter((r) => r.kind === 'span' && r.name === 'github.git');
    expect(git.some((r) => (r.labels as { service?: string }).service === 'git-receive-pack')).toBe(true);
    // ssh is not served: refused at once (exit 255), and recorded.
    expect(run.stdout).toContain('ssh=255');
    expect(blockedOf(run).map((b) => `${b.labels.host}:${b.labels.port}`)).toEqual(['github.com:22']);
  });

  it('gives a command with no vendor key one (the SDKs as their READMEs show them: new OpenAI(), new Anthropic()), and keeps a key of its own', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-keys-');
    const script = join(dir, 'keys.mjs');
    writeFileSync(
      script,
      `
import OpenAI from ${JSON.stringify(require.resolve('openai'))};
import Anthropic from ${JSON.stringify(require.resolve('@anthropic-ai/sdk'))};
const response = await new OpenAI().responses.create({ model: 'gpt-5.5', input: 'hello' });
const message = await new Anthropic().messages.create({
  model: 'claude-sonnet-4-5', max_tokens: 200, messages: [{ role: 'user', content: 'hello' }],
});
console.log(JSON.stringify({ openai: response.status, anthropic: message.type, openaiKey: process.env.OPENAI_API_KEY }));
`,
    );
    const none = await world(['--mode', 'sandbox', '--no-agents'], ['node', script], 90_000, {
      OPENAI_API_KEY: undefined,
      ANTHROPIC_API_KEY: undefined,
    });
    expect(none.code, none.stderr).toBe(0);
    const seen = JSON.parse(none.stdout.trim());
    expect(seen).toMatchObject({ openai: 'completed', anthropic: 'message' });
    expect(seen.openaiKey).toMatch(/^fbwcp-/);
    // The requests are the command's own: no spawn label (outside the launchers).
    const models = none.records.filter((r) => r.kind === 'span' && r.name === 'provider.request');
    expect(models).toHaveLength(2);
    for (const r of models) expect((r.labels as { spawn?: string }).spawn).toBeUndefined();
    const own = await world(['--mode', 'sandbox', '--no-agents'], ['node', script], 90_000, {
      OPENAI_API_KEY: 'sk-mine',
    });
    expect(own.code, own.stderr).toBe(0);
    expect(JSON.parse(own.stdout.trim()).openaiKey).toBe('sk-mine');
  });

  it("Python's standard library trusts the world's CA with nothing configured", async () => {
    bwrap.require();
    const python = systemTool('python3', ['--version'], 'python3');
    if (python.skip) return;
    const script =
      "import json, os, urllib.request; r = urllib.request.Request('https://api.github.com/user', headers={'Authorization': 'token ' + os.environ['GH_TOKEN']}); print('login=' + json.load(urllib.request.urlopen(r))['login'])";
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['python3', '-c', script]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^login=\S+/m);
    expect(run.records.filter((r) => r.kind === 'api' && r.route === '/user').length).toBe(1);
  });

  it("a Python control plane's gpt-4o-mini on api.openai.com is answered, and a model added with --model too", async () => {
    bwrap.require();
    const python = systemTool('python3', ['--version'], 'python3');
    if (python.skip) return;
    // What a control plane written with the standard library sends: the vendor's URL and model.
    const script = [
      'import json, urllib.request',
      'def ask(model):',
      "    body = json.dumps({'model': model, 'messages': [{'role': 'user', 'content': 'fleetbench-script: hello'}]}).encode()",
      "    request = urllib.request.Request('https://api.openai.com/v1/chat/completions', data=body, headers={'Authorization': 'Bearer sk-user', 'Content-Type': 'application/json'})",
      '    answer = json.load(urllib.request.urlopen(request))',
      "    print(model, answer['usage']['completion_tokens'] > 0, answer['choices'][0]['finish_reason'])",
      "ask('gpt-4o-mini')",
      "ask('gpt-7-preview')",
    ].join('\n');
    const run = await world(
      ['--mode', 'sandbox', '--no-agents', '--model', 'gpt-7-preview=2000000/200000'],
      ['python3', '-c', script],
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('gpt-4o-mini True stop');
    expect(run.stdout).toContain('gpt-7-preview True stop');
  });

  it('leaves no System V shared memory behind: a segment made inside goes with the world', async () => {
    bwrap.require();
    const ipcmk = systemTool('ipcmk', ['--version'], 'util-linux');
    if (ipcmk.skip) return;
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['sh', '-c', 'ipcmk -M 4096']);
    expect(run.code, run.stderr).toBe(0);
    const id = /(\d+)/.exec(run.stdout)?.[1];
    expect(id, run.stdout).toBeDefined();
    const host = spawnSync('ipcs', ['-m'], { encoding: 'utf8' }).stdout;
    expect(host.split('\n').some((line) => line.split(/\s+/)[1] === id)).toBe(false);
  });

  it('runs the command as a non-root user whose files are still the invoking user', async () => {
    bwrap.require();
    const dir = scratchDir('fleetbench-world-user-');
    const run = await world(['--mode', 'sandbox', '--no-agents'], ['sh', '-c', `id -u; touch ${dir}/made`]);
    expect(run.code, run.stderr).toBe(0);
    expect(Number(run.stdout.trim())).not.toBe(0);
    const owner = spawnSync('stat', ['-c', '%u', join(dir, 'made')], { encoding: 'utf8' }).stdout.trim();
    expect(Number(owner)).toBe(process.getuid?.());
  });
});

describe.skipIf(unshare.skip)('fleetbench world: any machine', () => {
  it('exits with the command’s own exit code', async () => {
    unshare.require();
    const run = await world(['--mode', 'env', '--no-agents'], ['sh', '-c', 'exit 7']);
    expect(run.code, run.stderr).toBe(7);
    expect(run.records.some((r) => r.name === 'world.started')).toBe(true);
  });

  it.skipIf(curl.skip)('the proxy serves the world hosts and refuses the rest', async () => {
    curl.require();
    const run = await world(
      ['--mode', 'proxy', '--no-agents'],
      [
        'sh',
        '-c',
        'curl -sS -m 20 https://api.github.com/rate_limit -o /dev/null -w "%{http_code}\\n"; curl -sS -m 20 https://example.com; echo curl=$?',
      ],
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^200$/m);
    expect(run.stdout).not.toMatch(/curl=0/);
    const blocked = blockedOf(run);
    expect(
      blocked.find((b) => b.labels.via === 'connect' && b.labels.host === 'example.com')?.data.argv[0],
    ).toBe('curl');
  });

  it.skipIf(!root || !existsSync('/usr/bin/openssl'))(
    'as root without unshare --map-user: refused before anything starts, naming util-linux (it was exit 127)',
    async () => {
      // A PATH with openssl (the world's CA needs it) and no unshare.
      const bin = scratchDir('fleetbench-world-nopath-');
      symlinkSync('/usr/bin/openssl', join(bin, 'openssl'));
      const run = await world(['--mode', 'env', '--no-agents'], ['true'], 30_000, { PATH: bin });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('util-linux');
      expect(run.stderr).toContain('--user NAME');
      expect(run.ms).toBeLessThan(20_000);
    },
  );

  it.each([
    [['--mode', 'nowhere'], 'nowhere'],
    [['--host', 'not a host=github'], 'not a DNS host name'],
    [['--host', 'ghe.example.com=gitlab'], "unknown service 'gitlab'"],
    [['--repos', '0'], '--repos'],
    [['--latency', 'slowest'], '--latency slowest'],
  ])('refuses %j in seconds, naming it', async (args, words) => {
    const run = await world([...args, '--no-agents'], ['true'], 30_000);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(words);
    expect(run.ms).toBeLessThan(20_000);
  });
});
