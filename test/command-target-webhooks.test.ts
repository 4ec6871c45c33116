/**
 * A webhook-driven control plane under `--target command` (docs/command-target.md, "Webhooks"):
 * it never polls; it learns of each issue from the `issues` delivery the emulator POSTs to its port
 * inside the world (the target's `webhook` key), checks the signature as GitHub's docs show,
 * and answers with a branch pushed with git and a pull request. Measured end to end through
 * `fleetbench run` as a process, then `fleetbench analyze`: every session reaches its done state,
 * with a cost per task. The sandbox needs bwrap (Debian package bubblewrap).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli } from './helpers/cli.ts';
import { runCliProcess } from './helpers/cli-process.ts';
import { scratchDir } from './helpers/tmp.ts';
import { systemTool } from './helpers/tools.ts';

const bwrap = systemTool('bwrap', ['--version'], 'bubblewrap');

/** The control plane: a node:http webhook receiver, as a Probot-style app is, and nothing else. */
const CONTROL_PLANE = `
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

const SECRET = process.env.HOOK_SECRET;
const TOKEN = process.env.GITHUB_TOKEN ?? process.env.GH_TOKEN;

async function gh(method, path, body) {
  const response = await fetch('https://api.github.com' + path, {
    method,
    headers: { authorization: 'token ' + TOKEN, accept: 'application/vnd.github+json', 'content-type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(method + ' ' + path + ': ' + response.status + ' ' + text.slice(0, 200));
  return JSON.parse(text);
}

async function work(repo, issue) {
  const dir = join(process.cwd(), 'tasks', 'issue-' + issue.number);
  mkdirSync(join(process.cwd(), 'tasks'), { recursive: true });
  execFileSync('git', ['clone', '-q', 'https://github.com/' + repo.full_name, dir]);
  const branch = 'hook/issue-' + issue.number;
  const git = (...args) => execFileSync('git', ['-c', 'user.name=hook', '-c', 'user.email=hook@example.com', ...args], { cwd: dir });
  git('checkout', '-q', '-b', branch);
  writeFileSync(join(dir, 'fix-' + issue.number + '.md'), issue.title + '\\n');
  git('add', '-A');
  git('commit', '-q', '-m', 'Fix #' + issue.number);
  git('push', '-q', 'origin', branch);
  const pull = await gh('POST', '/repos/' + repo.full_name + '/pulls', {
    title: 'Fix #' + issue.number + ': ' + issue.title,
    head: branch,
    base: repo.default_branch,
    body: 'Closes #' + issue.number,
  });
  console.log('opened #' + pull.number + ' for #' + issue.number);
}

createServer((req, res) => {
  if (req.url === '/health') return res.end('ok');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const expected = Buffer.from('sha256=' + createHmac('sha256', SECRET).update(body).digest('hex'));
    const given = Buffer.from(String(req.headers['x-hub-signature-256'] ?? ''));
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
      console.log('refused a delivery: bad signature');
      res.statusCode = 401;
      return res.end();
    }
    const payload = JSON.parse(body.toString('utf8'));
    const event = req.headers['x-github-event'];
    console.log('delivery ' + event + '.' + payload.action + ' ' + req.headers['x-github-delivery']);
    res.statusCode = 202;
    res.end();
    if (event === 'issues' && payload.action === 'opened')
      work(payload.repository, payload.issue).catch((e) => console.log('issue ' + payload.issue.number + ': ' + e.message));
  });
}).listen(Number(process.env.HOOK_PORT), '127.0.0.1');
`;

function scenario(dir: string, webhook: string): string {
  const file = join(dir, 'hooks.mjs');
  writeFileSync(file, CONTROL_PLANE);
  return `
name: webhooks-under-test
duration: 25s
seed: 4
topology: { owner: fleetbench }
sessions: { count: 2 }
executors:
  - type: fixed
    count: 2
target:
  kind: command
  start: node ${file}
  env: { HOOK_PORT: '3197', HOOK_SECRET: 'hook secret' }
  ready: { http: "http://127.0.0.1:3197/health" }
  work: { issue: { labels: [agent] } }
  webhook: ${webhook}
  agents: none
`;
}

