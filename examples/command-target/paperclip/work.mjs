// One session's work for Paperclip, through its own HTTP API, as a user scripts it, in two steps:
//   node work.mjs setup SESSION   the scenario's `work.setup` (not timed): the run's company (made by
//                                 the first arrival, under a lock), an agent for the session under
//                                 Paperclip's codex_local adapter running `codex` from PATH (the
//                                 world's launcher: the real codex CLI)
//   node work.mjs wake SESSION    the scenario's `work.command`, the handover: an on-demand wake of
//                                 that agent, which is the heartbeat run the session is
// Its state is in $PAPERCLIP_STATE: the company's id, and each agent's directory (a git
// repository named after the session, the agent's cwd; codex works only inside one).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const api = process.env.PAPERCLIP_API ?? 'http://127.0.0.1:3100/api';
const state = process.env.PAPERCLIP_STATE;
const [step, session] = process.argv.slice(2);
if (!state || !session || (step !== 'setup' && step !== 'wake')) {
  console.error('usage: PAPERCLIP_STATE=DIR node work.mjs setup|wake SESSION');
  process.exit(2);
}

async function call(method, path, body) {
  const response = await fetch(`${api}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** The run's one company: made once, by whichever arrival takes the lock first. */
async function company() {
  const file = join(state, 'company.json');
  const lock = join(state, 'company.lock');
  for (let tries = 0; tries < 600; tries++) {
    if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')).id;
    try {
      mkdirSync(lock);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    try {
      if (!existsSync(file))
        writeFileSync(file, JSON.stringify(await call('POST', '/companies', { name: 'fleetbench' })));
    } finally {
      rmdirSync(lock);
    }
  }
  throw new Error('no company after 30 s');
}

const cwd = join(state, 'agents', session);
const agentFile = join(cwd, 'agent.json');
if (step === 'wake') {
  const agent = JSON.parse(readFileSync(agentFile, 'utf8'));
  const run = await call('POST', `/agents/${agent.id}/wakeup`, { source: 'on_demand' });
  console.log(
    JSON.stringify({ session, agent: agent.id, run: run?.id ?? null, status: run?.status ?? null }),
  );
  process.exit(0);
}
const companyId = await company();
const codexHome = join(cwd, 'codex-home');
mkdirSync(codexHome, { recursive: true });
execFileSync('git', ['init', '-q'], { cwd, stdio: 'ignore' });
// codex's own configuration, as a user writes it: the model, its key from OPENAI_API_KEY (the
// world's launcher gives each spawn its own), nothing optional reaching out.
writeFileSync(
  join(codexHome, 'config.toml'),
  [
    'model = "gpt-5.5"',
    'model_provider = "openai-key"',
    'check_for_update_on_startup = false',
    '[model_providers.openai-key]',
    'name = "OpenAI"',
    'base_url = "https://api.openai.com/v1"',
    'wire_api = "responses"',
    'env_key = "OPENAI_API_KEY"',
    '[analytics]',
    'enabled = false',
    '[features]',
    'plugins = false',
    'apps = false',
    'remote_plugin = false',
    '',
  ].join('\n'),
);
const agent = await call('POST', `/companies/${companyId}/agents`, {
  name: session,
  adapterType: 'codex_local',
  adapterConfig: {
    // The CLI engine runs the command given (Paperclip's default engine runs a codex it bundles).
    engine: 'cli',
    command: 'codex',
    cwd,
    timeoutSec: 600,
    model: 'gpt-5.5',
    // The adapter checks that a key is set; the launcher replaces it with the spawn's own.
    env: { OPENAI_API_KEY: 'set-by-the-launcher', CODEX_HOME: codexHome },
  },
});
writeFileSync(agentFile, JSON.stringify({ id: agent.id }));
