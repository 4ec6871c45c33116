/**
 * The configuration of a `command` target (docs/command-target.md): how to start a control plane
 * of the user's, how to know it is ready, how to give it work, when a piece of work is done, and
 * the world it runs in. Written inline as the scenario's `target: {kind: command, …}`, or in a
 * file named by `--target command:FILE` (the same keys, `kind` optional). Paths in it are
 * relative to the file that holds them. Validated here, resolved once into `CommandTargetConfig`.
 */
import { dirname, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { durationField } from '../base/duration.ts';
import { InputFileError } from '../base/errors.ts';
import { readInputText } from '../base/input-file.ts';
import { MAX_CONFIG_FILE_BYTES } from '../base/limits.ts';
import { describeZodIssues } from '../base/validation.ts';
import { parseYamlInput, yamlLineOf } from '../base/yaml-input.ts';
import { DELIVERED_EVENTS, WEBHOOK_BOUNDS } from '../github/webhooks.ts';

/** Bounds of a command target's configuration (docs/limits.md). */
export const COMMAND_TARGET_BOUNDS = {
  /** The longest a control plane may take to be ready. */
  maxReadyTimeoutMs: 30 * 60_000,
  /** The longest a graceful stop may wait before the kill. */
  maxStopGraceMs: 10 * 60_000,
  maxArgs: 256,
  maxArgLength: 64 * 1024,
  maxEnv: 256,
  maxTemplateLength: 64 * 1024,
  maxLabels: 100,
  maxHosts: 64,
  /** What command.log keeps of each start's output (stdout and stderr together); the rest is dropped. */
  maxOutputBytes: 256 * 1024 * 1024,
} as const;

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'] as const;
const DONE_STATES = ['pr_open', 'merged', 'closed'] as const;

const text = (max: number) => z.string().max(max, `expected at most ${max} characters (docs/limits.md)`);
// A command with no program (`""`, `"  "`, `[""]`) was started anyway and failed only as a control
// plane that died (exit 127, or 0 for an empty shell line): refused here, before anything starts.
const program = /\S/;
const argv = z
  .union([
    text(COMMAND_TARGET_BOUNDS.maxArgLength).regex(program, 'expected a command, not an empty line'),
    z
      .array(text(COMMAND_TARGET_BOUNDS.maxArgLength))
      .min(1)
      .max(COMMAND_TARGET_BOUNDS.maxArgs)
      .refine((list) => program.test(list[0] ?? ''), 'expected a program first, not an empty word'),
  ])
  .describe('a command line run by sh -c, or the program and its arguments as a list');
const boundedDuration = (max: number, what: string) =>
  durationField.refine(
    (ms) => ms > 0 && ms <= max,
    `expected a ${what} above 0 and at most ${max / 60_000} min (docs/limits.md)`,
  );

function compileError(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

const readySchema = z
  .union([
    z.object({ http: z.url({ protocol: /^https?$/ }).describe('answered 2xx: ready') }).strict(),
    z
      .object({
        log: text(1024)
          .min(1)
          // Compiled here, before anything starts: a bad pattern was an internal error at the
          // first probe, after the world and the control plane had started.
          .superRefine((pattern, context) => {
            const error = compileError(pattern);
            if (error !== undefined)
              context.addIssue({ code: 'custom', message: `not a regular expression: ${error}` });
          })
          .describe("a regular expression; a line of the control plane's output that matches: ready"),
      })
      .strict(),
    z.object({ github: z.literal(true).describe('its first GitHub call: ready') }).strict(),
    z.object({ delay: boundedDuration(COMMAND_TARGET_BOUNDS.maxReadyTimeoutMs, 'delay') }).strict(),
  ])
  .describe('how the control plane says it is ready');

const issueWork = z
  .object({
    title: text(COMMAND_TARGET_BOUNDS.maxTemplateLength).default('{{title}}'),
    body: text(COMMAND_TARGET_BOUNDS.maxTemplateLength).default('{{body}}'),
    labels: z.array(text(50).min(1)).max(COMMAND_TARGET_BOUNDS.maxLabels).default([]),
    assignees: z.array(text(39).min(1)).max(10).default([]),
  })
  .strict();
const httpWork = z
  .object({
    method: z.enum(['POST', 'PUT', 'PATCH', 'GET']).default('POST'),
    url: text(COMMAND_TARGET_BOUNDS.maxTemplateLength).min(1),
    headers: z.record(text(256), text(COMMAND_TARGET_BOUNDS.maxTemplateLength)).default({}),
    body: text(COMMAND_TARGET_BOUNDS.maxTemplateLength).optional(),
  })
  .strict();

const setup = argv
  .optional()
  .describe(
    "a command run for each session before its work is handed over, and not timed (the session's agent registered, its directory made): first activity starts when the handover begins",
  );
const workSchema = z
  .union([
    z.object({ issue: issueWork, setup }).strict(),
    z.object({ http: httpWork, setup }).strict(),
    z.object({ command: argv, setup }).strict(),
  ])
  .describe(
    'how a session becomes work for the control plane: a GitHub issue, an HTTP request, or a command',
  );

/** The hook registered on every world repository, as an App's installation would (docs/command-target.md). */
const webhookSchema = z
  .object({
    url: text(WEBHOOK_BOUNDS.configChars)
      .refine((url) => {
        try {
          const parsed = new URL(url);
          return parsed.protocol === 'http:' && ['127.0.0.1', 'localhost'].includes(parsed.hostname);
        } catch {
          return false;
        }
      }, "expected http://127.0.0.1:PORT/… (the control plane's own port inside the world)")
      .describe("where deliveries go: a port of the control plane's, inside the world"),
    secret: text(WEBHOOK_BOUNDS.configChars).optional().describe('signs each delivery (X-Hub-Signature-256)'),
    events: z
      .array(z.enum(['*', ...DELIVERED_EVENTS]))
      .min(1)
      .default(['*'])
      .describe('the events delivered (docs/github-emulator.md, "Webhooks")'),
    content_type: z.enum(['json', 'form']).default('json'),
  })
  .strict()
  .describe('a repository webhook on every world repository');

export const commandTargetSchema = z
  .object({
    kind: z.literal('command').optional(),
    start: argv,
    cwd: text(4096).optional().describe('its working directory (default: a fresh one in the run directory)'),
    env: z
      .record(
        text(256).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'),
        text(COMMAND_TARGET_BOUNDS.maxTemplateLength),
      )
      .refine(
        (env) => Object.keys(env).length <= COMMAND_TARGET_BOUNDS.maxEnv,
        `expected at most ${COMMAND_TARGET_BOUNDS.maxEnv} variables`,
      )
      .default({}),
    user: text(64)
      .optional()
      .describe('a host account to run it as (needs root); default: a mapped non-root user'),
    state: text(4096)
      .optional()
      .describe('its state directory, kept across restarts (default: state/ in the run directory)'),
    ready: readySchema.default({ delay: 1_000 }),
    'ready-timeout': boundedDuration(COMMAND_TARGET_BOUNDS.maxReadyTimeoutMs, 'ready timeout').default(
      120_000,
    ),
    kill: z
      .enum(['group', 'process'])
      .default('group')
      .describe(
        "what a restart kills: its whole process group (a service manager's stop), or its first process only, for a start line the command it runs (a crash: what it started is left running)",
      ),
    stop: z
      .object({
        signal: z.enum(SIGNALS).default('SIGTERM'),
        grace: boundedDuration(COMMAND_TARGET_BOUNDS.maxStopGraceMs, 'grace').default(10_000),
      })
      .strict()
      .default({ signal: 'SIGTERM', grace: 10_000 }),
    work: workSchema.default({ issue: { title: '{{title}}', body: '{{body}}', labels: [], assignees: [] } }),
    done: z
      .enum(DONE_STATES)
      .default('pr_open')
      .describe('the session state at which a piece of work counts as done'),
    world: z
      .object({
        mode: z.enum(['auto', 'sandbox', 'proxy', 'env']).default('auto'),
        hosts: z.array(text(300)).max(COMMAND_TARGET_BOUNDS.maxHosts).default([]),
      })
      .strict()
      .default({ mode: 'auto', hosts: [] }),
    agents: z
      .enum(['real', 'none'])
      .default('real')
      .describe('the real agent CLIs on its PATH behind launchers'),
    webhook: webhookSchema.optional(),
  })
  .strict();

export type CommandTargetInput = z.input<typeof commandTargetSchema>;

export type WorkSpec = (
  | { kind: 'issue'; title: string; body: string; labels: string[]; assignees: string[] }
  | { kind: 'http'; method: string; url: string; headers: Record<string, string>; body?: string | undefined }
  | { kind: 'command'; argv: string[] }
) & {
  /** Run before the handover, untimed (the schema's `setup`). */
  setup?: string[] | undefined;
};

export type ReadySpec =
  | { kind: 'http'; url: string }
  | { kind: 'log'; pattern: string }
  | { kind: 'github' }
  | { kind: 'delay'; ms: number };

/** A command target, resolved: paths absolute, defaults filled. */
export interface CommandTargetConfig {
  argv: string[];
  /** Absent: a fresh directory in the run directory. */
  cwd?: string | undefined;
  env: Record<string, string>;
  user?: string | undefined;
  state?: string | undefined;
  ready: ReadySpec;
  readyTimeoutMs: number;
  stop: { signal: (typeof SIGNALS)[number]; graceMs: number };
  kill: 'group' | 'process';
  work: WorkSpec;
  done: (typeof DONE_STATES)[number];
  world: { mode: 'auto' | 'sandbox' | 'proxy' | 'env'; hosts: string[] };
  agents: 'real' | 'none';
  /** The hook registered on every world repository before the command starts. */
  webhook?:
    | { url: string; secret?: string | undefined; events: string[]; contentType: 'json' | 'form' }
    | undefined;
  /** The file it came from, for messages (a scenario or a command:FILE). */
  source: string;
}

const asArgv = (value: string | string[]): string[] =>
  typeof value === 'string' ? ['sh', '-c', value] : value;
const absolute = (base: string, path: string | undefined) =>
  path === undefined ? undefined : isAbsolute(path) ? path : resolve(base, path);

/**
 * Resolves a validated configuration; relative paths against `baseDir` (its file's directory),
 * and `{{here}}` in the command, the environment and the work templates is that directory (a
 * control plane shipped beside its scenario: `start: node {{here}}/loop.mjs`).
 */
export function resolveCommandTarget(
  parsed: z.output<typeof commandTargetSchema>,
  baseDir: string,
  source: string,
): CommandTargetConfig {
  const here = (text: string) => text.replaceAll('{{here}}', baseDir);
  const ready: ReadySpec =
    'http' in parsed.ready
      ? { kind: 'http', url: parsed.ready.http }
      : 'log' in parsed.ready
        ? { kind: 'log', pattern: parsed.ready.log }
        : 'github' in parsed.ready
          ? { kind: 'github' }
          : { kind: 'delay', ms: parsed.ready.delay };
  const setupArgv = parsed.work.setup === undefined ? {} : { setup: asArgv(parsed.work.setup).map(here) };
  const work: WorkSpec =
    'issue' in parsed.work
      ? { kind: 'issue', ...parsed.work.issue, ...setupArgv }
      : 'http' in parsed.work
        ? { kind: 'http', ...parsed.work.http, ...setupArgv }
        : { kind: 'command', argv: asArgv(parsed.work.command).map(here), ...setupArgv };
  return {
    argv: asArgv(parsed.start).map(here),
    cwd: absolute(baseDir, parsed.cwd),
    env: Object.fromEntries(Object.entries(parsed.env).map(([name, value]) => [name, here(value)])),
    ...(parsed.user !== undefined ? { user: parsed.user } : {}),
    state: absolute(baseDir, parsed.state),
    ready,
    readyTimeoutMs: parsed['ready-timeout'],
    stop: { signal: parsed.stop.signal, graceMs: parsed.stop.grace },
    kill: parsed.kill,
    work,
    done: parsed.done,
    world: parsed.world,
    agents: parsed.agents,
    ...(parsed.webhook === undefined
      ? {}
      : {
          webhook: {
            url: parsed.webhook.url,
            secret: parsed.webhook.secret,
            events: parsed.webhook.events,
            contentType: parsed.webhook.content_type,
          },
        }),
    source,
  };
}

/** A `command:FILE` target's file, read (bounded), validated with file:line errors, resolved. */
export function loadCommandTargetFile(file: string): CommandTargetConfig {
  const content = readInputText(file, {
    maxBytes: MAX_CONFIG_FILE_BYTES,
    code: 'E_SCENARIO',
    what: 'a command target',
  });
  const { doc, lineCounter, error, value } = parseYamlInput(content);
  if (error) throw new InputFileError('E_SCENARIO', file, error.line, `YAML: ${error.message}`);
  const parsed = commandTargetSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new InputFileError(
      'E_SCENARIO',
      file,
      yamlLineOf(doc, lineCounter)(issue.path),
      describeZodIssues([issue], 1, commandTargetSchema)[0] ?? issue.message,
      { hint: 'the command target is documented in docs/command-target.md' },
    );
  }
  return resolveCommandTarget(parsed.data, dirname(resolve(file)), file);
}