function run(text: string, dir: string, timeoutMs = 240_000) {
  const file = join(dir, 'scenario.yaml');
  writeFileSync(file, text);
  return runCliProcess(['run', file, '--out', 'out'], { cwd: dir, timeoutMs });
}

const WEBHOOK =
  '{ url: "http://127.0.0.1:3197/api/github/webhooks", secret: "hook secret", events: [issues] }';

describe.skipIf(bwrap.skip)(
  '--target command with a webhook-driven control plane',
  { timeout: 240_000 },
  () => {
    it('delivers each issue to its port inside the world; it pushes a branch and opens a pull request; every session done, with a cost per task', async () => {
      bwrap.require();
      const dir = scratchDir('fleetbench-command-hooks-');
      const r = await run(scenario(dir, WEBHOOK), dir);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(`${r.stdout}${r.stderr}`).toContain(
        'webhook http://127.0.0.1:3197/api/github/webhooks on every repository: issues',
      );
      const out = join(dir, 'out');
      const records = readFileSync(join(out, 'trace.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map(
          (line) =>
            JSON.parse(line) as {
              kind: string;
              name?: string;
              session?: string;
              labels?: Record<string, unknown>;
              data?: Record<string, unknown>;
            },
        );
      // One `issues` delivery per session's issue (opened, then labeled), each answered 202, signed.
      const deliveries = records.filter((x) => x.kind === 'event' && x.name === 'github.webhook');
      const opened = deliveries.filter((d) => d.labels?.event === 'issues' && d.labels?.action === 'opened');
      expect(opened).toHaveLength(2);
      // Made with its label, as GitHub does: \`opened\`, then \`labeled\`.
      expect(deliveries.filter((d) => d.labels?.action === 'labeled')).toHaveLength(2);
      expect(deliveries.every((d) => d.data?.statusCode === 202)).toBe(true);
      const log = readFileSync(join(out, 'command.log'), 'utf8');
      expect(log).not.toContain('bad signature');
      expect(log.match(/delivery issues\.opened/g)).toHaveLength(2);
      // Only `issues` was asked for: the pushes and pull requests it made itself are not sent back.
      expect(deliveries.every((d) => d.labels?.event === 'issues')).toBe(true);
      for (const session of ['s-0001', 's-0002'])
        expect(
          records.some(
            (e) => e.name === 'session.state' && e.session === session && e.labels?.to === 'pr_open',
          ),
          `${session} reached pr_open\n${log}`,
        ).toBe(true);
      const analysed = await cli(['analyze', join(out, 'trace.jsonl'), '--json']);
      expect(analysed.code, analysed.stderr).toBe(0);
      const costPerTask = JSON.parse(analysed.stdout).edges.costPerTask;
      expect(costPerTask.completed).toBe(2);
      expect(costPerTask.calls.allIn).toBeGreaterThan(0);
    });
  },
);

describe('--target command: the webhook key', () => {
  it.each([
    [
      'a URL off the machine',
      '{ url: "http://example.com/hooks" }',
      'target.webhook.url: expected http://127.0.0.1:PORT',
    ],
    [
      'an event it does not deliver',
      '{ url: "http://127.0.0.1:3197/", events: [deployment] }',
      'target.webhook.events[0]: expected one of "*", "ping", "issues"',
    ],
    ['an unknown key', '{ url: "http://127.0.0.1:3197/", sekret: x }', "unknown field 'sekret'"],
  ])(
    'refuses %s before anything starts (exit 2, naming the file and line)',
    async (_what, webhook, words) => {
      const dir = scratchDir('fleetbench-command-hooks-');
      const r = await run(scenario(dir, webhook), dir, 60_000);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(words);
      expect(r.stderr).toMatch(/scenario\.yaml:16: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
  );

  // Any value of the wrong kind inside the command target was `target: Invalid input` at the
  // target's line (the union of a target name and a mapping hid the branch's own issue).
  it('names the field and its line for a bad value elsewhere in the target (kill)', async () => {
    const dir = scratchDir('fleetbench-command-hooks-');
    const text = scenario(dir, WEBHOOK).replace('agents: none', 'agents: none\n  kill: bogus');
    const r = await run(text, dir, 60_000);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/scenario\.yaml:18: target\.kill: expected one of "group", "process"/);
  });
});
