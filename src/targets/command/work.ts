/**
 * How a session becomes work for a control plane of the user's (docs/command-target.md, "Work"):
 * a GitHub issue in the run's emulator (with labels and assignees, as a person would file it), an
 * HTTP request to the control plane's own API, or a command run in the world, each from a
 * template with the session's fields. Templates name fields as `{{name}}`; an unknown name is
 * refused before the run starts.
 */
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import { FleetbenchError } from '../../base/errors.ts';
import type { Rng } from '../../base/rng.ts';
import type { GitHubEmulator } from '../../github/emulator.ts';
import type { WorkSpec } from '../../workload/command-target.ts';
import type { World } from '../../world/world.ts';

export const TEMPLATE_FIELDS = [
  'session',
  'index',
  'repo',
  'owner',
  'name',
  'issue',
  'url',
  'title',
  'body',
] as const;
type Fields = Record<(typeof TEMPLATE_FIELDS)[number], string>;

/** How long a work request or command may take (docs/limits.md). */
export const WORK_TIMEOUT_MS = 60_000;
/** The most of a work answer read (for a task id). */
const MAX_ANSWER_BYTES = 64 * 1024;

export function render(template: string, fields: Fields): string {
  return template.replace(/\{\{\s*([a-z]+)\s*\}\}/g, (_all, name: string) =>
    Object.hasOwn(fields, name) ? fields[name as keyof Fields] : `{{${name}}}`,
  );
}

/** Every `{{name}}` in the work's templates is a field; throws naming the first that is not. */
export function checkTemplates(work: WorkSpec, source: string): void {
  const texts = [
    ...(work.kind === 'issue'
      ? [work.title, work.body]
      : work.kind === 'http'
        ? [work.url, work.body ?? '', ...Object.values(work.headers)]
        : work.argv),
    ...(work.setup ?? []),
  ];
  for (const text of texts)
    for (const match of text.matchAll(/\{\{\s*([^}]*?)\s*\}\}/g))
      if (!(TEMPLATE_FIELDS as readonly string[]).includes(match[1] as string))
        throw new FleetbenchError(
          'E_SCENARIO',
          `${source}: target.work: unknown template field {{${match[1]}}} (have: ${TEMPLATE_FIELDS.join(', ')})`,
        );
  if (work.kind === 'http') {
    let url: URL;
    try {
      url = new URL(work.url.replace(/\{\{[^}]*\}\}/g, 'x'));
    } catch {
      throw new FleetbenchError('E_SCENARIO', `${source}: target.work.http.url: not a URL: ${work.url}`);
    }
    if (url.protocol !== 'http:' || !['127.0.0.1', 'localhost'].includes(url.hostname))
      throw new FleetbenchError(
        'E_SCENARIO',
        `${source}: target.work.http.url: expected http://127.0.0.1:PORT/… (the control plane's own API inside the world), not ${work.url}`,
      );
  }
}

const VERBS = ['Fix', 'Add a test for', 'Refactor', 'Document', 'Speed up', 'Handle errors in'];
const THINGS = [
  'the config loader',
  'the retry logic',
  'the CLI parser',
  'the cache',
  'the HTTP client',
  'the scheduler',
];

/** A task's title and body, seeded: the same run gives the same work. */
export function taskText(rng: Rng, index: number): { title: string; body: string } {
  const verb = VERBS[rng.int(0, VERBS.length - 1)];
  const thing = THINGS[rng.int(0, THINGS.length - 1)];
  const title = `${verb} ${thing} (task ${index})`;
  return {
    title,
    body: `${title}.\n\nOpened by fleetbench for a run of your control plane; the model your agents talk to is fleetbench's provider emulator, which plays a scripted coding session.`,
  };
}

export interface CreatedWork {
  /**
   * When the handover began (run time): the issue filed, the request sent, the command started,
   * after any `setup`. Work is created somewhere inside the handover; its start is the moment
   * fleetbench knows, and first activity counts from it (docs/command-target.md, "Work").
   */
  handedOverAt: number;
  issue?: number | undefined;
  url?: string | undefined;
  /** A name the control plane gave the work (a task id from its answer). */
  alias?: string | undefined;
}

export interface WorkContext {
  emulator: GitHubEmulator;
  world: World;
  /** The environment and directory a work command runs with. */
  env: Record<string, string>;
  cwd: string;
  /** Run time now. */
  now: () => number;
  /** A work or setup command's process started (its pid outside the world). */
  onSpawned?: (pid: number) => void;
  /** The credential work commands hold alone (the handover's token, World.vouch). */
  vouch?: string | undefined;
}

/** Creates one session's work; throws (the spawner counts a failed start) when it could not. */
export async function createWork(
  work: WorkSpec,
  session: { id: string; index: number; repo: string; title: string; body: string },
  context: WorkContext,
): Promise<CreatedWork> {
  const [owner = '', name = ''] = session.repo.split('/');
  const base = {
    session: session.id,
    index: String(session.index),
    repo: session.repo,
    owner,
    name,
    issue: '',
    url: '',
    title: session.title,
    body: session.body,
  };
  if (work.setup)
    await runCommand(
      work.setup.map((arg) => render(arg, base)),
      context,
      'setup',
    );
  const handedOverAt = context.now();
  if (work.kind === 'issue') {
    const state = context.emulator.state;
    const repo = state.repo(session.repo);
    for (const login of work.assignees) state.ensureUser(login);
    const issue = state.createIssue(repo, {
      title: render(work.title, base),
      body: render(work.body, base),
      labels: work.labels,
      assignees: work.assignees,
    });
    const url = `https://github.com/${session.repo}/issues/${issue.number}`;
    return { handedOverAt, issue: issue.number, url };
  }
  if (work.kind === 'http') {
    const url = new URL(render(work.url, base));
    const socket = await context.world.dial(Number(url.port || 80));
    const answer = await requestOver(socket, {
      method: work.method,
      path: `${url.pathname}${url.search}`,
      host: url.host,
      headers: Object.fromEntries(Object.entries(work.headers).map(([k, v]) => [k, render(v, base)])),
      body: work.body === undefined ? undefined : render(work.body, base),
    });
    if (answer.status < 200 || answer.status > 299)
      throw new Error(
        `work request ${work.method} ${url.href} answered ${answer.status}: ${answer.body.slice(0, 200)}`,
      );
    return { handedOverAt, alias: idIn(answer.body) };
  }
  await runCommand(
    work.argv.map((arg) => render(arg, base)),
    context,
    'work',
  );
  return { handedOverAt };
}

/** Runs a work or setup command in the world, to its end; throws when it fails or overruns. */
async function runCommand(argv: string[], context: WorkContext, what: 'work' | 'setup'): Promise<void> {
  const child = await context.world.spawn({
    argv,
    cwd: context.cwd,
    env: context.env,
    detached: true,
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'ignore',
    vouch: context.vouch,
  });
  if (child.pid !== undefined) context.onSpawned?.(child.pid);
  const timer = setTimeout(() => child.kill('SIGKILL'), WORK_TIMEOUT_MS);
  const status = await child.exited;
  clearTimeout(timer);
  if (status.code !== 0)
    throw new Error(
      `${what} command ${argv.join(' ').slice(0, 200)} ended ${status.signal ?? `with exit ${status.code}`}${status.error ? ` (${status.error})` : ''}`,
    );
}

/** The id a JSON answer gives the created work (`id`, `taskId`, `task_id`, `key`, `number`). */
function idIn(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    for (const key of ['id', 'taskId', 'task_id', 'key', 'number', 'identifier']) {
      const value = parsed?.[key];
      if (typeof value === 'string' || typeof value === 'number') return String(value);
    }
  } catch {
    // Not JSON: no id.
  }
  return undefined;
}

/** One HTTP request over a connection the world made (the control plane's API is inside it). */
export function requestOver(
  socket: Socket,
  options: RequestOptions,
  timeoutMs = WORK_TIMEOUT_MS,
): Promise<{ status: number; body: string }> {
  // The whole exchange is bounded, not only each silence in it: an answer dribbled a byte at a
  // time (or a stream that never ends) kept the ready probe, and so ready-timeout, waiting for
  // ever, and a work request past its 60 s (docs/limits.md).
  let deadline: NodeJS.Timeout | undefined;
  const overrun = new Promise<never>((_, reject) => {
    deadline = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no whole answer in ${timeoutMs / 1000} s`));
    }, timeoutMs);
  });
  return Promise.race([exchange(socket, options, timeoutMs), overrun]).finally(() => clearTimeout(deadline));
}

interface RequestOptions {
  method: string;
  path: string;
  host: string;
  headers?: Record<string, string>;
  body?: string | undefined;
}

function exchange(
  socket: Socket,
  options: RequestOptions,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        method: options.method,
        path: options.path,
        headers: {
          host: options.host,
          connection: 'close',
          ...(options.body !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(options.body) }
            : {}),
          ...options.headers,
        },
        createConnection: () => socket,
        timeout: timeoutMs,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (body.length < MAX_ANSWER_BYTES) body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}
